// Frames piped between the browser's socket and the upstream's, unchanged: sizes capped (1009),
// the browser's frames counted against its agent's rate limit (1008), close codes forwarded
// through the engine's table (1005, 1006, 1015 → 1011), and a silent upstream closed (1011).
import { CODES, closeQuietly, forwardClose, messageBytes } from "./core.js";

export function pipe(relay, d, client, up, early) {
  const max = d.maxMessageBytes;
  let done = false;
  let idle = null;
  const finish = (toClient, toUp) => {
    if (done) return;
    done = true;
    clearTimeout(idle);
    closeQuietly(client, toClient.code, toClient.reason);
    closeQuietly(up, toUp.code, toUp.reason);
  };
  const both = (code, reason) => finish({ code, reason }, { code, reason });
  const watch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => both(CODES.fallback, "the upstream went silent"), d.idleTimeoutMs);
  };
  const fromClient = (data) => {
    if (done) return;
    if (messageBytes(data, max) > max) return both(CODES.tooBig, "message too big");
    if (!relay.take(d.agentId, Date.now())) return both(CODES.policy, "rate limit");
    up.send(data);
  };
  client.addEventListener("message", (ev) => fromClient(ev.data));
  up.addEventListener("message", (ev) => {
    if (done) return;
    watch();
    if (messageBytes(ev.data, max) > max) return both(CODES.tooBig, "message too big");
    client.send(ev.data);
  });
  client.addEventListener("close", (ev) => {
    const code = forwardClose(ev.code);
    finish({ code, reason: ev.reason }, { code, reason: ev.reason });
  });
  up.addEventListener("close", (ev) => {
    const code = forwardClose(ev.code);
    finish({ code, reason: ev.reason }, { code, reason: ev.reason });
  });
  client.addEventListener("error", () => both(CODES.fallback, "the browser's socket failed"));
  up.addEventListener("error", () => both(CODES.fallback, "the upstream's socket failed"));
  watch();
  for (const data of early) fromClient(data);
}
