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

/** `fetchWebSocket` on its own: a binary frame arrives as an ArrayBuffer with its bytes, the
 * peer's close comes through with its code, and a close before the upgrade answers gives one
 * 1006 close as a separate task, never an open. */
async function fetchSocketChecks(garbage) {
  const Socket = all.fetchWebSocket({});
  const seen = await new Promise((resolve, reject) => {
    const ws = new Socket(`${garbage}/rkt/garbage`, []);
    const got = [];
    const timer = setTimeout(() => reject(new Error(`no close: ${JSON.stringify(got)}`)), 5000);
    ws.onopen = () => ws.send("RKT/1.0 HELLO\n");
    ws.onmessage = (e) => got.push(e.data instanceof ArrayBuffer ? [...new Uint8Array(e.data)] : typeof e.data);
    ws.onclose = (e) => {
      clearTimeout(timer);
      resolve({ binary: got.filter(Array.isArray), code: e.code });
    };
  });
  if (JSON.stringify(seen) !== JSON.stringify({ binary: [[0xff, 0xfe, 0, 1]], code: 1011 })) throw new Error(`garbage: ${JSON.stringify(seen)}`);
  const early = await new Promise((resolve) => {
    const ws = new Socket(`${garbage}/rkt/garbage`, []);
    const events = [];
    ws.onopen = () => events.push("open");
    ws.onerror = () => events.push("error");
    ws.onclose = (e) => events.push(`close ${e.code}`);
    ws.close(1000, "changed my mind");
    events.push("after close()");
    setTimeout(() => resolve(events), 300);
  });
  if (early.join() !== "after close(),close 1006") throw new Error(`close before open: ${early}`);
  // A refusal whose body never ends: its start is read, not the whole (which never comes).
  const refused = await new Promise((resolve, reject) => {
    const ws = new Socket(`${garbage}/endless-refusal`, []);
    const timer = setTimeout(() => reject(new Error("no close within 5 s: the refusal's body was read whole")), 5000);
    ws.onclose = (e) => {
      clearTimeout(timer);
      resolve(e);
    };
  });
  if (refused.code !== 4401 || !/401: no no/.test(refused.reason)) throw new Error(`endless refusal: ${refused.code} ${refused.reason}`);
}

/** Clients one request makes and keeps (a module variable, as a Worker may) for a later request
 * to use: workerd refuses a socket's I/O to any request but the one that made it. The later
 * request's calls reject with kind `state`, saying so, and `close()` ends each client at once. The
 * host's exception went uncaught through the driver, which it left busy for good: every later
 * call and `close()` refused "the client is busy", and what reached the driver after spun the
 * isolate's microtasks forever. */
let kept = [];
async function crossRequest(aw, env, phase) {
  if (phase === "connect") {
    kept = [await aw.RktClient.connect(env.rkt), await aw.MoltZapClient.connect(env.moltzap, { agentKey: env.moltzapKeys.carol })];
    await kept[0].ping();
    return;
  }
  for (const client of kept) {
    const name = client instanceof aw.RktClient ? "RktClient" : "MoltZapClient";
    const use = () => (client instanceof aw.RktClient ? client.ping({ timeoutMs: 3000 }) : client.call("system/ping", {}, { timeoutMs: 3000 }));
    for (let n = 0; n < 2; n++) {
      const e = await use().then(() => undefined, (e) => e);
      if (e?.kind !== "state" || !/the request that made it/.test(e.message)) throw new Error(`${name}: call ${n + 1}: ${e ? `${e.kind}: ${e.message}` : "resolved"}`);
    }
    const started = Date.now();
    await client.close();
    if (!client.closed || Date.now() - started > 1000) throw new Error(`${name}: close(): closed ${client.closed} after ${Date.now() - started} ms`);
    const after = await use().then(() => undefined, (e) => e);
    if (after?.kind !== "closed") throw new Error(`${name}: a call after close(): ${after ? `${after.kind}: ${after.message}` : "resolved"}`);
  }
}

export default {
  /** `POST {entry, name, env}` → `{outcome}` (a skip reason, or null) or, failed, `{error}`;
   * `GET` → `{uncaught}`. */
  async fetch(request) {
    if (request.method === "GET") return Response.json({ uncaught: [...uncaught, ...unhandled.values()] });
    const { entry, name, env } = await request.json();
    if (name.startsWith("crossRequest")) {
      try {
        await crossRequest(all, env, name.split(":")[1]);
        return Response.json({ outcome: null });
      } catch (e) {
        return Response.json({ error: `${e?.stack ?? e}` });
      }
    }
    if (name === "fetchWebSocket") {
      try {
        await fetchSocketChecks(env.garbage);
        return Response.json({ outcome: null });
      } catch (e) {
        return Response.json({ error: `${e?.stack ?? e}` });
      }
    }
    // Switch directly, with the agent key in the upgrade's Authorization header.
    env.switchSocket = (key) => entries[entry].fetchWebSocket({ authorization: `Bearer ${key}` });
    // Its close after a refused upgrade carries the HTTP status.
    env.socketTellsStatus = true;
    // workerd refuses a frame of 64 MiB itself (an error: 1006) before agentwire sees it.
    env.hostRefusesHugeFrames = true;
    try {
      const outcome = await scenarios[name](entries[entry], env);
      return Response.json({ outcome: outcome ?? null });
    } catch (e) {
      return Response.json({ error: `${e?.name}: ${e?.message}\n${e?.stack ?? ""}` });
    }
  },
};
