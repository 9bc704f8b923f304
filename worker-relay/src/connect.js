// A WebSocket the engine allowed: accept the browser's socket at once (echoing only
// `agentwire.v1`), then reach the upstream: its WebSocket (frames piped both ways) or, for a
// released server, the SSE bridge. Whatever happens, both sides end within bounded time, and
// at the latest when the relay token expires.
import { CODES, acceptSocket, binaryAsArrayBuffer, closeQuietly, forwardClose, messageBytes, upgradeRefused } from "./core.js";
import { pipe } from "./pipe.js";
import { bridge } from "./bridge.js";
import { logEvent, shortId, socketRecord } from "./log.js";

export function connect(relay, d) {
  const { server, response } = acceptSocket(d.protocol);
  // The socket's one end line (log.js): frames counted each way, the codes, the relay's reason.
  const rec = socketRecord(relay, d);
  const who = { agent: d.agentId, conn: shortId(d.connectionId) };
  const early = [];
  let earlyBytes = 0;
  let ended = false;
  const onEarly = (ev) => {
    const size = messageBytes(ev.data, d.maxMessageBytes);
    if (size > d.maxMessageBytes) return end(CODES.tooBig, "message too big");
    earlyBytes += size;
    if (early.length === d.earlyFrames || earlyBytes > d.maxMessageBytes) {
      return end(CODES.policy, "too many frames before the upstream answered");
    }
    early.push(ev.data);
  };
  const onEarlyClose = (ev) => {
    if (ended) return;
    ended = true;
    upstreamAbort.abort();
    // Completes the browser's closing handshake (an error event has no code: 1011).
    closeQuietly(server, forwardClose(ev?.code), ev?.reason);
    rec.end({ by: "browser", browserCode: ev?.code ?? 1006 });
  };
  const end = (code, reason) => {
    if (ended) return;
    ended = true;
    upstreamAbort.abort();
    closeQuietly(server, code, reason);
    rec.end({ by: "relay", browserCode: code, reason });
  };
  const upstreamAbort = new AbortController();
  // The socket may not outlive its relay token: at `exp` the browser is closed 1008 (it reopens,
  // with a new token if it has one) and the upstream let go, whatever the phase.
  let expire = () => end(CODES.tokenExpired, CODES.tokenExpiredReason);
  const expiry = setTimeout(() => expire(), Math.max(0, d.expiresAtMs - Date.now()));
  const forgetExpiry = () => clearTimeout(expiry);
  server.addEventListener("close", forgetExpiry);
  server.addEventListener("error", forgetExpiry);
  server.addEventListener("message", onEarly);
  server.addEventListener("close", onEarlyClose);
  server.addEventListener("error", onEarlyClose);
  const handOver = () => {
    server.removeEventListener("message", onEarly);
    server.removeEventListener("close", onEarlyClose);
    server.removeEventListener("error", onEarlyClose);
    return early;
  };
  const start = async () => {
    if (d.transport === "sse") return void (expire = bridge(relay, d, server, handOver(), upstreamAbort, rec));
    let answer;
    // The timeout covers the upgrade only: a signal still armed afterwards would end the socket.
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      upstreamAbort.abort();
    }, d.timeoutMs);
    try {
      answer = await fetch(d.wsUrl, {
        headers: [...d.headers, ["Upgrade", "websocket"]],
        redirect: "manual",
        signal: upstreamAbort.signal,
      });
    } catch (e) {
      // Told apart as proxy.js does: no answer to the upgrade in time (a hung upstream, a slow
      // network), or no connection at all (DNS, refused, reset).
      if (ended) return;
      const event = timedOut ? "upstream_timeout" : "upstream_unreachable";
      logEvent(relay, "error", { event, ...who, error: String(e?.message ?? e) });
      return end(CODES.fallback, timedOut ? CODES.upstreamTimeoutReason : CODES.upstreamUnreachableReason);
    } finally {
      clearTimeout(timer);
    }
    if (ended) {
      if (answer.webSocket) {
        answer.webSocket.accept();
        closeQuietly(answer.webSocket, 1000, "the browser left");
      }
      return;
    }
    if (answer.status === 101 && answer.webSocket) {
      const up = answer.webSocket;
      binaryAsArrayBuffer(up);
      up.accept();
      return void (expire = pipe(relay, d, server, up, handOver(), rec));
    }
    await answer.body?.cancel();
    const then = JSON.parse(upgradeRefused(answer.status));
    if (then.then === "bridge" && d.transport === "auto") {
      // A released upstream (no WebSocket route): learned for a while, so logged once in a while.
      logEvent(relay, "log", { event: "upstream_no_websocket", ...who, status: answer.status, then: "bridge" });
      relay.learnReleased(Date.now());
      return void (expire = bridge(relay, d, server, handOver(), upstreamAbort, rec));
    }
    if (then.keyRefused) {
      // The relay's own key (the token was verified): an operator's fix; the browser retries.
      logEvent(relay, "error", { event: "upstream_key_refused", ...who, transport: "pipe", status: answer.status });
      return end(then.code, CODES.keyRefusedReason);
    }
    logEvent(relay, "warn", { event: "upstream_refused", ...who, transport: "pipe", status: answer.status });
    end(then.code ?? CODES.fallback, `the upstream refused the connection (HTTP ${answer.status})`);
  };
  start().catch((e) => {
    logEvent(relay, "error", { event: "relay_failure", ...who, error: String(e?.stack ?? e) });
    end(CODES.fallback, "relay failure");
  });
  return response;
}
