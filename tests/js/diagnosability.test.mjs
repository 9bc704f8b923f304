// What a developer can learn when a connect or a call fails in production (a customer's
// browser, a server far away): each test states a rule of what the error or the status says.
// Run against a built package (npm/dist): `node --test diagnosability.test.mjs`.
// (From review B's reproductions, which failed on the reviewed tree.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { SwitchClient, RktClient, MoltZapClient } from "agentwire";
import { FakeRkt, FakeWebSocket, connectionState, fakeRelay, last, rktHeader } from "./fake-ws.mjs";

const b64url = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
const token = (expS) => `${b64url({ sub: "a", agent_id: "a", exp: expS })}.sig`;


// A customer's PC whose clock is 10 minutes fast (a clock set by hand, a dead CMOS battery),
// 5-minute tokens: every token looks expired by it. The backend and the relay agree and are right.
// The relay judges expiry: with `refreshToken` the connect works as without, the `diagnostic`
// names this clock, and nothing renews in a loop. (It refused the fresh token, "its token expires
// no later", and never opened a socket.)
test("a clock ahead of the relay's: a token that looks expired on arrival is used, a diagnostic names the clock, no renewal loop", { timeout: 15_000 }, async () => {
  const skew = 10 * 60_000;
  const plain = fakeRelay(skew);
  const ok = await SwitchClient.connect("http://relay", { token: plain.mint(), agentId: "a", webSocket: plain.Relay });
  assert.equal(ok.status().state, "live", "the relay accepts the token as minted");
  await ok.close();

  const r = fakeRelay(skew);
  const events = [];
  let calls = 0;
  let error;
  try {
    const c = await SwitchClient.connect("http://relay", {
      token: r.mint(), agentId: "a", webSocket: r.Relay,
      refreshToken: async () => (calls++, r.mint()),
      onEvent: (e) => events.push(e),
      timeoutMs: 5000,
    });
    await new Promise((res) => setTimeout(res, 200));
    assert.equal(c.status().state, "live");
    await c.close();
  } catch (e) {
    error = e;
  }
  assert.equal(error, undefined, `a token the relay accepts is refused by the client: ${error?.message}`);
  assert.equal(calls, 1, "renewed once, not in a loop");
  assert.equal(r.opened.length, 1, "one socket");
  const diagnostics = events.filter((e) => e.type === "diagnostic" && /clock/.test(e.error.message)).map((e) => e.error.message);
  assert.equal(diagnostics.length, 1, JSON.stringify(diagnostics));
  assert.match(diagnostics[0], /clock looks (29\d|30\d) s ahead at least/);
});

test("a clock ahead of the relay's, the same token minted again: the connect goes with it", { timeout: 15_000 }, async () => {
  const r = fakeRelay(10 * 60_000);
  const same = r.mint();
  const err = await SwitchClient.connect("http://relay", {
    token: same, agentId: "a", webSocket: r.Relay, refreshToken: async () => same,
  }).then((c) => (c.close(), undefined), (e) => e);
  assert.equal(err, undefined, err?.message);
});

/** A relay that accepts each upgrade and closes it at once with `code`/`reason` (the relay's own
 * "relay configuration error", an upstream refusing...). */
function closingRelay(code, reason) {
  let opened = 0;
  class Relay extends FakeWebSocket {
    constructor(url) {
      super(url);
      opened++;
      // A socket the client gave up on (the connect's timeout) before this runs has no handlers.
      setTimeout(() => {
        this.readyState = 1;
        this.onopen?.({});
        this.readyState = 3;
        this.onclose?.({ code, reason });
      });
    }
  }
  return { Relay, opened: () => opened };
}

// connectAttempts 0 (keep trying until attached) bounded by timeoutMs, as the README suggests:
// every open is closed by the relay with 1011 "relay configuration error". The client is never
// returned, so the `disconnected` events that carried the reason (buffered for events()) cannot
// be read: the rejection says it, as the native SwitchClient::connect does, "(last: ...)".
test("a Switch connect that times out while reopening says the last disconnect's reason (last: ...)", { timeout: 15_000 }, async () => {
  const r = closingRelay(1011, "relay configuration error");
  const err = await SwitchClient.connect("http://relay", {
    token: token(Math.floor(Date.now() / 1000) + 300), agentId: "a", webSocket: r.Relay,
    connectAttempts: 0, backoff: { baseMs: 50, minMs: 50, maxMs: 100 }, timeoutMs: 1500,
  }).then((c) => (c.close(), undefined), (e) => e);
  assert.ok(err, "connect should fail");
  assert.equal(err.kind, "timeout");
  assert.match(err.message, /^no connection within 1500 ms \(last: .*1011.*relay configuration error.*\)$/);
});

