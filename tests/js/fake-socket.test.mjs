// The clients on a socket the test plays itself: the Switch client's token refresh (no relay: a
// relay refuses a token living past its max lifetime, which is what this needs; a relay the test
// plays for the refresh's races with the token's expiry), and a socket that answers
// synchronously from inside `send` (a test double's way).
import { test } from "node:test";
import assert from "node:assert/strict";
import { SwitchClient } from "agentwire/switch";
import { MoltZapClient } from "agentwire/moltzap";
import { AgentwireError, RktClient } from "agentwire/rkt";
import { FakeRkt, FakeWebSocket, connectionState, fakeRelay, last, rktHeader } from "./fake-ws.mjs";

const b64url = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
/** A token shaped as a relay token (claims, then a signature the client never checks). */
const token = (expS) => `${b64url({ sub: "a", exp: expS })}.sig`;

async function connect(tok, refreshToken) {
  const connecting = SwitchClient.connect("http://fake", { token: tok, agentId: "a", reconnect: false, webSocket: FakeWebSocket, refreshToken });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  ws.onmessage({ data: connectionState });
  return connecting;
}

// setTimeout holds at most 2^31 - 1 ms (24.8 days) and fires at once past it: a token living
// longer must not have refreshToken called at once (and again for each token it returns).
test("a token expiring in 30 days is not refreshed at once", async () => {
  let calls = 0;
  const far = Math.floor(Date.now() / 1000) + 30 * 86_400;
  const client = await connect(token(far), () => (calls++, token(far + 86_400)));
  try {
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(calls, 0);
  } finally {
    await client.close();
  }
});

test("a token expiring in 2 s is refreshed before its exp", async () => {
  let calls = 0;
  const soon = Math.floor(Date.now() / 1000) + 2;
  const client = await connect(token(soon), () => (calls++, token(soon + 3600)));
  try {
    const until = Date.now() + 5_000;
    while (calls === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    assert.equal(calls, 1);
  } finally {
    await client.close();
  }
});

// recentMessages' limit went to a wasm u32, which takes -1 as 4294967295, 2.7 as 2 and NaN as
// 0: anything but a whole number in range is refused with kind invalid, and nothing is sent.
test("MoltZap recentMessages refuses a limit that is not a whole number in range", async () => {
  const sent = [];
  class Answering extends FakeWebSocket {
    send(t) {
      sent.push(JSON.parse(t));
      const m = sent.at(-1);
      this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id: m.id, result: m.method === "agent/network/connect" ? {} : { messages: [], limit: m.params.limit } }) });
    }
  }
  const connecting = MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: Answering, timeoutMs: 2_000 });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  const client = await connecting;
  try {
    const n = sent.length;
    for (const limit of [-1, 2.7, NaN, Infinity, 2 ** 32, "5"]) {
      await assert.rejects(client.recentMessages({ conversationId: "c", limit }), (e) => e.kind === "invalid" && e.message.includes("limit"), String(limit));
    }
    assert.equal(sent.length, n, "nothing was sent");
    assert.equal((await client.recentMessages({ conversationId: "c", limit: 7 })).limit, 7);
    assert.equal(sent.at(-1).params.limit, 7);
  } finally {
    await client.close();
  }
});

// The driver is busy while it calls `send`: an answer delivered from inside it waits for a
// microtask (it was dropped, so the connect hung until its timeout).
test("a MoltZap socket that answers from inside send()", async () => {
  const sent = [];
  class Answering extends FakeWebSocket {
    send(t) {
      sent.push(t);
      const m = JSON.parse(t);
      const result = m.method === "agent/network/connect" ? {} : { echoed: m.method };
      this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id: m.id, result }) });
      this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", method: "test/pushed", params: { n: sent.length } }) });
    }
  }
  const events = [];
  const connecting = MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: Answering, timeoutMs: 2_000, onEvent: (e) => events.push(e) });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  const client = await connecting;
  try {
    assert.deepEqual(await client.call("x/y", {}), { echoed: "x/y" });
    assert.deepEqual(await client.call("x/z", {}), { echoed: "x/z" });
    // Every push after its answer, in order.
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(events.filter((e) => e.type === "other").map((e) => [e.name, e.data.n]), [["test/pushed", 1], ["test/pushed", 2], ["test/pushed", 3]]);
  } finally {
    await client.close();
  }
});

// A call made from inside the socket's send() (the driver is busy then) is refused with kind
// `state`; it was a panic, which ended the wasm instance and every client on it.
test("a MoltZap call from inside the socket's send() is refused, and the client goes on", async () => {
  let client;
  const inner = [];
  class Reentrant extends FakeWebSocket {
    send(t) {
      const m = JSON.parse(t);
      if (m.method === "x/outer") inner.push(client.call("x/inner", {}).then(() => "resolved", (e) => e));
      this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { ok: m.method } }) });
    }
  }
  const connecting = MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: Reentrant, timeoutMs: 2_000 });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  client = await connecting;
  try {
    assert.deepEqual(await client.call("x/outer", {}), { ok: "x/outer" });
    const [refused] = await Promise.all(inner);
    assert.equal(refused?.kind, "state", String(refused));
    assert.deepEqual(await client.call("x/after", {}), { ok: "x/after" });
  } finally {
    await client.close();
  }
});

