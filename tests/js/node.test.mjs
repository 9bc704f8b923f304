// The scenarios in Node: undici's WebSocket is injected when the host has no global one (Node 20);
// with AGENTWIRE_NODE_WEBSOCKET=ws, the `ws` package's (which the README names as a `webSocket` to
// pass), whose socket ends the process when it emits `error` with no listener.
import { test } from "node:test";
import { runs, scenarios } from "./scenarios.mjs";
import { testEnv } from "./env.mjs";

// Each protocol's own entry loads its own smaller module, in the same process as the whole one.
const modules = {
  agentwire: await import("agentwire"),
  "agentwire/rkt": await import("agentwire/rkt"),
  "agentwire/moltzap": await import("agentwire/moltzap"),
  "agentwire/switch": await import("agentwire/switch"),
};
const env = testEnv();
const undici = await import("undici");
const ws = process.env.AGENTWIRE_NODE_WEBSOCKET === "ws" ? (await import("ws")).WebSocket : undefined;
if (ws) env.webSocket = ws;
else if (typeof globalThis.WebSocket !== "function") env.webSocket = undici.WebSocket;
// ws's error event says a refused upgrade's status ("Unexpected server response: 401").
env.hostErrorSaysStatus = Boolean(ws);
// The Switch peer takes the agent key only in an Authorization header, and echoes no
// subprotocol: a socket that sends the header and offers none.
env.switchSocket = (key) =>
  ws
    ? class extends ws {
        constructor(url) {
          super(url, [], { headers: { authorization: `Bearer ${key}` } });
        }
      }
    : class extends undici.WebSocket {
        constructor(url) {
          super(url, { headers: { authorization: `Bearer ${key}` } });
        }
      };

for (const [entry, name, title] of runs(ws ? "node (ws)" : "node")) {
  test(title, { timeout: 20_000 }, async (t) => {
    const outcome = await scenarios[name](modules[entry], env);
    if (typeof outcome === "string") t.skip(outcome);
  });
}

// A client the app keeps no reference to (used through onEvent only) stays connected: its
// sockets and timers reach the driver only weakly, so the package keeps it until its last event.
test("node: a client used through onEvent only is not collected while connected", { timeout: 20_000 }, async () => {
  const v8 = await import("node:v8");
  const vm = await import("node:vm");
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc");
  const aw = modules.agentwire;
  const ws = env.webSocket ? { webSocket: env.webSocket } : {};
  const seen = [];
  const bob = await (async () =>
    new WeakRef(await aw.MoltZapClient.connect(env.moltzap, { ...ws, agentKey: env.moltzapKeys.bob, onEvent: (e) => seen.push(e) })))();
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 20));
    gc();
  }
  const alice = await aw.MoltZapClient.connect(env.moltzap, { ...ws, agentKey: env.moltzapKeys.alice });
  try {
    const text = `after a collection ${Math.random().toString(36).slice(2)}`;
    await alice.send({ agent: "bob" }, text);
    const until = Date.now() + 5000;
    const got = () => seen.some((e) => e.type === "messageReceived" && JSON.stringify(e.data).includes(text));
    while (!got() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    if (!got()) throw new Error(`bob got no message after a collection: ${JSON.stringify(seen.map((e) => e.type))}`);
  } finally {
    await alice.close();
    await bob.deref()?.close();
  }
});

