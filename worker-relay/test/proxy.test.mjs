// The relay in front of a current Switch server (issue 6, items 3 and 4): the WebSocket piped
// (connection_state, pings and pongs across, a message posted through the relay's HTTP route
// arriving once, close codes both ways, the subprotocol echo) and the HTTP routes (ops,
// subscribe, unsubscribe, placements with X-Switch-Connection-Id, CORS, 404 for the rest).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import {
  startPeer, startRelay, relayVars, token, open, wsPath, withToken, cleanup, within, ORIGIN,
} from "./harness.mjs";
import { startUpstream, stopHostile, until } from "./hostile.mjs";

const T = { timeout: 30_000 };
let peer, relay, alice, bob, lobby;
let up, fakeRelay;
const FAKE = { id: "agent-fake", key: "sk_switch_fake_upstream_key_0001" };

before(async () => {
  // Pings every 500 ms, TTL 2 s: every connection this file keeps open lives on pongs that cross
  // Node, workerd and the peer; 1.5 s of slack for a loaded machine.
  peer = await startPeer({ args: ["--heartbeat-interval-ms", "500", "--heartbeat-ttl-ms", "2000"] });
  ({ alice, bob } = peer.agents);
  lobby = peer.rooms.lobby;
  relay = await startRelay(relayVars(peer, { UPSTREAM_GENERATION: "ws" }));
  up = await startUpstream();
  fakeRelay = await startRelay(relayVars({ url: up.url, agents: { fake: FAKE } }, { UPSTREAM_GENERATION: "ws" }));
});
after(async () => {
  await cleanup();
  await stopHostile();
});

