// Bad input (issue 6, "Bad input"): garbage from the upstream or the browser, an upstream that
// never answers or goes silent or drops the TCP connection, a browser that vanishes, an SSE
// upstream that sends garbage or stalls. Each case has an explicit time bound: the other side is
// closed with the right code within it, nothing hangs, and the relay lets go of the upstream.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  startRelay, relayVars, token, open, wsPath, withToken, cleanup, within,
} from "./harness.mjs";
import {
  startUpstream, startBlackhole, startSseUpstream, sseConnectionState, sseMessage, stopHostile, until,
} from "./hostile.mjs";
import { RELAY_COMPATIBILITY_DATE } from "../miniflare.mjs";

const FAKE = { id: "agent-fake", key: "sk_switch_fake_upstream_key_0001" };
const agents = { fake: FAKE };
const UPSTREAM_TIMEOUT_MS = 1000;
const UPSTREAM_IDLE_MS = 1000;
/** Slack on every bound: workerd, the event loop, a loaded CI machine. */
const SLACK = 1500;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

after(async () => {
  await cleanup();
  await stopHostile();
});

const vars = (url, extra = {}) => relayVars({ url, agents }, {
  UPSTREAM_GENERATION: "ws",
  UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS),
  UPSTREAM_IDLE_MS: String(UPSTREAM_IDLE_MS),
  ...extra,
});

async function connect(relay, opts = {}) {
  const connectionId = crypto.randomUUID();
  const c = open(`${relay.wsUrl}/agents/${FAKE.id}/connection/ws?connection_id=${connectionId}`, {
    protocols: withToken(await token(FAKE.id)), ...opts,
  });
  c.connectionId = connectionId;
  c.t0 = Date.now();
  await within(10_000, "the open", c.opened);
  return c;
}

/** `c`'s close within `ms` of its open: `{code, reason, after}`. */
async function closedWithin(c, ms, what) {
  const got = await within(ms, what, c.closed);
  return { ...got, after: Date.now() - c.t0 };
}

/** Writes one unmasked server frame on a raw socket. */
function frame(socket, opcode, payload) {
  const p = Buffer.from(payload);
  assert.ok(p.length < 126);
  socket.write(Buffer.concat([Buffer.from([0x80 | opcode, p.length]), p]));
}

