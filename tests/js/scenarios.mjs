// The package's behaviour against the local peers, written once and run in Node (node.test.mjs),
// headless Chromium (browser.test.mjs), workerd (workerd.test.mjs), Bun and Deno (portable.mjs).
// Each scenario gets the package's module and `env`: the peers' URLs and keys, the golden
// vectors, and a WebSocket constructor when the host has none.

export class Failure extends Error {}

/** What each host runs: `[entry, scenario name, test name]`, every scenario through `agentwire`,
 * then each protocol's through its own entry (`agentwire/rkt`, ...). */
export function runs(host) {
  const all = Object.keys(scenarios).map((name) => ["agentwire", name, `${host}: ${name}`]);
  for (const name of Object.keys(scenarios)) {
    const protocol = name.split(" ")[0];
    if (["rkt", "moltzap", "switch"].includes(protocol)) all.push([`agentwire/${protocol}`, name, `${host}: agentwire/${protocol}: ${name}`]);
  }
  return all;
}

function check(cond, what) {
  if (!cond) throw new Failure(what);
}

function same(a, b) {
  return JSON.stringify(sortKeys(a)) === JSON.stringify(sortKeys(b));
}

function sortKeys(v) {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v && typeof v === "object") return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys(v[k])]));
  return v;
}

/** The rejection of `p`, which must reject with an AgentwireError of `kind`. */
async function rejects(aw, p, kind, what) {
  try {
    await p;
  } catch (e) {
    check(e instanceof aw.AgentwireError, `${what}: not an AgentwireError: ${e}`);
    check(e.kind === kind, `${what}: kind ${e.kind} (${e.message}), expected ${kind}`);
    return e;
  }
  throw new Failure(`${what}: resolved, expected a ${kind} rejection`);
}

const opts = (env, more = {}) => (env.webSocket ? { webSocket: env.webSocket, ...more } : more);

