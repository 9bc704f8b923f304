// Re-entrancy: the app (or its test harness) calling back into a client's socket or timer from
// inside a callback the client made (onEvent), as a test double or a fake clock does.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SwitchClient } from "agentwire/switch";
import { MoltZapClient } from "agentwire/moltzap";
import { RktClient } from "agentwire/rkt";
import { FakeRkt, FakeWebSocket, connectionState, last, rktHeader } from "./fake-ws.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const outcome = (p) => p.then((v) => v, (e) => `${e.kind}: ${e.message}`);

// A frame a test harness feeds from inside onEvent (the socket's onmessage, whose handler had
// delivered that event, called again) threw "closure invoked recursively or after being dropped"
// into the harness and was lost: the request it answered timed out.
test("a frame fed from inside onEvent is taken", async () => {
  let ws;
  const events = [];
  const client = await RktClient.connect("ws://fake/rkt", {
    webSocket: FakeRkt,
    keepalive: false,
    onEvent: (e) => {
      events.push(e.type);
      if (e.type === "error") ws.reply(ws.lastRequest(), "RESPONSE", '{"fed":"from onEvent"}');
    },
  });
  ws = last();
  try {
    const reply = outcome(client.request("x", {}, { timeoutMs: 1_000 }));
    await sleep(5);
    ws.reply("", "ERROR", '{"code":503,"message":"busy"}');
    assert.deepEqual(await reply, { fed: "from onEvent" });
    assert.deepEqual(events, ["error"]);
  } finally {
    await client.close();
  }
});

// The same through a socket that answers from inside send(): a call made in onEvent sent its
// frame while the message handler that delivered the event was still running.
test("a call made in onEvent, answered from inside the socket's send(), is answered", async () => {
  class Answering extends FakeWebSocket {
    send(t) {
      const m = JSON.parse(t);
      const result = m.method === "agent/network/connect" ? {} : { echoed: m.method };
      this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id: m.id, result }) });
    }
  }
  let client;
  const inner = [];
  const connecting = MoltZapClient.connect("ws://fake/ws", {
    agentKey: "moltzap_agent_x",
    webSocket: Answering,
    timeoutMs: 2_000,
    onEvent: (e) => e.type === "other" && inner.push(outcome(client.call("x/inner", {}, { timeoutMs: 1_000 }))),
  });
  const ws = last();
  ws.readyState = 1;
  ws.onopen({});
  client = await connecting;
  try {
    ws.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", method: "test/pushed", params: {} }) });
    assert.deepEqual(await Promise.all(inner), [{ echoed: "x/inner" }]);
  } finally {
    await client.close();
  }
});

// A fake clock's tick from inside onEvent, for an event the driver's own timer brought (the open
// timeout's `disconnected`), ran that timer's callback again (here the backoff's): it threw
// "closure invoked recursively or after being dropped" into the tick, the host's timer was spent
// while the driver's still looked armed, and the connection stayed in its backoff for good.
test("a timer run from inside onEvent brought by that timer: the driver's timers go on", { timeout: 10_000 }, async () => {
  const [realSet, realClear] = [globalThis.setTimeout, globalThis.clearTimeout];
  const timers = new Map();
  globalThis.setTimeout = (f, ms) => {
    const id = realSet(() => (timers.delete(id), f()), ms);
    timers.set(id, f);
    return id;
  };
  globalThis.clearTimeout = (id) => (timers.delete(id), realClear(id));
  /** Runs the timer set last now, as a fake clock's tick would. */
  const tick = () => {
    const [id, f] = [...timers].at(-1);
    globalThis.clearTimeout(id);
    f();
  };
  const opened = [];
  class Socket extends FakeWebSocket {
    constructor(url) {
      super(url);
      opened.push(this);
    }
  }
  let ticked;
  try {
    const connecting = SwitchClient.connect("http://fake", {
      token: "t",
      agentId: "a",
      webSocket: Socket,
      openTimeoutMs: 100,
      backoff: { baseMs: 200, minMs: 200, maxMs: 200 },
      onEvent: (e) => {
        if (e.type !== "disconnected" || e.attempt < 2 || ticked) return;
        try {
          tick();
          ticked = "ticked";
        } catch (err) {
          ticked = `the tick threw: ${err.message}`;
        }
      },
    });
    const ws = last();
    ws.readyState = 1;
    ws.onopen({});
    ws.onmessage({ data: connectionState });
    const client = await connecting;
    try {
      ws.readyState = 3;
      ws.onclose({ code: 1006, reason: "gone" });
      // The reopen after the backoff never opens; its timeout's event ticks (early: the backoff's
      // timer finds nothing due, and is armed again). The next reopen follows the backoff.
      for (let i = 0; i < 300 && opened.length < 3; i++) await sleep(10);
      assert.deepEqual([ticked, opened.length], ["ticked", 3], "the tick, then the reopen after it");
    } finally {
      await client.close();
    }
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
  }
});

// A call aborted from inside the socket's send() (the driver is busy then): its cancel was
// dropped, and the engine kept the call in flight until its TTL (30 s), its slot taken: with
// `maxInFlight` 2 the next call was refused with kind `limit`. The cancel now waits for the
// driver, in a microtask.
test("an RKT call aborted from inside the socket's send() frees its slot", async () => {
  const abort = new AbortController();
  class Aborting extends FakeRkt {
    send(text) {
      super.send(text);
      if (text.startsWith("RKT/1.0 REQUEST\n") && text.includes('"b"')) abort.abort();
    }
  }
  const client = await RktClient.connect("ws://fake/rkt", { webSocket: Aborting, keepalive: false, maxInFlight: 2 });
  const ws = last();
  try {
    const a = outcome(client.request("x", { n: "a" }, { signal: abort.signal }));
    const b = outcome(client.request("x", { n: "b" }, { timeoutMs: 1_000 }));
    assert.match(await a, /^cancelled: /);
    const c = outcome(client.request("x", { n: "c" }, { timeoutMs: 1_000 }));
    await sleep(5);
    ws.reply(ws.lastRequest(), "RESPONSE", '{"n":"c"}');
    assert.deepEqual(await c, { n: "c" });
    ws.reply(rktHeader(ws.sent.find((t) => t.includes('"b"')), "Message-ID"), "RESPONSE", '{"n":"b"}');
    assert.deepEqual(await b, { n: "b" });
  } finally {
    await client.close();
  }
});

test("a MoltZap call aborted from inside the socket's send() frees its slot", async () => {
  const abort = new AbortController();
  const sent = [];
  class Aborting extends FakeWebSocket {
    send(t) {
      const m = JSON.parse(t);
      sent.push(m);
      if (m.method === "agent/network/connect") this.onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id: m.id, result: {} }) });
      if (m.method === "x/b") abort.abort();
    }
  }
  const answer = (method) => {
    const { id } = sent.find((m) => m.method === method);
    last().onmessage({ data: JSON.stringify({ jsonrpc: "2.0", id, result: { method } }) });
  };
  const connecting = MoltZapClient.connect("ws://fake/ws", { agentKey: "moltzap_agent_x", webSocket: Aborting, maxInFlight: 2 });
  last().readyState = 1;
  last().onopen({});
  const client = await connecting;
  try {
    const a = outcome(client.call("x/a", {}, { signal: abort.signal }));
    const b = outcome(client.call("x/b", {}));
    assert.match(await a, /^cancelled: /);
    const c = outcome(client.call("x/c", {}));
    await sleep(5);
    answer("x/c");
    answer("x/b");
    assert.deepEqual([await b, await c], [{ method: "x/b" }, { method: "x/c" }]);
  } finally {
    await client.close();
  }
});
