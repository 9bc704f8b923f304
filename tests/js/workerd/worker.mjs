// The scenarios in real workerd (Miniflare): each request runs one scenario with one of the
// package's Workers entries (the files its `workerd` export condition names, each `.wasm` imported
// as a compiled module, as Wrangler bundles them).
import * as all from "../../../npm/dist/worker.js";
import * as rkt from "../../../npm/dist/rkt/worker.js";
import * as moltzap from "../../../npm/dist/moltzap/worker.js";
import * as sw from "../../../npm/dist/switch/worker.js";
import { scenarios } from "../scenarios.mjs";

const entries = { agentwire: all, "agentwire/rkt": rkt, "agentwire/moltzap": moltzap, "agentwire/switch": sw };

// What escaped: errors nobody caught, and rejections not handled then (a scenario may attach its
// handler later, as after `await client.close()`: `rejectionhandled` takes those back).
const uncaught = [];
const unhandled = new Map();
addEventListener("unhandledrejection", (e) => unhandled.set(e.promise, `unhandled rejection: ${e.reason?.stack ?? e.reason}`));
addEventListener("rejectionhandled", (e) => unhandled.delete(e.promise));
addEventListener("error", (e) => uncaught.push(`uncaught: ${e.error?.stack ?? e.message}`));
// The drivers report a callback that threw with console.error.
const consoleError = console.error;
console.error = (...args) => {
  uncaught.push(`console.error: ${args.map((a) => a?.stack ?? String(a)).join(" ")}`);
  consoleError(...args);
};

export default {
  /** `POST {entry, name, env}` → `{outcome}` (a skip reason, or null) or, failed, `{error}`;
   * `GET` → `{uncaught}`. */
  async fetch(request) {
    if (request.method === "GET") return Response.json({ uncaught: [...uncaught, ...unhandled.values()] });
    const { entry, name, env } = await request.json();
    // Switch directly, with the agent key in the upgrade's Authorization header.
    env.switchSocket = (key) => entries[entry].fetchWebSocket({ authorization: `Bearer ${key}` });
    try {
      const outcome = await scenarios[name](entries[entry], env);
      return Response.json({ outcome: outcome ?? null });
    } catch (e) {
      return Response.json({ error: `${e?.name}: ${e?.message}\n${e?.stack ?? ""}` });
    }
  },
};
