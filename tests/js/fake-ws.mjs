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