// Without onEvent, Switch events wait for events(): past its buffer they are held back in the
// engine, and past the engine's queue the connection reopens from its cursor once they are read,
// so the server sends the rest again. Before, the buffer dropped the oldest for good.
test("Switch events() past its buffer: none is lost", { timeout: 20_000 }, async () => {
  const sockets = [];
  class Sw extends FakeWebSocket {
    constructor(url) {
      super(url);
      sockets.push(this);
    }
  }
  const message = (n) => JSON.stringify({ event: "message", data: { type: "message", room_id: "r", payload: { n }, sequence: n }, id: n });
  const state = (cursor) => connectionState.replace('"cursor":0', `"cursor":${cursor}`);
  const LAST = 40;
  const connecting = SwitchClient.connect("http://fake", {
    token: "t",
    agentId: "a",
    webSocket: Sw,
    maxBufferedEvents: 3,
    maxQueuedEvents: 5,
    backoff: { baseMs: 1, maxMs: 2, minMs: 1 },
  });
  const open = (ws, cursor, from) => {
    ws.readyState = 1;
    ws.onopen({});
    ws.onmessage({ data: state(cursor) });
    for (let n = from; n <= LAST; n++) ws.onmessage({ data: message(n) });
  };
  open(sockets[0], 0, 1);
  const client = await connecting;
  try {
    const seen = [];
    const it = client.events();
    const until = Date.now() + 15_000;
    // One next() at a time: one left behind by the timer would take an event nobody looks at.
    let pending = it.next();
    while (seen.at(-1) !== LAST) {
      if (Date.now() > until) throw new Error(`stuck at ${seen.join()}; ${sockets.length} sockets`);
      const tick = new Promise((r) => setTimeout(() => r(undefined), 50));
      const next = await Promise.race([pending, tick]);
      if (next !== undefined) {
        pending = it.next();
        if (next.value?.type === "event") seen.push(next.value.sequence);
      }
      // A reopen: answer it from the cursor it asks for, and send the rest again.
      const ws = sockets.at(-1);
      if (ws.readyState === 0 && sockets.length > 1) {
        const from = Number(new URL(ws.url).searchParams.get("start_from") ?? 0);
        open(ws, from, from + 1);
      }
    }
    assert.deepEqual(seen, Array.from({ length: LAST }, (_, i) => i + 1));
    assert.equal(client.droppedEvents, 0);
    assert.ok(sockets.length > 1, "the engine reopened from its cursor");
  } finally {
    await client.close();
  }
});

/** A Switch client on a fake socket whose events go to `events`; `message(n)` is the frame of
 * event `n`, with payload `{n}`. */
async function switchEvents() {
  const events = [];
  const connecting = SwitchClient.connect("http://fake", { token: "t", agentId: "a", reconnect: false, webSocket: FakeWebSocket, onEvent: (e) => events.push(e) });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  ws.onmessage({ data: connectionState });
  const message = (n) => JSON.stringify({ event: "message", data: { type: "message", room_id: "r", payload: { n }, sequence: n }, id: n });
  return { client: await connecting, ws, events, message };
}

// An event's payload is a getter defined with a descriptor object (`lazyField`), and
// `Object.defineProperty` reads a descriptor's `value` and `writable` through its prototype: with
// `Object.prototype.value` set by another library (a prototype pollution elsewhere in the app),
// every event with a payload threw inside the socket's handler and was lost, its sequence taken
// as delivered (the cursor moved past it). The descriptor has no prototype now.
test("a realm with Object.prototype.value polluted still delivers Switch payloads", async () => {
  const { client, ws, events, message } = await switchEvents();
  try {
    for (const key of ["value", "writable"]) {
      Object.prototype[key] = 1;
      try {
        ws.onmessage({ data: message(key === "value" ? 1 : 2) });
      } finally {
        delete Object.prototype[key];
      }
    }
    await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(events.filter((e) => e.type === "event").map((e) => e.payload), [{ n: 1 }, { n: 2 }]);
  } finally {
    await client.close();
  }
});

// An event's payload getter kept its state in private fields of the event, which only the event
// itself has: read through a Proxy that passes itself as the receiver (Vue's `reactive`, which
// a Vue app's state puts around every object it holds), an object inheriting from the event, or
// assigned through them, it threw "Cannot read private member". Frozen (immer's state) or
// cloned, it still reads; the state stays out of `deepStrictEqual`, `Object.keys` and JSON.
test("an event's payload reads through a reactive Proxy, a frozen event and an heir", async () => {
  const { client, ws, events, message } = await switchEvents();
  const reactive = (o) => new Proxy(o, { get: (t, k, r) => Reflect.get(t, k, r), set: (t, k, v, r) => Reflect.set(t, k, v, r) });
  try {
    for (let n = 1; n <= 5; n++) ws.onmessage({ data: message(n) });
    const [e1, e2, e3, e4, e5] = events.filter((e) => e.type === "event");
    assert.deepEqual(reactive(e1).payload, { n: 1 });
    const p2 = reactive(e2);
    p2.payload = "set";
    assert.deepEqual([p2.payload, e2.payload], ["set", "set"]);
    assert.deepEqual(Object.create(e3).payload, { n: 3 });
    assert.deepEqual(Object.freeze(e4).payload, { n: 4 });
    assert.deepEqual(structuredClone(e4), JSON.parse(JSON.stringify(e4)));
    assert.deepStrictEqual({ ...e4 }, { type: "event", kind: e4.kind, sequence: 4, room_id: "r", payload: { n: 4 } });
    assert.deepStrictEqual(e4, { ...e4 });
    // A deep freeze through every key's descriptor, the payload unread.
    const freeze = (o) => {
      for (const k of Reflect.ownKeys(o)) {
        const v = Object.getOwnPropertyDescriptor(o, k).value;
        if (typeof v === "object" && v !== null) freeze(v);
      }
      return Object.freeze(o);
    };
    assert.deepEqual([freeze(e5).payload, e5.payload], [{ n: 5 }, { n: 5 }]);
  } finally {
    await client.close();
  }
});

