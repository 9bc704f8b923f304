// The scenarios in Node: undici's WebSocket is injected when the host has no global one (Node 20).
import { test } from "node:test";
import * as aw from "agentwire";
import { scenarios } from "./scenarios.mjs";
import { testEnv } from "./env.mjs";

const env = testEnv();
if (typeof globalThis.WebSocket !== "function") {
  env.webSocket = (await import("undici")).WebSocket;
}

for (const [name, run] of Object.entries(scenarios)) {
  test(name, { timeout: 20_000 }, () => run(aw, env));
}
