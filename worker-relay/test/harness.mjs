// What the relay's tests share: a Switch peer on 127.0.0.1 (either generation), the relay
// running in real workerd (Miniflare), relay tokens minted with the npm package's helper, and
// WebSocket clients (`ws`: it can send the Origin a browser would). Everything is stopped by
// `cleanup()`, and every wait is bounded.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";
import WebSocket from "ws";
import { mintRelayToken } from "../gen/relay-token.js";
import { startWorker, RELAY_SCRIPT } from "../miniflare.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, "../..");
export const SECRET = "relay-test-secret-0123456789abcdef";
export const OLD_SECRET = "relay-old-secret-0123456789abcdef!";
export const ORIGIN = "http://127.0.0.1:7700";
const BIN = process.env.AGENTWIRE_BIN ?? path.join(ROOT, "target/debug/agentwire");

const stops = [];
export async function cleanup() {
  for (const stop of stops.splice(0).reverse()) await stop().catch(() => {});
}

/** Rejects after `ms` with `what` in the message. */
export function within(ms, what, promise) {
  let t;
  const timeout = new Promise((_, reject) => {
    t = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(t));
}

/** `agentwire peers switch` on a free port: `{url, agents: {alice: {id, key}, ...}, rooms, log}`. */
export async function startPeer({ generation = "current", args = [] } = {}) {
  const child = spawn(BIN, ["peers", "switch", "--port", "0", "--generation", generation, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  stops.push(async () => child.kill());
  let out = "";
  child.stderr.on("data", () => {});
  await within(10_000, "the Switch peer", new Promise((resolve, reject) => {
    child.stdout.on("data", (d) => {
      out += d;
      if (/^room lobby/m.test(out)) resolve();
    });
    child.on("exit", (code) => reject(new Error(`the Switch peer exited (${code}): ${out}`)));
  }));
  const agents = {};
  for (const m of out.matchAll(/^agent (\S+) id=(\S+) key=(\S+)$/gm)) agents[m[1]] = { id: m[2], key: m[3] };
  const rooms = {};
  for (const m of out.matchAll(/^room (\S+) id=(\S+)/gm)) rooms[m[1]] = m[2];
  return { url: out.match(/listening on (\S+)/)[1], agents, rooms };
}

/** The relay in workerd with `vars` (strings) as its env; `logs` collects workerd's output,
 * `errLogs` its stderr only (`console.warn` and `console.error`, not `console.log`);
 * `compatibilityDate` and `compatibilityFlags` default to wrangler.toml's. */
export async function startRelay(vars, { script = RELAY_SCRIPT, compatibilityDate, compatibilityFlags } = {}) {
  const logs = [];
  const errLogs = [];
  const { mf, url } = await startWorker({
    vars,
    script,
    log: (t, stream) => {
      logs.push(t);
      if (stream === "stderr") errLogs.push(t);
    },
    ...(compatibilityDate ? { compatibilityDate } : {}),
    ...(compatibilityFlags ? { compatibilityFlags } : {}),
  });
  stops.push(() => mf.dispose());
  return { url, wsUrl: url.replace(/^http/, "ws"), logs, errLogs, mf };
}

/** The usual relay settings in front of `peer` (alice and bob's keys), with `extra` on top. */
export function relayVars(peer, extra = {}) {
  return {
    UPSTREAM: peer.url,
    AGENT_KEYS: JSON.stringify(Object.fromEntries(Object.values(peer.agents).map((a) => [a.id, a.key]))),
    RELAY_TOKEN_SECRET: SECRET,
    ALLOWED_ORIGINS: ORIGIN,
    ...extra,
  };
}

/** A relay token for `agentId` (claims as the npm helper takes them). */
export function token(agentId, claims = {}, secret = SECRET) {
  return mintRelayToken(secret, { agentId, expiresIn: 300, ...claims });
}

/** Opens a WebSocket the way a browser would: `{ws, frames, opened, closed}`; `closed` resolves
 * to `{code, reason}`; `frames` collects parsed text frames; pings are answered with pongs
 * carrying the highest `id` seen unless `pong: false`. */
export function open(url, { protocols = [], origin = ORIGIN, headers = {}, pong = true } = {}) {
  const ws = new WebSocket(url, protocols, { origin, headers, handshakeTimeout: 10_000 });
  const frames = [];
  let cursor = 0;
  const waiters = [];
  ws.on("message", (data, isBinary) => {
    const text = isBinary ? data : String(data);
    let f;
    try {
      f = JSON.parse(text);
    } catch {
      f = { raw: text };
    }
    frames.push(f);
    if (typeof f.id === "number") cursor = Math.max(cursor, f.id);
    if (pong && (f.type === "ping" || f.event === "ping")) ws.send(JSON.stringify({ type: "pong", cursor }));
    for (const w of [...waiters]) if (w.test(f)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(f); }
  });
  const opened = new Promise((resolve, reject) => {
    ws.on("open", () => resolve(ws.protocol));
    ws.on("unexpected-response", (_req, res) => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })));
    ws.on("error", reject);
  });
  opened.catch(() => {});
  const closed = new Promise((resolve) => ws.on("close", (code, reason) => resolve({ code, reason: String(reason) })));
  /** The next frame (seen or to come) matching `test`, within `ms`. */
  const next = (test, ms = 10_000, what = "a frame") => {
    const seen = frames.find(test);
    if (seen) return Promise.resolve(seen);
    return within(ms, what, new Promise((resolve) => waiters.push({ test, resolve })));
  };
  stops.push(async () => ws.terminate());
  return { ws, frames, opened, closed, next };
}

/** The connection URL of `agentId` on the relay. */
export function wsPath(relay, agentId, query = "") {
  return `${relay.wsUrl}/agents/${agentId}/connection/ws?connection_id=${crypto.randomUUID()}${query}`;
}

/** Protocols a browser offers with `tok`. */
export const withToken = (tok) => ["agentwire.v1", `agentwire.token.${tok}`];
