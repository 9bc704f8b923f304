// Run in a worker thread by fake-socket.test.mjs (which ends it if it hangs): a Switch client
// that an exception thrown through the wasm module left borrowed for good (a `setTimeout` that
// throws once, called while the driver runs an operation), then asked its status.
import { parentPort } from "node:worker_threads";
import { SwitchClient } from "agentwire/switch";
import { FakeWebSocket, connectionState, last } from "./fake-ws.mjs";

const connecting = SwitchClient.connect("http://fake", { token: "t", agentId: "a", reconnect: false, webSocket: FakeWebSocket });
const ws = last();
ws.readyState = 1;
ws.onopen({});
ws.onmessage({ data: connectionState });
const client = await connecting;
const before = client.status().state;
const setTimeout = globalThis.setTimeout;
globalThis.setTimeout = () => {
  globalThis.setTimeout = setTimeout;
  throw new Error("a host function that threw");
};
const outcome = (p) => p.then(() => "resolved", (e) => `${e.kind}: ${e.message}`);
const first = await outcome(client.op("x", {}));
let status;
try {
  status = `resolved: ${JSON.stringify(client.status())}`;
} catch (e) {
  status = `${e.kind}: ${e.message}`;
}
const close = await outcome(client.close());
parentPort.postMessage({ before, first, status, close });
