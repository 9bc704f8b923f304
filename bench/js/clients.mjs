// The two clients of each protocol, the same code in Node and in the browser page: agentwire
// (the npm package) and a minimal pure-JS client on the same stream (WebSocket + JSON.parse,
// plus the RKT guide's raw parser for RKT, and a callback; nothing else). Each run counts the
// events handed to a user callback and times them from the first to the N-th.
//
// run(kind, protocol, {aw, url, n, WebSocket, timeoutMs}) → {events, ms, rate, check}

/** What every user callback does with an event: count it and keep the last one. */
function counter(n, done) {
  const c = { count: 0, t0: 0, t1: 0, last: undefined };
  c.take = (item) => {
    if (c.count === 0) c.t0 = performance.now();
    c.last = item;
    if (++c.count === n) {
      c.t1 = performance.now();
      done?.();
    }
  };
  return c;
}

function result(c, n, check) {
  const ms = c.t1 - c.t0;
  return { events: c.count, ms, rate: c.count > 1 ? ((c.count - 1) * 1000) / ms : 0, check: check(c.last, n) };
}

/** Rejects after `ms` (and runs `onTimeout`); `p` otherwise. */
function bounded(p, ms, what, onTimeout) {
  let timer;
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new Error(`${what}: not done within ${ms} ms`));
    }, ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

const uuid = () => crypto.randomUUID();
const SWITCH_AGENT = "bench-agent";
const SWITCH_ROOM = "47e911ea-014b-427b-a600-1c72595f0c98";

/** The last event seen is the N-th of the stream (a sanity check of each run). */
const checks = {
  rkt: (last, n) => last?.seq === n - 1,
  moltzapAgentwire: (last) => last?.type === "messageReceived" && typeof last.messageId === "string",
  moltzapBaseline: (last) => typeof last?.message?.id === "string",
  switchAgentwire: (last, n) => last?.sequence === n,
  switchBaseline: (last, n) => last?.id === n,
};

// ---- agentwire ------------------------------------------------------------------------------

async function agentwireRkt({ aw, url, n, WebSocket, timeoutMs }) {
  const client = await aw.RktClient.connect(url, { webSocket: WebSocket, timeoutMs: 10_000 });
  const c = counter(n);
  try {
    await bounded(
      (async () => {
        for await (const chunk of client.stream("bench.flood", { count: n }, { timeoutMs })) c.take(chunk);
      })(),
      timeoutMs,
      "agentwire rkt",
    );
  } finally {
    await client.close();
  }
  return result(c, n, checks.rkt);
}

async function agentwireMoltzap({ aw, url, n, WebSocket, timeoutMs }) {
  let done;
  const finished = new Promise((r) => (done = r));
  const c = counter(n, () => done());
  const client = await aw.MoltZapClient.connect(url, {
    agentKey: "moltzap_agent_bench",
    webSocket: WebSocket,
    timeoutMs: 10_000,
    onEvent: (e) => {
      if (e.type === "messageReceived") c.take(e);
      else if (e.type === "disconnected") done();
    },
  });
  try {
    await bounded(finished, timeoutMs, "agentwire moltzap");
  } finally {
    await client.close();
  }
  return result(c, n, checks.moltzapAgentwire);
}

async function agentwireSwitch({ aw, url, n, WebSocket, timeoutMs }) {
  let done;
  const finished = new Promise((r) => (done = r));
  const c = counter(n, () => done());
  const client = await aw.SwitchClient.connect(url, {
    token: "relay-token-bench",
    agentId: SWITCH_AGENT,
    rooms: [SWITCH_ROOM],
    reconnect: false,
    webSocket: WebSocket,
    timeoutMs: 10_000,
    onEvent: (e) => {
      if (e.type === "event") c.take(e);
      else if (e.type === "stopped") done();
    },
  });
  try {
    await bounded(finished, timeoutMs, "agentwire switch");
  } finally {
    await client.close();
  }
  return result(c, n, checks.switchAgentwire);
}

// ---- the minimal clients --------------------------------------------------------------------