// Switch engines hold events back while `events()` is not read, up to `maxQueuedBytes` each
// (64 MiB), all in one wasm memory: 64 clients of a flooding server filled its 4 GiB, and the
// instance trapped ("unreachable") for every client. What they hold together is now bounded
// (256 MiB): past it an engine takes no more until its page reads (none is lost).
test("Switch engines holding events back share one bound for the module", { timeout: 60_000 }, async () => {
  const sockets = [];
  class Sw extends FakeWebSocket {
    constructor(url) {
      super(url);
      sockets.push(this);
    }
  }
  const payload = "x".repeat(900_000);
  const message = (n) => JSON.stringify({ event: "message", data: { type: "message", room_id: "r", payload, sequence: n }, id: n });
  const clients = [];
  try {
    for (let i = 0; i < 6; i++) {
      const connecting = SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: Sw, maxBufferedBytes: 1 << 20 });
      const ws = sockets.at(-1);
      ws.readyState = 1;
      ws.onopen({});
      ws.onmessage({ data: connectionState });
      clients.push(await connecting);
      for (let n = 1; n <= 80; n++) ws.onmessage({ data: message(n) });
    }
    // Each engine says how much it held when it stopped taking events.
    const held = [];
    for (const client of clients) {
      for await (const e of client.events()) {
        const m = e.type === "diagnostic" && /wait to be polled/.test(e.error.message) && e.error.message.match(/\((\d+) bytes\)/);
        if (m) {
          held.push(Number(m[1]));
          break;
        }
      }
    }
    const total = held.reduce((a, b) => a + b, 0);
    assert.ok(total <= (256 << 20) + 6 * ((1 << 20) + 1_000_000), `held together ${total} bytes: ${held.join(", ")}`);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
});

// A connection that stops while events are held back still ends: `stopped` comes after every
// held event (nothing would release the hold otherwise), and a buffer of 0 still moves.
test("Switch events() held back: a stop still ends the connection, and a buffer of 0 still moves", { timeout: 10_000 }, async () => {
  for (const maxBufferedEvents of [2, 0]) {
    const connecting = SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: FakeWebSocket, maxBufferedEvents, reconnect: false });
    const ws = last();
    ws.readyState = 1;
    ws.onopen({});
    ws.onmessage({ data: connectionState });
    const client = await connecting;
    for (let n = 1; n <= 10; n++) {
      ws.onmessage({ data: JSON.stringify({ event: "message", data: { type: "message", room_id: "r", payload: {}, sequence: n }, id: n }) });
    }
    // Refused for good (4401): the engine stops while the buffer holds events back.
    ws.readyState = 3;
    ws.onclose({ code: 4401, reason: "" });
    const started = Date.now();
    const types = [];
    for await (const e of client.events()) types.push(e.type === "event" ? e.sequence : e.type);
    assert.deepEqual(types.filter((t) => typeof t === "number"), Array.from({ length: 10 }, (_, i) => i + 1), `buffer ${maxBufferedEvents}: ${types}`);
    assert.equal(types.at(-1), "stopped", `buffer ${maxBufferedEvents}: ${types}`);
    assert.ok(client.closed, `buffer ${maxBufferedEvents}: closed`);
    await client.close();
    assert.ok(Date.now() - started < 1_500, `buffer ${maxBufferedEvents}: took ${Date.now() - started} ms`);
  }
});

// A refused MoltZap connect closes its socket with 1000 "connect failed": the close frame goes out
// before the driver lets go of the socket (it was dropped, and the socket closed with no code).
test("a refused MoltZap connect closes its socket with a code", async () => {
  const closes = [];
  class Refusing extends FakeWebSocket {
    send(text) {
      const { id } = JSON.parse(text);
      queueMicrotask(() => this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id, error: { code: -32001, message: "bad key" } }) }));
    }
    close(...args) {
      closes.push(args);
      super.close();
    }
  }
  const connecting = MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: Refusing, timeoutMs: 2_000 });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  await assert.rejects(connecting, (e) => e.kind === "auth" || e.kind === "remote" || e.kind === "protocol");
  assert.deepEqual(closes[0], [1000, "connect failed"]);
});

/** An RKT client on a `FakeRkt`, and the socket. */
async function rkt(opts = {}) {
  const client = await RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, keepalive: false, ...opts });
  return { client, ws: last() };
}

// The event handed to onEvent is the app's: the client looked at its `type` only after the
// callback, so one that renamed it (`e.type = "rkt:" + e.type`, an app's event bus) hid the last
// event: close() waited out its 2 s grace, `closed` stayed false, and the client stayed in the
// package's set of live clients for good. The type is read before the callback now.
test("an onEvent that renames the event's type does not hide the last event", async () => {
  const seen = [];
  const { client } = await rkt({ onEvent: (e) => seen.push((e.type = `rkt:${e.type}`)) });
  const t = Date.now();
  await client.close();
  assert.deepEqual([seen, client.closed], [["rkt:closed"], true]);
  assert.ok(Date.now() - t < 1000, `close() took ${Date.now() - t} ms`);
});

/** What reading `it` to its end gives: the values, and the error's kind and message it ended with. */
async function drain(it) {
  const got = [];
  try {
    for await (const v of it) got.push(v);
  } catch (e) {
    return { got, error: e.kind, message: e.message };
  }
  return { got };
}

// memoryGet resolves with an `RktMemoryEntry` (an object), as its type says: a reply the engine's
// `MemoryGetBody::read_reply` refuses (no body, not an object, a `found` not a boolean) is kind
// `decode`, as in the native client (docs/protocols/rkt.md, "Acks").
test("an RKT memoryGet reply that is not an entry is refused with kind decode", async () => {
  const { client, ws } = await rkt();
  const lastGet = () => ws.sent.findLast((t) => t.startsWith("RKT/1.0 MEMORY_GET\n")).match(/^Message-ID: (.*)$/m)[1];
  try {
    for (const body of ["", "null", "[1]", '"text"', '{"found":"yes"}']) {
      const got = client.memoryGet("k");
      ws.reply(lastGet(), "RESPONSE", body);
      await assert.rejects(got, (e) => e instanceof AgentwireError && e.kind === "decode" && /MEMORY_GET reply/.test(e.message), `body ${JSON.stringify(body)}`);
    }
    const entry = client.memoryGet("k");
    ws.reply(lastGet(), "RESPONSE", '{"key":"k","found":false,"value":null}');
    assert.deepEqual(await entry, { key: "k", found: false, value: null });
  } finally {
    await client.close();
  }
});

