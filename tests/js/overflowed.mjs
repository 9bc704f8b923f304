// Run in a worker thread by fake-socket.test.mjs (which ends it if it hangs): a JavaScript stack
// overflow inside one RKT client's delivery, at every depth (each frame of a deep recursion feeds
// its socket a message on the way back up), then another client of the same module.
import { parentPort } from "node:worker_threads";
import { RktClient } from "agentwire/rkt";
import { FakeRkt, last } from "./fake-ws.mjs";

const a = await RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, keepalive: false, onEvent: () => {} });
const wsA = last();
const events = [];
const b = await RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, keepalive: false, onEvent: (e) => events.push(e.type) });
const wsB = last();
let tries = 0;
function deep() {
  try {
    deep();
  } catch (e) {
    tries++;
    try {
      wsA.onmessage({ data: "not an RKT message" });
    } catch {
      /* the overflow, again */
    }
    throw e;
  }
}
try {
  deep();
} catch {
  /* the first overflow */
}
await new Promise((r) => setTimeout(r, 20));
const outcome = (p) => p.then(() => "resolved", (e) => `${e.kind}: ${e.message}`);
const reply = outcome(b.request("x", {}));
wsB.reply(wsB.lastRequest(), "RESPONSE", "{}");
wsB.onmessage({ data: "not an RKT message" });
const other = await Promise.race([reply, new Promise((r) => setTimeout(() => r("no answer within 1 s"), 1000))]);
parentPort.postMessage({ tries, other, events });
void a;
