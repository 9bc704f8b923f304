// The agentwire relay: a module Worker that lets a browser use Switch without the agent key.
// Every decision (route, origin, token, agent, rooms, rate limit, upstream URL and headers,
// close codes, the SSE bridge) is the engine's (`agentwire-relay`, compiled to wasm); this file
// only carries them out.
import { relayFor, dropRelay, jsonError, acceptSocket, closeQuietly } from "./core.js";
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
   * 500 with a JSON body, never an exception that reaches the runtime. */
  async fetch(request, env) {
    try {
      return await handle(request, env);
    } catch (e) {
      console.error(`agentwire relay: ${request.method} failed: ${e?.name ?? "Error"}`);
      return jsonError(500, "internal", "the relay failed on this request");
    }
  },
};

async function handle(request, env) {
  let relay;
  try {
    relay = relayFor(env);
  } catch (e) {
    console.error(`agentwire relay: ${e.message}`);
    return jsonError(500, "config", "the relay is misconfigured");
  }
  let body = null;
  if (request.method === "POST") {
    body = await readBody(request, relay.maxBodyBytes);
    if (body === null) return jsonError(413, "size", `the body is over ${relay.maxBodyBytes} bytes`);
  }
  const headers = JSON.stringify([...request.headers]);
  let decision;
  try {
    decision = JSON.parse(relay.route(request.method, request.url, headers, body, Date.now()));
  } catch (e) {
    // A bug in the engine (a trap): the next request builds a fresh relay.
    dropRelay();
    console.error(`agentwire relay: route failed: ${String(e?.message ?? e)}`);
    return jsonError(500, "internal", "the relay failed on this request");
  }
  switch (decision.action) {
    case "respond":
      return new Response(decision.body === "" ? null : decision.body, {
        status: decision.status,
        headers: decision.headers,
      });
    case "refuse": {
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
      return jsonError(500, "internal", "no decision");
  }
}
