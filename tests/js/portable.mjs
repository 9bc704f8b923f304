// The scenarios in Bun and Deno (run.sh runs this file with each, installed from npm): the
// package's `node` entries, with the runtime's own WebSocket, against the same local peers as
// Node. Deno's socket ends a 64 MiB frame with 1006 before the package sees it, as workerd's does.
// The run fails when any scenario fails, or is skipped but for those that need `fetchWebSocket`
// (a Worker's), which Node 20 skips too.
import { runs, scenarios } from "./scenarios.mjs";
import { testEnv } from "./env.mjs";

const host = globalThis.Bun ? `bun ${globalThis.Bun.version}` : globalThis.Deno ? `deno ${globalThis.Deno.version.deno}` : undefined;
if (!host) throw new Error("portable.mjs is for Bun and Deno (Node runs node.test.mjs)");
const modules = {};
for (const entry of ["agentwire", "agentwire/rkt", "agentwire/moltzap", "agentwire/switch"]) modules[entry] = await import(entry);
const env = testEnv();
env.hostRefusesHugeFrames = Boolean(globalThis.Deno);
// Both say a refused upgrade's status in the error event ("Expected 101 status code: 401",
// "Invalid status code: 401").
env.hostErrorSaysStatus = true;
// The Switch peer takes the agent key only in an Authorization header: Bun's and Deno's
// WebSocket take headers in a second argument of their own.
env.switchSocket = (key) =>
  class extends WebSocket {
    constructor(url) {
      super(url, { headers: { authorization: `Bearer ${key}` } });
    }
  };
const SKIPPED = new Set(["rkt reads a refused upgrade's status where the socket tells it", "moltzap reads a refused upgrade's status where the socket tells it"]);

const failed = [];
let passed = 0;
let skipped = 0;
for (const [entry, name, title] of runs(host)) {
  const started = Date.now();
  let timer;
  try {
    const timeout = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("no end within 20 s")), 20_000)));
    const outcome = await Promise.race([scenarios[name](modules[entry], env), timeout]);
    if (typeof outcome === "string" && !SKIPPED.has(name)) throw new Error(`skipped here, not in Node 20: ${outcome}`);
    if (typeof outcome === "string") {
      skipped++;
      console.log(`skip ${title}: ${outcome}`);
    } else {
      passed++;
      console.log(`ok   ${title} (${Date.now() - started} ms)`);
    }
  } catch (e) {
    failed.push(title);
    console.log(`FAIL ${title}: ${e?.stack ?? e}`);
  } finally {
    clearTimeout(timer);
  }
}
console.log(`${host}: ${passed} passed, ${failed.length} failed, ${skipped} skipped`);
if (failed.length) console.log(`failed:\n  ${failed.join("\n  ")}`);
// Sockets a failed scenario left open would keep the runtime alive.
process.exit(failed.length ? 1 : 0);
