// The package used from plain JavaScript the way its types forbid (a number for a string, a
// `Uint8Array` for text, odd options), and an `async` onEvent that rejects: each is a typed
// error (or a log line), never a trap of the wasm instance, a leak of its memory, a synchronous
// throw from `connect` or an unhandled rejection. Clients on sockets the test plays (fake-ws.mjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { AgentwireError, RktClient, MoltZapClient, SwitchClient, RktSession, MoltZapSession, SwitchSession } from "agentwire";
import { FakeRkt, FakeWebSocket, connectionState, last } from "./fake-ws.mjs";

const invalid = (what) => (e) => e instanceof AgentwireError && e.kind === "invalid" && e.message.includes(what);
const string = (name) => invalid(`\`${name}\` must be a string`);

/** A MoltZap socket that answers every request at once (`{}` to the connect). */
class Answering extends FakeWebSocket {
  send(t) {
    const m = JSON.parse(t);
    queueMicrotask(() => this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id: m.id, result: m.method === "agent/network/connect" ? {} : { echoed: m.method } }) }));
  }
}

async function moltzap() {
  const connecting = MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: Answering, timeoutMs: 2_000 });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  return connecting;
}

async function sw() {
  const exp = Math.floor(Date.now() / 1000) + 3600;
  const token = `${Buffer.from(JSON.stringify({ sub: "a", exp })).toString("base64url")}.sig`;
  const connecting = SwitchClient.connect("http://fake", { token, agentId: "a", reconnect: false, webSocket: FakeWebSocket });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  ws.onmessage({ data: connectionState });
  return connecting;
}

// wasm-bindgen's string glue read `.length` of whatever came: a number trapped in the allocator
// (kind `internal`, "memory access out of bounds"), a Uint8Array had its length allocated and
// never freed before the glue threw.
test("a non-string where text is expected is refused with kind invalid, naming the argument", async () => {
  await assert.rejects(RktClient.connect(42, { webSocket: FakeRkt }), string("address"));
  await assert.rejects(MoltZapClient.connect({}, { agentKey: "k", webSocket: FakeWebSocket }), string("url"));
  await assert.rejects(SwitchClient.connect("http://fake", { token: 123, agentId: "a", webSocket: FakeWebSocket }), string("token"));
  await assert.rejects(SwitchClient.connect(undefined, { token: "t", agentId: "a", webSocket: FakeWebSocket }), string("url"));

  const r = await RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, keepalive: false });
  try {
    await assert.rejects(r.request(42), string("intent"));
    await assert.rejects(r.request(undefined), string("intent"));
    await assert.rejects(r.stream(new Uint8Array(4)).next(), string("intent"));
    await assert.rejects(r.memoryGet(5), string("key"));
    await assert.rejects(r.memorySet("k", 1, { namespace: 7 }), string("namespace"));
    assert.equal(last().sent.filter((t) => !t.startsWith("RKT/1.0 HELLO")).length, 0, "nothing sent");
  } finally {
    await r.close();
  }

  const m = await moltzap();
  try {
    await assert.rejects(m.send({ agent: "bob" }, 42), string("text"));
    await assert.rejects(m.send({ agent: 7 }, "hi"), string("agent"));
    await assert.rejects(m.call(5), string("method"));
    await assert.rejects(m.recentMessages({ conversationId: {} }), string("conversationId"));
    assert.deepEqual(await m.call("x/y", {}), { echoed: "x/y" });
  } finally {
    await m.close();
  }

  const s = await sw();
  try {
    await assert.rejects(s.subscribe(12345), string("room"));
    await assert.rejects(s.unsubscribe(null), string("room"));
    await assert.rejects(s.op(5), string("name"));
    assert.throws(() => s.setToken(123), string("token"));
    assert.equal(s.status().state, "live");
  } finally {
    await s.close();
  }
});

