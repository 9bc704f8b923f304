// The application sending faster than the peer reads: a browser WebSocket never refuses a send,
// it buffers (`bufferedAmount`), so a client that hands it every frame at once holds any amount
// for a peer that stopped reading. The clients hand frames over only while `bufferedAmount` is
// under 1 MiB; the rest wait in the engine, where a call given up on first is never sent.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MoltZapClient } from "agentwire/moltzap";
import { RktClient } from "agentwire/rkt";
import { FakeRkt, FakeWebSocket, last, rktHeader } from "./fake-ws.mjs";

const MIB = 1 << 20;
const big = "x".repeat(64 << 10);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A socket whose peer reads nothing while `stalled`: what is sent stays in `bufferedAmount`.
 * `handed` counts the characters given to send() once `counting` is set. */
const stalling = (Base) =>
  class extends Base {
    bufferedAmount = 0;
    stalled = false;
    counting = false;
    handed = 0;
    send(t) {
      if (this.counting) this.handed += t.length;
      if (this.stalled) this.bufferedAmount += t.length;
      super.send(t);
    }
  };

/** 40 calls of 64 KiB each to a peer that stopped reading, given up on after `timeoutMs`: what
 * was handed to the socket, how each call failed and how many may be made again. Then the peer
 * reads again. */
async function flood(ws, call) {
  ws.stalled = true;
  ws.counting = true;
  const settled = Promise.allSettled(Array.from({ length: 40 }, () => call(big, 300)));
  const reasons = (await settled).map((r) => r.reason);
  const handed = ws.handed;
  ws.stalled = false;
  ws.bufferedAmount = 0;
  return { failed: reasons.map((e) => e?.kind), handed, retryable: reasons.filter((e) => e?.retryable).length };
}

test("RKT: a peer that stops reading holds at most about 1 MiB in the socket; the calls held back and given up on are never sent, and stay retryable", { timeout: 10_000 }, async () => {
  const client = await RktClient.connect("ws://fake/rkt", { webSocket: stalling(FakeRkt), keepalive: false });
  const ws = last();
  try {
    const { failed, handed, retryable } = await flood(ws, (p, timeoutMs) => client.request("s", { p }, { timeoutMs }));
    assert.deepEqual(new Set(failed), new Set(["timeout"]));
    assert.ok(handed <= MIB + 2 * big.length, `${handed} characters handed to a socket holding them all`);
    // Those held back were given up on before they left: never sent, and safe to make again
    // (those sent may have run: not retryable).
    const sent = ws.sent.filter((t) => t.startsWith("RKT/1.0 REQUEST\n")).length;
    assert.ok(sent <= 17, String(sent));
    assert.equal(retryable, 40 - sent);
    // The peer reads again: the frames held back go without another call.
    const requests = () => ws.sent.filter((t) => t.startsWith("RKT/1.0 REQUEST\n")).length;
    ws.stalled = true;
    const base = requests();
    const held = Array.from({ length: 20 }, () => client.request("s", { p: big }, { timeoutMs: 5_000 }).catch(() => {}));
    await sleep(50);
    assert.ok(requests() - base < 20, `${requests() - base} of 20 sent to a peer that reads nothing`);
    ws.stalled = false;
    ws.bufferedAmount = 0;
    await sleep(200);
    assert.equal(requests() - base, 20);
    void held;
  } finally {
    await client.close();
  }
});

test("RKT streams: those held back and given up on by timeoutMs are never sent, and stay retryable", { timeout: 10_000 }, async () => {
  const client = await RktClient.connect("ws://fake/rkt", { webSocket: stalling(FakeRkt), keepalive: false });
  const ws = last();
  try {
    const read = async (p, timeoutMs) => {
      for await (const chunk of client.stream("s", { p }, { timeoutMs })) void chunk;
    };
    const { failed, retryable } = await flood(ws, read);
    assert.deepEqual(new Set(failed), new Set(["timeout"]));
    const sent = ws.sent.filter((t) => t.startsWith("RKT/1.0 REQUEST\n")).length;
    assert.ok(sent <= 17, String(sent));
    assert.equal(retryable, 40 - sent);
  } finally {
    await client.close();
  }
});