describe("a WebSocket upstream that misbehaves", () => {
  let up, relay;
  before(async () => {
    up = await startUpstream();
    // UPSTREAM_TIMEOUT_MS above the idle bound, so that an idle close is the idle watchdog's.
    relay = await startRelay(vars(up.url, { UPSTREAM_TIMEOUT_MS: "5000" }));
  });

  test("garbage text and binary from the upstream reach the browser unchanged", { timeout: 20_000 }, async () => {
    const texts = ["}{not json", "", "\u0000\u0001\u001f", "{\"event\":\"message\",\"id\":\"NaN\"}", "é\u{1F600}\uFFFD", "x".repeat(10_000)];
    const binary = [Buffer.from([0, 255, 1, 254, 0xc3, 0x28]), Buffer.alloc(0), crypto.getRandomValues(new Uint8Array(4096))];
    up.behave = (ws) => {
      for (const t of texts) ws.send(t);
      for (const b of binary) ws.send(b, { binary: true });
      ws.send("done");
    };
    const c = await connect(relay);
    const got = [];
    c.ws.on("message", (d, isBinary) => got.push({ d: Buffer.from(d), isBinary }));
    await c.next((f) => f.raw === "done", 5_000, "all of the garbage");
    // (`open` parses frames; the raw bytes are compared here.)
    await sleep(50);
    const want = [...texts.map((t) => ({ d: Buffer.from(t), isBinary: false })), ...binary.map((b) => ({ d: Buffer.from(b), isBinary: true }))];
    // The listener above was attached after `opened`: frames before it are in c.frames; compare the tail.
    const tail = got.slice(-(want.length + 1), -1);
    assert.equal(tail.length, want.length, `frames: ${got.length}`);
    for (let i = 0; i < want.length; i++) {
      assert.equal(tail[i].isBinary, want[i].isBinary, `frame ${i}`);
      assert.ok(tail[i].d.equals(want[i].d), `frame ${i} changed`);
    }
    assert.equal(c.ws.readyState, c.ws.OPEN);
    c.ws.close(1000);
  });

  test("garbage text and binary from the browser reach the upstream unchanged", { timeout: 20_000 }, async () => {
    const seen = [];
    up.behave = (ws) => ws.on("message", (d, isBinary) => seen.push({ d: Buffer.from(d), isBinary }));
    const c = await connect(relay);
    const sent = [["}{", false], ["", false], [Buffer.from([0, 255, 0xc3, 0x28]), true], ["{\"type\":\"pong\",\"cursor\":-1e999}", false]];
    for (const [d, binary] of sent) c.ws.send(d, { binary });
    await until(() => seen.length === sent.length, 5_000, "the frames upstream");
    sent.forEach(([d, binary], i) => {
      assert.equal(seen[i].isBinary, binary);
      assert.ok(seen[i].d.equals(Buffer.from(d)), `frame ${i}`);
    });
    c.ws.close(1000);
  });

  test("a text frame that is not UTF-8, or bytes that are not WebSocket frames: the browser is closed, within 3 s", { timeout: 20_000 }, async () => {
    for (const [what, write] of [
      ["invalid UTF-8 text", (s) => frame(s, 0x1, [0xff, 0xfe, 0xfd])],
      ["not a frame", (s) => s.write(Buffer.from("HTTP/1.1 200 OK\r\n\r\nthis is not a websocket\r\n"))],
      ["a reserved opcode", (s) => frame(s, 0x3, "x")],
      ["a masked server frame", (s) => s.write(Buffer.from([0x81, 0x81, 1, 2, 3, 4, 0x61]))],
      ["a close with code 1015", (s) => frame(s, 0x8, [0x03, 0xf7])],
      ["a close with code 5000", (s) => frame(s, 0x8, [0x13, 0x88])],
      ["a close with a 1-byte payload", (s) => frame(s, 0x8, [0x03])],
    ]) {
      up.behave = (_ws, _req, socket) => setTimeout(() => write(socket), 50);
      const c = await connect(relay);
      const got = await closedWithin(c, 3_000, what);
      assert.ok([1002, 1007, 1011].includes(got.code), `${what}: ${got.code} ${got.reason}`);
    }
  });

  test("odd close codes from the upstream: valid ones cross as sent; 4401 (the relay's key refused) is 1011", { timeout: 20_000 }, async () => {
    for (const code of [1001, 1003, 1007, 1008, 1013, 1014, 3999, 4000, 4403, 4409]) {
      up.behave = (ws) => setTimeout(() => ws.close(code, `c${code}`), 50);
      const c = await connect(relay);
      const got = await closedWithin(c, 3_000, `close ${code}`);
      assert.deepEqual([got.code, got.reason], [code, `c${code}`]);
    }
    up.behave = (ws) => setTimeout(() => ws.close(4401, "c4401"), 50);
    const c = await connect(relay);
    const got = await closedWithin(c, 3_000, "close 4401");
    assert.deepEqual([got.code, got.reason], [1011, "the relay's key for this agent was refused"]);
  });

  test("an upstream that drops the TCP connection (1006): the browser gets 1011 within 2 s", { timeout: 20_000 }, async () => {
    for (const [what, drop] of [
      ["right after the upgrade", (ws, socket) => setTimeout(() => socket.destroy(), 50)],
      ["after a frame", (ws, socket) => { ws.send("one"); setTimeout(() => socket.destroy(), 50); }],
      ["in the middle of a frame", (ws, socket) => { socket.write(Buffer.from([0x81, 0x7e, 0x10, 0x00, 0x61, 0x61])); setTimeout(() => socket.destroy(), 50); }],
      ["with a TCP reset", (ws, socket) => setTimeout(() => socket.resetAndDestroy(), 50)],
    ]) {
      up.behave = (ws, _req, socket) => drop(ws, socket);
      const c = await connect(relay);
      const got = await closedWithin(c, 2_000, what);
      assert.equal(got.code, 1011, `${what}: ${got.code} ${got.reason}`);
    }
  });

  test("an upstream silent after the upgrade: both sides closed 1011 within UPSTREAM_IDLE_MS", { timeout: 20_000 }, async () => {
    up.behave = () => {};
    const closes = up.closes.length;
    const c = await connect(relay);
    c.ws.send("the browser talking does not count as the upstream being alive");
    const got = await closedWithin(c, UPSTREAM_IDLE_MS + SLACK, "the idle close");
    assert.deepEqual([got.code, got.reason], [1011, "the upstream went silent"]);
    assert.ok(got.after >= UPSTREAM_IDLE_MS - 100, `closed after ${got.after} ms`);
    await until(() => up.closes.slice(closes).some((x) => x.code === 1011), SLACK, "the upstream closed 1011");
  });

  test("an upstream that keeps talking is not idle", { timeout: 20_000 }, async () => {
    up.behave = (ws) => {
      const t = setInterval(() => ws.readyState === ws.OPEN && ws.send("tick"), UPSTREAM_IDLE_MS / 4);
      ws.on("close", () => clearInterval(t));
    };
    const c = await connect(relay);
    await sleep(UPSTREAM_IDLE_MS * 3);
    assert.equal(c.ws.readyState, c.ws.OPEN);
    c.ws.close(1000);
  });

  test("a talking socket outlives UPSTREAM_TIMEOUT_MS (the open's timeout bounds the open only)", { timeout: 20_000 }, async () => {
    const short = await startRelay(vars(up.url, { UPSTREAM_TIMEOUT_MS: "1000", UPSTREAM_IDLE_MS: "5000" }));
    up.behave = (ws) => {
      const t = setInterval(() => ws.readyState === ws.OPEN && ws.send("tick"), 250);
      ws.on("close", () => clearInterval(t));
    };
    const c = await connect(short);
    const ended = await Promise.race([c.closed, sleep(3_000).then(() => null)]);
    assert.equal(ended, null, `closed after ${Date.now() - c.t0} ms: ${JSON.stringify(ended)}`);
    c.ws.close(1000);
    await within(5_000, "the close", c.closed);
  });

  test("a browser that vanishes: the upstream socket is closed within 2 s", { timeout: 20_000 }, async () => {
    for (const [what, vanish] of [
      ["terminate", (c) => c.ws.terminate()],
      ["TCP reset", (c) => c.ws._socket.resetAndDestroy()],
      ["garbage bytes", (c) => c.ws._socket.end(Buffer.from("\x00\x01garbage, not a frame"))],
      ["an unmasked client frame", (c) => c.ws._socket.write(Buffer.from([0x81, 0x01, 0x61]))],
    ]) {
      let mine = null;
      up.behave = (ws) => {
        mine = { ws, code: null };
        ws.on("close", (code) => (mine.code = code));
        ws.send("hello");
      };
      const c = await connect(relay);
      await c.next((f) => f.raw === "hello", 5_000, "hello");
      const t0 = Date.now();
      vanish(c);
      await until(() => mine.code !== null, 2_000, `${what}: the upstream closed`);
      // 1011 from the relay, or 1006 when workerd drops the upstream's TCP connection itself
      // (a protocol error on the browser's side ends the request).
      assert.ok([1011, 1006].includes(mine.code), `${what}: ${mine.code}`);
      assert.ok(Date.now() - t0 < 2_000);
      assert.ok(!up.sockets.has(mine.ws), `${what}: the upstream socket is gone`);
    }
  });

  test("an upstream that answers the upgrade with something else: 1011 (a 401 too: the relay's key), within 2 s", { timeout: 20_000 }, async () => {
    for (const [status, want] of [[200, 1011], [500, 1011], [502, 1011], [401, 1011], [302, 1011]]) {
      up.refuse(status);
      const c = await connect(relay);
      const got = await closedWithin(c, 2_000, `HTTP ${status}`);
      assert.equal(got.code, want, `HTTP ${status}: ${got.code} ${got.reason}`);
    }
    up.refuse(null);
  });
});

