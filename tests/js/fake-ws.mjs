// A WebSocket the test plays itself, for the tests that drive the clients without a server.
// `last()` is the socket made last; the test opens it (`readyState = 1`, `onopen`) and feeds it.

let made;

export class FakeWebSocket {
  static OPEN = 1;
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.protocol = "agentwire.v1";
    made = this;
  }
  send() {}
  close() {
    this.readyState = 3;
  }
}

/** The socket made last (undefined after `forget()`). */
export const last = () => made;
/** Drops the module's reference to the last socket (tests that watch what is collected). */
export const forget = () => {
  made = undefined;
};

/** A Switch `connection_state` frame: agent `a`, no rooms, cursor 0. */
export const connectionState = JSON.stringify({
  event: "connection_state",
  data: { connection_id: "c", agent_id: "a", generation: 1, scope: "single", filter: "all", rooms: [], cursor: 0, protocol: 1, heartbeat_interval_seconds: 3600 },
});

let rktIds = 0;
/** A header's value in an RKT message's text. */
export const rktHeader = (text, name) => (text.match(new RegExp(`^${name}: (.*)$`, "m")) ?? [])[1]?.trim() ?? "";

/** An RKT server the test plays: it opens at once, answers HELLO with HELLO_ACK, and keeps what
 * the client sends (`sent`); `reply` answers a message by hand. */
export class FakeRkt extends FakeWebSocket {
  constructor(url) {
    super(url);
    this.protocol = "rkt.1.0";
    this.sent = [];
    setTimeout(() => {
      this.readyState = 1;
      this.onopen({});
    });
  }
  send(text) {
    this.sent.push(text);
    if (text.startsWith("RKT/1.0 HELLO\n")) {
      this.session = rktHeader(text, "Session-ID");
      setTimeout(() => this.reply(rktHeader(text, "Message-ID"), "HELLO_ACK", '{"agreed_version":1,"session_timeout":300}'));
    }
  }
  close(code = 1005, reason = "") {
    if (this.readyState === 3) return;
    this.readyState = 3;
    setTimeout(() => this.onclose?.({ code, reason }));
  }
  /** The Message-ID of the last REQUEST sent. */
  lastRequest() {
    return rktHeader(this.sent.findLast((t) => t.startsWith("RKT/1.0 REQUEST\n")), "Message-ID");
  }
  /** A server message of `type` answering `replyTo`, with `body` and `headers`. */
  reply(replyTo, type, body = "", headers = {}) {
    const lines = [
      `RKT/1.0 ${type}`,
      "Version: 1",
      `Message-ID: 01960000-0000-7000-ab12-${String(++rktIds).padStart(12, "0")}`,
      `Reply-To: ${replyTo}`,
      `Session-ID: ${this.session}`,
      `Timestamp: ${new Date().toISOString().replace(/\.\d+Z$/, "Z")}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      "",
      body,
    ];
    this.onmessage({ data: lines.join("\n") });
  }
}

/** A relay the test plays for every socket a Switch client opens (`opened`, in order), with a
 * clock `skewMs` behind this one (the backend's `mint` gives 5-minute tokens by it): it accepts
 * the upgrade and, for a token whose `exp` has passed by its clock, closes with 4401 (the
 * connection then stops with kind `auth`), else attaches. `expire(ws)` is its close at the
 * token's `exp`. */
export function fakeRelay(skewMs = 0) {
  const relayNow = () => Date.now() - skewMs;
  const opened = [];
  class Relay extends FakeWebSocket {
    constructor(url, protocols) {
      super(url);
      this.token = protocols[1].slice("agentwire.token.".length);
      opened.push(this);
      setTimeout(() => {
        if (this.readyState !== 0) return;
        this.readyState = 1;
        this.onopen({});
        const { exp } = JSON.parse(Buffer.from(this.token.split(".")[0], "base64url"));
        if (exp * 1000 > relayNow()) return this.onmessage({ data: connectionState });
        this.readyState = 3;
        this.onclose({ code: 4401, reason: "the relay token expired" });
      });
    }
  }
  const expire = (ws) => {
    ws.readyState = 3;
    ws.onclose({ code: 1008, reason: "the relay token expired" });
  };
  const claims = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const mint = () => `${claims({ sub: "a", agent_id: "a", exp: Math.floor(relayNow() / 1000) + 300 })}.sig`;
  return { Relay, opened, expire, mint };
}
