// CPU per event without a socket (Node): the RKT, MoltZap and Switch drivers on a fake WebSocket fed
// synchronously with the flood servers' frames, so the figure is agentwire's own work (glue,
// wasm, facade, the callback) against the baseline's (JSON.parse, the callback), free of the
// socket and of the other processes' timing. What to look at when changing the engine or the
// facade; the events per second of bench.mjs remain the measure.
//
//   node cpu.mjs [--events N] [--rounds R] [--read] [--protocols rkt,moltzap,switch]
//
// --read: the callbacks read the payload (agentwire parses it on first read). The time is the
// process's CPU time (user + system: V8's GC threads included) per event, the best of R rounds.
import { moltzapReceived, rktMessage, rktStreamData, switchConnectionState, switchMessages } from "./frames.mjs";

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? dflt : Number(process.argv[i + 1]);
};
const N = arg("--events", 50_000);
const R = arg("--rounds", 5);
const READ = process.argv.includes("--read");
const PROTOCOLS = (process.argv.includes("--protocols") ? process.argv[process.argv.indexOf("--protocols") + 1] : "rkt,moltzap,switch").split(",");
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

/** The headers an RKT reply needs: the server's answer to the message `sent` of the client. */
function rktReply(type, sent, body) {
  const header = (name) => sent.match(new RegExp(`^${name}: (.*)$`, "m"))[1];
  const headers = [
    ["Version", 1],
    ["Message-ID", `0196beef-0000-7000-ab12-${type.length.toString(16).padStart(12, "0")}`],
    ["Reply-To", header("Message-ID")],
    ["Session-ID", header("Session-ID")],
    ["Timestamp", "2026-12-03T09:00:00.000Z"],
    ["From", "rkt://127.0.0.1"],
  ];
  return rktMessage(type, headers, body);
}

/** RKT: HELLO answered, then one stream (`for await`, as bench.mjs reads it) fed a batch at a
 * time: the reader takes each batch before the next (the stream holds at most 1,024 chunks). */
async function rkt() {
  const connecting = aw.RktClient.connect("ws://fake/rkt", { webSocket: FakeWebSocket });
  const ws = current;
  ws.readyState = 1;
  ws.onopen({});
  ws.onmessage({ data: rktReply("HELLO_ACK", ws.sent[0], `{"agreed_version":1,"session_timeout":300}`) });
  const client = await connecting;
  const stream = client.stream("bench.flood", { count: N });
  const request = ws.sent[ws.sent.length - 1];
  let taken = 0;
  let want = 0;
  let wake;
  let failed = "it ended";
  (async () => {
    try {
      for await (const chunk of stream) {
        count++;
        sink = chunk;
        if (READ) sink = chunk.city;
        if (++taken === want) wake();
      }
    } catch (e) {
      failed = e;
    }
    wake?.();
  })();
  // The frames carry the request's Message-ID: made here, not counted (the baseline's are the same).
  const data = rktStreamData(request.match(/^Message-ID: (.*)$/m)[1], request.match(/^Session-ID: (.*)$/m)[1]);
  ws.onmessage({ data: rktReply("STREAM_BEGIN", request, `{"intent":"bench.flood"}`) });
  return {
    client,
    frames: Array.from({ length: N }, (_, i) => JSON.parse(JSON.stringify(data(i)))),
    feedAll: async (frames) => {
      for (let i = 0; i < frames.length; i += 512) {
        const batch = frames.slice(i, i + 512);
        want = taken + batch.length;
        const done = new Promise((r) => (wake = r));
        for (const data of batch) ws.onmessage({ data });
        await done;
        if (taken !== want) throw new Error(`rkt: the stream stopped after ${taken} chunks: ${failed}`);
      }
    },
  };
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
  // The RKT guide's raw client's parser (bench.mjs's baseline): the type from the start line, the
  // body after the blank line, JSON.parse'd for each STREAM_DATA.
  rkt: (raw) => {
    const [headerPart, bodyPart] = raw.split("\n\n");
    const type = headerPart.split("\n")[0].split(" ")[1];
    if (type === "STREAM_DATA") {
      count++;
      sink = JSON.parse(bodyPart);
      if (READ) sink = sink.city;
    }
  },
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

/** CPU nanoseconds per item of `run`, which takes the whole `list` (maybe asynchronously). */
async function cpu(run, list) {
  const t = process.cpuUsage();
  await run(list);
  const d = process.cpuUsage(t);
  return ((d.user + d.system) * 1e3) / list.length;
}

/** `fn` on each item in turn, synchronously. */
const each = (fn) => (list) => {
  for (const x of list) fn(x);
};

for (const [name, setup, make] of [
  ["rkt", rkt, undefined],
  ["moltzap", moltzap, moltzapReceived],
  ["switch", swtch, () => switchMessages(ROOM)],
].filter(([name]) => PROTOCOLS.includes(name))) {
  // Flat strings, as a socket delivers them (a template literal's result is a rope). RKT's carry
  // the request's Message-ID: its setup makes them.
  const build = make?.();
  const made = build && Array.from({ length: N }, (_, i) => JSON.parse(JSON.stringify(build(i))));
  const a = [];
  const b = [];
  for (let r = 0; r < R; r++) {
    const { client, feed, feedAll, frames = made } = await setup();
    a.push(await cpu(feedAll ?? each(feed), frames));
    await Promise.race([client.close(), new Promise((ok) => setTimeout(ok, 100))]);
    b.push(await cpu(each(baselines[name]), frames));
  }
  const best = (x) => Math.min(...x);
  console.log(
    `${name.padEnd(8)} agentwire ${best(a).toFixed(0)} ns/event, baseline ${best(b).toFixed(0)} ns/event, ` +
      `baseline/agentwire ${(best(b) / best(a)).toFixed(2)}${READ ? " (the callbacks read the payload)" : ""}`,
  );
}
process.exit(count > 0 ? 0 : 1);