test("a Switch client's status() says the last disconnect's reason (lastProblem)", { timeout: 10_000 }, async () => {
  const connecting = SwitchClient.connect("http://fake", { token: token(Math.floor(Date.now() / 1000) + 3600), agentId: "a", webSocket: FakeWebSocket, backoff: { baseMs: 20_000, minMs: 20_000 } });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  ws.onmessage({ data: connectionState });
  const c = await connecting;
  assert.equal(c.status().lastProblem, undefined);
  ws.readyState = 3;
  ws.onclose({ code: 1011, reason: "upstream gone" });
  assert.equal(c.status().state, "backoff");
  assert.match(c.status().lastProblem, /1011.*upstream gone/);
  await c.close();
});

/** A socket that never opens: the host's `error` (a browser's says nothing), then close 1006 —
 * what a browser reports for DNS, a refused TCP connection, a TLS failure, a refused upgrade or
 * a CSP `connect-src` block. */
class NeverOpens extends FakeWebSocket {
  constructor(url) {
    super(url);
    setTimeout(() => {
      this.readyState = 3;
      this.onerror?.({ type: "error" });
      this.onclose?.({ code: 1006, reason: "" });
    });
  }
}

// RKT is request/reply: the README's example never reads events(). The server ends the session
// (1008 "session expired: authenticate again"): the next request says the code and the reason
// (they were only in a `closed` event the app never looked at); after the app's own close() the
// words are the same as before.
test("a call after the server closed the connection says the close's code and reason; after close() it does not", { timeout: 10_000 }, async () => {
  const client = await RktClient.connect("ws://rkt.example/rkt", { webSocket: FakeRkt });
  const ws = last();
  ws.readyState = 3;
  ws.onclose({ code: 1008, reason: "session expired: authenticate again" });
  const e = await client.request("echo", {}).then(() => undefined, (e) => e);
  assert.equal(e.kind, "closed");
  assert.equal(e.message, "the connection is closed (1008 session expired: authenticate again)");
  const own = await RktClient.connect("ws://rkt.example/rkt", { webSocket: FakeRkt });
  await own.close();
  const e2 = await own.request("echo", {}).then(() => undefined, (e) => e);
  assert.equal(e2.message, "the connection is closed");
});

/** A socket that opens and then hears nothing (a server that takes the upgrade and never
 * answers HELLO). */
class OpensSilent extends FakeWebSocket {
  constructor(url) {
    super(url);
    setTimeout(() => {
      this.readyState = 1;
      this.onopen?.({});
    });
  }
}


// Where did it fail? A socket that never opened (DNS, a refused TCP connection, TLS, a refused
// upgrade, a CSP `connect-src` block) is not a failed handshake (RKT's HELLO/HELLO_ACK, MoltZap's
// connect call): the message says "before it opened", sending the developer to the network, the
// URL or the page's CSP.
test("a socket that never opened says 'before it opened', not 'during the handshake'", { timeout: 10_000 }, async () => {
  const rkt = await RktClient.connect("wss://rkt.example/rkt", { webSocket: NeverOpens }).then(() => undefined, (e) => e);
  const mz = await MoltZapClient.connect("wss://mz.example/ws", { agentKey: "k", webSocket: NeverOpens }).then(() => undefined, (e) => e);
  for (const e of [rkt, mz]) {
    assert.equal(e.kind, "closed");
    assert.match(e.message, /before it opened/);
    assert.doesNotMatch(e.message, /during the handshake/);
  }
  assert.match(rkt.message, /^wss:\/\/rkt\.example\/rkt: /);
});

// connect's `timeoutMs` (the README's first example passes 5000) below handshakeTimeoutMs
// (10 000): a TCP connect or upgrade that hangs and a server that opened the socket but never
// answered HELLO say which phase they stopped in.
test("connect's timeoutMs names the phase it stopped in (the socket not open, no HELLO_ACK, no answer to MoltZap's connect)", { timeout: 10_000 }, async () => {
  const hung = await RktClient.connect("wss://rkt.example/rkt", { webSocket: FakeWebSocket, timeoutMs: 300 }).then(() => undefined, (e) => e);
  const silent = await RktClient.connect("wss://rkt.example/rkt", { webSocket: OpensSilent, timeoutMs: 300 }).then(() => undefined, (e) => e);
  assert.equal(hung.message, "no RKT session within 300 ms (the WebSocket did not open)");
  assert.equal(silent.message, "no RKT session within 300 ms (no HELLO_ACK)");
  // MoltZap's the same way: the socket, or the answer to its connect call (it said neither).
  const mz = (webSocket) => MoltZapClient.connect("wss://mz.example/ws", { agentKey: "k", webSocket, timeoutMs: 300 }).then(() => undefined, (e) => e);
  assert.equal((await mz(FakeWebSocket)).message, "no MoltZap connection within 300 ms (the WebSocket did not open)");
  assert.equal((await mz(OpensSilent)).message, "no MoltZap connection within 300 ms (no answer to the connect)");
});