/** The RKT guide's "TypeScript raw-client.ts", ported as it is (uuidv4 → crypto.randomUUID, the
 * host's WebSocket for `ws`): its `send()` and its `message` parser; it asks for a stream and
 * hands each STREAM_DATA body, JSON.parse'd, to the callback. */
function baselineRkt({ url, n, WebSocket, timeoutMs }) {
  const c = counter(n);
  const SESSION_ID = uuid();
  const ws = new WebSocket(url, "rkt.1.0");

  function send(type, extra = "", body) {
    const msgId = uuid();
    const timestamp = new Date().toISOString();
    const bodyStr = body ? JSON.stringify(body) : null;
    const msg = [
      `RKT/1.0 ${type}`,
      `Version: 1`,
      `Message-ID: ${msgId}`,
      `Session-ID: ${SESSION_ID}`,
      `Timestamp: ${timestamp}`,
      `TTL: 30`,
      extra,
      bodyStr ? `Content-Type: application/json` : "",
      "",
      bodyStr ?? "",
    ].join("\n");
    ws.send(msg);
    return msgId;
  }

  const finished = new Promise((resolve, reject) => {
    ws.onopen = () => {
      send("HELLO", "User-Agent: MyAgent/1.0\nCapabilities: language", { min_version: 1, max_version: 1 });
    };
    ws.onmessage = (ev) => {
      const raw = ev.data.toString();
      const [headerPart, bodyPart] = raw.split("\n\n");
      const type = headerPart.split("\n")[0].split(" ")[1];

      if (type === "HELLO_ACK") {
        send("REQUEST", "Stream: true", { intent: "bench.flood", params: { count: n } });
      }
      if (type === "STREAM_DATA") {
        c.take(JSON.parse(bodyPart));
      }
      if (type === "STREAM_END") {
        send("GOODBYE");
        ws.close();
        resolve();
      }
    };
    ws.onerror = () => reject(new Error("baseline rkt: socket error"));
    ws.onclose = () => resolve();
  });
  return bounded(finished, timeoutMs, "baseline rkt", () => ws.close()).then(() => result(c, n, checks.rkt));
}

/** MoltZap: `agent/network/connect`, then JSON.parse each frame and hand the params of each
 * `messages/received` notification to the callback. */
function baselineMoltzap({ url, n, WebSocket, timeoutMs }) {
  const ws = new WebSocket(url);
  const finished = new Promise((resolve, reject) => {
    const c = counter(n, () => {
      ws.close(1000);
      resolve(c);
    });
    ws.onopen = () =>
      ws.send(
        JSON.stringify({
          jsonrpc: "2.0",
          id: "1",
          method: "agent/network/connect",
          params: { agentKey: "moltzap_agent_bench", minProtocol: "2026.811.0", maxProtocol: "2026.811.0" },
        }),
      );
    ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.method === "messages/received") c.take(msg.params);
    };
    ws.onerror = () => reject(new Error("baseline moltzap: socket error"));
    ws.onclose = () => resolve(c);
  });
  return bounded(finished, timeoutMs, "baseline moltzap", () => ws.close()).then((c) => result(c, n, checks.moltzapBaseline));
}

/** Switch: the same socket the agentwire driver opens (path, query, subprotocols), JSON.parse
 * each frame, answer pings with the cursor, hand each domain event to the callback. */
function baselineSwitch({ url, n, WebSocket, timeoutMs }) {
  const ws = new WebSocket(
    `${url.replace(/^http/, "ws")}/agents/${SWITCH_AGENT}/connection/ws?connection_id=${uuid()}&rooms=${SWITCH_ROOM}`,
    ["agentwire.v1", "agentwire.token.relay-token-bench"],
  );
  const finished = new Promise((resolve, reject) => {
    const c = counter(n, () => {
      ws.close(1000);
      resolve(c);
    });
    ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.id !== undefined) c.take(msg);
      else if (msg.event === "ping") ws.send(JSON.stringify({ type: "pong", cursor: c.last?.id ?? 0 }));
    };
    ws.onerror = () => reject(new Error("baseline switch: socket error"));
    ws.onclose = () => resolve(c);
  });
  return bounded(finished, timeoutMs, "baseline switch", () => ws.close()).then((c) => result(c, n, checks.switchBaseline));
}

