// The relay in front of a released Switch server (issue 6, item 5): the browser speaks the
// current WebSocket protocol and the relay bridges the SSE stream and the beats, with
// UPSTREAM_GENERATION `auto` (tries the WebSocket, bridges on the 403) and `sse`.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  startPeer, startRelay, relayVars, token, open, withToken, cleanup, within, ORIGIN,
} from "./harness.mjs";
import { startSseUpstream, sseConnectionState, sseMessage, stopHostile, until, queryOf } from "./hostile.mjs";

const T = { timeout: 30_000 };
const isState = (f) => f.event === "connection_state";
const isPing = (f) => f.event === "ping";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Heartbeat 500 ms, TTL 1.5 s: a bridge that did not beat would lapse within 2 s.
let peer, lobby;
before(async () => {
  peer = await startPeer({ generation: "released", args: ["--heartbeat-interval-ms", "500", "--heartbeat-ttl-ms", "1500"] });
  lobby = peer.rooms.lobby;
});
after(async () => {
  await cleanup();
  await stopHostile();
});

async function call(r, agentId, tail, { method = "POST", body, connectionId } = {}) {
  const headers = { Authorization: `Bearer ${await token(agentId)}`, Origin: ORIGIN };
  if (connectionId) headers["X-Switch-Connection-Id"] = connectionId;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`${r.url}/agents/${agentId}/${tail}`, {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

async function connect(r, agent, { connectionId = crypto.randomUUID(), query = "", ...opts } = {}) {
  const url = `${r.wsUrl}/agents/${agent.id}/connection/ws?connection_id=${connectionId}${query}`;
  const c = open(url, { protocols: withToken(await token(agent.id)), ...opts });
  c.connectionId = connectionId;
  c.protocol = await within(10_000, "the socket opening", c.opened);
  return c;
}

/** Bob, through the relay, connected to the lobby: `post(body)` posts a message there. */
async function poster(r) {
  const bob = peer.agents.bob;
  const b = await connect(r, bob);
  await b.next(isState, 10_000, "bob's connection_state");
  const joined = await call(r, bob.id, "ops/connect_to_room", { body: { room_id: lobby }, connectionId: b.connectionId });
  assert.equal(joined.status, 200, joined.text);
  return {
    b,
    async post(body) {
      const p = await call(r, bob.id, "ops/post_message", { body: { body }, connectionId: b.connectionId });
      assert.equal(p.status, 200, p.text);
      return p.json.result.event_id;
    },
  };
}

for (const generation of ["auto", "sse"]) {
  describe(`UPSTREAM_GENERATION=${generation}`, () => {
    let relay, alice;
    before(async () => {
      relay = await startRelay(relayVars(peer, { UPSTREAM_GENERATION: generation }));
      alice = peer.agents.alice;
    });

    test("connection_state is translated (no generation), and pongs become beats that outlive the TTL", T, async () => {
      const c = await connect(relay, alice, { query: `&rooms=${lobby}` });
      assert.equal(c.protocol, "agentwire.v1");
      const state = await c.next(isState, 10_000, "connection_state");
      assert.equal(c.frames[0], state, "connection_state first");
      assert.deepEqual(Object.keys(state).sort(), ["data", "event"]);
      assert.equal(state.data.agent_id, alice.id);
      assert.equal(state.data.connection_id, c.connectionId);
      assert.deepEqual(state.data.rooms, [lobby]);
      assert.equal(state.data.generation, undefined, "a released server issues no generation");
      assert.equal(state.data.heartbeat_interval_seconds, 0.5);
      // 4 s: well past the 1.5 s TTL; only the beats keep the upstream connection.
      await sleep(4_000);
      assert.equal(c.ws.readyState, c.ws.OPEN);
      assert.ok(!c.frames.some((f) => f.event === "evicted"), JSON.stringify(c.frames.filter((f) => f.event === "evicted")));
      const pings = c.frames.filter(isPing).length;
      assert.ok(pings >= 6, `pings: ${pings}`);
      // And the connection is really alive upstream: an op with its id works.
      const joined = await call(relay, alice.id, "ops/connect_to_room", { body: { room_id: lobby }, connectionId: c.connectionId });
      assert.equal(joined.status, 200, joined.text);
      c.ws.close(1000);
      await within(5_000, "the close", c.closed);
    });

    test("a browser that stops answering pings is evicted heartbeat_lapsed and closed 1000", T, async () => {
      const c = await connect(relay, alice, { pong: false });
      await c.next(isState, 10_000, "connection_state");
      const ev = await c.next((f) => f.event === "evicted", 8_000, "evicted");
      assert.equal(ev.data.code, "heartbeat_lapsed");
      assert.equal((await within(5_000, "the close", c.closed)).code, 1000);
    });

    test("a message posted through the relay arrives once as {event, data, id}", T, async () => {
      const a = await connect(relay, alice, { query: `&rooms=${lobby}` });
      await a.next(isState, 10_000, "alice's connection_state");
      const { b, post } = await poster(relay);
      const body = `bridged ${crypto.randomUUID()}`;
      await post(body);
      const isMine = (f) => f.event === "message" && f.data?.payload?.body === body;
      const m = await a.next(isMine, 10_000, "the message");
      assert.deepEqual(Object.keys(m), ["event", "data", "id"]);
      assert.equal(typeof m.id, "number");
      assert.equal(m.id, m.data.sequence);
      assert.equal(m.data.room_id, lobby);
      await sleep(1_500);
      assert.equal(a.frames.filter(isMine).length, 1, "exactly once");
      a.ws.close(1000);
      b.ws.close(1000);
    });

    test("resume with start_from after a drop: the missed messages, no duplicates", T, async () => {
      const connectionId = crypto.randomUUID();
      const a = await connect(relay, alice, { connectionId, query: `&rooms=${lobby}` });
      await a.next(isState, 10_000, "connection_state");
      const { b, post } = await poster(relay);
      const tag = crypto.randomUUID();
      const mine = (f) => f.event === "message" && f.data?.payload?.body?.startsWith(tag);
      for (let i = 0; i < 3; i++) await post(`${tag} before ${i}`);
      await within(10_000, "the first three", (async () => { while (a.frames.filter(mine).length < 3) await sleep(20); })());
      const cursor = Math.max(...a.frames.filter(mine).map((f) => f.id));
      a.ws.terminate(); // a drop, not a close
      await within(5_000, "the drop", a.closed);
      for (let i = 0; i < 3; i++) await post(`${tag} after ${i}`);
      const again = await connect(relay, alice, { connectionId, query: `&rooms=${lobby}&start_from=${cursor}` });
      await again.next(isState, 10_000, "connection_state again");
      await within(10_000, "the three missed", (async () => { while (again.frames.filter(mine).length < 3) await sleep(20); })());
      await sleep(1_000);
      const got = again.frames.filter(mine);
      assert.deepEqual(got.map((f) => f.data.payload.body), [0, 1, 2].map((i) => `${tag} after ${i}`));
      assert.ok(got.every((f) => f.id > cursor), "nothing at or before the cursor");
      assert.equal(new Set(got.map((f) => f.id)).size, got.length);
      again.ws.close(1000);
      b.ws.close(1000);
    });

    test("refusals: a bad scope is refused 400 and closed 4400; a room the agent is not in, 4403", T, async () => {
      const c = await connect(relay, alice, { query: "&scope=bogus" });
      const closed = await within(10_000, "the close", c.closed);
      assert.equal(closed.code, 4400);
      const refused = c.frames.find((f) => f.event === "refused");
      assert.ok(refused, JSON.stringify(c.frames));
      assert.equal(refused.data.status, 400);
      assert.match(String(refused.data.detail), /scope/);
      const d = await connect(relay, alice, { query: `&rooms=${crypto.randomUUID()}` });
      const closed2 = await within(10_000, "the close", d.closed);
      assert.equal(closed2.code, 4403, JSON.stringify(d.frames));
      assert.equal(d.frames.find((f) => f.event === "refused")?.data.status, 403);
    });

    test("a second open with the same connection_id takes over: the first gets evicted taken_over and 1000", T, async () => {
      const connectionId = crypto.randomUUID();
      const first = await connect(relay, alice, { connectionId });
      await first.next(isState, 10_000, "the first connection_state");
      const second = await connect(relay, alice, { connectionId });
      await second.next(isState, 10_000, "the second connection_state");
      const ev = await first.next((f) => f.event === "evicted", 10_000, "evicted");
      assert.equal(ev.data.code, "taken_over");
      assert.equal((await within(5_000, "the first's close", first.closed)).code, 1000);
      await sleep(1_500);
      assert.equal(second.ws.readyState, second.ws.OPEN, "the second lives on");
      assert.ok(!second.frames.some((f) => f.event === "evicted"));
      second.ws.close(1000);
    });
  });
}

test("the bridge pings every 2 s (PING_INTERVAL_MS default, upstream at the default 2 s too)", { timeout: 30_000 }, async () => {
  const slow = await startPeer({ generation: "released" });
  const relay = await startRelay(relayVars(slow, { UPSTREAM_GENERATION: "sse" }));
  const c = await connect(relay, slow.agents.alice);
  await c.next(isState, 10_000, "connection_state");
  const at = [];
  c.ws.on("message", (d) => {
    if (JSON.parse(String(d)).event === "ping") at.push(Date.now());
  });
  await within(12_000, "four pings", (async () => { while (at.length < 4) await sleep(20); })());
  // The interval is what this measures: each gap near 2 s, and their mean closer (one ping late
  // by a pause of the test process and the next on time stays within both).
  const gaps = at.slice(1).map((t, i) => t - at[i]);
  for (const g of gaps) assert.ok(g > 1_200 && g < 3_000, `ping gaps ${gaps}`);
  const mean = gaps.reduce((a, b) => a + b, 0) / gaps.length;
  assert.ok(mean > 1_800 && mean < 2_300, `ping gaps ${gaps}`);
  c.ws.close(1000);
});

describe("what the bridge sends upstream (a recording released upstream)", () => {
  const FAKE = { id: "agent-fake", key: "sk_switch_fake_upstream_key_0001" };
  const vars = (url, generation) => relayVars({ url, agents: { fake: FAKE } }, { UPSTREAM_GENERATION: generation, PING_INTERVAL_MS: "300" });
  const live = (res, req) => {
    const q = queryOf(req.url);
    res.write(sseConnectionState(FAKE.id, q.connection_id));
    setTimeout(() => res.write(sseMessage(7, "room-1", "seven")), 100);
  };

  test("auto: one WebSocket attempt, bridged on its 403, and the next open goes straight to the stream", T, async () => {
    const sse = await startSseUpstream(live);
    const relay = await startRelay(vars(sse.url, "auto"));
    for (let i = 0; i < 2; i++) {
      const c = await connect(relay, FAKE);
      await c.next(isState, 10_000, "connection_state");
      c.ws.close(1000);
      await within(5_000, "the close", c.closed);
    }
    assert.equal(sse.requests.filter((r) => r.upgrade).length, 1, "the released upstream was learned");
    assert.equal(sse.streams.length, 2);
  });

  test("auto: a 401 on the WebSocket attempt (the relay's key) closes 1011 and opens no stream", T, async () => {
    const sse = await startSseUpstream(live);
    sse.upgradeStatus = 401;
    const relay = await startRelay(vars(sse.url, "auto"));
    const c = await connect(relay, FAKE);
    const closed = await within(5_000, "the close", c.closed);
    assert.deepEqual([closed.code, closed.reason], [1011, "the relay's key for this agent was refused"]);
    assert.equal(sse.streams.length, 0);
  });

  test("sse: the stream open and the beats carry the key, the forwarded query and the browser's cursor", T, async () => {
    const sse = await startSseUpstream(live);
    const relay = await startRelay(vars(sse.url, "sse"));
    const tok = await token(FAKE.id);
    const cid = crypto.randomUUID();
    const c = open(`${relay.wsUrl}/agents/${FAKE.id}/connection/ws?connection_id=${cid}&rooms=room-1&start_from=3&scope=single&expected_generation=9&token=${tok}&evil=1`, {
      protocols: ["agentwire.v1"],
    });
    await within(10_000, "the open", c.opened);
    await c.next((f) => f.event === "message" && f.id === 7, 10_000, "message 7");
    await until(() => sse.beats.some((b) => JSON.parse(b.body).cursor === 7), 5_000, "a beat with cursor 7");
    c.ws.close(1000);
    await within(5_000, "the close", c.closed);
    assert.equal(sse.requests.filter((r) => r.upgrade).length, 0, "sse: no WebSocket attempt");
    const open_ = sse.streams[0].req;
    const u = new URL(open_.url, "http://x");
    assert.equal(u.pathname, `/agents/${FAKE.id}/events`);
    assert.deepEqual(queryOf(open_.url), { connection_id: cid, rooms: "room-1", start_from: "3", scope: "single" });
    assert.equal(open_.headers.authorization, `Bearer ${FAKE.key}`);
    assert.equal(open_.headers.accept, "text/event-stream");
    const beats = sse.requests.filter((r) => r.method === "POST");
    assert.ok(beats.length >= 1);
    for (const b of beats) {
      assert.equal(b.url, `/agents/${FAKE.id}/connection/beat`);
      assert.equal(b.headers.authorization, `Bearer ${FAKE.key}`);
      const body = JSON.parse(b.body);
      assert.equal(body.connection_id, cid);
      assert.ok(Number.isInteger(body.cursor));
    }
    const cursors = beats.map((b) => JSON.parse(b.body).cursor);
    assert.ok(cursors.every((x, i) => i === 0 || x >= cursors[i - 1]), `cursors never go back: ${cursors}`);
    const all = JSON.stringify(sse.requests.map((r) => [r.url, r.headers, r.body]));
    assert.ok(!all.includes(tok), "the relay token never goes upstream");
  });
});
