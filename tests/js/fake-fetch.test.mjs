// The Switch client's SSE wire on a `fetch` the test plays itself (the global `fetch` replaced):
// the stream's request, its body fed as it comes (split anywhere), a reopen from the cursor, the
// stream aborted at close(), a refused stream's body read only in part, and `auto` going on over
// SSE after an upgrade refused with a status the socket tells.
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { SwitchClient } from "agentwire/switch";
import { fetchWebSocket } from "agentwire";
import { FakeWebSocket, last } from "./fake-ws.mjs";

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
});

/** Replaces `fetch`: each call is recorded; the event stream gets `stream(call)`, the rest (beats)
 * a 200. */
function fakeFetch(stream) {
  const calls = [];
  globalThis.fetch = async (url, init) => {
    const call = { url: String(url), method: init.method, headers: init.headers, signal: init.signal };
    calls.push(call);
    if (call.url.includes("/events?")) return stream(call);
    return new Response(JSON.stringify({ ok: true, rooms: [], cursor: 0 }), { status: 200 });
  };
  return calls;
}

/** A stream body the test writes. */
function body() {
  let ctl;
  const stream = new ReadableStream({ start: (c) => void (ctl = c) });
  const enc = new TextEncoder();
  return { stream, write: (t) => ctl.enqueue(enc.encode(t)), end: () => ctl.close(), drained: () => ctl.desiredSize > 0 };
}

/** `fakeFetch` whose event streams are bodies the test writes, in `bodies` as they open. */
function sseStreams() {
  const bodies = [];
  const calls = fakeFetch(() => {
    const b = body();
    bodies.push(b);
    return new Response(b.stream, { status: 200, headers: { "content-type": "text/event-stream" } });
  });
  return { bodies, calls };
}

/** A body of `text`, then nothing more, ever; aborted (`signal`), it errors, as a real fetch's does. */
function endlessBody(signal, text) {
  let sent = false;
  return new ReadableStream({
    start: (c) => signal.addEventListener("abort", () => c.error(new DOMException("aborted", "AbortError"))),
    pull: (c) => void (sent || ((sent = true), c.enqueue(new TextEncoder().encode(text)))),
  });
}

