// The SSE bridge for a released upstream: the engine's `BridgeCore` turns the SSE stream into
// the current generation's frames, pings the browser, turns pongs into beats and decides every
// close; this file reads the stream, sends the beats and runs the timer. Returns the function
// that ends the bridge when the relay token expires.
import { BridgeCore, CODES, REFUSAL_BODY_WAIT_MS, boundedText, closeQuietly, forwardClose, frameLimit, messageBytes } from "./core.js";
import { logEvent, shortId } from "./log.js";

export function bridge(relay, d, client, early, abort, rec) {
  rec.transport = "bridge";
  const who = { agent: d.agentId, conn: shortId(d.connectionId), transport: "bridge" };
  const core = new BridgeCore(
    JSON.stringify({
      agentId: d.agentId,
      connectionId: d.connectionId,
      pingIntervalMs: d.pingIntervalMs,
      maxFrameBytes: d.maxMessageBytes,
      openTimeoutMs: d.timeoutMs,
      // UPSTREAM_TIMEOUT_MS bounds a beat through the core's timer alone (1011 when it fires,
      // which aborts the fetch): the fetch below has no timeout of its own to race it.
      beatTimeoutMs: d.timeoutMs,
      maxUnackedBytes: d.maxUnackedBytes,
    }),
    Date.now(),
  );
  const frames = frameLimit(relay);
  let closed = false;
  let timer = null;
  // The stream is read only while the core wants more (`wantsSse`): a browser that is behind
  // holds back the upstream, over TCP, instead of frames queued in the Worker without limit.
  let readOn = null;
  const wake = () => {
    if (readOn !== null && (closed || core.wantsSse)) {
      const go = readOn;
      readOn = null;
      go();
    }
  };
  /** Ends the bridge: the upstream aborted, the browser closed with `code`; `by` and the code
   * the browser sent (`browserCode`) are for the end line. */
  const closeWith = (code, reason, by = "relay", browserCode = code) => {
    if (closed) return;
    closed = true;
    clearTimeout(timer);
    abort.abort();
    frames.forget();
    wake();
    closeQuietly(client, code, reason);
    rec.end({ by, browserCode, reason });
    try {
      core.free();
    } catch {
      /* after a trap the core may be unusable: nothing more to free */
    }
  };
  const fail = (e) => {
    logEvent(relay, "error", { event: "relay_failure", ...who, error: String(e?.stack ?? e) });
    closeWith(CODES.fallback, "relay failure");
  };
  const pump = () => {
    for (let out = core.pollOutput(); out !== undefined && !closed; out = core.pollOutput()) {
      const o = JSON.parse(out);
      if (o.toClient !== undefined) {
        rec.toBrowser += 1;
        try {
          client.send(o.toClient);
        } catch {
          /* the browser is gone: its close event ends the bridge */
        }
      } else if (o.beat !== undefined) {
        beat(o.beat);
      } else if (o.close !== undefined) {
        // The open's timeout, logged as connect.js logs an upgrade unanswered in time.
        if (o.close.timedOut) logEvent(relay, "error", { event: "upstream_timeout", ...who, error: o.close.reason });
        return closeWith(o.close.code, o.close.reason, "bridge");
      }
    }
    if (closed) return;
    wake();
    clearTimeout(timer);
    const at = core.pollTimeout();
    if (at !== undefined) {
      timer = setTimeout(() => step(() => core.handleTimeout(Date.now())), Math.max(0, at - Date.now()));
    }
  };
  const step = (f) => {
    if (closed) return;
    try {
      f();
      pump();
    } catch (e) {
      fail(e);
    }
  };
  const beat = (req) => {
    fetch(`${d.upstreamBase}${req.path}`, {
      method: req.method,
      headers: [...d.headers, ...req.headers],
      body: req.body ?? undefined,
      redirect: "manual",
      signal: abort.signal,
    }).then(
      async (answer) => {
        if (answer.status === 401) logEvent(relay, "error", { event: "upstream_key_refused", ...who, beat: true, status: 401 });
        const body = await boundedText(relay, answer, { whole: true });
        step(() => core.handleBeatResponse(Date.now(), body === null ? 0 : answer.status, body ?? ""));
      },
      () => step(() => core.handleBeatResponse(Date.now(), 0, "")),
    );
  };
  const fromClient = (data) => {
    if (closed) return;
    if (messageBytes(data, d.maxMessageBytes) > d.maxMessageBytes) return closeWith(CODES.tooBig, "message too big");
    if (frames.over()) return closeWith(CODES.policy, "too many frames");
    rec.fromBrowser += 1;
    step(() => core.handleClientText(Date.now(), typeof data === "string" ? data : ""));
  };
  client.addEventListener("message", (ev) => fromClient(ev.data));
  const gone = (ev) => {
    if (closed) return;
    try {
      core.handleClientClose(Date.now());
    } catch {
      /* ending anyway */
    }
    // Completes the browser's closing handshake (an error event has no code: 1011).
    closeWith(forwardClose(ev?.code), ev?.reason, "browser", ev?.code ?? 1006);
  };
  client.addEventListener("close", gone);
  client.addEventListener("error", gone);
  for (const data of early) fromClient(data);
  pump();

  (async () => {
    let answer;
    try {
      answer = await fetch(d.sseUrl, {
        headers: [...d.headers, ["Accept", "text/event-stream"]],
        redirect: "manual",
        signal: abort.signal,
      });
    } catch {
      return step(() => core.handleOpenResponse(Date.now(), 0, undefined, ""));
    }
    const type = answer.headers.get("content-type") ?? undefined;
    if (answer.status !== 200) {
      // 401: the relay's own key (the core closes 1011 with the relay's reason).
      const event = answer.status === 401 ? "upstream_key_refused" : "upstream_refused";
      logEvent(relay, answer.status === 401 ? "error" : "warn", { event, ...who, status: answer.status });
      // Read for REFUSAL_BODY_WAIT_MS at most: a refusal whose body never ends is still its
      // status (a 409 taken_over final for the browser), not the open's timeout (a 1011 it
      // retries). One that breaks off is no answer, as the engines' drivers take it.
      const body = await boundedText(relay, answer, { waitMs: REFUSAL_BODY_WAIT_MS, whole: true });
      if (body === null) return step(() => core.handleSseEnd(Date.now(), `the HTTP ${answer.status} answer broke off`));
      return step(() => core.handleOpenResponse(Date.now(), answer.status, type, body));
    }
    step(() => core.handleOpenResponse(Date.now(), 200, type, ""));
    if (closed) return answer.body?.cancel();
    const reader = answer.body.getReader();
    try {
      for (;;) {
        if (!core.wantsSse) await new Promise((go) => (readOn = go));
        if (closed) return reader.cancel();
        const { done, value } = await reader.read();
        if (done) break;
        step(() => core.handleSse(Date.now(), value));
        if (closed) return reader.cancel();
      }
      step(() => core.handleSseEnd(Date.now(), undefined));
    } catch (e) {
      step(() => core.handleSseEnd(Date.now(), String(e?.message ?? e)));
    }
  })().catch(fail);
  // The token expired: 1008 to the browser (it reopens with a new token); the stream and any beat are aborted.
  return () => closeWith(CODES.tokenExpired, CODES.tokenExpiredReason);
}
