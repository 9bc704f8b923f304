// The relay's log lines: one JSON object a line, for `wrangler tail` and Workers Logs (with
// `[observability]` in wrangler.toml). One line per refusal, per upstream failure and per socket
// end; none per frame. Never a token, a key or a secret: the fields are the relay's own words,
// ids and numbers, and every string goes through `relay.redact` (every agent key out) on its way.
import { CODES } from "./core.js";

/** The line for `fields` (`event` first): JSON, every string value redacted. */
export function logLine(relay, fields) {
  const out = { relay: "agentwire" };
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined || value === null) continue;
    out[name] = typeof value === "string" && relay ? relay.redact(value) : value;
  }
  return JSON.stringify(out);
}

/** Logs `fields` at `level` (`log`, `warn`, `error`). */
export function logEvent(relay, level, fields) {
  console[level](logLine(relay, fields));
}

/** A refusal the engine decided (`decision.log`: `{kind, status, code?, agent?, detail}`). */
export function logRefusal(relay, refusal) {
  logEvent(relay, "warn", { event: "refused", ...refusal });
}

/** The first 8 characters of a connection id: enough to follow one connection in the log. */
export const shortId = (id) => String(id ?? "").slice(0, 8);

/**
 * The record of one browser socket the relay accepted, for its end line: `transport` (`opening`
 * until the upstream answers, then `pipe` or `bridge`), frames each way (counted, not logged),
 * and `end(...)`, which logs the one line when the socket ends (later calls do nothing).
 */
export function socketRecord(relay, d) {
  const start = Date.now();
  const rec = {
    transport: "opening",
    fromBrowser: 0,
    toBrowser: 0,
    ended: false,
    /** Logs the socket's end: `by` (`browser`, `upstream`, `relay` or `bridge`), the code the
     * browser's side closed with, the upstream's (none for a bridge), and the relay's own
     * reason (or the upstream's, redacted; never the browser's). */
    end({ by, browserCode, upstreamCode, reason }) {
      if (rec.ended) return;
      rec.ended = true;
      // A normal close, or the relay's own at token expiry (every socket's routine end: the
      // browser reopens with a new token); any other 1008 is worth a look.
      const expired = by === "relay" && browserCode === CODES.tokenExpired && reason === CODES.tokenExpiredReason;
      const normal = browserCode === 1000 || browserCode === 1001 || expired;
      logEvent(relay, normal ? "log" : "warn", {
        event: "socket_end",
        agent: d.agentId,
        conn: shortId(d.connectionId),
        transport: rec.transport,
        by,
        browserCode,
        upstreamCode,
        reason: by === "browser" ? undefined : reason || undefined,
        durationMs: Date.now() - start,
        framesFromBrowser: rec.fromBrowser,
        framesToBrowser: rec.toBrowser,
      });
    },
  };
  return rec;
}