test("the sans-IO sessions refuse a non-string input with kind invalid and go on", () => {
  const now = Date.now();
  const r = new RktSession();
  r.handleOpen(now);
  assert.throws(() => r.handleText(now, 42), string("text"));
  assert.throws(() => r.handleClose(now, 1000, {}), string("reason"));
  assert.throws(() => r.request(now, {}, undefined, undefined, false), string("intent"));
  assert.throws(() => r.memorySet(now, "k", 5, undefined, undefined), string("value"));
  assert.throws(() => new RktSession(5), string("options"));
  assert.equal(r.cancel(5), false);
  assert.match(r.pollTransmit().text, /^RKT\/1.0 HELLO\n/);
  r.free();

  const m = new MoltZapSession(JSON.stringify({ agentKey: "k" }));
  m.handleOpen(now);
  assert.throws(() => m.handleText(now, new Uint8Array(3)), string("text"));
  assert.throws(() => m.connect(now, 5), string("credentials"));
  assert.throws(() => m.call(now, 5), string("method"));
  // A refused timeout is written as JavaScript writes it (Rust's `{}` said `-inf`, `-0.0000001`).
  for (const t of [-Infinity, -1e-7, NaN]) assert.throws(() => m.call(now, "m", undefined, t), invalid(`timeoutMs must be a number ≥ 0, not ${t}`), String(t));
  assert.throws(() => m.close(1000, 5), string("reason"));
  assert.throws(() => new MoltZapSession(7), string("options"));
  assert.match(m.connect(now), /./);
  m.free();

  const s = new SwitchSession(JSON.stringify({ agentId: "a" }));
  s.start(now);
  assert.throws(() => s.handleText(now, 42), string("text"));
  assert.throws(() => s.handleOpenFailed(now, 500, 1), string("body"));
  assert.throws(() => s.handleOpenError(now, 1), string("reason"));
  assert.throws(() => s.handleHttpResponse(now, 1, 200, {}), string("body"));
  assert.throws(() => s.handleHttpFailed(now, 1, 2), string("reason"));
  assert.throws(() => s.handleClose(now, 1000, 3), string("reason"));
  assert.throws(() => new SwitchSession(undefined), string("options"));
  assert.equal(s.pollTransmit().type, "open");
  s.free();
});

// A whole number that does not fit its option was refused "must be a whole number ≥ 0, not a
// number": it is out of range, and the error names the range (a wasm32 usize, a u32).
test("an integer option past its type's range is refused naming the range", () => {
  const range = (field) => invalid(`\`${field}\` must be a whole number from 0 to 4294967295`);
  assert.throws(() => new RktSession('{"maxInFlight":5e9}'), range("maxInFlight"));
  assert.throws(() => new RktSession('{"maxInFlight":5000000000}'), range("maxInFlight"));
  assert.throws(() => new RktSession('{"maxInFlight":-1}'), range("maxInFlight"));
  for (const field of ["missedHeartbeats", "protocol"]) {
    assert.throws(() => new SwitchSession(JSON.stringify({ agentId: "a", [field]: 2 ** 32 })), range(field), field);
  }
  assert.throws(() => new RktSession('{"maxInFlight":"5"}'), invalid("`maxInFlight` must be a whole number ≥ 0, not a string"));
  new RktSession('{"maxInFlight":4294967295}').free();
});

// The check refuses 2^53 itself (past Number.MAX_SAFE_INTEGER, 2^53 − 1), which the message
// called "past 2^53".
test("Switch startFrom and expectedGeneration from 2^53 as numbers: the message names the bound the check uses", async () => {
  for (const [k, v] of [["startFrom", 2 ** 53], ["expectedGeneration", -(2 ** 53)]]) {
    await assert.rejects(
      SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: FakeWebSocket, reconnect: false, [k]: v }),
      invalid(`\`${k}\` is ${v}: a number past 2^53 − 1 is not exact; pass its digits as a string`),
      k,
    );
  }
});

// The glue allocated a Uint8Array's length in wasm memory and threw before freeing it: 63 calls
// with 64 MiB exhausted the instance. Now nothing is allocated, whatever the size.
test("a 64 MiB Uint8Array given as text, 80 times, allocates nothing", () => {
  const big = new Uint8Array(64 << 20);
  const r = new RktSession();
  const refused = [];
  for (let i = 0; i < 80; i++) {
    try {
      r.handleText(Date.now(), big);
    } catch (e) {
      refused.push(string("text")(e) ? "invalid" : String(e));
    }
  }
  // The instance has its memory still: a new session works.
  const fresh = new RktSession();
  fresh.handleOpen(Date.now());
  assert.match(fresh.pollTransmit().text, /^RKT\/1.0 HELLO\n/);
  fresh.free();
  r.free();
  assert.deepEqual([...new Set(refused)], ["invalid"]);
  assert.equal(refused.length, 80);
});