describe("an upstream that never answers", () => {
  test("TCP accepted, no upgrade answer: the browser is closed 1011 within UPSTREAM_TIMEOUT_MS, the socket let go", { timeout: 20_000 }, async () => {
    const hole = await startBlackhole();
    const relay = await startRelay(vars(hole.url));
    const c = await connect(relay);
    const got = await closedWithin(c, UPSTREAM_TIMEOUT_MS + SLACK, "the timeout");
    assert.equal(got.code, 1011);
    assert.ok(got.after >= UPSTREAM_TIMEOUT_MS - 100, `closed after ${got.after} ms`);
    assert.equal(hole.accepted, 1);
    await until(() => hole.open === 0, SLACK, "the relay closing its socket to the black hole");
  });

  test("a browser that leaves while the upstream is still being reached: the upstream socket is let go within 2 s", { timeout: 20_000 }, async () => {
    const hole = await startBlackhole();
    const relay = await startRelay(vars(hole.url, { UPSTREAM_TIMEOUT_MS: "60000" }));
    const c = await connect(relay);
    await until(() => hole.accepted === 1, 2_000, "the relay reaching the black hole");
    c.ws.terminate();
    await until(() => hole.open === 0, 2_000, "the relay closing its socket to the black hole");
  });

  test("a browser that leaves before the upstream's (late) upgrade answer: the upstream connection is closed within 2 s", { timeout: 20_000 }, async () => {
    const up = await startUpstream();
    up.upgradeDelayMs = 500;
    const relay = await startRelay(vars(up.url, { UPSTREAM_TIMEOUT_MS: "60000" }));
    const c = await connect(relay);
    await until(() => up.wsRequests().length === 1, 2_000, "the upgrade request");
    c.ws.terminate();
    const t0 = Date.now();
    // Either the upgrade is abandoned (TCP closed) or the socket it made is closed 1000.
    await until(() => up.wsRequests()[0].closedAt !== null, 2_000, "the upstream connection closed");
    assert.ok(Date.now() - t0 < 2_000);
    assert.ok(up.closes.every((x) => x.code === 1000), JSON.stringify(up.closes));
  });

  test("a browser that closes while the upstream is still being reached gets its close answered within 2 s", { timeout: 20_000 }, async () => {
    const hole = await startBlackhole();
    const relay = await startRelay(vars(hole.url, { UPSTREAM_TIMEOUT_MS: "60000" }));
    const c = await connect(relay);
    await until(() => hole.accepted === 1, 2_000, "the relay reaching the black hole");
    c.ws.close(4000, "leaving");
    const got = await within(2_000, "the browser's close answered", c.closed);
    assert.equal(got.code, 4000);
  });

  test("an HTTP route to a black hole answers 504 within UPSTREAM_TIMEOUT_MS", { timeout: 20_000 }, async () => {
    const hole = await startBlackhole();
    const relay = await startRelay(vars(hole.url));
    const t0 = Date.now();
    const res = await fetch(`${relay.url}/agents/${FAKE.id}/ops`, {
      headers: { Authorization: `Bearer ${await token(FAKE.id)}`, Origin: "http://127.0.0.1:7700" },
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS + SLACK),
    });
    assert.equal(res.status, 504);
    assert.ok(Date.now() - t0 < UPSTREAM_TIMEOUT_MS + SLACK);
    assert.equal(res.headers.get("access-control-allow-origin"), "http://127.0.0.1:7700");
    await res.body?.cancel();
    await until(() => hole.open === 0, SLACK, "the relay closing its socket");
  });

  test("nothing listening: 1011 at once", { timeout: 20_000 }, async () => {
    const hole = await startBlackhole();
    const url = hole.url;
    await stopHostile(); // the port is free again (and most likely still unused)
    const relay = await startRelay(vars(url));
    const c = await connect(relay);
    const got = await closedWithin(c, UPSTREAM_TIMEOUT_MS + SLACK, "the close");
    assert.equal(got.code, 1011);
  });
});