/** A MoltZap server that answers the connect with an empty HelloOk (the socket opens at once). */
class AnswersConnect extends OpensSilent {
  send(text) {
    const { id } = JSON.parse(text);
    setTimeout(() => this.onmessage?.({ data: JSON.stringify({ jsonrpc: "2.0", id, result: {} }) }));
  }
}

// A `maxMessageBytes` too small for the connect's answer: the answer came and was refused for
// its size, and the connect says so at once, `limit` (it waited out timeoutMs and said "no
// answer to the connect").
test("MoltZap: a connect answer refused by maxMessageBytes fails the connect at once with limit, not a timeout", { timeout: 10_000 }, async () => {
  const started = Date.now();
  const e = await MoltZapClient.connect("wss://mz.example/ws", { agentKey: "k", webSocket: AnswersConnect, maxMessageBytes: 1, timeoutMs: 5000 }).then(() => undefined, (e) => e);
  assert.equal(e?.kind, "limit", e?.message);
  assert.match(e.message, /the connect's answer could not be read: message of \d+ bytes exceeds the limit of 1 bytes/);
  assert.ok(Date.now() - started < 2000, `at once, not at the timeout (${Date.now() - started} ms)`);
});

/** An RKT server that answers HELLO with a message of a type the client does not know (after
 * `first`, text that cannot be read, when given), then closes with `code` and `reason`. */
const closesInTheHandshake = (first, code, reason) =>
  class extends FakeRkt {
    send(text) {
      if (!text.startsWith("RKT/1.0 HELLO\n")) return;
      this.session = rktHeader(text, "Session-ID");
      setTimeout(() => {
        if (first) this.onmessage({ data: first });
        this.reply(rktHeader(text, "Message-ID"), "HELLO_WAIT", '{"retry_in":1}');
        this.readyState = 3;
        this.onclose({ code, reason });
      });
    }
  };

// A server that closes the handshake after a message of a type the client does not know: that
// message ended nothing, the close says why the connect failed (it failed with "unknown message
// type"); after text that could not be read, that text's `decode` error says more.
test("a close after a message of an unknown type fails the connect with the close, after unreadable text with its decode", { timeout: 10_000 }, async () => {
  const failed = (first, code, reason) =>
    RktClient.connect("ws://rkt.example/rkt", { webSocket: closesInTheHandshake(first, code, reason) }).then((c) => (c.close(), undefined), (e) => e);
  const closed = await failed("", 1013, "try again later");
  assert.equal(closed.kind, "closed", closed.message);
  assert.match(closed.message, /1013 try again later/);
  const garbage = await failed("{", 1011, "garbage over");
  assert.equal(garbage.kind, "decode", garbage.message);
  assert.doesNotMatch(garbage.message, /HELLO_WAIT/);
});

/** A socket that never opens and fires only `close` 1006 (no `error` first). */
class OnlyCloses extends FakeWebSocket {
  constructor(url) {
    super(url);
    setTimeout(() => {
      this.readyState = 3;
      this.onclose?.({ code: 1006, reason: "" });
    });
  }
}


// A browser fires `error` before `close` on every failed connection (WHATWG "fail the
// WebSocket connection"), and says nothing in either: the Switch driver's message names the
// address it tried (it was unreachable behind the socket layer's "the connection failed").
test("a Switch open that fails in a browser (error, then close 1006) names the address it tried", { timeout: 10_000 }, async () => {
  const opts = (webSocket) => ({ token: token(Math.floor(Date.now() / 1000) + 300), agentId: "a", webSocket });
  const browser = await SwitchClient.connect("https://relay.example/prefix", opts(NeverOpens)).then((c) => (c.close(), undefined), (e) => e);
  const closeOnly = await SwitchClient.connect("https://relay.example/prefix", opts(OnlyCloses)).then((c) => (c.close(), undefined), (e) => e);
  for (const e of [browser, closeOnly]) assert.match(e.message, /the WebSocket to wss:\/\/relay\.example\/prefix did not open \(code 1006/);
});

// "My agent stopped receiving messages": a Switch client whose events() loop stalled (an await
// that never returns) holds events back in the engine, which past maxQueuedEvents takes no more.
// status() says so (`held`), where it looked healthy: `live`, attempt 0, droppedEvents 0.
test("a Switch client whose events() is not read says held in status()", { timeout: 10_000 }, async () => {
  const connecting = SwitchClient.connect("http://fake", { token: token(Math.floor(Date.now() / 1000) + 3600), agentId: "a", webSocket: FakeWebSocket, maxBufferedEvents: 4, maxQueuedEvents: 4 });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  ws.onmessage({ data: connectionState });
  const c = await connecting;
  assert.equal(c.status().held, undefined);
  for (let i = 1; i <= 40; i++) ws.onmessage({ data: JSON.stringify({ event: "message", data: { type: "message", room_id: "r", payload: { n: i }, sequence: i }, id: i }) });
  await new Promise((r) => setTimeout(r, 50));
  const status = c.status();
  await c.close();
  assert.equal(status.state, "live");
  assert.equal(status.held, true);
});
