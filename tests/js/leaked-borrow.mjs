// Run in a worker thread by fake-socket.test.mjs (which ends it if it hangs): an RKT client that
// an exception thrown through the wasm module left borrowed for good (here a `setTimeout` that
// throws once, called while the driver runs; a JavaScript stack overflow can do the same).
import { parentPort } from "node:worker_threads";
import { RktClient } from "agentwire/rkt";
import { FakeRkt, last } from "./fake-ws.mjs";

const client = await RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, keepalive: false });
const ws = last();
const setTimeout = globalThis.setTimeout;
globalThis.setTimeout = () => {
  globalThis.setTimeout = setTimeout;
  throw new Error("a host function that threw");
};
const outcome = (p) => p.then(() => "resolved", (e) => `${e.kind}: ${e.message}`);
const first = await outcome(client.request("x", {}));
// Input for the broken driver: it waited for a microtask, which found the driver still busy and
// queued itself again, forever (the isolate spun, no timer fired again).
ws.reply(ws.lastRequest(), "RESPONSE", "{}");
await new Promise((r) => setTimeout(r, 50));
const later = await outcome(client.request("x", {}));
const close = await outcome(client.close());
parentPort.postMessage({ first, later, close });
