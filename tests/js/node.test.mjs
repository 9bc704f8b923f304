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
