// The relay from an operator's side: its log lines (one JSON object each: one per refusal, one
// per socket end, none per frame, never a token or a key), and the local runners work from any
// directory.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { cleanup, startRelay, within, relayVars, token, open, withToken, SECRET, ORIGIN } from "./harness.mjs";
import { startBlackhole, startUpstream, startSseUpstream, sseConnectionState, stopHostile, until } from "./hostile.mjs";

const T = { timeout: 30_000 };
const DEV = fileURLToPath(new URL("../dev.mjs", import.meta.url));
const FAKE = { id: "agent-ops", key: "sk_switch_ops_key_000000000001" };
const VARS = {
  UPSTREAM: "http://127.0.0.1:9",
  AGENT_KEYS: JSON.stringify({ [FAKE.id]: FAKE.key }),
  RELAY_TOKEN_SECRET: SECRET,
  ALLOWED_ORIGINS: ORIGIN,
};

after(async () => {
  await cleanup();
  await stopHostile();
});

/** The relay's own log lines so far, parsed (workerd's other output left out); with `errOnly`,
 * those logged at `warn` or `error` only (workerd's stderr). */
function lines(relay, errOnly = false) {
  return (errOnly ? relay.errLogs : relay.logs)
    .join("")
    .split("\n")
    .filter((l) => l.startsWith('{"relay":"agentwire"'))
    .map((l) => JSON.parse(l));
}

/** The lines of `event` after the first `from` lines, once there are `n` of them (within 5 s). */
async function logged(relay, event, n = 1, from = 0) {
  const of = () => lines(relay).slice(from).filter((l) => l.event === event);
  await until(() => of().length >= n, 5_000, `${n} ${event} line(s)`);
  await new Promise((r) => setTimeout(r, 200));
  return of();
}

/** Opens a socket on `relay` for `agent` with `tok`: `{c, cid}` once open. */
async function connectTo(relay, agent, tok, opts = {}) {
  const cid = crypto.randomUUID();
  const c = open(`${relay.wsUrl}/agents/${agent.id}/connection/ws?connection_id=${cid}`, { protocols: withToken(tok), ...opts });
  await within(10_000, "the open", c.opened);
  return { c, cid };
}

const noSecret = (relay, secrets) => {
  const all = relay.logs.join("");
  for (const s of secrets) assert.ok(!all.includes(s), `a secret in the log: ${s.slice(0, 12)}…`);
};

test("a refusal is one log line: kind, status, close code, the path's agent, the detail; never the token", T, async () => {
  const up = await startUpstream();
  const relay = await startRelay(relayVars({ url: up.url, agents: { f: FAKE } }, { UPSTREAM_GENERATION: "ws" }));
  const tok = await token(FAKE.id);
  const c = open(`${relay.wsUrl}/agents/${FAKE.id}/connection/ws?connection_id=${crypto.randomUUID()}`, {
    protocols: withToken(tok),
    origin: "https://evil.example",
  });
  assert.equal((await within(10_000, "the refusal", c.closed)).code, 4403);
  const [ws] = await logged(relay, "refused");
  assert.deepEqual(ws, {
    relay: "agentwire", event: "refused", kind: "origin", status: 403, code: 4403, agent: FAKE.id, detail: "this Origin is not allowed",
  });
  const r = await fetch(`${relay.url}/agents/${FAKE.id}/ops`, { headers: { Origin: ORIGIN, Authorization: `Bearer ${tok.slice(0, -2)}xx` } });
  assert.equal(r.status, 401);
  const refusals = await logged(relay, "refused", 2);
  assert.equal(refusals.length, 2, "one line per refusal");
  assert.equal(refusals[1].kind, "token");
  assert.equal(refusals[1].status, 401);
  assert.equal(refusals[1].agent, FAKE.id);
  assert.equal(refusals[1].code, undefined);
  assert.equal(lines(relay).filter((l) => l.event === "socket_end").length, 0, "a refused socket has no end line");
  noSecret(relay, [tok, tok.split(".")[1], FAKE.key, SECRET]);
});