// An abort, or the stream's timeoutMs, ends the stream at the next read: the chunks still unread
// are dropped (up to 1024 of them came first, then `cancelled`).
test("an RKT stream aborted or timed out with chunks unread: the next read is its error", async () => {
  const { client, ws } = await rkt();
  try {
    const ac = new AbortController();
    const cases = [
      [{ signal: ac.signal }, () => ac.abort(), "cancelled"],
      [{ timeoutMs: 30 }, () => new Promise((r) => setTimeout(r, 60)), "timeout"],
    ];
    for (const [opts, stop, kind] of cases) {
      const it = client.stream("s", {}, opts);
      const id = ws.lastRequest();
      ws.reply(id, "STREAM_BEGIN");
      for (let i = 0; i < 100; i++) ws.reply(id, "STREAM_DATA", String(i), { Seq: i });
      assert.deepEqual(await it.next(), { value: 0, done: false });
      await stop();
      const { got, error } = await drain(it);
      assert.deepEqual({ got, error }, { got: [], error: kind });
    }
  } finally {
    await client.close();
  }
});

// The chunks before the server's ERROR are the server's data: they come, then the error, then
// the end.
test("an RKT stream that fails after its chunks: the chunks, the error once, then the end", async () => {
  const { client, ws } = await rkt();
  try {
    const it = client.stream("s", {});
    const id = ws.lastRequest();
    ws.reply(id, "STREAM_BEGIN");
    for (let i = 0; i < 3; i++) ws.reply(id, "STREAM_DATA", String(i), { Seq: i });
    ws.reply(id, "ERROR", '{"code":500,"message":"boom"}');
    const { got, error } = await drain(it);
    assert.deepEqual({ got, error }, { got: [0, 1, 2], error: "remote" });
    assert.deepEqual(await it.next(), { value: undefined, done: true });
  } finally {
    await client.close();
  }
});

// A stream's own bound is 1024 chunks unread: past it the stream fails with kind `limit` after
// the chunks it holds, and the message says it is this stream's reader that fell behind.
test("an RKT stream 1024 chunks behind fails with limit, saying so", async () => {
  const { client, ws } = await rkt();
  try {
    const it = client.stream("s", {});
    const id = ws.lastRequest();
    ws.reply(id, "STREAM_BEGIN");
    for (let i = 0; i < 1025; i++) ws.reply(id, "STREAM_DATA", "1", { Seq: i });
    const { got, error, message } = await drain(it);
    assert.deepEqual([got.length, error, message], [1024, "limit", "1024 chunks unread on this stream: its reader fell behind"]);
  } finally {
    await client.close();
  }
});

// The unread chunks of a client's running streams share one bound of 64 Mi characters (as the
// native client's 64 MiB): each stream was bounded alone, so streams each under it held any
// amount together. The stream whose chunk finds it full fails with kind `limit`, after its
// chunks. A stream that has ended leaves the bound: one abandoned unread takes no room from the
// streams after it.
test("the unread chunks of a client's running RKT streams are bounded together", { timeout: 60_000 }, async () => {
  const { client, ws } = await rkt({ maxMessageSize: 4 << 20 });
  try {
    const chunk = JSON.stringify("x".repeat(2 << 20));
    const open = (chunks, end = true) => {
      const it = client.stream("s", {});
      const id = ws.lastRequest();
      ws.reply(id, "STREAM_BEGIN");
      for (let i = 0; i < chunks; i++) ws.reply(id, "STREAM_DATA", chunk, { Seq: i });
      if (end) ws.reply(id, "STREAM_END");
      return [it, id];
    };
    const [a, aId] = open(30, false); // 60 Mi characters, still running
    const [b] = open(2); // 4 Mi more: the second finds the bound full
    const { got, error, message } = await drain(b);
    assert.deepEqual([got.length, error], [1, "limit"]);
    // `b`'s reader read all it could: the message says whose bound it is, not that b fell behind.
    assert.equal(message, "this client's streams hold 67108864 characters unread: a reader fell behind");
    // What a read frees is free for another stream.
    assert.equal((await a.next()).value.length, 2 << 20);
    assert.deepEqual(await drain(open(1)[0]), { got: [chunk.slice(1, -1)] });
    // Ended, `a` leaves the bound: never read again, it refuses no later stream.
    ws.reply(aId, "STREAM_END");
    for (let k = 0; k < 3; k++) {
      const later = await drain(open(3)[0]);
      assert.deepEqual([later.got.length, later.error], [3, undefined]);
    }
    const rest = await drain(a);
    assert.deepEqual([rest.got.length, rest.error], [29, undefined]);
  } finally {
    await client.close();
  }
});

// JSON makes NaN and Infinity null, which the engine took for an option left out (the default):
// they are refused, naming the option, as negative numbers were.
test("options of NaN or Infinity are refused with kind invalid, as negative ones", async () => {
  const refused = (what) => (e) => e.kind === "invalid" && e.message.includes(what);
  for (const [key, bad] of [["ttlS", NaN], ["ttlS", Infinity], ["ttlS", -1], ["maxInFlight", -Infinity]]) {
    await assert.rejects(RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, [key]: bad }), refused(key), `${key}: ${bad}`);
  }
  await assert.rejects(MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: FakeWebSocket, requestTimeoutMs: Infinity }), refused("requestTimeoutMs"));
  for (const opts of [{ openTimeoutMs: NaN }, { backoff: { factor: Infinity } }, { maxReconnectAttempts: -1 }]) {
    const key = Object.keys(opts.backoff ?? opts)[0];
    await assert.rejects(SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: FakeWebSocket, ...opts }), refused(key), key);
  }
  const { client } = await rkt();
  try {
    await assert.rejects(client.request("x", {}, { ttlS: NaN }), refused("ttlS"));
    for (const ttlS of [NaN, -1, Infinity]) await assert.rejects(client.memorySet("k", 1, { ttlS }), refused("ttlS"), `memorySet ttlS ${ttlS}`);
  } finally {
    await client.close();
  }
});