describe("an SSE upstream that misbehaves (the bridge)", { concurrency: true }, () => {
  const sseVars = (url, extra = {}) => vars(url, { UPSTREAM_GENERATION: "sse", PING_INTERVAL_MS: "300", ...extra });

  test("garbage on the stream is dropped; the bridge stays up and good frames still arrive", { timeout: 20_000 }, async () => {
    let cid;
    const sse = await startSseUpstream((res, req) => {
      cid = new URL(req.url, "http://x").searchParams.get("connection_id");
      res.write(sseConnectionState(FAKE.id, cid));
      res.write("data: {not json\n\n");
      res.write("event: message\ndata: [1,2,3]\n\n");
      res.write("id: 2\nevent: message\ndata: {\"type\":\"message\"}\n\n");
      res.write("id: banana\nevent: message\ndata: {}\n\n");
      res.write("event: connection_state\ndata: \"again\"\n\n");
      res.write(Buffer.from([0xff, 0xfe, 0x00, 0x0a, 0x0a]));
      res.write(": a comment\n\n");
      res.write("retry: 1\n\n");
      res.write(`event: ${"e".repeat(5000)}\ndata: {}\n\n`);
      res.write(`data: ${"{".repeat(200)}\n\n`);
      res.write(sseMessage(7, "room-1", "after the garbage"));
      setTimeout(() => res.write(sseMessage(8, "room-1", "later")), 500);
    });
    const relay = await startRelay(sseVars(sse.url));
    const c = await connect(relay);
    await c.next((f) => f.event === "connection_state", 5_000, "connection_state");
    await c.next((f) => f.event === "message" && f.data.payload.body === "after the garbage", 5_000, "the good message");
    await c.next((f) => f.event === "message" && f.data.payload.body === "later", 5_000, "the later message");
    await sleep(1_000);
    assert.equal(c.ws.readyState, c.ws.OPEN, "still up");
    // An unknown event name is a control frame of a newer server: forwarded as {event, data}.
    const kinds = c.frames.map((f) => (f.event === "e".repeat(5000) ? "unknown" : f.event ?? f.type ?? "raw"));
    assert.ok(kinds.every((k) => ["connection_state", "message", "ping", "gap", "unknown"].includes(k)), kinds.join(","));
    for (const f of c.frames) assert.deepEqual(Object.keys(f).filter((k) => k !== "id"), ["event", "data"]);
    assert.equal(c.frames.filter((f) => f.event === "message").length, 2, "only the good messages");
    assert.ok(sse.beats.length >= 1, "beats went on");
    c.ws.close(1000);
    await until(() => sse.streams.every((s) => s.closedAt), 2_000, "the stream let go");
  });

  test("no answer at all to the stream open: 1011 within UPSTREAM_TIMEOUT_MS, the stream let go", { timeout: 20_000 }, async () => {
    const sse = await startSseUpstream(() => {}, { head: false });
    const relay = await startRelay(sseVars(sse.url));
    const c = await connect(relay);
    const got = await closedWithin(c, UPSTREAM_TIMEOUT_MS + SLACK, "the open timeout");
    assert.equal(got.code, 1011);
    await until(() => sse.streams.length === 1 && sse.streams[0].closedAt, SLACK, "the stream let go");
  });

  test("a stream that opens and never sends connection_state: 1011 within UPSTREAM_TIMEOUT_MS", { timeout: 20_000 }, async () => {
    const sse = await startSseUpstream((res) => res.write(": hello\n\n"));
    const relay = await startRelay(sseVars(sse.url));
    const c = await connect(relay);
    const got = await closedWithin(c, UPSTREAM_TIMEOUT_MS + SLACK, "the open timeout");
    assert.equal(got.code, 1011);
    await until(() => sse.streams[0]?.closedAt, SLACK, "the stream let go");
  });

  test("a refused stream open whose body never ends: its status after 2 s (REFUSAL_BODY_WAIT_MS), not the open's timeout", { timeout: 20_000 }, async () => {
    const sse = await startSseUpstream((res) => {
      res.writeHead(409, { "content-type": "application/json" });
      res.write('{"detail":"taken over"');
    }, { head: false });
    const relay = await startRelay(sseVars(sse.url, { UPSTREAM_TIMEOUT_MS: "8000" }));
    const c = await connect(relay);
    const got = await closedWithin(c, 2_000 + SLACK, "the refusal");
    assert.equal(got.code, 4409, got.reason);
    assert.ok(got.after >= 1_500, `closed after ${got.after} ms`);
    const refused = c.frames.find((f) => f.event === "refused");
    assert.equal(refused?.data.status, 409, JSON.stringify(c.frames));
    assert.match(String(refused.data.detail), /taken over/);
    await until(() => sse.streams[0]?.closedAt, SLACK, "the stream let go");
  });

  test("a refused stream open whose body breaks off is no answer: 1011, not the refusal (cut, a 409 loses its code)", { timeout: 20_000 }, async () => {
    const sse = await startSseUpstream((res) => {
      res.writeHead(409, { "content-type": "application/json" });
      res.write('{"detail":"taken","co');
      setTimeout(() => res.destroy(), 50);
    }, { head: false });
    const relay = await startRelay(sseVars(sse.url, { UPSTREAM_TIMEOUT_MS: "8000" }));
    const c = await connect(relay);
    const got = await closedWithin(c, 2_000 + SLACK, "the close");
    assert.deepEqual([got.code, got.reason], [1011, "upstream unreachable: the HTTP 409 answer broke off"]);
    assert.ok(!c.frames.some((f) => f.event === "refused"), JSON.stringify(c.frames));
  });

  test("a beat answer whose body breaks off is a failed beat, retried, not the eviction its status names", { timeout: 20_000 }, async () => {
    const sse = await startSseUpstream((res, req) => {
      res.write(sseConnectionState(FAKE.id, new URL(req.url, "http://x").searchParams.get("connection_id")));
    });
    Object.assign(sse, { beatStatus: 409, beatBreaks: true });
    const relay = await startRelay(sseVars(sse.url, { UPSTREAM_TIMEOUT_MS: "8000" }));
    const c = await connect(relay);
    await c.next((f) => f.event === "connection_state", 5_000, "connection_state");
    await until(() => sse.beats.length >= 2, 5_000, "a second beat");
    assert.equal(c.ws.readyState, c.ws.OPEN, "still up");
    assert.ok(!c.frames.some((f) => f.event === "evicted"), JSON.stringify(c.frames));
  });

  test("a beat that is never answered: 1011 after UPSTREAM_TIMEOUT_MS (the bridge's beat timeout is the configured one)", { timeout: 20_000 }, async () => {
    const sse = await startSseUpstream((res, req) => {
      res.write(sseConnectionState(FAKE.id, new URL(req.url, "http://x").searchParams.get("connection_id")));
    });
    sse.beatStatus = null;
    const relay = await startRelay(sseVars(sse.url));
    const c = await connect(relay);
    await c.next((f) => f.event === "connection_state", 5_000, "connection_state");
    await until(() => sse.beats.length >= 1, 5_000, "the first beat");
    const beatAt = sse.beats[0].at;
    const got = await closedWithin(c, 10_000, "the close");
    assert.equal(got.code, 1011, got.reason);
    assert.match(got.reason, new RegExp(`beat unanswered for ${UPSTREAM_TIMEOUT_MS} ms`));
    assert.ok(Date.now() - beatAt < UPSTREAM_TIMEOUT_MS + SLACK, `closed ${Date.now() - beatAt} ms after the beat`);
    await until(() => sse.streams[0]?.closedAt, SLACK, "the stream let go");
  });

  test("a beat answered late but within a long UPSTREAM_TIMEOUT_MS (12 s) keeps the bridge", { timeout: 30_000 }, async () => {
    const sse = await startSseUpstream((res, req) => {
      res.write(sseConnectionState(FAKE.id, new URL(req.url, "http://x").searchParams.get("connection_id")));
    });
    sse.beatDelayMs = 10_500; // the first beat only: past the 10 s the bridge used to wait
    const relay = await startRelay(sseVars(sse.url, { UPSTREAM_TIMEOUT_MS: "12000" }));
    const c = await connect(relay);
    await c.next((f) => f.event === "connection_state", 5_000, "connection_state");
    await until(() => sse.beats.length >= 1, 5_000, "the first beat");
    sse.beatDelayMs = 0;
    await until(() => sse.beats.length >= 2, 13_000, "a second beat (after the late answer)");
    assert.equal(c.ws.readyState, c.ws.OPEN, `closed: ${JSON.stringify(await Promise.race([c.closed, sleep(0)]))}`);
    c.ws.close(1000);
  });

  test("a browser that stops reading holds back the upstream stream, not the Worker's memory (MAX_UNACKED_BYTES), and catches up when it reads again", { timeout: 30_000 }, async () => {
    const sse = await startSseUpstream((res, req) => {
      res.write(sseConnectionState(FAKE.id, new URL(req.url, "http://x").searchParams.get("connection_id")));
    });
    // Pings every 2 s (the pong TTL is 6 s); at most 1 MiB sent and not acknowledged.
    const relay = await startRelay(sseVars(sse.url, { PING_INTERVAL_MS: "2000", MAX_UNACKED_BYTES: String(1 << 20) }));
    const c = await connect(relay);
    await c.next((f) => f.event === "connection_state", 5_000, "connection_state");
    c.ws._socket.pause(); // the browser reads nothing more for now
    // 64 MiB of events: without a bound the relay reads them all and queues them for the browser.
    const res = sse.streams[0].res;
    const body = "b".repeat(64 * 1024);
    const total = 1024;
    // Written as the socket takes them (on "drain"): `written` is what left the upstream.
    let written = 0;
    const feed = () => {
      while (written < total && !res.destroyed) {
        written += 1;
        if (!res.write(sseMessage(written, "room-1", body))) return void res.once("drain", feed);
      }
    };
    feed();
    await sleep(3_500);
    const taken = written;
    // What left the upstream is the bound (16 events) plus what the sockets and workerd buffer
    // on the way (a few MiB on loopback: about 70 events in all here), far from all of it.
    assert.ok(taken < total / 4, `the relay took ${taken} of ${total} events from the upstream for a browser that reads nothing`);
    c.ws._socket.resume();
    // Reading again, the browser answers the pings queued behind the frames, which lets the
    // relay read on: events it had not taken arrive.
    await c.next((f) => f.id >= taken + 32, 15_000, `event ${taken + 32} (taken before: ${taken})`);
    assert.equal(c.ws.readyState, c.ws.OPEN);
    c.ws.close(1000);
  });

  test("a stream that ends or breaks: 1011 at once", { timeout: 20_000 }, async () => {
    for (const end of [(res) => res.end(), (res) => res.destroy(), (res) => res.socket.resetAndDestroy()]) {
      const sse = await startSseUpstream((res, req) => {
        res.write(sseConnectionState(FAKE.id, new URL(req.url, "http://x").searchParams.get("connection_id")));
        setTimeout(() => end(res), 200);
      });
      const relay = await startRelay(sseVars(sse.url));
      const c = await connect(relay);
      const got = await closedWithin(c, 3_000, "the close");
      assert.equal(got.code, 1011);
    }
  });

  test("a stream that goes quiet after connection_state (beats answered): closed within 45 s (the bridge's stream idle bound)", { timeout: 60_000 }, async () => {
    const sse = await startSseUpstream((res, req) => {
      res.write(sseConnectionState(FAKE.id, new URL(req.url, "http://x").searchParams.get("connection_id")));
    });
    const relay = await startRelay(sseVars(sse.url));
    const c = await connect(relay);
    await c.next((f) => f.event === "connection_state", 5_000, "connection_state");
    const got = await closedWithin(c, 45_000 + SLACK * 2, "the idle close");
    assert.equal(got.code, 1011, got.reason);
    assert.ok(sse.beats.length > 10, `beats: ${sse.beats.length}`);
    await until(() => sse.streams[0]?.closedAt, SLACK, "the stream let go");
  });

  test("a browser that vanishes from the bridge: the stream and the beats stop within 2 s", { timeout: 20_000 }, async () => {
    const sse = await startSseUpstream((res, req) => {
      res.write(sseConnectionState(FAKE.id, new URL(req.url, "http://x").searchParams.get("connection_id")));
    });
    const relay = await startRelay(sseVars(sse.url));
    const c = await connect(relay);
    await c.next((f) => f.event === "connection_state", 5_000, "connection_state");
    await until(() => sse.beats.length >= 1, 3_000, "a beat");
    c.ws.terminate();
    await until(() => sse.streams[0].closedAt, 2_000, "the stream let go");
    const beats = sse.beats.length;
    await sleep(1_000);
    assert.ok(sse.beats.length <= beats + 1, "no more beats");
  });
});

