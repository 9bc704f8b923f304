// Run in a worker thread by fake-socket.test.mjs (which ends it if it hangs): a Switch client
// that an exception thrown through the wasm module left borrowed for good (a `setTimeout` that
// throws once, called while the driver takes its socket's close), then given input, then asked
// its status.
import { parentPort } from "node:worker_threads";
import { SwitchClient } from "agentwire/switch";
import { FakeWebSocket, connectionState, last } from "./fake-ws.mjs";

const connecting = SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: FakeWebSocket });
const ws = last();
ws.readyState = 1;
ws.onopen({});
ws.onmessage({ data: connectionState });
const client = await connecting;
const before = client.status().state;
await new Promise((r) => setTimeout(r, 50));
const realSetTimeout = globalThis.setTimeout;
globalThis.setTimeout = () => {
  globalThis.setTimeout = realSetTimeout;
  throw new Error("a host function that threw");
};
// The socket drops: the driver arms its reconnect timer while it runs.
let first;
try {
  ws.readyState = 3;
  ws.onclose({ code: 1006, reason: "", wasClean: false });
  first = "no exception";
} catch (e) {
  first = e.message;
}
globalThis.setTimeout = realSetTimeout;
const status = () => {
  try {
    return `resolved: ${JSON.stringify(client.status())}`;
  } catch (e) {
    return `${e.kind}: ${e.message}`;
  }
};
// Closed, the socket sends nothing more: the first call finds the driver busy (it could be a
// call from inside its own send()), and a microtask after it finds it busy for good.
const busy = status();
await new Promise((r) => setTimeout(r, 10));
const broken = status();
const outcome = (p) => p.then(() => "resolved", (e) => `${e.kind}: ${e.message}`);
const op = await outcome(client.op("x", {}));
const close = await outcome(client.close());
parentPort.postMessage({ before, first, busy, broken, op, close });