export const scenarios = {
  async "error kinds match the engine's"(aw) {
    const kinds = aw.errorKinds();
    check(kinds.includes("internal") && kinds.includes("rate_limited"), `errorKinds: ${kinds}`);
    // ErrorKind in the package's types lists exactly these (checked by tsc in the consumer test).
  },

  async "rkt vectors decode as the Rust codec does"(aw, env) {
    check(env.vectors.rkt.length > 40, `only ${env.vectors.rkt.length} RKT vectors`);
    for (const v of env.vectors.rkt) {
      if (v.expect) {
        const m = aw.rktDecode(v.wire, v.max_size);
        check(m.type === v.expect.type, `${v.name}: type ${m.type}`);
        for (const [k, val] of Object.entries(v.expect.headers ?? {})) {
          check(m.headers[k] === val, `${v.name}: header ${k} = ${m.headers[k]}`);
        }
        const body = m.body === null ? null : JSON.parse(m.body);
        check(same(body, v.expect.body ?? null), `${v.name}: body ${m.body}`);
        if (v.expect.body_text !== undefined) check(m.body === v.expect.body_text, `${v.name}: body text`);
      } else {
        let thrown;
        try {
          aw.rktDecode(v.wire, v.max_size);
        } catch (e) {
          thrown = e;
        }
        check(thrown instanceof aw.AgentwireError && thrown.kind === "decode", `${v.name}: not refused`);
        check(thrown.info.reason === v.error.kind, `${v.name}: reason ${thrown.info.reason} != ${v.error.kind}`);
        check(thrown.info.field === v.error.field, `${v.name}: field ${thrown.info.field} != ${v.error.field}`);
      }
    }
  },

  async "rkt request, stream, memory, discover, ping"(aw, env) {
    const client = await aw.RktClient.connect(env.rkt, opts(env));
    try {
      check(client.server.capabilities.includes("weather"), `capabilities ${client.server.capabilities}`);
      const now = await client.request("weather.current", { city: "Seoul" });
      check(now.data.temperature === 24, `weather.current: ${JSON.stringify(now)}`);
      const days = [];
      for await (const chunk of client.stream("weather.forecast", { city: "Seoul", days: 3 })) days.push(chunk);
      check(days.length === 3 && days.every((d) => typeof d.high === "number"), `forecast: ${JSON.stringify(days)}`);
      const key = `k${Math.random().toString(36).slice(2)}`;
      await client.memorySet(key, { city: "Seoul" }, { namespace: "user.prefs", ttlS: 60 });
      const got = await client.memoryGet(key, { namespace: "user.prefs" });
      check(same(got.value, { city: "Seoul" }), `memory get: ${JSON.stringify(got)}`);
      const missing = await client.memoryGet(`${key}-absent`, { namespace: "user.prefs" });
      check(missing.found === false, `missing key: ${JSON.stringify(missing)}`);
      const manifest = await client.discover();
      check(JSON.stringify(manifest).includes("weather.forecast"), `discover: ${JSON.stringify(manifest)}`);
      const rtt = await client.ping();
      check(typeof rtt === "number" && rtt >= 0, `ping: ${rtt}`);
      // Concurrent calls are each answered by their own reply.
      const many = await Promise.all(["Seoul", "Paris", "Lima"].map((city) => client.request("weather.current", { city })));
      check(many.map((m) => m.data.city).join() === "Seoul,Paris,Lima", `concurrent: ${JSON.stringify(many)}`);
    } finally {
      await client.close();
    }
    check(client.closed, "closed after close()");
  },

  async "timeouts past setTimeout's range (2^31 ms, Infinity) do not fire at once"(aw, env) {
    // setTimeout turns such a delay into 1 ms: every call below timed out at once before.
    const client = await aw.RktClient.connect(env.rkt, opts(env, { timeoutMs: Infinity }));
    try {
      const mz = await aw.MoltZapClient.connect(env.moltzap, opts(env, { agentKey: env.moltzapKeys.alice, timeoutMs: 2 ** 31 }));
      await mz.close();
      await client.ping({ timeoutMs: 2 ** 31 + 5 });
      const now = await client.request("weather.current", { city: "Seoul" }, { timeoutMs: Infinity });
      check(now.data.temperature === 24, JSON.stringify(now));
      const days = [];
      for await (const chunk of client.stream("weather.forecast", { city: "Seoul", days: 2 }, { timeoutMs: 2 ** 40 })) days.push(chunk);
      check(days.length === 2, `forecast: ${JSON.stringify(days)}`);
    } finally {
      await client.close();
    }
  },

  async "rkt errors are typed rejections"(aw, env) {
    await rejects(aw, aw.RktClient.connect("not a url at all", opts(env)), "invalid", "a malformed address");
    // Options the types forbid, from plain JavaScript: refused, naming the field.
    for (const [bad, field] of [[{ maxInFlight: "two" }, "maxInFlight"], [{ maxInflight: 2 }, "maxInflight"], [{ capabilities: [1] }, "capabilities"], [{ maxMessageSize: 2 ** 26 + 1 }, "maxMessageSize"]]) {
      const e = await rejects(aw, aw.RktClient.connect(env.rkt, opts(env, bad)), "invalid", `option ${JSON.stringify(bad)}`);
      check(e.message.includes(field), `option ${JSON.stringify(bad)}: ${e.message}`);
    }
    await rejects(aw, aw.RktClient.connect(env.closedRkt, opts(env)), "closed", "a port nobody listens on");
    // With an apiKey, connect waits for the AUTH: a refused key rejects it; a good one is used.
    const refused = await rejects(aw, aw.RktClient.connect(env.rktAuth.url, opts(env, { apiKey: "not-the-key" })), "auth", "a refused apiKey");
    check(refused.code === 401, `a refused apiKey: ${JSON.stringify(refused.info)}`);
    const authed = await aw.RktClient.connect(env.rktAuth.url, opts(env, { apiKey: env.rktAuth.key }));
    check((await authed.request("weather.current", { city: "Seoul" })) !== undefined, "a request with the apiKey taken");
    await authed.close();
    const client = await aw.RktClient.connect(env.rkt, opts(env));
    const e = await rejects(aw, client.request("no.such.intent", {}), "remote", "an unknown intent");
    check(typeof e.code === "number" && e.retryable === false, `remote error fields: ${JSON.stringify(e.info)}`);
    await rejects(aw, client.request("weather.current", {}, { signal: AbortSignal.abort() }), "cancelled", "a pre-aborted signal");
    const ac = new AbortController();
    const pending = client.request("weather.current", { city: "Seoul" }, { signal: ac.signal });
    ac.abort();
    await rejects(aw, pending, "cancelled", "an abort in flight");
    await rejects(aw, client.request("", {}), "invalid", "an empty intent");
    // What JSON cannot hold is a rejection of kind invalid, never a synchronous throw.
    await rejects(aw, client.request("weather.current", { n: 1n }), "invalid", "a BigInt param");
    const cycle = {};
    cycle.self = cycle;
    await rejects(aw, client.memorySet("k", cycle), "invalid", "a cyclic value");
    await rejects(aw, client.stream("weather.forecast", { n: 1n }).next(), "invalid", "a BigInt stream param");
    await rejects(aw, client.stream("weather.forecast", {}, { signal: AbortSignal.abort() }).next(), "cancelled", "a stream with a pre-aborted signal");
    // A signal shared by many calls and streams keeps no listener once they are over.
    const shared = { aborted: false, listeners: new Set(), addEventListener(_, l) { this.listeners.add(l); }, removeEventListener(_, l) { this.listeners.delete(l); } };
    for (let i = 0; i < 3; i++) {
      for await (const chunk of client.stream("weather.forecast", { city: "Seoul", days: 2 }, { signal: shared, timeoutMs: 60_000 })) check(chunk.date, "a chunk");
      await client.request("weather.current", { city: "Seoul" }, { signal: shared, timeoutMs: 60_000 });
    }
    for await (const chunk of client.stream("weather.forecast", { city: "Seoul", days: 5 }, { signal: shared })) {
      check(chunk.date, "a chunk");
      break;
    }
    check(shared.listeners.size === 0, `abort listeners left: ${shared.listeners.size}`);
    // A stream left early is cancelled; the connection goes on.
    for await (const chunk of client.stream("weather.forecast", { city: "Seoul", days: 5 })) {
      check(chunk.date, "a chunk");
      break;
    }
    const ok = await client.request("weather.current", { city: "Seoul" });
    check(ok.data.temperature === 24, "still usable after errors");
    const inFlight = client.request("weather.current", { city: "Seoul" });
    await client.close();
    await inFlight.then(
      () => {},
      (err) => check(err.kind === "closed", `in flight at close: ${err.kind}`),
    );
    await rejects(aw, client.request("weather.current", {}), "closed", "a call after close");
    await rejects(aw, client.ping(), "closed", "a ping after close");
  },

  async "rkt events() ends after closed"(aw, env) {
    const client = await aw.RktClient.connect(env.rkt, opts(env));
    // return() ends a next() still waiting, which takes nothing after; the next events() goes on.
    const first = client.events();
    const waiting = first.next();
    await first.return();
    check((await waiting).done === true, "a waiting next() ends with return()");
    const seen = [];
    const reading = (async () => {
      for await (const ev of client.events()) seen.push(ev.type);
    })();
    await client.close();
    await reading;
    check(seen.at(-1) === "closed", `events: ${seen}`);
  },

  async "moltzap released transcripts: every server frame gives a typed event"(aw, env) {
    const known = new Set(["connected", "connectFailed", "response", "failed", "messageReceived", "conversationCreated",
      "conversationUpdated", "conversationArchived", "conversationUnarchived", "presenceChanged", "other", "diagnostic",
      "missedPings", "disconnected"]);
    let received = 0;
    for (const t of env.vectors.moltzap) {
      const s = new aw.MoltZapSession(JSON.stringify({ generation: "released" }));
      s.handleOpen(Date.now());
      for (const line of t.server) {
        s.handleText(Date.now(), line);
        for (let ev = s.pollEvent(); ev !== undefined; ev = s.pollEvent()) {
          const e = JSON.parse(ev);
          check(known.has(e.type), `${t.name}: event type ${e.type}`);
          if (e.type === "messageReceived") {
            received++;
            check(typeof e.conversationId === "string" && typeof e.senderId === "string", `${t.name}: ${ev}`);
          }
        }
      }
      s.free();
    }
    check(received === 2, `messages/received events: ${received}`); // the two `<=` pushes in smoke
  },

  async "moltzap connect, send, receive, list, call"(aw, env) {
    const keys = env.moltzapKeys;
    const bob = await aw.MoltZapClient.connect(env.moltzap, opts(env, { agentKey: keys.bob }));
    const alice = await aw.MoltZapClient.connect(env.moltzap, opts(env, { agentKey: keys.alice, generation: "auto" }));
    try {
      check(alice.info.generation === "current", `generation ${alice.info.generation}`);
      const text = `hello bob ${Math.random().toString(36).slice(2)}`;
      const inbox = bob.events();
      const sent = await alice.send({ agent: "bob" }, text);
      check(sent.message && typeof sent.message.conversationId === "string", `send: ${JSON.stringify(sent)}`);
      let got;
      while (!got) {
        const { value, done } = await inbox.next();
        check(!done, "bob's events ended");
        if (value.type === "messageReceived" && JSON.stringify(value.data).includes(text)) got = value;
      }
      check(got.conversationId === sent.message.conversationId, `conversation ${got.conversationId}`);
      // Leaving a loop over events() ends that loop only: the next events() goes on.
      const again = `again ${text}`;
      await alice.send({ agent: "bob" }, again);
      for await (const ev of bob.events()) if (ev.type === "messageReceived" && JSON.stringify(ev.data).includes(again)) break;
      const third = `third ${text}`;
      await alice.send({ agent: "bob" }, third);
      let later;
      for await (const ev of bob.events()) {
        if (ev.type === "messageReceived" && JSON.stringify(ev.data).includes(third)) {
          later = ev;
          break;
        }
      }
      check(later && !bob.closed, "events() after a loop was left");
      // The payload is parsed on first read (a getter), and behaves as a plain data property.
      check(Object.keys(got).includes("data") && got.data === got.data, "the payload is own, enumerable and parsed once");
      check(JSON.parse(JSON.stringify(got)).data.message.id === got.messageId && { ...got }.data === got.data, "stringify and spread see the payload");
      got.data = 1;
      check(got.data === 1, "the payload can be replaced");
      const recent = await bob.recentMessages({ limit: 10 });
      check(JSON.stringify(recent).includes(text), `recentMessages: ${JSON.stringify(recent).slice(0, 300)}`);
      const inConv = await alice.recentMessages({ conversationId: sent.message.conversationId, limit: 5 });
      check(JSON.stringify(inConv).includes(text), "messages of the conversation");
      const pong = await alice.call("system/ping", {});
      check(pong && typeof pong === "object", `system/ping: ${JSON.stringify(pong)}`);
    } finally {
      await alice.close();
      await bob.close();
    }
    check(alice.closed && bob.closed, "closed after close()");
  },

  async "moltzap: unread events are bounded in characters too (maxBufferedBytes)"(aw, env) {
    const keys = env.moltzapKeys;
    const bob = await aw.MoltZapClient.connect(env.moltzap, opts(env, { agentKey: keys.bob, maxBufferedBytes: 2500 }));
    const alice = await aw.MoltZapClient.connect(env.moltzap, opts(env, { agentKey: keys.alice }));
    try {
      const tag = Math.random().toString(36).slice(2);
      for (let i = 0; i < 4; i++) await alice.send({ agent: "bob" }, `${tag} ${i} ${"x".repeat(1000)}`);
      await alice.send({ agent: "bob" }, `${tag} marker`);
      await bob.recentMessages({ limit: 1 }); // answered after the pushes before it: all are buffered
      const seen = [];
      for await (const ev of bob.events()) {
        if (ev.type !== "messageReceived" || !JSON.stringify(ev.data).includes(tag)) continue;
        seen.push(ev);
        if (JSON.stringify(ev.data).includes(`${tag} marker`)) break;
      }
      check(seen.length <= 3 && bob.droppedEvents >= 2, `kept ${seen.length} of 5, dropped ${bob.droppedEvents}`);
    } finally {
      await alice.close();
      await bob.close();
    }
  },

  async "moltzap errors are typed rejections"(aw, env) {
    await rejects(aw, aw.MoltZapClient.connect(env.moltzap, opts(env, { agentKey: "moltzap_agent_bad_bad" })), "auth", "a bad key");
    await rejects(aw, aw.MoltZapClient.connect(env.moltzap, opts(env)), "invalid", "no credentials");
    for (const [bad, field] of [[{ agentKey: 7 }, "agentKey"], [{ agentKey: "k", generation: "next" }, "generation"], [{ agentKey: "k", requestTimeoutMs: -1 }, "requestTimeoutMs"], [{ agentKey: "k", maxMessageBytes: 2 ** 26 + 1 }, "maxMessageBytes"]]) {
      const e = await rejects(aw, aw.MoltZapClient.connect(env.moltzap, opts(env, bad)), "invalid", `option ${JSON.stringify(bad)}`);
      check(e.message.includes(field), `option ${JSON.stringify(bad)}: ${e.message}`);
    }
    await rejects(aw, aw.MoltZapClient.connect(env.closedRkt, opts(env, { agentKey: "k" })), "closed", "nobody listening");
    const c = await aw.MoltZapClient.connect(env.moltzap, opts(env, { agentKey: env.moltzapKeys.carol }));
    // JSON-RPC -32601 is the caller's mistake: the engine classifies it `invalid`.
    const e = await rejects(aw, c.call("no/such/method", {}), "invalid", "an unknown method");
    check(e.code === -32601, `code ${e.code}`);
    await rejects(aw, c.send({ agent: "nobody-here" }, "hi"), "remote", "an unknown agent");
    await rejects(aw, c.call("system/ping", {}, { signal: AbortSignal.abort() }), "cancelled", "a pre-aborted signal");
    const ok = await c.call("system/ping", {});
    check(ok, "still usable");
    const inFlight = c.call("system/ping", {});
    await c.close();
    await inFlight.then(() => {}, (err) => check(err.kind === "closed", `in flight at close: ${err.kind}`));
    await rejects(aw, c.call("system/ping", {}), "closed", "a call after close");
  },

  // Against the Switch peer directly, which wants the agent key in an Authorization header: only
  // hosts whose WebSocket can send one (Node's undici). Browsers go through the relay.
  async "switch connect, ops, post, receive, status"(aw, env) {
    if (!env.switchSocket) return "skipped: this host's WebSocket cannot send Authorization (the relay is for browsers)";
    const { alice, bob } = env.switchAgents;
    const lobby = env.switchLobby;
    const connect = (who, more = {}) =>
      aw.SwitchClient.connect(env.switch, { token: who.key, agentId: who.id, webSocket: env.switchSocket(who.key), timeoutMs: 10_000, ...more });
    const b = await connect(bob, { rooms: [lobby] });
    const a = await connect(alice);
    try {
      const ops = await a.listOps();
      check(ops.operations && ops.operations.post_message, `listOps: ${Object.keys(ops.operations ?? {})}`);
      await a.op("connect_to_room", { room_id: lobby });
      const text = `hello bob ${Math.random().toString(36).slice(2)}`;
      const posted = await a.op("post_message", { body: text });
      check(posted && typeof posted === "object", `post_message: ${JSON.stringify(posted)}`);
      const inbox = b.events();
      let got;
      while (!got) {
        const { value, done } = await inbox.next();
        check(!done, "bob's events ended");
        if (value.type === "event" && JSON.stringify(value.payload).includes(text)) got = value;
      }
      check(got.room_id === lobby && typeof got.sequence === "number", `event: ${JSON.stringify(got)}`);
      const st = b.status();
      check(st.state === "live" && st.rooms.includes(lobby), `status: ${JSON.stringify(st)}`);
      const placed = await b.placements({ "session-1": lobby });
      check(placed.placements?.["session-1"] === lobby && placed.rooms.includes(lobby), `placements: ${JSON.stringify(placed)}`);
      const bad = await rejects(aw, b.placements({ "session-1": 7 }), "invalid", "placements to a number");
      check(bad.message.includes('"session-1" is a number'), bad.message);
    } finally {
      await a.close();
      await b.close();
    }
    check(a.closed && b.closed, "closed after close()");
  },

  // Through the relay (real workerd), with a relay token: the way a browser uses Switch. Once in
  // front of the current peer (frames piped) and once in front of a released, SSE-only peer (the
  // relay bridges), with the same client code.
  async "switch through the relay: current and released upstreams"(aw, env) {
    for (const relay of env.switchRelays) {
      const connect = (who, more = {}) =>
        aw.SwitchClient.connect(relay.url, { token: who.token, agentId: who.id, webSocket: env.webSocket, timeoutMs: 10_000, ...more });
      const b = await connect(relay.bob, { rooms: [relay.lobby] });
      const a = await connect(relay.alice);
      try {
        const ops = await a.listOps();
        check(ops.operations?.post_message, `${relay.name}: listOps through the relay`);
        await a.op("connect_to_room", { room_id: relay.lobby });
        const text = `hello through the ${relay.name} relay ${Math.random().toString(36).slice(2)}`;
        await a.op("post_message", { body: text });
        const inbox = b.events();
        let got;
        while (!got) {
          const { value, done } = await inbox.next();
          check(!done, `${relay.name}: bob's events ended`);
          if (value.type === "event" && JSON.stringify(value.payload).includes(text)) got = value;
        }
        check(got.room_id === relay.lobby, `${relay.name}: event ${JSON.stringify(got)}`);
        const st = b.status();
        check(st.state === "live" && st.rooms.includes(relay.lobby), `${relay.name}: status ${JSON.stringify(st)}`);
      } finally {
        await a.close();
        await b.close();
      }
    }
    // A token for another agent is refused by the relay (a refused frame, status 403, and close
    // 4403), which the engine reports as a final refusal.
    const [relay] = env.switchRelays;
    const refused = await rejects(
      aw,
      aw.SwitchClient.connect(relay.url, { token: relay.bob.token, agentId: relay.alice.id, webSocket: env.webSocket, timeoutMs: 10_000 }),
      "invalid",
      "another agent's token",
    );
    check(/403.*another agent/.test(refused.message) && !refused.retryable, `refusal: ${refused.message}`);
  },

  // Directly to a released (SSE-only) server with the agent key, as a Node server or a Worker
  // may: the event stream is a `fetch` with `Authorization` (no WebSocket), beats and operations
  // are HTTP calls. Not in a browser: the key would be in the page, and the server answers no
  // CORS preflight (a browser uses the relay, which bridges).
  async "switch directly to a released server over SSE (transport sse, auto)"(aw, env) {
    if (!env.switchSocket) return "skipped: directly to Switch needs the agent key, which a browser must not hold (the relay is for browsers)";
    const rel = env.switchReleased;
    const connect = (who, more = {}) =>
      aw.SwitchClient.connect(rel.url, { token: who.key, agentId: who.id, transport: "sse", timeoutMs: 10_000, ...more });
    const bobEvents = [];
    const b = await connect(rel.bob, { rooms: [rel.lobby], onEvent: (e) => bobEvents.push(e) });
    const a = await connect(rel.alice);
    try {
      check(a.status().wire === "sse" && b.status().wire === "sse", `wire: ${a.status().wire}, ${b.status().wire}`);
      await a.op("connect_to_room", { room_id: rel.lobby });
      const text = `hello over SSE ${Math.random().toString(36).slice(2)}`;
      const posted = await a.op("post_message", { body: text });
      check(posted && typeof posted === "object", `post_message: ${JSON.stringify(posted)}`);
      const until = Date.now() + 10_000;
      const got = () => bobEvents.find((e) => e.type === "event" && JSON.stringify(e.payload).includes(text));
      while (!got() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      check(got()?.room_id === rel.lobby && typeof got().sequence === "number", `bob's event: ${JSON.stringify(got())}`);
      // Past a beat (every 2 s): still live, never disconnected.
      await new Promise((r) => setTimeout(r, 2_200));
      const st = b.status();
      check(st.state === "live" && st.rooms.includes(rel.lobby), `status: ${JSON.stringify(st)}`);
      check(!bobEvents.some((e) => e.type === "disconnected"), `bob's events: ${bobEvents.map((e) => e.type)}`);
    } finally {
      await a.close();
      await b.close();
    }
    check(a.closed && b.closed, "closed after close()");
    // A wrong key: the stream is refused with 401, kind auth, not retryable.
    const bad = await rejects(aw, connect({ id: rel.alice.id, key: "sk_switch_not_a_key" }), "auth", "a wrong key over SSE");
    check(!bad.retryable && bad.info.status === 401, `a wrong key: ${JSON.stringify(bad.info)}`);
    // `auto`: the WebSocket first; the refused upgrade (403) switches to SSE where the socket tells
    // its status (`fetchWebSocket`); undici's sees only a close 1006, a retryable `closed`.
    const auto = { transport: "auto", webSocket: env.switchSocket(rel.alice.key) };
    if (!env.socketTellsStatus) {
      await rejects(aw, connect(rel.alice, auto), "closed", "auto where the socket does not tell the status");
      return;
    }
    const seen = [];
    const c = await connect(rel.alice, { ...auto, onEvent: (e) => seen.push(e) });
    try {
      check(c.status().wire === "sse", `auto: wire ${c.status().wire}`);
      check(seen.some((e) => e.type === "diagnostic" && e.error.kind === "version"), `auto: ${JSON.stringify(seen)}`);
      check((await c.listOps()).operations?.post_message, "auto: listOps");
    } finally {
      await c.close();
    }
  },

  // `auto` against the current server: the WebSocket is served, and kept.
  async "switch directly with transport auto: the current server's WebSocket"(aw, env) {
    if (!env.switchSocket) return "skipped: directly to Switch needs the agent key, which a browser must not hold (the relay is for browsers)";
    const { alice } = env.switchAgents;
    const a = await aw.SwitchClient.connect(env.switch, {
      token: alice.key,
      agentId: alice.id,
      transport: "auto",
      webSocket: env.switchSocket(alice.key),
      timeoutMs: 10_000,
    });
    try {
      check(a.status().wire === "websocket", `auto: wire ${a.status().wire}`);
      check((await a.listOps()).operations?.post_message, "auto: listOps");
    } finally {
      await a.close();
    }
  },

  async "switch errors are typed rejections"(aw, env) {
    for (const [bad, field] of [[{ rooms: "lobby" }, "rooms"], [{ scope: "every" }, "scope"], [{ backoff: { baseMs: 1, jitter: true } }, "jitter"], [{ startFrom: -1 }, "startFrom"], [{ maxMessageBytes: 2 ** 26 + 1 }, "maxMessageBytes"]]) {
      const e = await rejects(aw, aw.SwitchClient.connect(env.switch, { token: "t", agentId: "a", ...bad }), "invalid", `option ${JSON.stringify(bad)}`);
      check(e.message.includes(field), `option ${JSON.stringify(bad)}: ${e.message}`);
    }
    await rejects(aw, aw.SwitchClient.connect("ftp://x", { token: "t", agentId: "a" }), "invalid", "a bad relay URL");
    const transport = await rejects(aw, aw.SwitchClient.connect(env.switch, { token: "t", agentId: "a", transport: "ws" }), "invalid", "an unknown transport");
    check(transport.message.includes("transport"), `an unknown transport: ${transport.message}`);
    // Nobody listening: the first attempt fails and connect rejects (no timeoutMs, reconnects on),
    // and the driver stops, its events in order.
    const seen = [];
    const nobody = await rejects(
      aw,
      aw.SwitchClient.connect(env.closedRkt.replace("ws:", "http:"), { token: "t", agentId: "a", webSocket: env.webSocket, onEvent: (e) => seen.push(e.type) }),
      "closed",
      "nobody listening",
    );
    check(nobody.retryable && nobody.message.startsWith("could not connect: "), `a failed first attempt: ${nobody.message}`);
    check(seen.join() === "stopped", `events of a failed connect: ${seen}`);
    // `connectAttempts` (the engine's rule): two opens, then the second failure rejects; 0
    // reopens until `timeoutMs`.
    const twice = [];
    const nobodyUrl = env.closedRkt.replace("ws:", "http:");
    const quick = { token: "t", agentId: "a", webSocket: env.webSocket, backoff: { baseMs: 5, maxMs: 10 } };
    const second = await rejects(aw, aw.SwitchClient.connect(nobodyUrl, { ...quick, connectAttempts: 2, onEvent: (e) => twice.push(e.type) }), "closed", "two attempts");
    check(second.message.startsWith("could not connect (2 attempts): "), `two attempts: ${second.message}`);
    check(twice.join() === "disconnected,stopped", `events of two failed opens: ${twice}`);
    const until = [];
    await rejects(aw, aw.SwitchClient.connect(nobodyUrl, { ...quick, connectAttempts: 0, timeoutMs: 300, onEvent: (e) => until.push(e.type) }), "timeout", "retry until the timeout");
    check(until.filter((t) => t === "disconnected").length >= 2, `reopened until the timeout: ${until}`);
    // A socket that cannot even be created: the same, and the driver does not go on retrying.
    const none = [];
    const Throws = class {
      constructor() {
        throw new Error("no sockets here");
      }
    };
    await rejects(aw, aw.SwitchClient.connect(env.switch, { token: "t", agentId: "a", webSocket: Throws, onEvent: (e) => none.push(e.type) }), "closed", "no socket");
    await new Promise((r) => setTimeout(r, 300));
    check(none.join() === "stopped", `events when no socket can be made: ${none}`);
    if (!env.switchSocket) return "skipped: the rest needs the peer directly";
    const { alice } = env.switchAgents;
    const bad = "sk_switch_not_a_key";
    await rejects(
      aw,
      aw.SwitchClient.connect(env.switch, { token: bad, agentId: alice.id, webSocket: env.switchSocket(bad), timeoutMs: 10_000 }),
      "auth",
      "a bad key",
    );
    // A released server (no WebSocket route) refuses the upgrade with 403. Where the socket tells
    // the status (`fetchWebSocket`), the engine reads it as "no WebSocket route"; elsewhere the
    // host's close says only 1006, and the first attempt's failure rejects `closed`.
    const rel = env.switchReleased;
    const noRoute = await rejects(
      aw,
      aw.SwitchClient.connect(rel.url, { token: rel.alice.key, agentId: rel.alice.id, webSocket: env.switchSocket(rel.alice.key), timeoutMs: 10_000 }),
      env.socketTellsStatus ? "version" : "closed",
      "a server without the WebSocket route",
    );
    if (env.socketTellsStatus) {
      check(noRoute.info.status === 403 && !noRoute.retryable && /WebSocket route/.test(noRoute.message), `no route: ${noRoute.message}`);
    }
    const a = await aw.SwitchClient.connect(env.switch, { token: alice.key, agentId: alice.id, webSocket: env.switchSocket(alice.key) });
    const unknown = await rejects(aw, a.op("no_such_operation", {}), "invalid", "an unknown operation");
    check(unknown.info.status === 404, `status ${unknown.info.status}`);
    await rejects(aw, a.op("post_message", {}, { signal: AbortSignal.abort() }), "cancelled", "a pre-aborted signal");
    const ac = new AbortController();
    const inFlight = a.listOps({ signal: ac.signal });
    ac.abort();
    await rejects(aw, inFlight, "cancelled", "an abort in flight");
    check((await a.listOps()).operations, "still usable after an abort");
    await rejects(aw, a.op("post_message", { n: 1n }), "invalid", "a BigInt argument");
    await rejects(aw, a.listOps({ timeoutMs: -1 }), "invalid", "listOps's timeoutMs is the call's");
    await rejects(aw, a.subscribe(env.switchLobby, { timeoutMs: 0 }), "invalid", "subscribe's timeoutMs is the call's");
    const pending = a.listOps();
    await a.close();
    await rejects(aw, pending, "closed", "listOps in flight at close");
    await rejects(aw, a.listOps(), "closed", "listOps after close");
    await rejects(aw, a.op("post_message", { body: "x" }), "closed", "an op after close");
    await rejects(aw, a.placements({}), "closed", "placements after close");
  },

  // Bad input: a typed rejection or an error event, never an uncaught exception, never a dead
  // instance (the Chromium runner also fails on anything uncaught in the page).
  async "sans-IO sessions: an argument that is not JSON is an invalid error"(aw) {
    const invalid = (f, what) => {
      try {
        f();
      } catch (e) {
        check(e instanceof aw.AgentwireError && e.kind === "invalid", `${what}: ${e}`);
        return;
      }
      throw new Failure(`${what}: taken`);
    };
    const rkt = new aw.RktSession();
    invalid(() => rkt.request(0, "echo", "", undefined, false), 'RKT params ""');
    invalid(() => rkt.memorySet(0, "k", "", undefined, undefined), 'RKT memory value ""');
    rkt.free();
    const mz = new aw.MoltZapSession(JSON.stringify({ agentKey: "k" }));
    mz.handleOpen(0);
    const id = mz.connect(0);
    mz.handleText(0, JSON.stringify({ jsonrpc: "2.0", id, result: {} }));
    check(mz.state === "ready", `MoltZap state ${mz.state}`);
    invalid(() => mz.call(0, "system/ping", ""), 'MoltZap params ""');
    mz.free();
  },

  // A server that accepts the TCP connection and never answers the WebSocket upgrade: the
  // connect is bounded by handshakeTimeoutMs (the socket's open, then the handshake), not left
  // to the host's own connect timeout (minutes).
  async "rkt connect to a server that never answers the upgrade fails with timeout at handshakeTimeoutMs"(aw, env) {
    const start = Date.now();
    const e = await rejects(aw, aw.RktClient.connect(`${env.garbage}/silent`, opts(env, { handshakeTimeoutMs: 1000 })), "timeout", "RKT, no upgrade");
    const took = Date.now() - start;
    check(took >= 900 && took < 5000, `RKT, no upgrade: rejected after ${took} ms`);
    check(e.retryable && /did not open within 1000 ms/.test(e.message), `RKT, no upgrade: ${JSON.stringify(e.info)}`);
  },

  async "moltzap connect to a server that never answers the upgrade fails with timeout at handshakeTimeoutMs"(aw, env) {
    const start = Date.now();
    const events = [];
    const connecting = aw.MoltZapClient.connect(`${env.garbage}/silent`, opts(env, { agentKey: "k", handshakeTimeoutMs: 1000, onEvent: (ev) => events.push(ev) }));
    const e = await rejects(aw, connecting, "timeout", "MoltZap, no upgrade");
    const took = Date.now() - start;
    check(took >= 900 && took < 5000, `MoltZap, no upgrade: rejected after ${took} ms`);
    check(e.retryable && /did not open within 1000 ms/.test(e.message), `MoltZap, no upgrade: ${JSON.stringify(e.info)}`);
  },

  // A refused upgrade whose status the socket tells (`fetchWebSocket`, in Workers): the error
  // is the engine's reading of it (core's `Error::refused_upgrade`), as the native clients'.
  async "rkt reads a refused upgrade's status where the socket tells it"(aw, env) {
    if (!env.socketTellsStatus) return "skipped: this host's WebSocket does not tell a refused upgrade's status";
    const ws = aw.fetchWebSocket({});
    const e = await rejects(aw, aw.RktClient.connect(`${env.garbage}/endless-refusal`, { webSocket: ws, timeoutMs: 10_000 }), "auth", "RKT, 401");
    check(e.code === 401 && !e.retryable && /HTTP 401/.test(e.message), `RKT, 401: ${JSON.stringify(e.info)}`);
  },

  async "moltzap reads a refused upgrade's status where the socket tells it"(aw, env) {
    if (!env.socketTellsStatus) return "skipped: this host's WebSocket does not tell a refused upgrade's status";
    const ws = aw.fetchWebSocket({});
    const e = await rejects(aw, aw.MoltZapClient.connect(`${env.garbage}/endless-refusal`, { webSocket: ws, agentKey: "k", timeoutMs: 10_000 }), "auth", "MoltZap, 401");
    check(e.code === 401 && !e.retryable && /HTTP 401/.test(e.message), `MoltZap, 401: ${JSON.stringify(e.info)}`);
  },

  // A refused upgrade through the host's WebSocket, which tells no status to the page: a
  // `closed` rejection, its message what the host's error event said, where it says something.
  // Bun's, Deno's and the `ws` package's say the status (`hostErrorSaysStatus`); it was lost.
  async "refused upgrade: the rejection keeps what the host's WebSocket said"(aw, env) {
    const url = `${env.garbage}/endless-refusal`;
    const connects = {
      RKT: () => aw.RktClient.connect(url, opts(env, { timeoutMs: 10_000 })),
      MoltZap: () => aw.MoltZapClient.connect(url, opts(env, { agentKey: "k", timeoutMs: 10_000 })),
    };
    for (const [what, connect] of Object.entries(connects)) {
      const e = await rejects(aw, connect(), "closed", `${what}, 401`);
      if (env.hostErrorSaysStatus) check(/\b401\b/.test(e.message), `${what}, 401: ${e.message}`);
    }
    // Not where it may quote an address with credentials (Bun's quotes the address).
    const hidden = await rejects(aw, aw.RktClient.connect(`${url}?token=hush`, opts(env, { timeoutMs: 10_000 })), "closed", "RKT, 401, a token in the address");
    check(!hidden.message.includes("hush"), `RKT, 401, a token in the address: ${hidden.message}`);
  },

  // "Every failure is an AgentwireError": a connect without its options object rejects (kind
  // invalid), it does not throw a TypeError.
  async "moltzap connect without an options object rejects with invalid"(aw, env) {
    let connecting;
    try {
      connecting = aw.MoltZapClient.connect(env.moltzap);
    } catch (e) {
      throw new Failure(`MoltZapClient.connect(url) threw: ${e}`);
    }
    await rejects(aw, connecting, "invalid", "MoltZapClient.connect(url)");
  },

  async "switch connect without an options object rejects with invalid"(aw, env) {
    let connecting;
    try {
      connecting = aw.SwitchClient.connect(env.switchRelays[0].url);
    } catch (e) {
      throw new Failure(`SwitchClient.connect(url) threw: ${e}`);
    }
    await rejects(aw, connecting, "invalid", "SwitchClient.connect(url)");
  },

  async "switch: an operation's answer that never ends is cut at the engine's bound"(aw, env) {
    const relay = `${env.garbage.replace("ws:", "http:")}/flood`;
    const sw = await aw.SwitchClient.connect(relay, { token: "t0k3n", agentId: "a1", reconnect: false, webSocket: env.webSocket, timeoutMs: 5000 });
    try {
      const started = Date.now();
      const e = await rejects(aw, sw.op("flood", {}, { timeoutMs: 20_000 }), "limit", "an endless chunked answer");
      check(/16777216/.test(e.message), e.message);
      check(Date.now() - started < 15_000, `cut after ${Date.now() - started} ms, not at the deadline`);
    } finally {
      await sw.close();
    }
  },

  async "bad input: garbage, a socket dying mid-request, calls after close"(aw, env) {
    const g = env.garbage;
    // The handshake fails with the last thing that went wrong before the close: a binary frame.
    await rejects(aw, aw.RktClient.connect(`${g}/rkt/garbage`, opts(env, { timeoutMs: 5000 })), "decode", "RKT garbage then 1011");
    const rkt = await aw.RktClient.connect(`${g}/rkt/midrequest`, opts(env, { timeoutMs: 5000 }));
    await rejects(aw, rkt.request("weather.current", { city: "Seoul" }), "closed", "RKT socket dies mid-request");
    await rejects(aw, rkt.ping(), "closed", "RKT call after the socket died");
    const stream = rkt.stream("weather.forecast", {});
    await rejects(aw, stream.next(), "closed", "RKT stream after the socket died");
    // A frame too large to copy into wasm memory safely ends the socket (1009) before the copy.
    const huge = await aw.RktClient.connect(`${g}/rkt/huge`, opts(env, { timeoutMs: 5000 }));
    const tooLarge = await rejects(aw, huge.request("weather.current", { city: "Seoul" }), "closed", "a frame over 64 MiB");
    check(tooLarge.message.includes(env.hostRefusesHugeFrames ? "1006" : "1009"), `a frame over 64 MiB: ${tooLarge.message}`);

    const events = [];
    const mz = await aw.MoltZapClient.connect(`${g}/moltzap/garbage`, opts(env, { agentKey: "k", onEvent: (e) => events.push(e) }));
    await rejects(aw, mz.call("system/ping", {}), "closed", "MoltZap garbage then the socket dies");
    await mz.close();
    check(events.some((e) => e.type === "diagnostic" && e.error.kind === "decode"), `diagnostics: ${JSON.stringify(events.map((e) => e.type))}`);
    check(events.at(-1).type === "disconnected", "disconnected last");
    await rejects(aw, mz.send({ agent: "bob" }, "hi"), "closed", "MoltZap call after close");

    const sw = aw.SwitchClient.connect(g.replace("ws:", "http:"), { token: "t0k3n", agentId: "a1", reconnect: false, webSocket: env.webSocket, timeoutMs: 5000 });
    await rejects(aw, sw, "closed", "Switch garbage then the socket dies");

    // The instance is alive: the real peers still work.
    check(aw.errorKinds().length === 13, "the module still answers");
    const ok = await aw.RktClient.connect(env.rkt, opts(env));
    check((await ok.request("weather.current", { city: "Seoul" })).data.temperature === 24, "a real request after the garbage");
    await ok.close();
  },
};
