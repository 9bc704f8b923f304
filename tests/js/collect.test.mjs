// Closed clients are garbage: their wasm driver must not keep the facade's event callback, which
// may reach the driver's own JS wrapper (a Switch client's buffer does, through its hold; any
// client's onEvent that names the client does). Such a cycle runs through wasm memory, where no
// garbage collector sees it: the wrapper, the engine's state and every unread event stayed for
// good. The drivers' wrappers are watched through the package's internal module (the same module
// instance: `agentwire` is a symlink to npm/).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as v8 from "node:v8";
import * as vm from "node:vm";
import { MoltZapClient, RktClient, SwitchClient } from "agentwire";
import { MoltZapDriver, RktDriver, SwitchDriver } from "../../npm/dist/wasm/agentwire_wasm.js";
import { FakeWebSocket as Fake, connectionState, forget, last } from "./fake-ws.mjs";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc");
const CYCLES = 30;

/** Counts the drivers of `Class` used while `body` runs that are still reachable after it: each
 * is seen the first time the facade calls one of its methods or getters. */
async function survivors(Class, body) {
  const seen = new WeakSet();
  const refs = [];
  const saved = Object.getOwnPropertyDescriptors(Class.prototype);
  for (const [name, d] of Object.entries(saved)) {
    if (name === "constructor") continue;
    const wrap = (f) =>
      function (...args) {
        if (!seen.has(this)) {
          seen.add(this);
          refs.push(new WeakRef(this));
        }
        return f.apply(this, args);
      };
    if (typeof d.value === "function") Object.defineProperty(Class.prototype, name, { ...d, value: wrap(d.value) });
    else if (d.get) Object.defineProperty(Class.prototype, name, { ...d, get: wrap(d.get) });
  }
  try {
    await body();
  } finally {
    Object.defineProperties(Class.prototype, saved);
  }
  for (let i = 0; i < 10; i++) {
    await new Promise((r) => setTimeout(r, 10));
    gc();
  }
  assert.equal(refs.length, CYCLES, "every driver was seen");
  return refs.filter((r) => r.deref() !== undefined).length;
}

/** The shared fake, answering with `answer(text)` when set, and closing as a socket does: its
 * `onclose` follows in a microtask. */
class FakeWebSocket extends Fake {
  constructor(url) {
    super(url);
    if (url.startsWith("ws://fake/rkt")) this.protocol = "rkt.1.0";
  }
  send(text) {
    this.answer?.(text);
  }
  close() {
    if (this.readyState === 3) return;
    this.readyState = 3;
    queueMicrotask(() => this.onclose?.({ code: 1000, reason: "" }));
  }
}
const message = (i) =>
  JSON.stringify({ event: "event", data: { kind: "message", room_id: "r", sequence: i + 1, payload: { text: "x".repeat(1000) } } });

test("closed Switch clients with unread events are collected", async () => {
  const alive = await survivors(SwitchDriver, async () => {
    for (let i = 0; i < CYCLES; i++) {
      const connecting = SwitchClient.connect("http://fake", { token: "t", agentId: "a", reconnect: false, webSocket: FakeWebSocket });
      last().readyState = 1;
      last().onopen({});
      last().onmessage({ data: connectionState });
      const client = await connecting;
      for (let k = 0; k < 5; k++) last().onmessage({ data: message(k) });
      await client.close();
    }
    forget();
  });
  assert.ok(alive <= 1, `${alive} of ${CYCLES} closed Switch drivers still reachable`);
});

test("Switch clients whose connect failed are collected", async () => {
  const alive = await survivors(SwitchDriver, async () => {
    for (let i = 0; i < CYCLES; i++) {
      const connecting = SwitchClient.connect("http://fake", { token: "t", agentId: "a", webSocket: FakeWebSocket });
      last().onclose({ code: 1006, reason: "refused" });
      const error = await connecting.then(
        () => assert.fail("connected"),
        (e) => e,
      );
      assert.equal(error.kind, "closed");
    }
    forget();
  });
  // No client to close: every driver must be gone all the same.
  assert.ok(alive <= 1, `${alive} of ${CYCLES} failed Switch drivers still reachable`);
});

/** Connects and closes CYCLES clients of `Driver`'s kind whose onEvent names the client; the
 * socket answers each text with `answer(text)` (a frame, or nothing). Returns the survivors. */
function selfNaming(Driver, connect, answer) {
  return survivors(Driver, async () => {
    for (let i = 0; i < CYCLES; i++) {
      let client;
      const connecting = connect((e) => e.type === "never" && client.close());
      const ws = last();
      ws.answer = (text) => {
        const reply = answer(text);
        if (reply) queueMicrotask(() => ws.onmessage({ data: reply }));
      };
      ws.readyState = 1;
      ws.onopen({});
      client = await connecting;
      await client.close();
    }
    forget();
  });
}

test("closed MoltZap clients whose onEvent names the client are collected", async () => {
  const alive = await selfNaming(
    MoltZapDriver,
    (onEvent) => MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: FakeWebSocket, onEvent }),
    (text) => JSON.stringify({ jsonrpc: "2.0", id: JSON.parse(text).id, result: {} }),
  );
  assert.ok(alive <= 1, `${alive} of ${CYCLES} closed MoltZap drivers still reachable`);
});

test("closed RKT clients whose onEvent names the client are collected", async () => {
  const alive = await selfNaming(
    RktDriver,
    (onEvent) => RktClient.connect("ws://fake/rkt", { webSocket: FakeWebSocket, onEvent }),
    (text) => {
      const hello = /^RKT\/1\.0 HELLO\n(?:.*\n)*?Message-ID: (\S+)/.exec(text);
      if (!hello) return undefined;
      const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      return (
        `RKT/1.0 HELLO_ACK\nVersion: 1\nMessage-ID: 01960000-0000-7000-ab12-000000000002\nReply-To: ${hello[1]}\n` +
        `Session-ID: e3ad1f12-4e3a-4b1e-9c2d-000000000042\nTimestamp: ${now}\nFrom: rkt://fake\n\n{"agreed_version":1,"session_timeout":300}`
      );
    },
  );
  assert.ok(alive <= 1, `${alive} of ${CYCLES} closed RKT drivers still reachable`);
});