// `Events.emit` caught only a synchronous throw: the rejection of an async callback was
// unhandled, which ends a Node process by default.
test("an async onEvent that rejects is logged, as one that throws, and the client goes on", async () => {
  const logged = [];
  const unhandled = [];
  const onUnhandled = (e) => unhandled.push(e);
  const error = console.error;
  console.error = (e) => logged.push(e);
  process.on("unhandledRejection", onUnhandled);
  try {
    const boom = new Error("db.save failed");
    const r = await RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, keepalive: false, onEvent: async () => { throw boom; } });
    const ws = last();
    ws.onmessage({ data: "not an RKT message" });
    await new Promise((res) => setTimeout(res, 20));
    assert.equal(logged.at(-1), boom);
    assert.equal(r.closed, false);
    await r.close();
    await new Promise((res) => setTimeout(res, 20));
    assert.equal(logged.length, 2, "the error event and closed, each logged");
    assert.deepEqual(unhandled, []);
  } finally {
    console.error = error;
    process.off("unhandledRejection", onUnhandled);
  }
});

// A `signal` that is not an AbortSignal was found only after the call was sent (a raw
// TypeError, and another at its end).
test("a signal that is not an AbortSignal is refused with kind invalid before anything is sent", async () => {
  const before = last();
  await assert.rejects(RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, signal: {} }), invalid("`signal`"));
  assert.equal(last(), before, "no socket made");
  const r = await RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, keepalive: false });
  const ws = last();
  try {
    await assert.rejects(r.request("echo", {}, { signal: {} }), invalid("`signal`"));
    await assert.rejects(r.stream("echo", {}, { signal: { aborted: false } }).next(), invalid("`signal`"));
    await assert.rejects(r.ping({ signal: 1 }), invalid("`signal`"));
    assert.equal(ws.sent.filter((t) => !t.startsWith("RKT/1.0 HELLO")).length, 0, "nothing sent");
  } finally {
    await r.close();
  }
});

test("connect returns a promise whatever its options: null, throwing getters, bad event options", async () => {
  const p = RktClient.connect("ws://127.0.0.1:1/rkt", null);
  assert.ok(p instanceof Promise);
  await assert.rejects(p);
  const boom = new Error("getter");
  for (const connect of [
    () => RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, get onEvent() { throw boom; } }),
    () => MoltZapClient.connect("ws://fake/ws", { agentKey: "k", webSocket: FakeWebSocket, get maxBufferedEvents() { throw boom; } }),
    () => SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: FakeWebSocket, get maxBufferedEvents() { throw boom; } }),
  ]) {
    const p = connect();
    assert.ok(p instanceof Promise);
    await assert.rejects(p, (e) => e === boom);
  }
  const fake = { webSocket: FakeRkt };
  await assert.rejects(RktClient.connect("ws://fake/rkt", { ...fake, onEvent: 5 }), invalid("`onEvent` is not a function"));
  // The value as given (a string quoted, so "10" is not taken for 10), and the rule.
  const notCount = (k, v) => invalid(`\`${k}\` is ${v}, not a number ≥ 0`);
  await assert.rejects(RktClient.connect("ws://fake/rkt", { ...fake, maxBufferedEvents: -1 }), notCount("maxBufferedEvents", "-1"));
  await assert.rejects(RktClient.connect("ws://fake/rkt", { ...fake, maxBufferedEvents: "x" }), notCount("maxBufferedEvents", '"x"'));
  await assert.rejects(RktClient.connect("ws://fake/rkt", { ...fake, maxBufferedEvents: "10" }), notCount("maxBufferedEvents", '"10"'));
  await assert.rejects(RktClient.connect("ws://fake/rkt", { ...fake, maxBufferedBytes: NaN }), notCount("maxBufferedBytes", "NaN"));
  await assert.rejects(RktClient.connect("ws://fake/rkt", { ...fake, maxBufferedBytes: 10n }), notCount("maxBufferedBytes", "10n"));
  await assert.rejects(RktClient.connect("ws://fake/rkt", { ...fake, maxBufferedBytes: Symbol("s") }), notCount("maxBufferedBytes", "Symbol(s)"));
  // `null >= 0`, `true >= 0` and `[] >= 0` are true: each kept one event. `null` is the default.
  await assert.rejects(RktClient.connect("ws://fake/rkt", { ...fake, maxBufferedEvents: true }), notCount("maxBufferedEvents", "true"));
  await assert.rejects(RktClient.connect("ws://fake/rkt", { ...fake, maxBufferedBytes: [] }), notCount("maxBufferedBytes", ""));
  const connecting = RktClient.connect("ws://fake/rkt", { ...fake, maxBufferedEvents: null, maxBufferedBytes: null });
  const r = await connecting;
  await r.close();
});