// Every Switch ping moves the liveness deadline later, and the driver's timer was cleared and set
// again each time (30 of each a minute per idle client): a timer armed earlier is kept now, its
// early fire finds nothing due and re-arms.
test("Switch pings that move the deadline later re-arm no timer", async () => {
  const client = await connect("t");
  const ws = last();
  const [realSet, realClear] = [globalThis.setTimeout, globalThis.clearTimeout];
  let sets = 0;
  let clears = 0;
  try {
    await new Promise((r) => realSet(r, 20));
    globalThis.setTimeout = (...a) => (sets++, realSet(...a));
    globalThis.clearTimeout = (h) => (clears++, realClear(h));
    const sent = [];
    ws.send = (t) => sent.push(JSON.parse(t));
    for (let i = 0; i < 10; i++) {
      ws.onmessage({ data: JSON.stringify({ event: "ping", data: {} }) });
      await new Promise((r) => realSet(r, 3));
    }
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
    assert.deepEqual(sent.map((f) => f.type), Array(10).fill("pong"), "each ping answered");
    assert.equal(client.status().state, "live");
    // The test's own 3 ms waits call the real setTimeout, not the counted one.
    assert.deepEqual([sets, clears], [0, 0]);
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
    await client.close();
  }
});

// A startFrom or expectedGeneration past 2^53 given as a number was rounded before the engine saw
// it, and taken as another valid value (a generation fencing the wrong attach is a final
// taken_over): refused with kind invalid; the same value as a string of digits goes out exact.
test("Switch startFrom and expectedGeneration past 2^53 as numbers are refused; as strings they are exact", async () => {
  for (const opts of [{ startFrom: 2 ** 60 }, { expectedGeneration: 2 ** 53 + 2 }]) {
    const key = Object.keys(opts)[0];
    await assert.rejects(
      SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: FakeWebSocket, ...opts }),
      (e) => e.kind === "invalid" && e.message.includes(key) && e.message.includes("string"),
      key,
    );
  }
  // Digits only: a sign or a space is no sequence.
  for (const startFrom of ["+5", " 5", "5 ", ""]) {
    await assert.rejects(SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: FakeWebSocket, startFrom }), (e) => e.kind === "invalid" && e.message.includes("startFrom"), JSON.stringify(startFrom));
  }
  const connecting = SwitchClient.connect("http://fake", {
    token: "t",
    agentId: "a",
    reconnect: false,
    webSocket: FakeWebSocket,
    startFrom: "1152921504606846977",
    expectedGeneration: "9007199254740993",
  });
  const ws = last();
  assert.match(ws.url, /[?&]start_from=1152921504606846977(&|$)/);
  assert.match(ws.url, /[?&]expected_generation=9007199254740993(&|$)/);
  ws.readyState = 1;
  ws.onopen({});
  ws.onmessage({ data: connectionState });
  await (await connecting).close();
});

// A timeoutMs of NaN or below 0 fired at once on RKT (kind timeout) and was refused on MoltZap
// (invalid): every call refuses it now, before it starts. Infinity is no bound, on every client.
test("a timeoutMs of NaN or below 0 is refused with kind invalid; Infinity is no bound", async () => {
  const { client, ws } = await rkt();
  try {
    const sent = ws.sent.length;
    for (const timeoutMs of [NaN, -1]) {
      const invalid = (e) => e.kind === "invalid" && e.message.includes("timeoutMs");
      await assert.rejects(client.request("x", {}, { timeoutMs }), invalid);
      await assert.rejects(client.stream("x", {}, { timeoutMs }).next(), invalid);
      await assert.rejects(client.ping({ timeoutMs }), invalid);
      await assert.rejects(RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, timeoutMs }), invalid);
      await assert.rejects(MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: FakeWebSocket, timeoutMs }), invalid);
      await assert.rejects(SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: FakeWebSocket, timeoutMs }), invalid);
    }
    assert.equal(ws.sent.length, sent, "nothing was sent");
    const answered = client.request("x", {}, { timeoutMs: Infinity });
    ws.reply(ws.lastRequest(), "RESPONSE", '{"ok":true}');
    assert.deepEqual(await answered, { ok: true });
  } finally {
    await client.close();
  }
  const sw = await connect("t");
  try {
    const notInvalid = (e) => e.kind !== "invalid" || assert.fail(e.message);
    await assert.rejects(sw.op("x", {}, { timeoutMs: Infinity, signal: AbortSignal.timeout(50) }), notInvalid);
    await assert.rejects(sw.op("x", {}, { timeoutMs: NaN }), { kind: "invalid" });
  } finally {
    await sw.close();
  }
});

