// CPU per event without a socket (Node): the RKT, MoltZap and Switch drivers on a fake WebSocket fed
// synchronously with the flood servers' frames, so the figure is agentwire's own work (glue,
// wasm, facade, the callback) against the baseline's (JSON.parse, the callback), free of the
// socket and of the other processes' timing. What to look at when changing the engine or the
// facade; the events per second of bench.mjs remain the measure.
//
//   node cpu.mjs [--events N] [--rounds R] [--read] [--protocols rkt,moltzap,switch]
//
// --read: the callbacks read the payload (agentwire parses it on first read). The time is the
// process's CPU time (user + system: V8's GC threads included) per event: the best of R rounds,
// with the median and the worst beside it. Each round checks that every frame gave the one event
// it should (MoltZap `messageReceived`, Switch `event` of kind `message`, RKT a stream chunk) and
// that nothing else came (a `diagnostic`, an `error`): otherwise the script stops, exit code 1,
// rather than time frames the engine refused.
import { moltzapReceived, rktMessage, rktStreamData, switchConnectionState, switchMessages } from "./frames.mjs";

const USAGE = `usage: node cpu.mjs [--events N] [--rounds R] [--read] [--protocols rkt,moltzap,switch]
  --events N      frames per round (default 50000)
  --rounds R      rounds per protocol, agentwire then the baseline in each (default 5)
  --read          the callbacks read the payload too
  --protocols P   a comma-separated subset of rkt,moltzap,switch (default all three)
Prints per protocol the CPU ns per event, best (median, worst) of the rounds, and baseline/agentwire.`;
/** Stops the script: a bench that measured the wrong thing must not print a figure. */
function fail(message) {
  console.error(`cpu.mjs: ${message}`);
  process.exit(1);
}
const opts = { events: 50_000, rounds: 5, read: false, protocols: "rkt,moltzap,switch" };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === "--help" || a === "-h") {
    console.log(USAGE);
    process.exit(0);
  } else if (a === "--read") {
    opts.read = true;
  } else if (a === "--events" || a === "--rounds") {
    const n = Number(process.argv[++i]);
    if (!Number.isInteger(n) || n < 1) fail(`${a} takes a whole number of at least 1\n${USAGE}`);
    opts[a.slice(2)] = n;
  } else if (a === "--protocols") {
    opts.protocols = process.argv[++i] ?? "";
  } else {
    fail(`unknown argument "${a}"\n${USAGE}`);
  }
}
const { events: N, rounds: R, read: READ } = opts;
const PROTOCOLS = opts.protocols.split(",");
for (const p of PROTOCOLS) if (!["rkt", "moltzap", "switch"].includes(p)) fail(`unknown protocol "${p}"\n${USAGE}`);
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
/** The measured events of the current run. */
let count = 0;
/** Events other than the measured one (a `diagnostic`, an `error`, ...): the round fails. */
let stray = [];
/** While frames are fed, only the measured event may come; around it, connecting and closing
 * give these (without an `error`). */
let feeding = false;
const LIFECYCLE = { rkt: ["closed"], moltzap: ["disconnected"], switch: ["connected", "disconnected", "stopped"] };
const other = (name, e) => {
  if (feeding || !LIFECYCLE[name].includes(e.type) || e.error !== undefined) stray.push(e);
};

async function moltzap() {
  const connecting = aw.MoltZapClient.connect("ws://fake/ws", {
    agentKey: "moltzap_agent_bench",
    webSocket: FakeWebSocket,
    onEvent: (e) => {
      if (e.type !== "messageReceived") return other("moltzap", e);
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
  // Its events answer no call (an `error`, `goodbye`, `closed`): the chunks come from the stream.
  const connecting = aw.RktClient.connect("ws://fake/rkt", { webSocket: FakeWebSocket, onEvent: (e) => other("rkt", e) });
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
      if (e.type !== "event" || e.kind !== "message") return other("switch", e);
      count++;
      sink = e;
      if (READ) sink = e.payload;
    },
  });
  const ws = current;
  ws.readyState = 1;
  ws.onopen({});
  // The connection the driver opened (with another id, the engine gives a `diagnostic`).
  const connectionId = new URL(ws.url).searchParams.get("connection_id");
  ws.onmessage({ data: switchConnectionState({ connectionId, agentId: "bench-agent", rooms: [ROOM], heartbeatS: 2 }) });
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

/** CPU nanoseconds per item of `feed`, which takes the whole `list` (maybe asynchronously). */
async function cpu(feed, list) {
  const t = process.cpuUsage();
  await feed(list);
  const d = process.cpuUsage(t);
  return ((d.user + d.system) * 1e3) / list.length;
}

/** The CPU ns per frame of `feed` over `frames`, after checking that each frame gave one
 * measured event and nothing else came (for agentwire, not even a lifecycle event). */
async function run(name, who, feed, frames) {
  check(name, `${who} (setup)`, 0);
  count = 0;
  feeding = who === "agentwire";
  const ns = await cpu(feed, frames);
  feeding = false;
  check(name, who, frames.length);
  count = 0;
  return ns;
}

/** Fails (exit 1) unless `want` measured events came and no other. */
function check(name, who, want) {
  if (stray.length > 0) fail(`${name}: ${who}: ${stray.length} other event(s), the first: ${JSON.stringify(stray[0])}`);
  if (count !== want) fail(`${name}: ${who}: ${count} measured events for ${want} frames`);
}

/** Best, median and worst of `x`. */
function spread(x) {
  const s = [...x].sort((p, q) => p - q);
  const m = s.length >> 1;
  return { min: s[0], median: s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2, max: s[s.length - 1] };
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
    a.push(await run(name, "agentwire", feedAll ?? each(feed), frames));
    await Promise.race([client.close(), new Promise((ok) => setTimeout(ok, 100))]);
    check(name, "agentwire (closing)", 0);
    b.push(await run(name, "baseline", each(baselines[name]), frames));
  }
  const [x, y] = [spread(a), spread(b)];
  console.log(
    `${name.padEnd(8)} agentwire ${x.min.toFixed(0)} ns/event (median ${x.median.toFixed(0)}, worst ${x.max.toFixed(0)}), ` +
      `baseline ${y.min.toFixed(0)} ns/event (median ${y.median.toFixed(0)}, worst ${y.max.toFixed(0)}), ` +
      `baseline/agentwire ${(y.min / x.min).toFixed(2)} (best), ${(y.median / x.median).toFixed(2)} (medians)` +
      `${READ ? " (the callbacks read the payload)" : ""}`,
  );
}
process.exit(0);
