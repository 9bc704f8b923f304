// The scenarios in real workerd (Miniflare, from worker-relay's packages): the package's Workers
// entries, `agentwire` and each protocol's own, with workerd's own WebSocket (and, for Switch
// directly, `fetchWebSocket`), against the same local peers as Node and Chromium. Twice: at the
// relay's compatibility date and at a recent one (binary frames as Blobs unless asked, closes
// answered by the runtime).
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { startWorker, RELAY_COMPATIBILITY_DATE } from "../../worker-relay/miniflare.mjs";
import { runs } from "./scenarios.mjs";
import { testEnv } from "./env.mjs";

const env = testEnv();
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DATES = [...new Set([RELAY_COMPATIBILITY_DATE, "2026-04-07"])];
const workers = {};
const logs = [];

before(async () => {
  for (const compatibilityDate of DATES) {
    workers[compatibilityDate] = await startWorker({
      vars: {},
      script: fileURLToPath(new URL("workerd/worker.mjs", import.meta.url)),
      modulesRoot: ROOT,
      compatibilityDate,
      compatibilityFlags: [],
      log: (t) => logs.push(t),
    });
  }
});

after(async () => {
  for (const w of Object.values(workers)) await w.mf.dispose();
});

for (const date of DATES) {
  for (const [entry, name, title] of runs(`workerd ${date}`)) {
    test(title, { timeout: 20_000 }, async (t) => {
      const res = await fetch(workers[date].url, { method: "POST", body: JSON.stringify({ entry, name, env }) });
      const { outcome, error } = await res.json();
      if (error) throw new Error(`${error}\nworkerd: ${logs.join("")}`);
      if (typeof outcome === "string") t.skip(outcome);
    });
  }
  test(`workerd ${date}: fetchWebSocket: binary frames, the peer's close, a close before the upgrade`, async () => {
    const res = await fetch(workers[date].url, { method: "POST", body: JSON.stringify({ name: "fetchWebSocket", env }) });
    const { error } = await res.json();
    if (error) throw new Error(error);
  });
  test(`workerd ${date}: clients one request made, used and closed by another`, { timeout: 20_000 }, async () => {
    for (const phase of ["connect", "use"]) {
      const res = await fetch(workers[date].url, { method: "POST", body: JSON.stringify({ name: `crossRequest:${phase}`, env }), signal: AbortSignal.timeout(15_000) });
      const { error } = await res.json();
      if (error) throw new Error(`${phase}: ${error}`);
    }
  });
  test(`workerd ${date}: nothing uncaught in the Worker, no console.error`, async () => {
    const { uncaught } = await (await fetch(workers[date].url)).json();
    const logged = logs.join("").split("\n").filter((l) => /uncaught/i.test(l));
    if (uncaught.length || logged.length) throw new Error([...uncaught, ...logged].join("\n"));
  });
}