test("MoltZap: a peer that stops reading holds at most about 1 MiB in the socket; the calls held back and given up on are never sent, and stay retryable", { timeout: 10_000 }, async () => {
  const sent = [];
  class Peer extends stalling(FakeWebSocket) {
    send(t) {
      super.send(t);
      sent.push(t);
      const m = JSON.parse(t);
      if (m.method === "agent/network/connect") queueMicrotask(() => this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id: m.id, result: {} }) }));
    }
  }
  const connecting = MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: Peer, timeoutMs: 2_000 });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  const client = await connecting;
  try {
    // Given up on by a signal (MoltZap's `timeoutMs` is the engine's own request timeout).
    const { failed, handed, retryable } = await flood(ws, (p, ms) => client.call("x/y", { p }, { signal: AbortSignal.timeout(ms) }));
    assert.deepEqual(new Set(failed), new Set(["timeout"]));
    assert.ok(handed <= MIB + 2 * big.length, `${handed} characters handed to a socket holding them all`);
    const requests = sent.filter((t) => JSON.parse(t).method === "x/y").length;
    assert.ok(requests <= 17, String(requests));
    assert.equal(retryable, 40 - requests);
  } finally {
    await client.close();
  }
});

// A peer gone without a close (a half-open socket) while the socket holds over 1 MiB: the
// liveness probe (MoltZap) and the keepalive PING (RKT) wait behind it in the engine, which
// counts them only once they have left; a socket that sends nothing for 5 s is taken as dead
// (1006), as the native drivers' write bound does. Both clients at once: one 5 s wait.
test("a socket over 1 MiB that sends nothing for 5 s ends the session (1006): a half-open peer is found dead", { timeout: 20_000 }, async () => {
  const gone = { moltzap: [], rkt: [] };
  class MoltZapPeer extends stalling(FakeWebSocket) {
    send(t) {
      super.send(t);
      const m = JSON.parse(t);
      if (m.method === "agent/network/connect") queueMicrotask(() => this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id: m.id, result: {} }) }));
    }
  }
  const connecting = MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: MoltZapPeer, idleProbeMs: 200, requestTimeoutMs: 300, onEvent: (e) => gone.moltzap.push(e) });
  const mz = last();
  mz.readyState = 1;
  mz.onopen({});
  const moltzap = await connecting;
  // An RKT server whose session timeout makes the keepalive PING after 1 s.
  class RktPeer extends stalling(FakeRkt) {
    send(t) {
      if (!t.startsWith("RKT/1.0 HELLO\n")) return super.send(t);
      this.session = rktHeader(t, "Session-ID");
      setTimeout(() => this.reply(rktHeader(t, "Message-ID"), "HELLO_ACK", '{"agreed_version":1,"session_timeout":2}'));
    }
  }
  const rkt = await RktClient.connect("ws://fake/rkt", { webSocket: RktPeer, ttlS: 1, onEvent: (e) => gone.rkt.push(e) });
  const rs = last();
  // The keepalive takes a peer for dead only once it has answered a PING.
  const ping = rkt.ping();
  rs.reply(rktHeader(rs.sent.at(-1), "Message-ID"), "PONG");
  await ping;
  const t0 = Date.now();
  for (const ws of [mz, rs]) ws.stalled = true;
  await Promise.allSettled([
    ...Array.from({ length: 20 }, () => moltzap.call("x/y", { p: big })),
    ...Array.from({ length: 20 }, () => rkt.request("s", { p: big })),
  ]);
  const ended = (events, type) => events.find((e) => e.type === type);
  while (Date.now() - t0 < 9_000 && !(ended(gone.moltzap, "disconnected") && ended(gone.rkt, "closed"))) await sleep(50);
  assert.ok(mz.bufferedAmount >= MIB && rs.bufferedAmount >= MIB);
  assert.equal(ended(gone.moltzap, "disconnected")?.code, 1006, JSON.stringify(gone.moltzap));
  assert.match(ended(gone.moltzap, "disconnected").reason, /write blocked for 5000 ms/);
  assert.deepEqual([ended(gone.rkt, "closed")?.code, ended(gone.rkt, "closed")?.reason], [1006, "write blocked for 5000 ms"]);
  assert.ok(Date.now() - t0 < 8_000, `${Date.now() - t0} ms`);
});
