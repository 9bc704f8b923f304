// Frames piped between the browser's socket and the upstream's, unchanged: the browser's frames
// capped in size (1009) and in rate per socket (1008), close codes forwarded through the
// engine's table (1005, 1006, 1015 → 1011; the upstream's 4401, the relay's own key refused,
// → 1011 with the relay's reason, logged), and a silent upstream closed (1011). The upstream's
// frames are not capped here: closing on one would make the browser reconnect and the server
// replay the same event forever (the platform's own message limit still applies). Returns the
// function that ends both sides when the relay token expires.
import { CODES, closeQuietly, forwardClose, frameLimit, messageBytes } from "./core.js";
import { logEvent, shortId } from "./log.js";

export function pipe(relay, d, client, up, early, rec) {
  const max = d.maxMessageBytes;
  const frames = frameLimit(relay);
  rec.transport = "pipe";
  let done = false;
  let idle = null;
  /** Closes both sides; `end` is the socket's end line (`by`, the codes each side got or sent). */
  const finish = (toClient, toUp, end) => {
    if (done) return;
    done = true;
    clearTimeout(idle);
    frames.forget();
    closeQuietly(client, toClient.code, toClient.reason);
    closeQuietly(up, toUp.code, toUp.reason);
    rec.end(end);
  };
  const both = (code, reason) =>
    finish({ code, reason }, { code, reason }, { by: "relay", browserCode: code, upstreamCode: code, reason });
  // The idle watchdog re-arms from the last upstream frame's time: no timer churn per frame.
  let lastUp = Date.now();
  const check = () => {
    const quiet = Date.now() - lastUp;
    if (quiet >= d.idleTimeoutMs) return both(CODES.fallback, "the upstream went silent");
    idle = setTimeout(check, d.idleTimeoutMs - quiet);
  };
  const fromClient = (data) => {
    if (done) return;
    if (messageBytes(data, max) > max) return both(CODES.tooBig, "message too big");
    if (frames.over()) return both(CODES.policy, "too many frames");
    rec.fromBrowser += 1;
    send(up, data);
  };
  const send = (ws, data) => {
    try {
      ws.send(data);
    } catch {
      both(CODES.fallback, "a socket failed");
    }
  };
  client.addEventListener("message", (ev) => fromClient(ev.data));
  up.addEventListener("message", (ev) => {
    if (done) return;
    lastUp = Date.now();
    rec.toBrowser += 1;
    send(client, ev.data);
  });
  client.addEventListener("close", (ev) => {
    const code = forwardClose(ev.code);
    finish({ code, reason: ev.reason }, { code, reason: ev.reason }, { by: "browser", browserCode: ev.code, upstreamCode: code });
  });
  up.addEventListener("close", (ev) => {
    // The engine's table, the upstream's reason without any key (`RelayCore.upstreamClose`).
    const { code, reason, keyRefused } = JSON.parse(relay.upstreamClose(ev.code, ev.reason ?? ""));
    if (keyRefused && !done) {
      logEvent(relay, "error", { event: "upstream_key_refused", agent: d.agentId, conn: shortId(d.connectionId), transport: "pipe", code: ev.code });
    }
    finish({ code, reason }, { code, reason }, { by: "upstream", browserCode: code, upstreamCode: ev.code, reason });
  });
  client.addEventListener("error", () => both(CODES.fallback, "the browser's socket failed"));
  up.addEventListener("error", () => both(CODES.fallback, "the upstream's socket failed"));
  idle = setTimeout(check, d.idleTimeoutMs);
  for (const data of early) fromClient(data);
  // The token expired: 1008 to the browser (it reopens with a new token), a normal close to the upstream.
  return () =>
    finish(
      { code: CODES.tokenExpired, reason: CODES.tokenExpiredReason },
      { code: 1000, reason: CODES.tokenExpiredReason },
      { by: "relay", browserCode: CODES.tokenExpired, upstreamCode: 1000, reason: CODES.tokenExpiredReason },
    );
}