test("a socket end is one log line: agent, connection, transport, who ended it, both codes, reason, duration, frames each way", T, async () => {
  const up = await startUpstream();
  const relay = await startRelay(relayVars({ url: up.url, agents: { f: FAKE } }, { UPSTREAM_GENERATION: "ws", MAX_MESSAGE_BYTES: "1024" }));
  const tok = await token(FAKE.id);
  // The browser closes: 3 frames up, 3 echoed down.
  const a = await connectTo(relay, FAKE, tok);
  for (const m of ["a", "b", "c"]) a.c.ws.send(m);
  await a.c.next((f) => f.raw === "c", 5_000, "the echo");
  a.c.ws.close(1000, "bye");
  await a.c.closed;
  const [end] = await logged(relay, "socket_end");
  assert.equal(end.agent, FAKE.id);
  assert.equal(end.conn, a.cid.slice(0, 8));
  assert.deepEqual(
    [end.transport, end.by, end.browserCode, end.upstreamCode, end.framesFromBrowser, end.framesToBrowser, end.reason],
    ["pipe", "browser", 1000, 1000, 3, 3, undefined],
  );
  assert.ok(end.durationMs >= 0 && end.durationMs < 10_000, `${end.durationMs}`);
  // The relay closes (1009): its reason, both codes.
  // An echo first: the upstream is open and piped (a frame before that is refused in the early
  // phase, whose line has no upstream code: under load the big frame could get there first).
  const b = await connectTo(relay, FAKE, tok);
  b.c.ws.send("d");
  await b.c.next((f) => f.raw === "d", 5_000, "the echo");
  b.c.ws.send("x".repeat(2000));
  assert.equal((await within(5_000, "the 1009", b.c.closed)).code, 1009);
  const ends = await logged(relay, "socket_end", 2);
  assert.equal(ends.length, 2, "one line per socket");
  assert.deepEqual(
    [ends[1].by, ends[1].browserCode, ends[1].upstreamCode, ends[1].reason, ends[1].framesFromBrowser],
    ["relay", 1009, 1009, "message too big", 1],
  );
  // The upstream closes: its code and reason.
  up.behave = (ws) => setTimeout(() => ws.close(4000, "upstream says bye"), 50);
  const c = await connectTo(relay, FAKE, tok);
  assert.equal((await within(5_000, "the upstream's close", c.c.closed)).code, 4000);
  const third = (await logged(relay, "socket_end", 3))[2];
  assert.deepEqual([third.by, third.browserCode, third.upstreamCode, third.reason], ["upstream", 4000, 4000, "upstream says bye"]);
  // No line per frame: three sockets, three lines, nothing else but the ends.
  assert.deepEqual(lines(relay).map((l) => l.event), ["socket_end", "socket_end", "socket_end"]);
  noSecret(relay, [tok, tok.split(".")[1], FAKE.key, SECRET]);
});

test("an upstream that refuses the open is logged with its status, then the socket's end; a bridge's end says bridge", T, async () => {
  const up = await startUpstream();
  up.refuse(500);
  const relay = await startRelay(relayVars({ url: up.url, agents: { f: FAKE } }, { UPSTREAM_GENERATION: "ws" }));
  const tok = await token(FAKE.id);
  const a = await connectTo(relay, FAKE, tok);
  assert.equal((await within(5_000, "the close", a.c.closed)).code, 1011);
  const [refused] = await logged(relay, "upstream_refused");
  assert.deepEqual([refused.agent, refused.conn, refused.transport, refused.status], [FAKE.id, a.cid.slice(0, 8), "pipe", 500]);
  const [end] = await logged(relay, "socket_end");
  assert.deepEqual([end.transport, end.by, end.browserCode], ["opening", "relay", 1011]);
  assert.match(end.reason, /HTTP 500/);

  const sse = await startSseUpstream((res, req) => res.write(sseConnectionState(FAKE.id, new URL(req.url, "http://x").searchParams.get("connection_id"))));
  const bridged = await startRelay(relayVars({ url: sse.url, agents: { f: FAKE } }, { UPSTREAM_GENERATION: "sse" }));
  const b = await connectTo(bridged, FAKE, tok);
  await b.c.next((f) => f.event === "connection_state", 10_000, "connection_state");
  b.c.ws.close(1000);
  await b.c.closed;
  const [bend] = await logged(bridged, "socket_end");
  assert.deepEqual([bend.transport, bend.by, bend.browserCode, bend.upstreamCode], ["bridge", "browser", 1000, undefined]);
  assert.ok(bend.framesToBrowser >= 1, JSON.stringify(bend));
  noSecret(relay, [tok, FAKE.key, SECRET]);
  noSecret(bridged, [tok, FAKE.key, SECRET]);
});