// A call the package gives up on after making it (timeoutMs, AbortSignal.timeout) may have been
// carried out: its timeout is not retryable, as the engines' own for a call sent and unanswered
// (a REQUEST timed out here was retryable, and a retry could do it twice). One never made is.
test("a call given up on after it was made is a timeout that is not retryable", async () => {
  const { client, ws } = await rkt();
  try {
    const mayHaveRun = (e) =>
      e.kind === "timeout" && e.retryable === false && e.info.retryable === false && e.message.includes("it was sent: the server may have carried it out");
    await assert.rejects(client.request("order.place", {}, { timeoutMs: 30 }), mayHaveRun);
    await assert.rejects(client.request("x", {}, { signal: AbortSignal.timeout(30) }), mayHaveRun);
    await assert.rejects(client.stream("x", {}, { timeoutMs: 30 }).next(), mayHaveRun);
    const timedOutBefore = AbortSignal.timeout(0);
    await new Promise((r) => setTimeout(r, 20));
    const sent = ws.sent.length;
    await assert.rejects(client.request("x", {}, { signal: timedOutBefore }), { kind: "timeout", retryable: true });
    assert.equal(ws.sent.length, sent, "nothing was sent");
  } finally {
    await client.close();
  }
});

// A driver left borrowed for good by an exception thrown through the module: what reaches it is
// dropped, where the microtask that waited for it queued itself again forever (the isolate spun:
// 19 s of CPU in 29 s in workerd, every later request timing out), and its calls are refused with
// kind `state`, saying so. In a worker thread, ended if it hangs.
test("a client an exception left busy for good: its input is dropped, its calls refused", async () => {
  const { Worker } = await import("node:worker_threads");
  const worker = new Worker(new URL("./leaked-borrow.mjs", import.meta.url));
  try {
    const got = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no answer within 5 s: the thread spins")), 5_000);
      worker.once("message", (m) => (clearTimeout(timer), resolve(m)));
      worker.once("error", (e) => (clearTimeout(timer), reject(e)));
    });
    assert.match(got.first, /a host function that threw/);
    assert.match(got.later, /^state: the client is broken/);
    assert.match(got.close, /^state: the client is broken/);
  } finally {
    await worker.terminate();
  }
});

// The same for a Switch client whose socket closed as the exception came, so that no input
// arrives to find it broken: a call that finds it busy has it looked at again in a microtask,
// and from then on status() and every call say it is broken (they said "busy: called from
// inside its own WebSocket's send()" for ever).
test("a Switch client an exception left busy for good: status() and its calls say it is broken", async () => {
  const { Worker } = await import("node:worker_threads");
  const worker = new Worker(new URL("./leaked-borrow-switch.mjs", import.meta.url));
  try {
    const got = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no answer within 5 s: the thread spins")), 5_000);
      worker.once("message", (m) => (clearTimeout(timer), resolve(m)));
      worker.once("error", (e) => (clearTimeout(timer), reject(e)));
    });
    assert.equal(got.before, "live");
    assert.match(got.first, /a host function that threw/);
    assert.match(got.busy, /^state: the client is busy/);
    assert.match(got.broken, /^state: the client is broken/);
    assert.match(got.op, /^state: the client is broken/);
    assert.match(got.close, /^state: the client is broken/);
  } finally {
    await worker.terminate();
  }
});