async function until(ok, what) {
  const end = Date.now() + 5_000;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`waited for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const state =
  'event: connection_state\ndata: {"connection_id":"c","agent_id":"a","scope":"single","filter":"all","spawn_capable":false,"rooms":[],"cursor":0,"protocol":1,"heartbeat_interval_seconds":2.0}\n\n';
const message = (seq, text) =>
  `id: ${seq}\nevent: message\ndata: ${JSON.stringify({ type: "message", room_id: "r", bridge_id: null, channel_type: "channel_public", payload: { body: text }, sequence: seq })}\n\n`;

test("Switch over SSE: the stream's request, its body split anywhere, a reopen from the cursor, close() aborts it", { timeout: 10_000 }, async () => {
  const { bodies, calls } = sseStreams();
  const events = [];
  const connecting = SwitchClient.connect("http://switch.test/base", {
    token: "agent-key",
    agentId: "a",
    transport: "sse",
    backoff: { baseMs: 1, maxMs: 1, minMs: 1 },
    onEvent: (e) => events.push(e),
  });
  await until(() => bodies.length === 1, "the stream");
  const [open] = calls;
  assert.match(open.url, /^http:\/\/switch\.test\/base\/agents\/a\/events\?/);
  assert.equal(open.method, "GET");
  assert.equal(open.headers.Authorization, "Bearer agent-key");
  assert.equal(open.headers.Accept, "text/event-stream");
  const text = state + message(1, "one");
  for (let i = 0; i < text.length; i += 7) bodies[0].write(text.slice(i, i + 7));
  const client = await connecting;
  await until(() => events.some((e) => e.type === "event"), "the event");
  const ev = events.find((e) => e.type === "event");
  assert.equal(ev.sequence, 1);
  assert.equal(ev.payload.body, "one");
  assert.equal(client.status().wire, "sse");
  // The stream ends: the engine reopens after the last sequence.
  bodies[0].end();
  await until(() => bodies.length === 2, "the reopen");
  const streams = calls.filter((c) => c.url.includes("/events?"));
  assert.equal(streams[1].headers["Last-Event-ID"], "1");
  bodies[1].write(state);
  await until(() => events.filter((e) => e.type === "connected").length === 2, "connected again");
  assert.ok(events.some((e) => e.type === "disconnected"));
  await client.close();
  assert.ok(streams[1].signal.aborted, "close() aborts the stream");
  assert.equal(events.at(-1).type, "stopped");
});

test("Switch over SSE: a refused stream (401) rejects with auth, its endless body read only in part", { timeout: 10_000 }, async () => {
  let pulls = 0;
  let signal;
  fakeFetch((call) => {
    signal = call.signal;
    const chunk = new Uint8Array(1024).fill(0x78);
    const stream = new ReadableStream({ pull: (c) => void (pulls++, c.enqueue(chunk)) }, { highWaterMark: 0 });
    return new Response(stream, { status: 401 });
  });
  const e = await SwitchClient.connect("http://switch.test", { token: "bad", agentId: "a", transport: "sse" }).then(
    () => null,
    (e) => e,
  );
  assert.equal(e?.kind, "auth", `${e?.kind}: ${e?.message}`);
  assert.equal(e.retryable, false);
  assert.equal(e.info.status, 401);
  // The engine reads 64 KiB of a refusal (agentwire_core::http::REFUSAL_BODY_MAX).
  assert.ok(pulls >= 64 && pulls <= 68, `${pulls} chunks of 1 KiB read`);
  assert.ok(signal.aborted, "the refused stream is aborted");
});

test("Switch over SSE: no answer (fetch rejects) fails the connect with closed, retryable", { timeout: 10_000 }, async () => {
  fakeFetch(() => Promise.reject(new TypeError("fetch failed")));
  const e = await SwitchClient.connect("http://switch.test", { token: "k", agentId: "a", transport: "sse" }).then(
    () => null,
    (e) => e,
  );
  assert.equal(e?.kind, "closed", `${e?.kind}: ${e?.message}`);
  assert.equal(e.retryable, true);
  assert.match(e.message, /fetch failed/);
  // The URL it names is without its query (the connection's parameters).
  assert.match(e.message, /GET http:\/\/switch\.test\/agents\/a\/events: /);
  assert.doesNotMatch(e.message, /\?|connection_id|rooms=/);
});

test("Switch over SSE: a refusal whose body never ends is its status after 2 s, not the open's timeout", { timeout: 20_000 }, async () => {
  let signal;
  fakeFetch((call) => {
    signal = call.signal;
    return new Response(endlessBody(call.signal, '{"detail":"bad key"}'), { status: 401 });
  });
  const start = Date.now();
  const e = await SwitchClient.connect("http://switch.test", { token: "k", agentId: "a", transport: "sse", openTimeoutMs: 15_000 }).then(
    () => null,
    (e) => e,
  );
  const took = Date.now() - start;
  assert.equal(e?.kind, "auth", `${e?.kind}: ${e?.message}`);
  assert.equal(e.info.status, 401);
  assert.match(e.message, /bad key/, "the body's start is read");
  assert.ok(took >= 1_500 && took < 10_000, `refused after ${took} ms`);
  assert.ok(signal.aborted, "the refused stream is aborted");
});

test("Switch auto: an upgrade refused with 403, which the socket tells, goes on over SSE", { timeout: 10_000 }, async () => {
  const { bodies, calls } = sseStreams();
  const events = [];
  const connecting = SwitchClient.connect("http://switch.test", {
    token: "k",
    agentId: "a",
    transport: "auto",
    webSocket: FakeWebSocket,
    onEvent: (e) => events.push(e),
  });
  const ws = last();
  assert.match(ws.url, /^ws:\/\/switch\.test\/agents\/a\/connection\/ws\?/);
  ws.readyState = 3;
  // As `fetchWebSocket`'s close after a refused upgrade: the status and body on the event.
  ws.onclose({ code: 1006, reason: "", wasClean: false, status: 403, body: "" });
  await until(() => bodies.length === 1, "the stream");
  assert.equal(calls[0].headers.Authorization, "Bearer k");
  bodies[0].write(state);
  const client = await connecting;
  assert.equal(client.status().wire, "sse");
  assert.ok(events.some((e) => e.type === "diagnostic" && e.error.kind === "version"), JSON.stringify(events));
  await client.close();
  assert.ok(calls[0].signal.aborted);
});

test("fetchWebSocket: an upgrade refused with a body that never ends closes with its status and body's start after 2 s", { timeout: 20_000 }, async () => {
  let signal;
  globalThis.fetch = async (url, init) => {
    signal = init.signal;
    return new Response(endlessBody(init.signal, '{"detail":"taken over"}'), { status: 409 });
  };
  const Socket = fetchWebSocket({ Authorization: "Bearer k" });
  const start = Date.now();
  const closed = await new Promise((resolve) => {
    const ws = new Socket("ws://switch.test/agents/a/connection/ws");
    ws.onclose = resolve;
  });
  const took = Date.now() - start;
  assert.equal(closed.code, 1006);
  assert.equal(closed.status, 409);
  assert.equal(closed.body, '{"detail":"taken over"}');
  // agentwire_core::http::REFUSAL_BODY_WAIT_MS, checked by crates/agentwire-core/tests/npm_facts.rs.
  assert.ok(took >= 1_500 && took < 5_000, `closed after ${took} ms`);
  assert.ok(signal.aborted, "the refused upgrade is aborted");
});

test("fetchWebSocket: an upgrade refusal whose body breaks off is no answer (1006, no status), as every driver takes it", { timeout: 10_000 }, async () => {
  globalThis.fetch = async () => {
    const enc = new TextEncoder();
    let n = 0;
    const stream = new ReadableStream({
      pull: (c) => (n++ ? c.error(new TypeError("the connection was reset")) : c.enqueue(enc.encode('{"detail":"taken'))),
    });
    return new Response(stream, { status: 409 });
  };
  const Socket = fetchWebSocket({});
  const closed = await new Promise((resolve) => {
    new Socket("ws://switch.test/agents/a/connection/ws").onclose = resolve;
  });
  assert.equal(closed.code, 1006);
  assert.equal(closed.status, undefined, "cut short, a 409 is not a refusal the engine can read");
  assert.match(closed.reason, /HTTP 409 answer broke off/);
});

test("fetchWebSocket: close() while a refusal's body is read ends with the caller's close, not the refusal", { timeout: 10_000 }, async () => {
  globalThis.fetch = async (url, init) => new Response(endlessBody(init.signal, '{"detail":"taken over"}'), { status: 409 });
  const Socket = fetchWebSocket({});
  const ws = new Socket("ws://switch.test/agents/a/connection/ws");
  const closed = new Promise((resolve) => (ws.onclose = resolve));
  await new Promise((r) => setTimeout(r, 100));
  ws.close(1000, "bye");
  const got = await closed;
  assert.deepEqual([got.code, got.reason, got.status], [1006, "bye", undefined]);
});

// A browser's fetch hands over what arrived since the last read as one chunk: under a flood, a
// megabyte and more at once (Chromium gave 727 KB, 4,096 events, in one). The engine holds at
// most maxQueuedEvents (4,096) between polls: the driver feeds the chunk in slices and polls
// between them, so a chunk of more events than that is delivered whole, without the queue's
// overflow and the reopen it brings. Before, every such chunk overflowed and reopened.
test("Switch over SSE: one chunk of more events than the engine queues is delivered without a reopen", { timeout: 10_000 }, async () => {
  const { bodies } = sseStreams();
  const events = [];
  const connecting = SwitchClient.connect("http://switch.test", {
    token: "agent-key",
    agentId: "a",
    transport: "sse",
    onEvent: (e) => events.push(e),
  });
  await until(() => bodies.length === 1, "the stream");
  bodies[0].write(state);
  const client = await connecting;
  const n = 10_000;
  let flood = "";
  for (let seq = 1; seq <= n; seq++) flood += message(seq, `m${seq}`);
  bodies[0].write(flood);
  await until(() => events.filter((e) => e.type === "event").length === n || events.some((e) => e.type === "disconnected"), "the events");
  const other = events.filter((e) => !["event", "connected"].includes(e.type) && !/names connection "c"/.test(e.error?.message)).map((e) => `${e.type}: ${e.reason ?? e.error?.message}`);
  assert.deepEqual(other, []);
  assert.equal(events.filter((e) => e.type === "event").at(-1).sequence, n);
  assert.equal(bodies.length, 1, "no reopen");
  await client.close();
});

// The Switch engines of one module hold 256 MiB together for pages that do not read; one whose
// page reads promptly keeps 1 MiB of its own whatever the others hold. Its bound was cut to one
// byte, so the second event of an SSE slice overflowed it, and it reopened after every chunk.
test("Switch over SSE: a client that reads keeps its events while others hold the module's bound", { timeout: 60_000 }, async () => {
  const { bodies, calls } = sseStreams();
  const open = async (base, options) => {
    const connecting = SwitchClient.connect(base, { token: "agent-key", agentId: "a", transport: "sse", ...options });
    await until(() => calls.some((c) => c.url.startsWith(base) && c.url.includes("/events?")), "the stream");
    bodies.at(-1).write(state);
    return [await connecting, bodies.at(-1)];
  };
  const clients = [];
  try {
    const big = "x".repeat(900_000);
    for (let i = 0; i < 6; i++) {
      const [client, b] = await open(`http://holding${i}.test`, { maxBufferedBytes: 1 << 20 });
      clients.push(client);
      for (let seq = 1; seq <= 80; seq++) b.write(message(seq, big));
    }
    // Every holding client has read its stream: what the engines hold is past the module's bound.
    await until(() => bodies.every((b) => b.drained()), "the holding streams read");
    const events = [];
    const [client, b] = await open("http://prompt.test", { onEvent: (e) => events.push(e) });
    clients.push(client);
    let chunk = "";
    for (let seq = 1; seq <= 50; seq++) chunk += message(seq, `m${seq}`);
    b.write(chunk);
    await until(() => events.filter((e) => e.type === "event").length === 50 || events.some((e) => e.type === "disconnected"), "the events");
    assert.deepEqual(events.filter((e) => e.type === "disconnected").map((e) => e.reason), []);
    assert.equal(calls.filter((c) => c.url.startsWith("http://prompt.test") && c.url.includes("/events?")).length, 1, "no reopen");
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
});