test("an upstream open that times out is logged upstream_timeout, one that cannot be reached upstream_unreachable; the browser is told which", T, async () => {
  // TCP accepted, the upgrade never answered: the open's timeout (UPSTREAM_TIMEOUT_MS).
  const hole = await startBlackhole();
  const slow = await startRelay(relayVars({ url: hole.url, agents: { f: FAKE } }, { UPSTREAM_GENERATION: "ws", UPSTREAM_TIMEOUT_MS: "500" }));
  // Nothing listens: refused at once.
  const gone = await startRelay(relayVars({ url: "http://127.0.0.1:9", agents: { f: FAKE } }, { UPSTREAM_GENERATION: "ws" }));
  const tok = await token(FAKE.id);
  const a = await connectTo(slow, FAKE, tok);
  assert.deepEqual(await within(5_000, "the timeout's close", a.c.closed), { code: 1011, reason: "the upstream did not answer in time" });
  const [timedOut] = await logged(slow, "upstream_timeout");
  assert.deepEqual([timedOut.agent, timedOut.conn], [FAKE.id, a.cid.slice(0, 8)]);
  assert.equal(typeof timedOut.error, "string");
  const b = await connectTo(gone, FAKE, tok);
  assert.deepEqual(await within(5_000, "the refusal's close", b.c.closed), { code: 1011, reason: "the upstream could not be reached" });
  const [unreachable] = await logged(gone, "upstream_unreachable");
  assert.deepEqual([unreachable.agent, unreachable.conn], [FAKE.id, b.cid.slice(0, 8)]);
  assert.deepEqual(lines(slow).map((l) => l.event), ["upstream_timeout", "socket_end"]);
  assert.deepEqual(lines(gone).map((l) => l.event), ["upstream_unreachable", "socket_end"]);
  noSecret(slow, [tok, FAKE.key, SECRET]);
  // The bridge's open (a released upstream's event stream) never answered: the same line, by the
  // bridge's own open timeout (it logged only the socket's end).
  const bridged = await startRelay(relayVars({ url: hole.url, agents: { f: FAKE } }, { UPSTREAM_GENERATION: "sse", UPSTREAM_TIMEOUT_MS: "500" }));
  const c = await connectTo(bridged, FAKE, tok);
  assert.equal((await within(5_000, "the bridge's timeout close", c.c.closed)).code, 1011);
  const [bridgeTimedOut] = await logged(bridged, "upstream_timeout");
  assert.deepEqual([bridgeTimedOut.agent, bridgeTimedOut.conn, bridgeTimedOut.transport], [FAKE.id, c.cid.slice(0, 8), "bridge"]);
  assert.equal(typeof bridgeTimedOut.error, "string");
  assert.deepEqual(lines(bridged).map((l) => l.event), ["upstream_timeout", "socket_end"]);
});

test("a routine relay token expiry ends its socket at log level, not warn; other 1008s stay warn", T, async () => {
  const up = await startUpstream();
  const relay = await startRelay(relayVars({ url: up.url, agents: { f: FAKE } }, { UPSTREAM_GENERATION: "ws" }));
  // Expires within 2 to 3 s (whole seconds), made once the relay has started.
  const tok = await token(FAKE.id, { expiresIn: 3 });
  const a = await connectTo(relay, FAKE, tok);
  assert.equal((await within(5_000, "the close at exp", a.c.closed)).code, 1008);
  const [end] = await logged(relay, "socket_end");
  assert.deepEqual([end.by, end.browserCode, end.reason], ["relay", 1008, "the relay token expired"]);
  // The upstream's own 1008: a warning, as before.
  up.behave = (ws) => setTimeout(() => ws.close(1008, "policy says no"), 50);
  const b = await connectTo(relay, FAKE, await token(FAKE.id));
  assert.equal((await within(5_000, "the upstream's 1008", b.c.closed)).code, 1008);
  const ends = await logged(relay, "socket_end", 2);
  assert.deepEqual([ends[1].by, ends[1].reason], ["upstream", "policy says no"]);
  await new Promise((r) => setTimeout(r, 200));
  const warned = lines(relay, true).filter((l) => l.event === "socket_end");
  assert.deepEqual(warned.map((l) => l.reason), ["policy says no"], "only the upstream's 1008 at warn");
});