// RKT's bindings read an argument's JSON into a `serde_json::Value` (up to 20 times its text)
// before the engine's bound applied: 200 M characters of params panicked with "capacity
// overflow", and 10 k × 20 k broke the instance ("unreachable"). A text over `maxMessageSize`
// is refused before it is read; the instance goes on.
test("an RKT argument whose text is over maxMessageSize is refused with limit before it is read", async () => {
  const now = Date.now();
  const s = new RktSession(JSON.stringify({ maxMessageSize: 4096 }));
  const big = JSON.stringify(["x".repeat(5000)]);
  const limit = (what) => (e) => e instanceof AgentwireError && e.kind === "limit" && e.message.startsWith(`${what} of `);
  assert.throws(() => s.request(now, "x", big, undefined, false), limit("params"));
  assert.throws(() => s.request(now, "x", undefined, JSON.stringify({ context: big }), false), limit("request options"));
  assert.throws(() => s.memorySet(now, "k", big, undefined, undefined), limit("value"));
  s.free();
  const r = await RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, keepalive: false, maxMessageSize: 4096 });
  try {
    await assert.rejects(r.request("x", ["x".repeat(5000)]), limit("params"));
    await assert.rejects(r.memorySet("k", "x".repeat(5000)), limit("value"));
    assert.equal(last().sent.filter((t) => !t.startsWith("RKT/1.0 HELLO")).length, 0, "nothing sent");
  } finally {
    await r.close();
  }
  // A session of the same instance still works.
  const fresh = new MoltZapSession(JSON.stringify({ agentKey: "k" }));
  fresh.handleOpen(now);
  assert.match(fresh.connect(now), /./);
  fresh.free();
});

// The options object around an RKT request's `context` took one of its 127 levels (a context
// 127 deep was refused "request options: nested too deep", where native and the component take
// it), and a context that is not JSON had the options' error text: it is read by the JSON
// argument rule, as `params` is and as the component reads it.
test("an RKT request's context is read as params are: as deep, with the same errors", async () => {
  const now = Date.now();
  const deep = (n) => "[".repeat(n) + "]".repeat(n);
  const s = new RktSession(JSON.stringify({ keepalive: false }));
  s.handleOpen(now);
  s.pollTransmit();
  const request = (params, options) => () => s.request(now, "x", params, options, false);
  assert.match(request(undefined, `{"context":${deep(127)}}`)(), /./, "127 deep, as params");
  assert.match(request(deep(127), undefined)(), /./);
  for (const bad of [deep(128), '"\\ud800"', "1e400"]) {
    let asParams;
    assert.throws(request(bad, undefined), (e) => (asParams = e).kind === "invalid");
    assert.match(asParams.message, /^params is not JSON: /);
    const same = (e) => e instanceof AgentwireError && e.kind === "invalid" && e.message === asParams.message.replace("params", "context");
    assert.throws(request(undefined, `{"context":${bad}}`), same, bad);
  }
  // The options' own fields are still decoded strictly.
  assert.throws(request(undefined, '{"to":"\\ud800"}'), invalid("request options: `to` has a lone surrogate escape"));
  assert.throws(request(undefined, '{"context":1,"context":2}'), invalid("request options: field `context` given twice"));
  // Closed: `closed`, as natively, the deep context being no error.
  s.handleClose(now, 1006, "gone");
  assert.throws(request(undefined, `{"context":${deep(127)}}`), (e) => e instanceof AgentwireError && e.kind === "closed");
  s.free();

  const r = await RktClient.connect("ws://fake/rkt", { webSocket: FakeRkt, keepalive: false });
  try {
    await assert.rejects(r.request("x", undefined, { context: "\ud800" }), invalid("context is not JSON: "));
  } finally {
    await r.close();
  }
});

