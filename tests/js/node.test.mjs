// The scenarios in Node: undici's WebSocket is injected when the host has no global one (Node 20).
import { test } from "node:test";
import * as aw from "agentwire";
import { scenarios } from "./scenarios.mjs";
import { testEnv } from "./env.mjs";

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

for (const [name, run] of Object.entries(scenarios)) {
  test(name, { timeout: 20_000 }, async (t) => {
    const outcome = await run(aw, env);
    if (typeof outcome === "string") t.skip(outcome);
  });
}
