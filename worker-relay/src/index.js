// The agentwire relay: a module Worker that lets a browser use Switch without the agent key.
// Every decision (route, origin, token, agent, rooms, rate limit, upstream URL and headers,
// close codes, the SSE bridge) is the engine's (`agentwire-relay`, compiled to wasm); this file
// only carries them out.
import { CODES, relayFor, dropRelay, jsonError, acceptSocket, closeQuietly } from "./core.js";
import { logEvent, logRefusal } from "./log.js";
import { proxy } from "./proxy.js";
import { connect } from "./connect.js";

/** Reads at most `max` bytes of the body as text; `null` when it is longer. */
async function readBody(request, max) {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > max) return null;
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return new TextDecoder("utf-8", { fatal: false }).decode(all);
}

export default {
  /** Every request gets an answer: what throws (a body the client stops sending, a bug) is a
   * 500 with a JSON body, never an exception that reaches the runtime; with the CORS headers
   * of the request's Origin once the relay has them (a cross-origin page reads it). */
  async fetch(request, env) {
    const own = { cors: [] };
    try {
      return await handle(request, env, own);
    } catch (e) {
      logEvent(null, "error", { event: "relay_failure", method: request.method, error: e?.name ?? "Error" });
      return jsonError(500, "internal", "the relay failed on this request", own.cors);
    }
  },
};

/** The answer of a relay whose settings are wrong: 500 `{"error":"config"}`, and for a WebSocket
 * upgrade an accepted socket closed 1011 "relay configuration error" (a refused upgrade is only
 * 1006 to a browser, with no reason; 1011 is retried with backoff and says why). An upgrade that
 * offers subprotocols but not `agentwire.v1` gets the HTTP answer, as the engine's refusals do. */
function misconfigured(request) {
  const upgrade = request.method === "GET" && request.headers.get("upgrade")?.toLowerCase() === "websocket";
  const offered = (request.headers.get("sec-websocket-protocol") ?? "").split(",").map((p) => p.trim()).filter(Boolean);
  if (!upgrade || (offered.length > 0 && !offered.includes(SUBPROTOCOL))) {
    return jsonError(500, "config", "the relay is misconfigured");
  }
  const { server, response } = acceptSocket(offered.length > 0 ? SUBPROTOCOL : null);
  closeQuietly(server, CODES.fallback, "relay configuration error");
  return response;
}

/** The subprotocol the relay speaks (`agentwire_relay::SUBPROTOCOL`). */
const SUBPROTOCOL = "agentwire.v1";

/** The agent a URL's path names (`…/agents/{id}/…`), for a log line the engine did not write. */
function pathAgent(url) {
  return new URL(url).pathname.match(/\/agents\/([A-Za-z0-9._~:-]{1,256})(?:\/|$)/)?.[1];
}

/** Carries out the engine's decision on `request`. `own.cors` is set to the CORS headers the
 * engine gives the request's Origin (an allowed one's, else `Vary: Origin` alone), for the
 * answers this file makes itself: the 413 and the 500s, which a cross-origin page must be able
 * to read as it reads the route's (without them its fetch rejects, "Failed to fetch"). They are
 * taken before the route, so an engine that traps there leaves them to the 500. */
async function handle(request, env, own) {
  let relay;
  try {
    relay = relayFor(env);
  } catch (e) {
    // The engine's message names the setting, never its value.
    logEvent(null, "error", { event: "config", error: String(e?.message ?? e) });
    return misconfigured(request);
  }
  own.cors = JSON.parse(relay.cors(request.headers.get("origin") ?? undefined));
  let body = null;
  if (request.method === "POST") {
    body = await readBody(request, relay.maxBodyBytes);
    if (body === null) {
      const detail = `the body is over ${relay.maxBodyBytes} bytes`;
      logRefusal(relay, { kind: "size", status: 413, agent: pathAgent(request.url), detail });
      return jsonError(413, "size", detail, own.cors);
    }
  }
  const headers = JSON.stringify([...request.headers]);
  let decision;
  try {
    decision = JSON.parse(relay.route(request.method, request.url, headers, body, Date.now()));
  } catch (e) {
    // A bug in the engine (a trap): the next request builds a fresh relay.
    dropRelay();
    logEvent(null, "error", { event: "relay_failure", where: "route", error: String(e?.message ?? e) });
    return jsonError(500, "internal", "the relay failed on this request", own.cors);
  }
  switch (decision.action) {
    case "respond":
      if (decision.log) logRefusal(relay, decision.log);
      return new Response(decision.body === "" ? null : decision.body, {
        status: decision.status,
        headers: decision.headers,
      });
    case "refuse": {
      logRefusal(relay, decision.log);
      const { server, response } = acceptSocket(decision.protocol);
      if (decision.frame) server.send(decision.frame);
      closeQuietly(server, decision.code, decision.reason);
      return response;
    }
    case "proxy":
      return proxy(relay, decision);
    case "connect":
      return connect(relay, decision);
    default:
      return jsonError(500, "internal", "no decision", own.cors);
  }
}