/** An HTTP call through `r` with agent `agentId`'s relay token (`tok` overrides). */
async function call(r, agentId, tail, { method = "GET", body, connectionId, tok, origin = ORIGIN, headers = {} } = {}) {
  const h = { Authorization: `Bearer ${tok ?? (await token(agentId))}`, ...headers };
  if (origin) h.Origin = origin;
  if (connectionId) h["X-Switch-Connection-Id"] = connectionId;
  if (body !== undefined) h["Content-Type"] = "application/json";
  const res = await fetch(`${r.url}/agents/${agentId}/${tail}`, {
    method,
    headers: h,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Opens `agent`'s socket through `r` with `query`; waits for it to open. */
async function connect(r, agent, query = "", opts = {}) {
  const connectionId = crypto.randomUUID();
  const url = `${r.wsUrl}/agents/${agent.id}/connection/ws?connection_id=${connectionId}${query}`;
  const c = open(url, { protocols: withToken(await token(agent.id)), ...opts });
  c.connectionId = connectionId;
  c.protocol = await within(10_000, "the socket opening", c.opened);
  return c;
}

const isState = (f) => f.event === "connection_state";
const isPing = (f) => f.event === "ping" || f.type === "ping";

test("connection_state arrives, the subprotocol echo is agentwire.v1, pongs keep it alive past the TTL", T, async () => {
  const c = await connect(relay, alice, `&rooms=${lobby}`);
  assert.equal(c.protocol, "agentwire.v1");
  const state = await c.next(isState, 5_000, "connection_state");
  assert.equal(state.data.agent_id, alice.id);
  assert.equal(state.data.connection_id, c.connectionId);
  assert.deepEqual(state.data.rooms, [lobby]);
  assert.equal(c.frames[0].event, "connection_state", "connection_state is the first frame");
  // TTL 2 s: 4 s later the connection is still there, having answered every ping.
  await new Promise((r) => setTimeout(r, 4_000));
  assert.equal(c.ws.readyState, c.ws.OPEN);
  assert.ok(c.frames.filter(isPing).length >= 5, `pings: ${c.frames.filter(isPing).length}`);
  assert.ok(!c.frames.some((f) => f.event === "evicted"), JSON.stringify(c.frames.filter((f) => f.event === "evicted")));
  c.ws.close(1000);
  await within(5_000, "the close", c.closed);
});

test("without pongs the same connection lapses: the pongs did cross the relay", T, async () => {
  const c = await connect(relay, alice, `&rooms=${lobby}`, { pong: false });
  const ev = await c.next((f) => f.event === "evicted", 5_000, "evicted");
  assert.equal(ev.data.code, "heartbeat_lapsed");
  const { code } = await within(5_000, "the close", c.closed);
  assert.equal(code, 1000);
});

test("a message bob posts through the relay's op route reaches alice's socket exactly once", T, async () => {
  const a = await connect(relay, alice, `&rooms=${lobby}`);
  await a.next(isState, 5_000, "alice's connection_state");
  const b = await connect(relay, bob);
  await b.next(isState, 5_000, "bob's connection_state");
  const joined = await call(relay, bob.id, "ops/connect_to_room", {
    method: "POST", body: { room_id: lobby }, connectionId: b.connectionId,
  });
  assert.equal(joined.status, 200, joined.text);
  assert.equal(joined.json.result.room_id, lobby);
  const body = `hello through the relay ${crypto.randomUUID()}`;
  const posted = await call(relay, bob.id, "ops/post_message", {
    method: "POST", body: { body }, connectionId: b.connectionId,
  });
  assert.equal(posted.status, 200, posted.text);
  const isMine = (f) => f.event === "message" && f.data?.payload?.body === body;
  const m = await a.next(isMine, 5_000, "the message on alice's socket");
  assert.equal(typeof m.id, "number");
  assert.equal(m.id, m.data.sequence);
  await new Promise((r) => setTimeout(r, 1_000));
  assert.equal(a.frames.filter(isMine).length, 1, "exactly once");
  a.ws.close(1000);
  b.ws.close(1000);
});

test("an op without a connection the agent holds is refused by the upstream, and the refusal crosses", T, async () => {
  const r = await call(relay, bob.id, "ops/post_message", {
    method: "POST", body: { body: "x" }, connectionId: crypto.randomUUID(),
  });
  assert.equal(r.status, 409, r.text);
  assert.equal(r.headers.get("access-control-allow-origin"), ORIGIN);
});

test("an upstream refusal (protocol mismatch: 409) reaches the browser as the refused frame and 4409", T, async () => {
  const c = await connect(relay, alice, "&protocol=99&protocol_accepts=99");
  const { code } = await within(5_000, "the close", c.closed);
  assert.equal(code, 4409);
  const refused = c.frames.find((f) => f.type === "refused" || f.event === "refused");
  assert.ok(refused, JSON.stringify(c.frames));
  assert.equal(refused.status ?? refused.data?.status, 409);
});

test("the subprotocol echo: exactly agentwire.v1 with the token protocol; none with ?token=", T, async () => {
  const tok = await token(alice.id);
  // Token in the subprotocol: the echo is the real protocol, never the token.
  const a = await connect(relay, alice);
  assert.equal(a.protocol, "agentwire.v1");
  // Token in the query, no protocol offered: no protocol echoed.
  const b = open(wsPath(relay, alice.id, `&token=${tok}`), { protocols: [] });
  const headers = new Promise((resolve) => b.ws.on("upgrade", (res) => resolve(res.headers)));
  assert.equal(await within(10_000, "open with ?token=", b.opened), "");
  assert.equal((await headers)["sec-websocket-protocol"], undefined);
  await b.next(isState, 5_000, "connection_state with ?token=");
  // Token in the query, agentwire.v1 offered: echoed.
  const c = open(wsPath(relay, alice.id, `&token=${tok}`), { protocols: ["agentwire.v1"] });
  assert.equal(await within(10_000, "open with ?token= and agentwire.v1", c.opened), "agentwire.v1");
  // Only the token protocol offered: a handshake a browser would fail, refused over HTTP.
  const d = open(wsPath(relay, alice.id), { protocols: [`agentwire.token.${tok}`] });
  await assert.rejects(within(10_000, "the refusal", d.opened), (e) => e.status === 400);
  for (const x of [a, b, c]) x.ws.close(1000);
});

test("close codes cross from the browser to the upstream (4000-range and 1000, with reasons)", T, async () => {
  for (const [code, reason] of [[4000, "bye"], [4999, "odd"], [1000, ""], [3000, "app"]]) {
    const before = up.closes.length;
    const c = await connect(fakeRelay, FAKE);
    c.ws.send("ping-through");
    await c.next((f) => f.raw === "ping-through", 5_000, "the echo");
    c.ws.close(code, reason);
    // (A close of an earlier iteration may land after `before` was read: look for this one.)
    await until(
      () => up.closes.slice(before).some((x) => x.code === code && x.reason === reason),
      5_000,
      `the upstream seeing ${code} ${JSON.stringify(reason)}: ${JSON.stringify(up.closes.slice(before))}`,
    );
    const back = await within(5_000, "the browser's close", c.closed);
    assert.equal(back.code, code);
  }
});

test("close codes cross from the upstream to the browser; 1005 becomes 1011", T, async () => {
  const cases = [
    [(ws) => { ws.send('{"type":"refused","status":409,"detail":"taken"}'); ws.close(4409, "refused"); }, 4409, "refused"],
    [(ws) => ws.close(1000, "evicted"), 1000, "evicted"],
    [(ws) => ws.close(4403, "room"), 4403, "room"],
    [(ws) => ws.close(1012, "restart"), 1012, "restart"],
    [(ws) => ws.close(), 1011, null], // no status (1005) cannot be sent: 1011
  ];
  for (const [behave, want, reason] of cases) {
    up.behave = (ws) => setTimeout(() => behave(ws), 100);
    const c = await connect(fakeRelay, FAKE);
    const got = await within(5_000, `the close ${want}`, c.closed);
    assert.equal(got.code, want);
    if (reason !== null) assert.equal(got.reason, reason);
    if (want === 4409) assert.deepEqual(c.frames[0], { type: "refused", status: 409, detail: "taken" });
  }
  up.behave = (ws) => ws.on("message", (d, bin) => ws.send(d, { binary: bin }));
});

test("HTTP: GET ops through the relay, with CORS", T, async () => {
  const r = await call(relay, alice.id, "ops");
  assert.equal(r.status, 200);
  assert.ok(r.json.operations.connect_to_room, r.text.slice(0, 200));
  assert.equal(r.headers.get("access-control-allow-origin"), ORIGIN);
  assert.match(r.headers.get("vary") ?? "", /Origin/);
});

test("HTTP: subscribe, unsubscribe and placements reach the Switch peer with X-Switch-Connection-Id", T, async () => {
  const c = await connect(relay, alice);
  await c.next(isState, 5_000, "connection_state");
  const sub = await call(relay, alice.id, "connection/subscribe", {
    method: "POST", body: { connection_id: c.connectionId, room_id: lobby, takeover: true }, connectionId: c.connectionId,
  });
  assert.equal(sub.status, 200, sub.text);
  assert.deepEqual(sub.json.rooms, [lobby]);
  const unsub = await call(relay, alice.id, "connection/unsubscribe", {
    method: "POST", body: { connection_id: c.connectionId, room_id: lobby }, connectionId: c.connectionId,
  });
  assert.equal(unsub.status, 200, unsub.text);
  assert.deepEqual(unsub.json.rooms, []);
  const place = await call(relay, alice.id, "connection/placements", {
    method: "POST", body: { connection_id: c.connectionId, placements: { s1: lobby } }, connectionId: c.connectionId,
  });
  assert.equal(place.status, 200, place.text);
  c.ws.close(1000);
});

test("HTTP: each route reaches the upstream at its path, with X-Switch-Connection-Id passed through", T, async () => {
  const cid = crypto.randomUUID();
  for (const [method, tail, body] of [
    ["GET", "ops", undefined],
    ["POST", "ops/post_message", { body: "x" }],
    ["POST", "connection/subscribe", { connection_id: cid, room_id: "r", takeover: false }],
    ["POST", "connection/unsubscribe", { connection_id: cid, room_id: "r" }],
    ["POST", "connection/placements", { connection_id: cid, placements: { s: "r" } }],
  ]) {
    const n = up.httpRequests().length;
    const r = await call(fakeRelay, FAKE.id, tail, { method, body, connectionId: cid });
    assert.equal(r.status, 200, `${tail}: ${r.text}`);
    const seen = up.httpRequests()[n];
    assert.equal(seen.method, method);
    assert.equal(seen.url, `/agents/${FAKE.id}/${tail}`);
    assert.equal(seen.headers["x-switch-connection-id"], cid);
    if (body !== undefined) assert.deepEqual(JSON.parse(seen.body), body);
  }
});

test("CORS preflight: 204 with the headers for an allowed origin, refused for others", T, async () => {
  const pre = (origin, method, tail = "ops/post_message") => fetch(`${relay.url}/agents/${alice.id}/${tail}`, {
    method: "OPTIONS",
    headers: {
      Origin: origin,
      "Access-Control-Request-Method": method,
      "Access-Control-Request-Headers": "authorization, content-type, x-switch-connection-id",
    },
  });
  const ok = await pre(ORIGIN, "POST");
  assert.equal(ok.status, 204);
  assert.equal(ok.headers.get("access-control-allow-origin"), ORIGIN);
  assert.match(ok.headers.get("access-control-allow-methods"), /POST/);
  const allowHeaders = ok.headers.get("access-control-allow-headers").toLowerCase();
  for (const h of ["authorization", "content-type", "x-switch-connection-id"]) assert.ok(allowHeaders.includes(h), allowHeaders);
  assert.ok(Number(ok.headers.get("access-control-max-age")) > 0);
  const okGet = await pre(ORIGIN, "GET", "ops");
  assert.equal(okGet.status, 204);
  for (const [origin, method, tail] of [
    ["https://evil.example", "POST", undefined],
    ["http://127.0.0.1:7701", "POST", undefined],
    ["null", "POST", undefined],
    [ORIGIN, "DELETE", undefined],
    [ORIGIN, "GET", undefined], // ops/{name} is POST only
  ]) {
    const no = await pre(origin, method, tail);
    assert.ok(no.status >= 400, `${origin} ${method}: ${no.status}`);
    assert.equal(no.headers.get("access-control-allow-origin"), null, `${origin} ${method}`);
    await no.body?.cancel();
  }
  // A plain call from a disallowed origin gets no CORS grant either.
  const r = await call(relay, alice.id, "ops", { origin: "https://evil.example" });
  assert.equal(r.status, 403);
  assert.equal(r.headers.get("access-control-allow-origin"), null);
});

test("routes outside the client's set are 404 (or 405 for the wrong method)", T, async () => {
  const tok = await token(alice.id);
  const n = up.requests.length;
  for (const [method, tail] of [
    ["GET", "events"],
    ["POST", "connection/beat"],
    ["GET", "rooms/x/history"],
    ["POST", "message"],
    ["GET", ""],
    ["GET", "connection"],
    ["POST", "ops/Post-Message"],
    ["POST", "connection/subscribe/extra"],
  ]) {
    const r = await call(fakeRelay, FAKE.id, tail, { method, tok: await token(FAKE.id), body: method === "POST" ? {} : undefined });
    assert.equal(r.status, 404, `${method} /agents/x/${tail}: ${r.status} ${r.text}`);
  }
  for (const p of ["/", "/version", "/agents", "/health", "/agents/x/y/z/w/v"]) {
    const r = await fetch(`${fakeRelay.url}${p}`, { headers: { Origin: ORIGIN, Authorization: `Bearer ${tok}` } });
    assert.equal(r.status, 404, p);
    await r.body?.cancel();
  }
  const wrong = await call(fakeRelay, FAKE.id, "ops", { method: "POST", body: {} });
  assert.equal(wrong.status, 405);
  assert.equal(up.requests.length, n, "nothing reached the upstream");
});

test("a body that breaks (a bad chunk) is a 500 a cross-origin page can read: the CORS headers of its allowed Origin", T, async () => {
  const port = new URL(fakeRelay.url).port;
  const tok = await token(FAKE.id);
  const send = (origin) =>
    within(10_000, "the 500", new Promise((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => {
        s.write(
          `POST /agents/${FAKE.id}/ops/post_message HTTP/1.1\r\nHost: relay\r\nOrigin: ${origin}\r\n` +
            `Authorization: Bearer ${tok}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
            `5\r\n{"a":\r\nzz\r\n\r\n`,
        );
      });
      let text = "";
      s.on("data", (d) => (text += d));
      s.on("end", () => resolve(text));
      s.on("close", () => resolve(text));
    }));
  const n = up.httpRequests().length;
  const ok = await send(ORIGIN);
  assert.match(ok, /^HTTP\/1\.1 500 /, ok);
  assert.match(ok, new RegExp(`\r\naccess-control-allow-origin: ${ORIGIN}\r\n`, "i"), ok);
  assert.match(ok, /"error":"internal"/, ok);
  const evil = await send("https://evil.example");
  assert.match(evil, /^HTTP\/1\.1 500 /, evil);
  assert.doesNotMatch(evil, /access-control-allow-origin/i, evil);
  assert.equal(up.httpRequests().length, n, "nothing reached the upstream");
});

test("MAX_BODY_BYTES: a body one byte over the limit is 413 and never goes upstream; one at the limit does", T, async () => {
  const limit = 65_536; // the default, which relayVars leaves alone
  const sized = (n) => {
    const body = { body: "" };
    body.body = "x".repeat(n - JSON.stringify(body).length);
    assert.equal(JSON.stringify(body).length, n);
    return body;
  };
  const n = up.httpRequests().length;
  const over = await call(fakeRelay, FAKE.id, "ops/post_message", { method: "POST", body: sized(limit + 1) });
  assert.equal(over.status, 413, over.text);
  assert.equal(over.json.error, "size");
  // With the CORS headers the engine gives an allowed Origin, as the route's own answers: without
  // them a cross-origin page's fetch rejects (a TypeError, "Failed to fetch") instead of reading
  // the 413. None to an Origin not allowed.
  assert.equal(over.headers.get("access-control-allow-origin"), ORIGIN);
  assert.equal(over.headers.get("vary"), "Origin");
  const evil = await call(fakeRelay, FAKE.id, "ops/post_message", { method: "POST", body: sized(limit + 1), origin: "https://evil.example" });
  assert.equal(evil.status, 413, evil.text);
  assert.equal(evil.headers.get("access-control-allow-origin"), null);
  assert.equal(up.httpRequests().length, n, "nothing reached the upstream");
  const at = await call(fakeRelay, FAKE.id, "ops/post_message", { method: "POST", body: sized(limit) });
  assert.equal(at.status, 200, at.text);
  assert.equal(up.httpRequests().length, n + 1);
  assert.equal(up.httpRequests()[n].body.length, limit);
});