const BLOB_DATE = "2026-03-17";
describe("binary frames as Blobs (workerd's websocket_standard_binary_type, the default from compatibility date 2026-03-17)", () => {
  let up, relay;
  before(async () => {
    up = await startUpstream();
    // Blobs from that date on (the flag itself may not be named past it: the date implies it).
    const date = RELAY_COMPATIBILITY_DATE > BLOB_DATE ? RELAY_COMPATIBILITY_DATE : BLOB_DATE;
    relay = await startRelay(vars(up.url, { MAX_MESSAGE_BYTES: "1024" }), { compatibilityDate: date });
  });

  test("binary frames cross both ways as the same bytes, and one over MAX_MESSAGE_BYTES closes 1009", { timeout: 20_000 }, async () => {
    const seen = [];
    up.behave = (ws) => ws.on("message", (d, isBinary) => {
      seen.push({ d: Buffer.from(d), isBinary });
      ws.send(Buffer.from([9, 8, 7, 0, 255]), { binary: true });
    });
    const c = await connect(relay);
    const got = [];
    c.ws.on("message", (d, isBinary) => got.push({ d: Buffer.from(d), isBinary }));
    c.ws.send(Buffer.from([1, 2, 3, 0, 254]), { binary: true });
    await until(() => got.length === 1, 5_000, "the upstream's binary frame");
    assert.deepEqual(seen.map((s) => [s.isBinary, [...s.d]]), [[true, [1, 2, 3, 0, 254]]], "the upstream got the bytes");
    assert.deepEqual(got.map((g) => [g.isBinary, [...g.d]]), [[true, [9, 8, 7, 0, 255]]], "the browser got the bytes");
    c.ws.send(Buffer.alloc(100_000, 1), { binary: true });
    const closed = await closedWithin(c, 3_000, "the 1009");
    assert.equal(closed.code, 1009, `${closed.code} ${closed.reason}`);
    assert.equal(seen.length, 1, "the oversized frame did not go upstream");
  });
});
