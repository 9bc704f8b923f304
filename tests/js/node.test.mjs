// The scenarios in Node: undici's WebSocket is injected when the host has no global one (Node 20).
import { test } from "node:test";
import { runs, scenarios } from "./scenarios.mjs";
import { testEnv } from "./env.mjs";

// Each protocol's own entry loads its own smaller module, in the same process as the whole one.
const modules = {
  agentwire: await import("agentwire"),
  "agentwire/rkt": await import("agentwire/rkt"),
  "agentwire/moltzap": await import("agentwire/moltzap"),
  "agentwire/switch": await import("agentwire/switch"),
};
const env = testEnv();
const undici = await import("undici");
if (typeof globalThis.WebSocket !== "function") env.webSocket = undici.WebSocket;
// The Switch peer takes the agent key only in an Authorization header, and echoes no
// subprotocol: a socket that sends the header and offers none.
env.switchSocket = (key) =>
  class extends undici.WebSocket {
    constructor(url) {
      super(url, { headers: { authorization: `Bearer ${key}` } });
    }
  };

for (const [entry, name, title] of runs("node")) {
  test(title, { timeout: 20_000 }, async (t) => {
    const outcome = await scenarios[name](modules[entry], env);
    if (typeof outcome === "string") t.skip(outcome);
  });
}

// A client the app keeps no reference to (used through onEvent only) stays connected: its
// sockets and timers reach the driver only weakly, so the package keeps it until its last event.
test("node: a client used through onEvent only is not collected while connected", { timeout: 20_000 }, async () => {
  const v8 = await import("node:v8");
  const vm = await import("node:vm");
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc");
  const aw = modules.agentwire;
  const ws = env.webSocket ? { webSocket: env.webSocket } : {};
  const seen = [];
  const bob = await (async () =>
    new WeakRef(await aw.MoltZapClient.connect(env.moltzap, { ...ws, agentKey: env.moltzapKeys.bob, onEvent: (e) => seen.push(e) })))();
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 20));
    gc();
  }
  const alice = await aw.MoltZapClient.connect(env.moltzap, { ...ws, agentKey: env.moltzapKeys.alice });
  try {
    const text = `after a collection ${Math.random().toString(36).slice(2)}`;
    await alice.send({ agent: "bob" }, text);
    const until = Date.now() + 5000;
    const got = () => seen.some((e) => e.type === "messageReceived" && JSON.stringify(e.data).includes(text));
    while (!got() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    if (!got()) throw new Error(`bob got no message after a collection: ${JSON.stringify(seen.map((e) => e.type))}`);
  } finally {
    await alice.close();
    await bob.deref()?.close();
  }
});
