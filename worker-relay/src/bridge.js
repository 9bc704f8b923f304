// The SSE bridge for a released upstream: the engine's `BridgeCore` turns the SSE stream into
// the current generation's frames, pings the browser, turns pongs into beats and decides every
// close; this file reads the stream, sends the beats and runs the timer.
import { BridgeCore, closeQuietly, forwardClose } from "./core.js";

const MAX_ERROR_BODY = 16 * 1024;

async function boundedText(answer) {
  const text = await answer.text().catch(() => "");
  return text.length > MAX_ERROR_BODY ? text.slice(0, MAX_ERROR_BODY) : text;
}

export function bridge(relay, d, client, early, abort) {
  const core = new BridgeCore(
    JSON.stringify({
      agentId: d.agentId,
      connectionId: d.connectionId,
      pingIntervalMs: d.pingIntervalMs,
      maxFrameBytes: d.maxMessageBytes,
      openTimeoutMs: d.timeoutMs,
    }),
    Date.now(),
  );
  let closed = false;
  let timer = null;
  const pump = () => {
    for (let out = core.pollOutput(); out !== undefined && !closed; out = core.pollOutput()) {
      const o = JSON.parse(out);
      if (o.toClient !== undefined) {
        client.send(o.toClient);
      } else if (o.beat !== undefined) {
        beat(o.beat);
      } else if (o.close !== undefined) {
        closed = true;
        clearTimeout(timer);
        abort.abort();
        closeQuietly(client, o.close.code, o.close.reason);
        core.free();
        return;
      }
    }
    if (closed) return;
    clearTimeout(timer);
    const at = core.pollTimeout();
    if (at !== undefined) {
      timer = setTimeout(() => step(() => core.handleTimeout(Date.now())), Math.max(0, at - Date.now()));
    }
  };
  const step = (f) => {
    if (closed) return;
    f();
    pump();
  };
  const beat = (req) => {
    fetch(`${d.upstreamBase}${req.path}`, {
      method: req.method,
      headers: [...d.headers, ...req.headers],
      body: req.body ?? undefined,
      redirect: "manual",
      signal: AbortSignal.any([abort.signal, AbortSignal.timeout(d.timeoutMs)]),
    }).then(
      async (answer) => {
        const body = await boundedText(answer);
        step(() => core.handleBeatResponse(Date.now(), answer.status, body));
      },
      () => step(() => core.handleBeatResponse(Date.now(), 0, "")),
    );
  };
  client.addEventListener("message", (ev) => {
    const text = typeof ev.data === "string" ? ev.data : "";
    step(() => core.handleClientText(Date.now(), text));
  });
  const gone = (ev) => {
    if (closed) return;
    core.handleClientClose(Date.now());
    closed = true;
    clearTimeout(timer);
    abort.abort();
    core.free();
    // Completes the browser's closing handshake (an error event has no code: 1011).
    closeQuietly(client, forwardClose(ev?.code), ev?.reason);
  };
  client.addEventListener("close", gone);
  client.addEventListener("error", gone);
  for (const data of early) step(() => core.handleClientText(Date.now(), typeof data === "string" ? data : ""));
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
      const body = await boundedText(answer);
      return step(() => core.handleOpenResponse(Date.now(), answer.status, type, body));
    }
    step(() => core.handleOpenResponse(Date.now(), 200, type, ""));
    if (closed) return answer.body?.cancel();
    const reader = answer.body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        step(() => core.handleSse(Date.now(), value));
        if (closed) return reader.cancel();
      }
      step(() => core.handleSseEnd(Date.now(), undefined));
    } catch (e) {
      step(() => core.handleSseEnd(Date.now(), String(e?.message ?? e)));
    }
  })().catch((e) => {
    console.error(`agentwire relay: bridge: ${relay.redact(String(e?.stack ?? e))}`);
    step(() => core.handleSseEnd(Date.now(), "relay failure"));
  });
}