// wasm-bindgen's `u16` took a close code modulo 65536: `close(66536)` sent 1000, `close(70000)`
// 4464, `close(-1)` 65535, and `undefined` was 0. Each is refused now, and the session goes on.
test("a close code that is not an integer from 0 to 65535 is refused with kind invalid", () => {
  const now = Date.now();
  const code = invalid("`code` must be an integer from 0 to 65535");
  const bad = [66536, 70000, 65536, -1, 1000.5, NaN, Infinity, undefined, null, "1000", 1000n];
  const m = new MoltZapSession(JSON.stringify({ agentKey: "k" }));
  const r = new RktSession();
  const s = new SwitchSession(JSON.stringify({ agentId: "a" }));
  m.handleOpen(now);
  r.handleOpen(now);
  s.start(now);
  for (const c of bad) {
    assert.throws(() => m.close(c, "bye"), code, String(c));
    assert.throws(() => m.handleClose(now, c, "gone"), code, String(c));
    assert.throws(() => r.handleClose(now, c, "gone"), code, String(c));
    assert.throws(() => s.handleClose(now, c, "gone"), code, String(c));
  }
  assert.equal(m.pollTransmit(), undefined, "no close frame");
  assert.equal(m.state, "open");
  m.close(0, "bye");
  assert.deepEqual(m.pollTransmit(), { type: "close", code: 0, reason: "bye" });
  assert.equal(m.state, "closed");
  const m2 = new MoltZapSession(JSON.stringify({ agentKey: "k" }));
  m2.handleOpen(now);
  m2.close(65535, "bye");
  assert.deepEqual(m2.pollTransmit(), { type: "close", code: 65535, reason: "bye" });
  r.handleClose(now, 4000, "gone");
  assert.deepEqual(JSON.parse(r.pollEvent()), { type: "closed", code: 4000, reason: "gone" });
  for (const x of [m, m2, r, s]) x.free();
});

// The same for an HTTP status given to a Switch session: `handleHttpResponse(now, id, 70000, ..)`
// was a 4464 and `handleOpenFailed(now, -1, ..)` a 65535. `undefined` (and `null`) is still "no
// answer came" for `handleOpenFailed`.
test("an HTTP status that is not an integer from 0 to 65535 is refused with kind invalid", () => {
  const now = Date.now();
  const status = invalid("`status` must be an integer from 0 to 65535");
  const s = new SwitchSession(JSON.stringify({ agentId: "a" }));
  s.start(now);
  for (const c of [70000, 65536, -1, 200.5, NaN, Infinity, "200", 200n]) {
    assert.throws(() => s.handleOpenFailed(now, c, ""), status, String(c));
    assert.throws(() => s.handleHttpResponse(now, 1, c, ""), status, String(c));
  }
  assert.throws(() => s.handleHttpResponse(now, 1, undefined, ""), status);
  // The session went on: a real 401 still stops it as an auth failure.
  s.handleOpenFailed(now, 401, "no");
  const stopped = JSON.parse(s.pollEvent());
  assert.equal(stopped.type, "stopped", JSON.stringify(stopped));
  assert.equal(stopped.error.kind, "auth", JSON.stringify(stopped));
  const t = new SwitchSession(JSON.stringify({ agentId: "a" }));
  t.start(now);
  t.handleOpenFailed(now, null, "");
  for (const x of [s, t]) x.free();
});

// `eventTypes` kept wasm-bindgen's string glue: a number trapped, a Uint8Array leaked its length.
test("eventTypes of anything but a protocol's name is empty", async () => {
  const { eventTypes } = await import("agentwire");
  assert.ok(eventTypes("rkt").includes("ready"));
  for (const v of [42, new Uint8Array(16), undefined, {}]) assert.deepEqual(eventTypes(v), []);
});

// URLs are read by core's `agentwire_core::url`, as the native clients read them: a MoltZap URL
// with user information went to the WebSocket constructor (which dropped or sent it), a Switch
// base URL with port 0 or 65536 was taken, and `wss://` or a bare `host:port` was refused.
test("a URL no target could dial is refused with kind invalid before a socket opens, as natively", async () => {
  const before = last();
  const k = { agentKey: "k", webSocket: FakeWebSocket };
  await assert.rejects(MoltZapClient.connect("ws://bot:SECRET@fake/ws", k), (e) => invalid("user information")(e) && !e.message.includes("SECRET"));
  await assert.rejects(MoltZapClient.connect("ws://fake:0/ws", k), invalid("port"));
  await assert.rejects(MoltZapClient.connect("ftp://fake/ws", k), invalid("ws:// or wss://"));
  const s = { token: "t", agentId: "a", webSocket: FakeWebSocket };
  await assert.rejects(SwitchClient.connect("https://fake:65536", s), invalid("port"));
  await assert.rejects(SwitchClient.connect("https://fake:0/", s), invalid("port"));
  assert.equal(last(), before, "no socket opened");
  // What a browser takes is taken: the scheme in capitals, spaces around, the default port,
  // http:// as ws://.
  const connecting = MoltZapClient.connect(" HTTP://fake:80/ws ", { agentKey: "moltzap_agent_x", webSocket: Answering, timeoutMs: 2_000 });
  const ws = last();
  assert.equal(ws.url, "ws://fake/ws");
  ws.readyState = 1;
  ws.onopen({});
  const c = await connecting;
  await c.close();
});