// The relay closes a socket at its token's `exp` (1008). With `refreshToken` the connection gets
// a new token before then, reopens with it and resumes; with one that gives no newer token, each
// reopen fails without opening (the relay would refuse the expired token, 4401, and the
// connection would stop) and is retried with the backoff, calling it again.
test("node: switch through the relay: refreshToken carries the connection past its token's exp (and one giving the same token fails each reopen, retried)", { timeout: 30_000 }, async () => {
  const { mintRelayToken } = await import("agentwire/relay-token");
  const aw = modules["agentwire/switch"];
  const ws = env.webSocket ? { webSocket: env.webSocket } : {};
  const relay = env.switchRelays[0];
  const mint = (expiresIn) => mintRelayToken(env.switchRelay.secret, { agentId: relay.alice.id, expiresIn });
  const wait = async (what, ok, ms = 12_000) => {
    const until = Date.now() + ms;
    while (!ok()) {
      if (Date.now() > until) throw new Error(`no ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  let refreshed = 0;
  const seen = [];
  const client = await aw.SwitchClient.connect(relay.url, {
    ...ws,
    token: await mint(3),
    agentId: relay.alice.id,
    refreshToken: () => (refreshed++, mint(600)),
    onEvent: (e) => seen.push(e),
  });
  const plain = [];
  const first = await mint(3);
  let again = 0;
  // A refreshToken that hands back the token it has: refused (a diagnostic), not called in a loop:
  // at its refresh time, at the relay's expiry close and before each reopen, which then fails
  // (retried with the backoff) instead of going with the expired token.
  const expiring = await aw.SwitchClient.connect(relay.url, {
    ...ws,
    token: first,
    agentId: relay.alice.id,
    refreshToken: () => (again++, first),
    onEvent: (e) => plain.push(e),
  });
  try {
    await wait("reopen after exp", () => seen.findIndex((e) => e.type === "disconnected" && e.code === 1008) >= 0 && seen.at(-1).type === "connected");
    const closed = seen.find((e) => e.type === "disconnected");
    if (!/token expired/.test(closed.reason)) throw new Error(`closed: ${JSON.stringify(closed)}`);
    if (refreshed !== 1) throw new Error(`refreshToken called ${refreshed} times`);
    if (!seen.at(-1).resumed) throw new Error(`not resumed: ${JSON.stringify(seen.at(-1))}`);
    if (!(await client.listOps()).operations) throw new Error("no operations with the new token");
    const failedOpen = (e) => e.type === "disconnected" && /refreshToken failed: its token expires no later/.test(e.reason);
    await wait("a reopen failed for the refresh giving the same token", () => plain.filter(failedOpen).length >= 2);
    if (plain.some((e) => e.type === "stopped")) throw new Error(`without a new token: ${JSON.stringify(plain.slice(-3))}`);
    const guess = plain.find((e) => failedOpen(e) && /no HTTP status/.test(e.reason));
    if (guess) throw new Error(`a failed refresh is not a network failure: ${guess.reason}`);
    const reopens = plain.filter((e) => e.type === "disconnected").length;
    if (again < 3 || again > reopens + 2) throw new Error(`a refreshToken giving the same token was called ${again} times, ${reopens} reopens`);
    // An auth error of its own: nothing of the cause's (kind invalid) but the message.
    const diag = plain.find((e) => e.type === "diagnostic" && /expires no later/.test(e.error.message));
    if (!diag || diag.error.kind !== "auth" || diag.error.retryable !== false || "code" in diag.error) throw new Error(`diagnostic: ${JSON.stringify(plain)}`);
    let invalid;
    try {
      client.setToken("not a token!");
    } catch (e) {
      invalid = e;
    }
    if (!(invalid instanceof aw.AgentwireError) || invalid.kind !== "invalid") throw new Error(`setToken("not a token!"): ${invalid}`);
  } finally {
    await client.close();
    await expiring.close();
  }
});

// Node 20 has no global WebSocket: without the `webSocket` option every client rejects with
// kind `invalid` (not retryable: retrying cannot help) and says to pass the option. On Node 22
// the global is taken away for the test.
test("node: with no global WebSocket and no webSocket option, each client rejects invalid and says to pass webSocket", { timeout: 20_000 }, async () => {
  const saved = Object.getOwnPropertyDescriptor(globalThis, "WebSocket");
  delete globalThis.WebSocket;
  try {
    if (typeof globalThis.WebSocket !== "undefined") throw new Error("the global WebSocket could not be removed");
    const relay = env.switchRelays[0];
    for (const [entry, aw] of Object.entries(modules)) {
      const connects = {
        RktClient: () => aw.RktClient.connect(env.rkt, { handshakeTimeoutMs: 2000 }),
        MoltZapClient: () => aw.MoltZapClient.connect(env.moltzap, { agentKey: env.moltzapKeys.alice, handshakeTimeoutMs: 2000 }),
        SwitchClient: () => aw.SwitchClient.connect(relay.url, { token: relay.alice.token, agentId: relay.alice.id, timeoutMs: 5000 }),
      };
      for (const [name, connect] of Object.entries(connects)) {
        if (!aw[name]) continue;
        const e = await connect().then(
          async (c) => (await c.close(), undefined),
          (e) => e,
        );
        const what = `${entry}: ${name} with no WebSocket`;
        if (!(e instanceof aw.AgentwireError)) throw new Error(`${what}: ${e === undefined ? "connected" : e}`);
        if (e.kind !== "invalid" || e.retryable) throw new Error(`${what}: ${JSON.stringify(e.info)}`);
        if (!/pass the `webSocket` option/.test(e.message)) throw new Error(`${what}: the message does not say to pass webSocket: ${e.message}`);
      }
    }
  } finally {
    if (saved) Object.defineProperty(globalThis, "WebSocket", saved);
  }
});

// What setToken checks (its JSDoc): a token that cannot be one is refused with kind `invalid`;
// its shape is not (directly to Switch the token is the agent key), the relay verifies it.
test("node: switch setToken refuses what cannot be a token (empty, too long, other characters) and leaves the shape to the relay", { timeout: 20_000 }, async () => {
  const aw = modules["agentwire/switch"];
  const ws = env.webSocket ? { webSocket: env.webSocket } : {};
  const relay = env.switchRelays[0];
  const client = await aw.SwitchClient.connect(relay.url, { ...ws, token: relay.alice.token, agentId: relay.alice.id, timeoutMs: 10_000 });
  try {
    for (const bad of ["", "x".repeat(4097), "a b", "eyJ4IjoxfQ.sig=", "a/b"]) {
      let thrown;
      try {
        client.setToken(bad);
      } catch (e) {
        thrown = e;
      }
      if (!(thrown instanceof aw.AgentwireError) || thrown.kind !== "invalid") throw new Error(`setToken(${JSON.stringify(bad.slice(0, 20))}): ${thrown}`);
    }
    for (const agentKeyOrToken of ["a", "a.b.c", "eyJ4IjoxfQ.sig", relay.alice.token]) client.setToken(agentKeyOrToken);
  } finally {
    await client.close();
  }
});