// A read whose chunk is already queued resolves in a microtask, ahead of every task: under a
// flood (chunks queued faster than they are read), the read loop ran from chunk to chunk without
// letting timers (the beats), the beats' answers or the page run until the queue was empty (8.8 s
// in Chromium at 80,000 events/s; beats 7.7 s apart, past the 6 s TTL). It lets tasks run
// between chunks: a timer set before the chunks are read runs after the first.
test("Switch over SSE: chunks queued in the body let timers run between them", { timeout: 10_000 }, async () => {
  const { bodies } = sseStreams();
  let delivered = 0;
  const connecting = SwitchClient.connect("http://switch.test", {
    token: "agent-key",
    agentId: "a",
    transport: "sse",
    onEvent: (e) => void (e.type === "event" && delivered++),
  });
  await until(() => bodies.length === 1, "the stream");
  bodies[0].write(state);
  const client = await connecting;
  for (let c = 0; c < 3; c++) bodies[0].write(Array.from({ length: 10 }, (_, i) => message(c * 10 + i + 1, "x")).join(""));
  const atTimer = await new Promise((r) => setTimeout(() => r(delivered), 0));
  await until(() => delivered === 30, "every event");
  assert.ok(atTimer < 30, `the timer ran after all ${atTimer} events`);
  await client.close();
});

