// An HTTP route the engine allowed: the call goes to the URL and with the headers the engine
// wrote (never the browser's), and the answer comes back with only its status, body and the
// headers the engine passes (`Content-Type`, `Retry-After`), plus the CORS headers it chose. An
// upstream 401 is the relay's own key refused (the browser's token was verified): 502 with the
// relay's reason and code `relay_key_refused`, logged, never the upstream's 401 (which a client
// takes for its token); the engine decides it (`upstreamAnswer`). An error answer's body is read
// (bounded) with every key taken out (`boundedText`: redacted before it is cut), in case the
// upstream quotes the key it was sent; a success streams through.
import { CODES, boundedText, jsonAnswer, jsonError, upstreamAnswer } from "./core.js";
import { logEvent } from "./log.js";

const MAX_ERROR_BODY = 64 * 1024;

export async function proxy(relay, d) {
  let answer;
  try {
    answer = await fetch(d.url, {
      method: d.method,
      headers: d.headers,
      body: d.body ?? undefined,
      redirect: "manual",
      signal: AbortSignal.timeout(d.timeoutMs),
    });
  } catch (e) {
    const timedOut = e?.name === "TimeoutError" || e?.name === "AbortError";
    logEvent(relay, "error", {
      event: timedOut ? "upstream_timeout" : "upstream_unreachable",
      agent: d.agentId,
      method: d.method,
      error: String(e?.message ?? e),
    });
    return timedOut
      ? jsonError(504, "upstream", CODES.upstreamTimeoutReason, d.cors)
      : jsonError(502, "upstream", CODES.upstreamUnreachableReason, d.cors);
  }
  // A 401 (the relay's key refused), a redirect, a status no Response can carry (workerd throws
  // a RangeError for it): the engine's answer instead, whose `code` says whether the upstream did
  // answer (a 502 without one is no answer to the Switch engine: it may have acted).
  const then = JSON.parse(upstreamAnswer(answer.status));
  if (then.then === "replace") {
    await answer.body?.cancel();
    if (then.keyRefused) {
      logEvent(relay, "error", { event: "upstream_key_refused", agent: d.agentId, method: d.method, status: answer.status });
    }
    return jsonAnswer(then.status, then.body, d.cors);
  }
  const headers = [...d.cors, ["Cache-Control", "no-store"]];
  for (const name of d.passHeaders) {
    const v = answer.headers.get(name);
    if (v !== null) headers.push([name, v]);
  }
  if (answer.status < 400) return new Response(answer.body, { status: answer.status, headers });
  const body = await boundedText(relay, answer, { max: MAX_ERROR_BODY });
  return new Response(body, { status: answer.status, headers });
}
