// The scenarios in Node: undici's WebSocket is injected when the host has no global one (Node 20).
import { test } from "node:test";
import * as aw from "agentwire";
// Each protocol's own entry, with its own smaller module, in the same process as the whole one.
const only = {
  rkt: await import("agentwire/rkt"),
  moltzap: await import("agentwire/moltzap"),
  switch: await import("agentwire/switch"),
};
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

// The protocol's scenarios again through its own entry (`agentwire/rkt`, ...).
for (const [name, run] of Object.entries(scenarios)) {
  const protocol = name.split(" ")[0];
  if (!(protocol in only)) continue;
  test(`agentwire/${protocol}: ${name}`, { timeout: 20_000 }, async (t) => {
    const outcome = await run(only[protocol], env);
    if (typeof outcome === "string") t.skip(outcome);
  });
}