// The shortest operation timeout is the engine's rule (native's `op_timeout` takes the same):
// `opTimeoutMs` and a call's `timeoutMs` under 1 ms are refused, `invalid`, before any fetch,
// the number written as JavaScript writes it (not Rust's `-inf`, `-0` or `0.0000001`).
test("Switch: an opTimeoutMs or a call's timeoutMs under 1 ms is refused with invalid, nothing fetched", { timeout: 10_000 }, async () => {
  const { bodies, calls } = sseStreams();
  const e = await SwitchClient.connect("http://switch.test", { token: "k", agentId: "a", transport: "sse", opTimeoutMs: 0 }).then(() => undefined, (e) => e);
  assert.equal(e?.kind, "invalid", e?.message);
  assert.match(e.message, /`opTimeoutMs` must be at least 1 ms/);
  assert.equal(calls.length, 0);
  const connecting = SwitchClient.connect("http://switch.test", { token: "k", agentId: "a", transport: "sse" });
  await until(() => bodies.length === 1, "the stream");
  bodies[0].write(state);
  const client = await connecting;
  for (const timeoutMs of [0, 0.5, -1, -0, 1e-7, -Infinity, NaN]) {
    const e = await client.listOps({ timeoutMs }).then(() => undefined, (e) => e);
    assert.equal(e?.kind, "invalid", `${timeoutMs}: ${e?.message}`);
    assert.equal(e.message, `timeout of ${timeoutMs} ms: must be at least 1 ms`);
  }
  assert.equal(calls.length, 1, "only the stream");
  await client.close();
});

// The engine forgets a beat with the stream it was sent for: an answer that comes after the
// stream ended is not fed to it (it was, and gave a diagnostic of a late or unknown HTTP call).
test("Switch over SSE: a beat answered after its stream ended is not the engine's", { timeout: 10_000 }, async () => {
  const bodies = [];
  const beats = [];
  globalThis.fetch = async (url) => {
    if (String(url).includes("/events?")) {
      const b = body();
      bodies.push(b);
      return new Response(b.stream, { status: 200, headers: { "content-type": "text/event-stream" } });
    }
    return new Promise((answer) => beats.push(() => answer(new Response('{"ok":true}', { status: 200 }))));
  };
  const events = [];
  const connecting = SwitchClient.connect("http://switch.test", {
    token: "agent-key",
    agentId: "a",
    transport: "sse",
    backoff: { baseMs: 1, maxMs: 1, minMs: 1 },
    onEvent: (e) => events.push(e),
  });
  await until(() => bodies.length === 1, "the stream");
  bodies[0].write(state.replace('"heartbeat_interval_seconds":2.0', '"heartbeat_interval_seconds":0.1'));
  const client = await connecting;
  await until(() => beats.length === 1, "a beat");
  bodies[0].end();
  await until(() => events.some((e) => e.type === "disconnected"), "the stream's end");
  beats[0]();
  await new Promise((r) => setTimeout(r, 50));
  const late = events.filter((e) => e.type === "diagnostic" && /not waiting/.test(e.error?.message ?? JSON.stringify(e)));
  assert.deepEqual(late, []);
  await client.close();
});