// A stack overflow inside one client's delivery (its batch of calls cut short, or the microtask
// that drains deferred input not queued) stopped every other client of the module: their
// replies and events were queued behind the cut batch for good (a request of another client
// never answered). In a worker thread, ended if it hangs.
test("a stack overflow inside one client's delivery does not stop another client's", async () => {
  const { Worker } = await import("node:worker_threads");
  const worker = new Worker(new URL("./overflowed.mjs", import.meta.url));
  try {
    const got = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no answer within 10 s: the thread spins")), 10_000);
      worker.once("message", (m) => (clearTimeout(timer), resolve(m)));
      worker.once("error", (e) => (clearTimeout(timer), reject(e)));
    });
    assert.ok(got.tries > 100, `overflowed at ${got.tries} depths`);
    assert.equal(got.other, "resolved");
    assert.deepEqual(got.events, ["error"]);
  } finally {
    await worker.terminate();
  }
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Waits for `cond`; fails after `ms` saying `what` (a function: what it says then). */
async function until(what, cond, ms = 5_000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${typeof what === "function" ? what() : what}`);
    await sleep(10);
  }
}

/** A Switch client through `fakeRelay` with a token expiring at `expS`, and its events. */
async function relayed(expS, refreshToken, options = {}) {
  const relay = fakeRelay();
  const events = [];
  const client = await SwitchClient.connect("http://fake", {
    token: token(expS),
    agentId: "a",
    webSocket: relay.Relay,
    backoff: { baseMs: 1, minMs: 1, maxMs: 2 },
    refreshToken,
    onEvent: (e) => events.push(e),
    ...options,
  });
  return { client, events, ...relay };
}

// The relay closes the socket at `exp` while refreshToken has not answered yet: the engine's
// reopen (after its backoff) went with the old token, which the relay refuses, and the connection
// stopped with kind `auth` for good. The reopen waits for the answer now.
test("Switch: a refresh that answers after the relay's expiry close: the reopen waits for it", { timeout: 10_000 }, async () => {
  const exp = Math.floor(Date.now() / 1000) + 2;
  let answer;
  const { client, events, opened, expire } = await relayed(exp, () => new Promise((r) => (answer = () => r(token(exp + 3600)))));
  try {
    await until("refreshToken called", () => answer);
    await until("exp", () => Date.now() >= exp * 1000);
    expire(opened[0]);
    await sleep(200);
    answer();
    await until(() => `connected again; events: ${JSON.stringify(events)}`, () => events.filter((e) => e.type === "connected").length === 2);
    assert.equal(client.status().state, "live");
    assert.deepEqual(opened.map((ws) => ws.token), [token(exp), token(exp + 3600)]);
    assert.ok(!events.some((e) => e.type === "stopped"), JSON.stringify(events));
  } finally {
    await client.close();
  }
});

// Timers run late (a machine that slept: setTimeout counts monotonic time, exp is the wall
// clock's; a frozen tab; a client clock behind the relay's), past the token's `exp`: the call
// scheduled before `exp` never ran, the reopen went with the old token and was refused. The
// relay's expiry close calls refreshToken at once now, and the reopen waits for it.
test("Switch: the refresh timer late by more than the margin: the relay's expiry close refreshes", { timeout: 10_000 }, async () => {
  const exp = Math.floor(Date.now() / 1000) + 2;
  let calls = 0;
  const real = globalThis.setTimeout;
  // Every timer of 500 ms or more fires 5 s late.
  globalThis.setTimeout = (f, ms, ...a) => real(f, ms >= 500 ? ms + 5_000 : ms, ...a);
  let client, events, opened, expire;
  try {
    ({ client, events, opened, expire } = await relayed(exp, async () => (calls++, token(exp + 3600))));
    await until("exp", () => Date.now() >= exp * 1000);
    assert.equal(calls, 0, "the timer is late");
    expire(opened[0]);
    await until(() => `connected again; events: ${JSON.stringify(events)}`, () => events.filter((e) => e.type === "connected").length === 2);
    assert.equal(calls, 1);
    assert.equal(client.status().state, "live");
    assert.equal(opened[1].token, token(exp + 3600));
  } finally {
    globalThis.setTimeout = real;
    await client?.close();
  }
});

// The wall clock moves past the refresh time while timers do not (the machine slept): the first
// input finds it due (here a frame), and the driver's timer never waits more than 30 s to look
// (a token of an hour armed one timer of 59 minutes).
test("Switch: the refresh time passed while timers slept: the next input calls it; no timer over 30 s", { timeout: 10_000 }, async () => {
  const realNow = Date.now;
  const realTimeout = globalThis.setTimeout;
  const delays = [];
  let calls = 0;
  const exp = Math.floor(realNow() / 1000) + 3600;
  // The timers armed until the connection is live (the fake relay's have no delay).
  globalThis.setTimeout = (f, ms, ...a) => (ms && delays.push(ms), realTimeout(f, ms, ...a));
  const { client, opened } = await relayed(exp, () => (calls++, token(exp + 3600))).finally(() => (globalThis.setTimeout = realTimeout));
  try {
    assert.ok(delays.length >= 1 && Math.max(...delays) <= 30_000, `timers armed: ${delays}`);
    assert.equal(calls, 0);
    // 59 minutes later by the wall clock: due (a minute before exp).
    Date.now = () => realNow() + 59 * 60_000 + 1_000;
    const message = JSON.stringify({ event: "message", data: { type: "message", room_id: "r", payload: {}, sequence: 1 }, id: 1 });
    opened[0].onmessage({ data: message });
    await sleep(20);
    assert.equal(calls, 1);
  } finally {
    Date.now = realNow;
    globalThis.setTimeout = realTimeout;
    await client.close();
  }
});

// A reopen while refreshToken has not answered, with a token still valid: it goes at once with
// that token (a refresh that hangs must not keep the connection closed).
test("Switch: a reopen with a token still valid does not wait for a refresh in flight", { timeout: 10_000 }, async () => {
  const exp = Math.floor(Date.now() / 1000) + 5;
  let called = false;
  const { client, events, opened } = await relayed(exp, () => ((called = true), new Promise(() => {})));
  try {
    await until("refreshToken called", () => called);
    opened[0].readyState = 3;
    opened[0].onclose({ code: 1006, reason: "" });
    await until(() => `connected again; events: ${JSON.stringify(events)}`, () => events.filter((e) => e.type === "connected").length === 2, 1_000);
    assert.equal(opened[1].token, token(exp));
  } finally {
    await client.close();
  }
});

// A refreshToken that never settles, called at the relay's expiry close: every reopen waited for
// it, each wait ended at openTimeoutMs, the engine backed off and reopened, and refreshToken was
// never called again: the connection stayed closed for good, without a word. A call gets
// openTimeoutMs to answer now; past it, it has failed (a diagnostic) and the next reopen calls
// again.
test("Switch: a refresh that never answers after the relay's expiry close: it is called again, and the reopen goes with the next token", { timeout: 10_000 }, async () => {
  const exp = Math.floor(Date.now() / 1000) + 2;
  let calls = 0;
  // The first call answers nothing before exp; it answers late (after the second), with an older
  // token than the second's, which must not replace it.
  let late;
  const refresh = () => {
    calls++;
    if (calls === 1) return new Promise((r) => (late = () => r(token(exp + 60))));
    if (calls === 2) return new Promise(() => {});
    return token(exp + 3600);
  };
  const { client, events, opened, expire } = await relayed(exp, refresh, { openTimeoutMs: 300 });
  try {
    await until("refreshToken called", () => calls === 1);
    await until("exp", () => Date.now() >= exp * 1000);
    expire(opened[0]);
    await until(() => `connected again; calls ${calls}; events: ${JSON.stringify(events)}`, () => events.filter((e) => e.type === "connected").length === 2, 4_000);
    assert.equal(calls, 3);
    assert.equal(client.status().state, "live");
    assert.deepEqual(opened.map((ws) => ws.token), [token(exp), token(exp + 3600)]);
    const failed = events.filter((e) => e.type === "diagnostic" && e.error.kind === "auth");
    assert.ok(failed.length >= 2 && failed.every((e) => /^refreshToken failed: no answer within 300 ms/.test(e.error.message)), JSON.stringify(failed));
    // The first call's late answer, a token older than the one taken, is not taken: the next
    // reopen goes with the newest.
    late();
    await sleep(50);
    opened[1].readyState = 3;
    opened[1].onclose({ code: 1006, reason: "" });
    await until(() => `connected again; events: ${JSON.stringify(events)}`, () => events.filter((e) => e.type === "connected").length === 3);
    assert.equal(opened.at(-1).token, token(exp + 3600));
  } finally {
    await client.close();
  }
});

// One failed call while the reopen after the relay's expiry close waited for it: the reopen went
// with the expired token, the relay refused it (4401) and the connection stopped with kind `auth`
// for good. The failure fails that open now (retried with the backoff), and the next reopen calls
// refreshToken again.
test("Switch: a refresh that fails once after the relay's expiry close: the next call's token reopens it", { timeout: 10_000 }, async () => {
  const exp = Math.floor(Date.now() / 1000) + 2;
  let calls = 0;
  const { client, events, opened, expire } = await relayed(exp, async () => {
    calls++;
    if (calls === 1) {
      await sleep(1_500);
      throw new Error("network down");
    }
    return token(exp + 3600);
  });
  try {
    await until("refreshToken called", () => calls === 1);
    await until("exp", () => Date.now() >= exp * 1000);
    expire(opened[0]);
    await until(() => `connected again; events: ${JSON.stringify(events)}`, () => events.filter((e) => e.type === "connected").length === 2);
    assert.equal(calls, 2);
    assert.equal(client.status().state, "live");
    assert.deepEqual(opened.map((ws) => ws.token), [token(exp), token(exp + 3600)]);
    assert.ok(events.some((e) => e.type === "diagnostic" && e.error.message === "refreshToken failed: network down"), JSON.stringify(events));
    assert.ok(!events.some((e) => e.type === "stopped"), JSON.stringify(events));
  } finally {
    await client.close();
  }
});

// connect with a token already expired (a stored one, a day old) and refreshToken: the first open
// went with it, the relay refused it (4401) and connect failed with kind `auth`. It waits for the
// renewal now; a renewal that fails fails the connect, naming it.
test("Switch: connect with an expired token calls refreshToken first", { timeout: 10_000 }, async () => {
  const old = Math.floor(Date.now() / 1000) - 86_400;
  const fresh = Math.floor(Date.now() / 1000) + 3600;
  let calls = 0;
  const { client, events, opened } = await relayed(old, async () => (calls++, token(fresh)));
  try {
    assert.equal(calls, 1);
    assert.deepEqual(opened.map((ws) => ws.token), [token(fresh)]);
    assert.equal(client.status().state, "live");
    assert.ok(!events.some((e) => e.type === "diagnostic" && e.error.kind === "auth"), JSON.stringify(events));
  } finally {
    await client.close();
  }
  const failing = relayed(old, async () => {
    throw new Error("offline");
  });
  await assert.rejects(failing, (e) => /refreshToken failed: offline/.test(e.message) && !/refused key/.test(e.message));
});

// After the network comes back the next reopen may be a whole backoff away: reconnectNow()
// reopens at once, and does nothing while live.
test("Switch: reconnectNow() cuts a backoff short", { timeout: 10_000 }, async () => {
  const { client, events, opened } = await relayed(Math.floor(Date.now() / 1000) + 3600, undefined, {
    backoff: { baseMs: 60_000, minMs: 60_000, maxMs: 60_000 },
  });
  try {
    assert.equal(client.reconnectNow(), false);
    opened[0].readyState = 3;
    opened[0].onclose({ code: 1006, reason: "" });
    await until("disconnected", () => events.some((e) => e.type === "disconnected"));
    assert.ok(events.find((e) => e.type === "disconnected").retry_in_ms >= 60_000, JSON.stringify(events));
    assert.equal(client.reconnectNow(), true);
    await until(() => `connected again: ${JSON.stringify(events)}`, () => events.filter((e) => e.type === "connected").length === 2);
    assert.equal(opened.length, 2);
  } finally {
    await client.close();
  }
});

// The first open waits for refreshToken (an expired token); on a host without a global WebSocket
// and no `webSocket` option, that later open found none and nothing reported it: connect waited
// for openTimeoutMs and rejected as a retryable timeout. It is `invalid` at once now.
test("Switch: no WebSocket found by a first open that waited for refreshToken is invalid", { skip: typeof WebSocket !== "undefined" && "this Node has a global WebSocket", timeout: 10_000 }, async () => {
  const old = Math.floor(Date.now() / 1000) - 60;
  const started = Date.now();
  await assert.rejects(
    SwitchClient.connect("http://fake", { token: token(old), agentId: "a", refreshToken: async () => token(old + 7200) }),
    (e) => e.kind === "invalid" && /no global WebSocket/.test(e.message) && !e.retryable,
  );
  assert.ok(Date.now() - started < 5_000, "at once, not after openTimeoutMs");
});

// An event loop blocked past a call's deadline (user code, a process stopped and continued): the
// timers due meanwhile run first on waking, before the socket's input read meanwhile. The reply
// is played in the next iteration's check phase, as socket input comes in its poll phase: after
// its timers. A call whose reply came in that batch resolves, where it failed `timeout`.
async function afterBlock(ms, call, answer) {
  return new Promise((resolve) =>
    setImmediate(() => {
      const settled = call().then(
        (v) => ({ v }),
        (e) => ({ e }),
      );
      const end = Date.now() + ms;
      while (Date.now() < end);
      setImmediate(answer);
      resolve(settled);
    }),
  );
}

test("a reply read in the same wake as a call's overdue deadline answers it (timeoutMs, ttlS)", async () => {
  for (const [opts, callOpts] of [
    [{}, { timeoutMs: 50 }],
    [{ ttlS: 1 }, {}],
  ]) {
    const { client, ws } = await rkt(opts);
    try {
      const ping = () => ws.sent.findLast((t) => t.startsWith("RKT/1.0 PING\n"));
      const got = await afterBlock(opts.ttlS ? 1200 : 200, () => client.ping(callOpts), () => ws.onmessage && ws.reply(rktHeader(ping(), "Message-ID"), "PONG"));
      assert.equal(got.e?.message, undefined, JSON.stringify(opts));
      assert.equal(typeof got.v, "number");
    } finally {
      await client.close();
    }
  }
});
