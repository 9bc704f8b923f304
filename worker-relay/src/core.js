// The engine, loaded once per isolate: `RelayCore` (configuration, policy, rate limits) is
// built from `env` on first use and rebuilt only when the settings change.
import wasm from "../gen/agentwire_relay_wasm_bg.wasm";
import * as engine from "../gen/agentwire_relay_wasm.js";

engine.initSync({ module: wasm });

export const { BridgeCore, forwardClose, closeReason, upgradeRefused, upstreamAnswer } = engine;
export const REFUSAL_BODY_WAIT_MS = engine.refusalBodyWaitMs();
export const CODES = JSON.parse(engine.closeCodes());
const NAMES = engine.settingNames();

let current = null;

/** The relay for `env`; throws an `Error` naming a bad setting (never its value). */
export function relayFor(env) {
  const settings = {};
  for (const name of NAMES) {
    const v = env[name];
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") settings[name] = v;
  }
  const fingerprint = JSON.stringify(settings);
  if (current === null || current.fingerprint !== fingerprint) {
    current = { fingerprint, relay: new engine.RelayCore(fingerprint) };
  }
  return current.relay;
}

/** Forgets the relay (after a trap in the engine), so the next request builds a new one. */
export function dropRelay() {
  current = null;
}

/** A JSON error answer in the relay's shape (`{detail, error}`). */
export function jsonError(status, error, detail, headers = []) {
  return jsonAnswer(status, JSON.stringify({ detail, error }), headers);
}

/** An answer with the JSON text `body` (one the engine wrote), never cached. */
export function jsonAnswer(status, body, headers = []) {
  return new Response(body, {
    status,
    headers: [["Content-Type", "application/json"], ["Cache-Control", "no-store"], ...headers],
  });
}

/** Size of a WebSocket message in bytes, without encoding when the bound is clear. Binary
 * messages are ArrayBuffers (every socket the relay holds has `binaryType = "arraybuffer"`); a
 * Blob is measured by its size all the same, and anything else counts as over every bound. */
const encoder = new TextEncoder();
export function messageBytes(data, max) {
  if (typeof data !== "string") return data?.byteLength ?? data?.size ?? Number.POSITIVE_INFINITY;
  if (data.length > max || data.length * 3 <= max) return data.length;
  return encoder.encode(data).byteLength;
}

/** Binary messages as ArrayBuffers, which `send` passes on as the same bytes. From compatibility
 * date 2026-03-17 (`websocket_standard_binary_type`) workerd delivers Blobs unless asked, and a
 * Blob given to `send` goes out as the text "[object Blob]". */
export function binaryAsArrayBuffer(ws) {
  ws.binaryType = "arraybuffer";
}

/** A socket pair whose server end is accepted, answered with `protocol` echoed. */
export function acceptSocket(protocol) {
  const pair = new WebSocketPair();
  const [client, server] = [pair[0], pair[1]];
  binaryAsArrayBuffer(server);
  server.accept();
  const headers = protocol ? { "Sec-WebSocket-Protocol": protocol } : {};
  return { server, response: new Response(null, { status: 101, webSocket: client, headers }) };
}

/** The frame limit of one browser socket: `over()` counts a frame and says whether the socket
 * went over its limit (every `frameBatch` frames the engine takes them at once); `forget()` when
 * the socket ends. */
export function frameLimit(relay) {
  const socket = relay.newSocket();
  const batch = relay.frameBatch;
  let unchecked = 0;
  return {
    over() {
      if (++unchecked < batch) return false;
      unchecked = 0;
      return !relay.takeFrames(socket, Date.now());
    },
    forget: () => relay.forgetSocket(socket),
  };
}

/** Closes `ws` if it is still open; never throws (a socket may already be gone). */
export function closeQuietly(ws, code, reason) {
  try {
    ws.close(code, closeReason(reason ?? ""));
  } catch {
    try {
      ws.close(CODES.fallback);
    } catch {
      /* already closed */
    }
  }
}

/** At most `max` bytes of an answer's body, as text, with no agent key in it, not even the
 * start of one cut at `max`: `redactMargin` bytes more are read, every key is replaced, then the
 * text is cut (`relay.redactCut`). The rest of the body is not read, nor what has not come after
 * `waitMs` (none: no time bound). A body that breaks off before that is what came of it, or
 * `null` with `whole` (the bridge's answers: cut, a `409 taken_over` loses its code, so a driver
 * takes it for no answer). */
export async function boundedText(relay, answer, { max = 16 * 1024, waitMs, whole = false } = {}) {
  if (!answer.body) return "";
  const limit = max + relay.redactMargin;
  const reader = answer.body.getReader();
  const chunks = [];
  let size = 0;
  let complete = false;
  let timer;
  const waited = waitMs === undefined ? null : new Promise((r) => (timer = setTimeout(r, waitMs, null)));
  try {
    while (size <= limit) {
      const read = await (waited ? Promise.race([reader.read(), waited]) : reader.read());
      if (read === null) break;
      if (read.done) {
        complete = true;
        break;
      }
      chunks.push(read.value);
      size += read.value.byteLength;
    }
  } catch {
    if (whole) size = -1;
  }
  clearTimeout(timer);
  reader.cancel().catch(() => {});
  if (size < 0) return null;
  const all = new Uint8Array(Math.min(size, limit));
  let at = 0;
  for (const c of chunks) {
    const part = c.subarray(0, all.length - at);
    all.set(part, at);
    at += part.length;
    if (at === all.length) break;
  }
  return relay.redactCut(new TextDecoder().decode(all), max, complete && size <= limit);
}