test("dev.mjs and the harness start the relay from any working directory, not only worker-relay/", T, async () => {
  // A directory that is not above worker-relay/ (from one above it, module paths still resolved).
  const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "relay-cwd-"));
  const child = spawn(process.execPath, [DEV], {
    cwd: elsewhere,
    env: { ...process.env, RELAY_VARS: JSON.stringify(VARS) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  const exited = new Promise((resolve) => child.on("exit", resolve));
  try {
    const url = await within(20_000, "dev.mjs listening", new Promise((resolve, reject) => {
      child.stdout.on("data", () => {
        const m = out.match(/listening on (\S+)/);
        if (m) resolve(m[1]);
      });
      exited.then((code) => reject(new Error(`dev.mjs exited (${code}): ${out}`)));
    }));
    const r = await fetch(`${url}/nowhere`);
    assert.equal(r.status, 404, await r.text());
  } finally {
    child.kill("SIGTERM");
    await within(10_000, "dev.mjs exiting", exited);
  }
  const cwd = process.cwd();
  process.chdir(elsewhere);
  try {
    const relay = await startRelay(VARS);
    assert.equal((await fetch(`${relay.url}/nowhere`)).status, 404);
  } finally {
    process.chdir(cwd);
    fs.rmSync(elsewhere, { recursive: true, force: true });
  }
});

test("the relay's key refused upstream (401, 4401): the browser gets a retryable 1011 or 502 with the relay's reason, never 4401 or 401, and it is logged with the agent", T, async () => {
  const KEY_REFUSED = "the relay's key for this agent was refused";
  const up = await startUpstream({
    onHttp: (req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ detail: "Invalid credentials" }));
    },
  });
  const relay = await startRelay(relayVars({ url: up.url, agents: { f: FAKE } }, { UPSTREAM_GENERATION: "ws" }));
  const tok = await token(FAKE.id);
  // The upgrade answered 401.
  up.refuse(401);
  const a = await connectTo(relay, FAKE, tok);
  assert.deepEqual(await within(5_000, "the close", a.c.closed), { code: 1011, reason: KEY_REFUSED });
  up.refuse(null);
  // An open socket closed 4401 by the upstream.
  up.behave = (ws) => setTimeout(() => ws.close(4401, "Invalid credentials"), 50);
  const b = await connectTo(relay, FAKE, tok);
  assert.deepEqual(await within(5_000, "the close", b.c.closed), { code: 1011, reason: KEY_REFUSED });
  // An HTTP call answered 401: 502 with the relay's words (a client takes a 401 for its token).
  const r = await fetch(`${relay.url}/agents/${FAKE.id}/ops`, { headers: { Origin: ORIGIN, Authorization: `Bearer ${tok}` } });
  assert.equal(r.status, 502);
  assert.deepEqual(await r.json(), { code: "relay_key_refused", detail: KEY_REFUSED, error: "upstream" });
  const refused = await logged(relay, "upstream_key_refused", 3);
  assert.deepEqual(refused.map((l) => [l.agent, l.transport ?? l.method]), [[FAKE.id, "pipe"], [FAKE.id, "pipe"], [FAKE.id, "GET"]]);
  assert.deepEqual([refused[0].conn, refused[1].conn], [a.cid.slice(0, 8), b.cid.slice(0, 8)]);
  const ends = await logged(relay, "socket_end", 2);
  assert.deepEqual(ends.map((e) => [e.browserCode, e.reason]), [[1011, KEY_REFUSED], [1011, KEY_REFUSED]]);
  noSecret(relay, [tok, FAKE.key, SECRET]);

  // The bridge: the stream open answered 401, and a beat answered 401 (the key revoked later).
  const sse = await startSseUpstream((res, req) => {
    if (sse.refuseOpen) {
      res.writeHead(401, { "content-type": "text/plain" });
      return res.end("Invalid credentials");
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(sseConnectionState(FAKE.id, new URL(req.url, "http://x").searchParams.get("connection_id")));
  }, { head: false });
  const bridged = await startRelay(relayVars({ url: sse.url, agents: { f: FAKE } }, { UPSTREAM_GENERATION: "sse" }));
  sse.refuseOpen = true;
  const c = await connectTo(bridged, FAKE, tok);
  assert.deepEqual(await within(5_000, "the close", c.c.closed), { code: 1011, reason: KEY_REFUSED });
  assert.equal(c.c.frames.length, 0, "no refused frame");
  sse.refuseOpen = false;
  sse.beatStatus = 401;
  const d = await connectTo(bridged, FAKE, tok);
  await d.c.next((f) => f.event === "connection_state", 10_000, "connection_state");
  assert.deepEqual(await within(10_000, "the close", d.c.closed), { code: 1011, reason: KEY_REFUSED });
  const bridgeRefused = await logged(bridged, "upstream_key_refused", 2);
  assert.deepEqual(bridgeRefused.map((l) => [l.agent, l.conn, l.beat]), [[FAKE.id, c.cid.slice(0, 8), undefined], [FAKE.id, d.cid.slice(0, 8), true]]);
  noSecret(bridged, [tok, FAKE.key, SECRET]);
});