// ---- the socket alone ----------------------------------------------------------------------

/** The ceiling: the same handshake and stream, a handler that only counts WebSocket messages
 * (no parse, no callback). Times the N-th message after the handshake like the others. */
function socketOnly(protocol, { url, n, WebSocket, timeoutMs }) {
  let ws;
  if (protocol === "rkt") ws = new WebSocket(url, "rkt.1.0");
  else if (protocol === "moltzap") ws = new WebSocket(url);
  else
    ws = new WebSocket(
      `${url.replace(/^http/, "ws")}/agents/${SWITCH_AGENT}/connection/ws?connection_id=${uuid()}&rooms=${SWITCH_ROOM}`,
      ["agentwire.v1", "agentwire.token.relay-token-bench"],
    );
  const rktHead = (type) => `RKT/1.0 ${type}\nVersion: 1\nMessage-ID: ${uuid()}\nSession-ID: 8b0e8a36-5d0e-4c55-9d0a-3f4c3a1b2c3d\nTimestamp: ${new Date().toISOString()}\nTTL: 30\n`;
  const finished = new Promise((resolve, reject) => {
    const c = counter(n, () => {
      ws.close(1000);
      resolve(c);
    });
    // Messages before the first event: RKT HELLO_ACK and STREAM_BEGIN, the MoltZap HelloOk, the
    // Switch connection_state.
    let skip = protocol === "rkt" ? 2 : 1;
    ws.onopen = () => {
      if (protocol === "rkt") ws.send(`${rktHead("HELLO")}Content-Type: application/json\n\n{"min_version":1,"max_version":1}`);
      if (protocol === "moltzap")
        ws.send(`{"jsonrpc":"2.0","id":"1","method":"agent/network/connect","params":{"agentKey":"moltzap_agent_bench","minProtocol":"2026.811.0","maxProtocol":"2026.811.0"}}`);
    };
    ws.onmessage = (ev) => {
      if (skip > 0) {
        if (protocol === "rkt" && skip === 2)
          ws.send(`${rktHead("REQUEST")}Stream: true\nContent-Type: application/json\n\n{"intent":"bench.flood","params":{"count":${n}}}`);
        skip--;
        return;
      }
      if (protocol === "switch" && ev.data.length < 40) return; // a ping
      c.take(c.count);
    };
    ws.onerror = () => reject(new Error(`socket-only ${protocol}: socket error`));
    ws.onclose = () => resolve(c);
  });
  return bounded(finished, timeoutMs, `socket-only ${protocol}`, () => ws.close()).then((c) => result(c, n, () => true));
}

const runners = {
  agentwire: { rkt: agentwireRkt, moltzap: agentwireMoltzap, switch: agentwireSwitch },
  baseline: { rkt: baselineRkt, moltzap: baselineMoltzap, switch: baselineSwitch },
  socket: Object.fromEntries(["rkt", "moltzap", "switch"].map((p) => [p, (o) => socketOnly(p, o)])),
};

/** One run of `kind` (`agentwire` | `baseline` | `socket`) for `protocol`. */
export async function run(kind, protocol, opts) {
  const r = await runners[kind][protocol]({ timeoutMs: 60_000, ...opts });
  if (r.events !== opts.n) throw new Error(`${kind} ${protocol}: ${r.events} of ${opts.n} events`);
  if (!r.check) throw new Error(`${kind} ${protocol}: the last event is not the ${opts.n}-th`);
  return r;
}

/** The wasm memory's size in bytes. The package does not export its `WebAssembly.Memory`: this
 * reaches it through the wasm-bindgen glue (dist/wasm/agentwire_wasm.js, an internal file of the
 * package), whose `initSync()` returns the instance's exports once it is initialised. */
export async function wasmMemoryBytes(agentwireEntryUrl) {
  try {
    const glue = await import(new URL("./wasm/agentwire_wasm.js", agentwireEntryUrl).href);
    return glue.initSync().memory.buffer.byteLength;
  } catch {
    return undefined;
  }
}
