// CPU per event without a socket (Node): the MoltZap and Switch drivers on a fake WebSocket fed
// synchronously with the flood servers' frames, so the figure is agentwire's own work (glue,
// wasm, facade, the callback) against the baseline's (JSON.parse, the callback), free of the
// socket and of the other processes' timing. What to look at when changing the engine or the
// facade; the events per second of bench.mjs remain the measure.
//
//   node cpu.mjs [--events N] [--rounds R] [--read]
//
// --read: the callbacks read the payload (agentwire parses it on first read). The time is the
// process's CPU time (user + system: V8's GC threads included) per event, the best of R rounds.
import { moltzapReceived, switchConnectionState, switchMessages } from "./frames.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? dflt : Number(process.argv[i + 1]);
};
const N = arg("--events", 50_000);
const R = arg("--rounds", 5);
const READ = process.argv.includes("--read");
const aw = await import("agentwire");
const ROOM = "47e911ea-014b-427b-a600-1c72595f0c98";

let current;
/** Just enough of a WebSocket for the drivers: the test feeds `onmessage` itself. */
class FakeWebSocket {
  static OPEN = 1;
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.protocol = "agentwire.v1";
    this.sent = [];
    current = this;
  }
  send(t) {
    this.sent.push(t);
  }
  close() {
    this.readyState = 3;
  }
}

let sink;
let count = 0;

async function moltzap() {
  const connecting = aw.MoltZapClient.connect("ws://fake/ws", {
    agentKey: "moltzap_agent_bench",
    webSocket: FakeWebSocket,
    onEvent: (e) => {
      count++;
      sink = e;
      if (READ) sink = e.data;
    },
  });
  const ws = current;
  ws.readyState = 1;
  ws.onopen({});
  ws.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id: JSON.parse(ws.sent[0]).id, result: {} }) });
  return { client: await connecting, feed: (data) => ws.onmessage({ data }) };
}

async function swtch() {
  const connecting = aw.SwitchClient.connect("http://fake/flood", {
    token: "t",
    agentId: "bench-agent",
    rooms: [ROOM],
    reconnect: false,
    webSocket: FakeWebSocket,
    onEvent: (e) => {
      count++;
      sink = e;
      if (READ) sink = e.payload;
    },
  });
  const ws = current;
  ws.readyState = 1;
  ws.onopen({});
  ws.onmessage({ data: switchConnectionState({ connectionId: "c", agentId: "bench-agent", rooms: [ROOM], heartbeatS: 2 }) });
  return { client: await connecting, feed: (data) => ws.onmessage({ data }) };
}

const baselines = {
  moltzap: (t) => {
    const m = JSON.parse(t);
    if (m.method === "messages/received") {
      count++;
      sink = m.params;
      if (READ) sink = m.params.message;
    }
  },
  switch: (t) => {
    const m = JSON.parse(t);
    if (m.id !== undefined) {
      count++;
      sink = m;
      if (READ) sink = m.data.payload;
    }
  },
};

/** CPU nanoseconds per item of `fn` over `list`. */
function cpu(fn, list) {
  const t = process.cpuUsage();
  for (const x of list) fn(x);
  const d = process.cpuUsage(t);
  return ((d.user + d.system) * 1e3) / list.length;
}

for (const [name, setup, make] of [
  ["moltzap", moltzap, moltzapReceived],
  ["switch", swtch, () => switchMessages(ROOM)],
]) {
  // Flat strings, as a socket delivers them (a template literal's result is a rope).
  const build = make();
  const frames = Array.from({ length: N }, (_, i) => JSON.parse(JSON.stringify(build(i))));
  const a = [];
  const b = [];
  for (let r = 0; r < R; r++) {
    const { client, feed } = await setup();
    a.push(cpu(feed, frames));
    await Promise.race([client.close(), new Promise((ok) => setTimeout(ok, 100))]);
    b.push(cpu(baselines[name], frames));
  }
  const best = (x) => Math.min(...x);
  console.log(
    `${name.padEnd(8)} agentwire ${best(a).toFixed(0)} ns/event, baseline ${best(b).toFixed(0)} ns/event, ` +
      `baseline/agentwire ${(best(b) / best(a)).toFixed(2)}${READ ? " (the callbacks read the payload)" : ""}`,
  );
}
process.exit(count > 0 ? 0 : 1);
