// A strict TypeScript consumer of the package: no DOM library, no Node types, every strictness
// flag, skipLibCheck off. It must compile; run, it checks that the package's ErrorKind type
// lists exactly the engine's kinds.
import {
  AgentwireError,
  MoltZapSession,
  RktClient,
  errorKinds,
  eventTypes,
  rktDecode,
  type ErrorKind,
  type MoltZapEvent,
  type MoltZapSessionEvent,
  type MoltZapSessionOptions,
  type RktEvent,
  RktSession,
  type RktSessionEvent,
  type SwitchEvent,
  type SwitchOptions,
  type SwitchSession,
  type SwitchStatus,
  type WebSocketConstructor,
} from "agentwire";
import * as rktOnly from "agentwire/rkt";
import * as moltzapOnly from "agentwire/moltzap";
import * as switchOnly from "agentwire/switch";

// Exactly the ErrorKind union: a kind missing here or unknown to the type fails to compile.
const KINDS: Record<ErrorKind, true> = {
  decode: true,
  protocol: true,
  remote: true,
  auth: true,
  rate_limited: true,
  version: true,
  timeout: true,
  cancelled: true,
  closed: true,
  limit: true,
  state: true,
  invalid: true,
  internal: true,
};

// Exactly the event unions' `type`s, compared with the engine's lists below.
const RKT_TYPES: Record<RktSessionEvent["type"], true> = {
  ready: true,
  response: true,
  streamBegin: true,
  streamData: true,
  streamEnd: true,
  authOk: true,
  pong: true,
  failed: true,
  error: true,
  goodbye: true,
  closed: true,
};
const MOLTZAP_TYPES: Record<MoltZapSessionEvent["type"], true> = {
  connected: true,
  connectFailed: true,
  response: true,
  failed: true,
  messageReceived: true,
  conversationCreated: true,
  conversationUpdated: true,
  conversationArchived: true,
  conversationUnarchived: true,
  presenceChanged: true,
  other: true,
  diagnostic: true,
  missedPings: true,
  disconnected: true,
};
const SWITCH_TYPES: Record<SwitchEvent["type"], true> = {
  connected: true,
  event: true,
  subscription_changed: true,
  room_released: true,
  control: true,
  evicted: true,
  disconnected: true,
  stopped: true,
  diagnostic: true,
};

interface Weather {
  data: { city: string; temperature: number };
}

export async function usage(url: string, signal: AbortSignalLikeForTest): Promise<number> {
  await using client = await RktClient.connect(url, { timeoutMs: 5000, ttlS: 10, apiKey: "k" });
  const w = await client.request<Weather>("weather.current", { city: "Seoul" }, { signal, timeoutMs: 1000, priority: "HIGH" });
  let days = 0;
  for await (const chunk of client.stream<{ high: number }>("weather.forecast", { days: 3 })) days += chunk.high > 0 ? 1 : 0;
  for await (const ev of client.events()) {
    const e: RktEvent = ev;
    if (e.type === "closed") return e.code;
    if (e.type === "error") return e.error.retryable ? 1 : 0;
  }
  try {
    await client.discover({ signal });
  } catch (err) {
    // `code` is a number for RKT and MoltZap, a string for Switch.
    if (err instanceof AgentwireError && err.kind === "timeout" && err.retryable) return typeof err.code === "number" ? err.code : 0;
  }
  return w.data.temperature + days + (await client.ping());
}

type AbortSignalLikeForTest = Parameters<typeof RktClient.connect>[1] extends infer O
  ? O extends { signal?: infer S }
    ? NonNullable<S>
    : never
  : never;

const engine = errorKinds().sort().join();
const declared = Object.keys(KINDS).sort().join();
if (engine !== declared) throw new Error(`ErrorKind type ${declared} != engine ${engine}`);
for (const [protocol, declaredTypes] of [
  ["rkt", RKT_TYPES],
  ["moltzap", MOLTZAP_TYPES],
  ["switch", SWITCH_TYPES],
] as const) {
  const a = eventTypes(protocol).sort().join();
  const b = Object.keys(declaredTypes).sort().join();
  if (a !== b) throw new Error(`${protocol} event types: package ${b} != engine ${a}`);
}
// Each protocol's own entry: its protocol and the shared exports, the one AgentwireError class,
// and the engine's lists from its own module (the other protocols' lists empty).
// @ts-expect-error: agentwire/rkt has no MoltZap.
void rktOnly.MoltZapClient;
// @ts-expect-error: agentwire/switch has no RKT.
void switchOnly.rktDecode;
for (const [protocol, only] of [
  ["rkt", rktOnly],
  ["moltzap", moltzapOnly],
  ["switch", switchOnly],
] as const) {
  if (only.AgentwireError !== AgentwireError) throw new Error(`agentwire/${protocol}: another AgentwireError`);
  if (only.errorKinds().sort().join() !== engine) throw new Error(`agentwire/${protocol}: error kinds`);
  for (const other of ["rkt", "moltzap", "switch"] as const) {
    const want = other === protocol ? eventTypes(other).sort().join() : "";
    if (only.eventTypes(other).sort().join() !== want) throw new Error(`agentwire/${protocol}: ${other} event types`);
  }
}
// Every option the type declares (Required: one missing here fails to compile) is one the engine
// reads: it refuses an unknown key.
const sessionOptions: Required<Omit<MoltZapSessionOptions, "sessionToken">> = {
  generation: "current",
  requestTimeoutMs: 1000,
  maxInFlight: 4,
  handshakeTimeoutMs: 1000,
  idPrefix: "c-",
  maxMessageBytes: 1 << 20,
  maxSendBytes: 1 << 20,
  agentKey: "moltzap_agent_k",
  pingIntervalMs: 30_000,
  idleProbeMs: 60_000,
};
new MoltZapSession(JSON.stringify(sessionOptions)).free();
// The same for Switch: every option of the type, the engine takes it.
const switchOptions: Required<SwitchOptions> = {
  agentId: "agent-a",
  connectionId: "00000000-0000-4000-8000-000000000001",
  rooms: ["r1"],
  scope: "single",
  filter: "all",
  startFrom: "head",
  expectedGeneration: 1,
  spawnCapable: false,
  protocol: 1,
  protocolAccepts: 1,
  client: "consumer",
  clientVersion: "1",
  transport: "websocket",
  reconnect: true,
  maxReconnectAttempts: 3,
  connectAttempts: 2,
  backoff: { baseMs: 10, maxMs: 100, factor: 2, minMs: 5 },
  openTimeoutMs: 1000,
  heartbeatIntervalMs: 2000,
  missedHeartbeats: 3,
  beatTimeoutMs: 1000,
  streamIdleTimeoutMs: 1000,
  maxQueuedEvents: 10,
  maxQueuedBytes: 1 << 20,
  maxMessageBytes: 1 << 20,
  maxDepth: 32,
  opTimeoutMs: 1000,
};
new switchOnly.SwitchSession(JSON.stringify(switchOptions)).free();
// Every transport, in the session and in the client's options (directly to a released server).
for (const transport of ["sse", "auto"] as const) new switchOnly.SwitchSession(JSON.stringify({ ...switchOptions, transport })).free();
const direct: Parameters<typeof switchOnly.SwitchClient.connect>[1] = { token: "agent-key", agentId: "agent-a", transport: "sse" };
void direct;
new MoltZapSession(JSON.stringify({ sessionToken: "t" } satisfies MoltZapSessionOptions)).free();
const rktEntryClient: typeof RktClient = rktOnly.RktClient;
// A WebSocket constructor for Workers, as `connect` takes one.
const workerSocket: WebSocketConstructor = switchOnly.fetchWebSocket({ authorization: "Bearer k" });
void workerSocket;
if (typeof rktEntryClient.connect !== "function" || typeof moltzapOnly.MoltZapClient.connect !== "function" || typeof switchOnly.SwitchClient.connect !== "function") {
  throw new Error("a protocol entry lacks its client");
}
// A message the codec refuses: kind `decode`, and `info.reason` and `info.field` as declared.
try {
  rktDecode("RKT/1.0 PING\nVersion: x\n");
} catch (e) {
  const info = e instanceof AgentwireError ? e.info : undefined;
  const reason: string | undefined = info?.reason;
  const field: string | undefined = info?.field;
  if (info?.kind !== "decode" || reason !== "bad_header_value" || field !== "Version") throw new Error(`rktDecode's error: ${JSON.stringify(info)}`);
}
if (rktDecode("RKT/1.0 PING\nVersion: 1\nMessage-ID: a\nSession-ID: b\nTimestamp: 2026-06-28T12:00:00Z\nTTL: 5\n").type !== "PING") {
  throw new Error("rktDecode");
}
// Every method and getter of each sans-IO session, exactly as the package declares it (a key
// missing here or unknown to the interface fails to compile), against the wasm class's own.
const RKT_SESSION: Record<Exclude<keyof RktSession, symbol>, true> = {
  handleOpen: true, handleText: true, handleBinary: true, handleClose: true, handleTimeout: true, pollTransmit: true,
  pollEvent: true, pollTimeout: true, request: true, discover: true, memorySet: true, memoryGet: true, ping: true,
  cancel: true, goodbye: true, free: true,
};
const MOLTZAP_SESSION: Record<Exclude<keyof MoltZapSession, symbol>, true> = {
  handleOpen: true, handleText: true, handleBinary: true, handlePing: true, handleClose: true, handleTimeout: true,
  pollTransmit: true, pollEvent: true, pollTimeout: true, connect: true, call: true, cancel: true, close: true,
  state: true, generation: true, free: true,
};
const SWITCH_SESSION: Record<Exclude<keyof SwitchSession, symbol>, true> = {
  start: true, handleOpen: true, handleOpenFailed: true, handleOpenError: true, handleText: true, handleBinary: true,
  handleBytes: true, handleClose: true, handleHttpResponse: true, handleHttpFailed: true, handleTimeout: true,
  close: true, reconnectNow: true, pollTransmit: true, pollEvent: true, pollTimeout: true, connectionId: true,
  agentId: true, state: true, wire: true, cursor: true, generation: true, rooms: true, attempt: true, free: true,
};
const sessions: [string, object, object][] = [
  ["RktSession", new RktSession(), RKT_SESSION],
  ["MoltZapSession", new MoltZapSession(JSON.stringify({ agentKey: "k" })), MOLTZAP_SESSION],
  ["SwitchSession", new switchOnly.SwitchSession(JSON.stringify({ agentId: "a" })), SWITCH_SESSION],
];
for (const [name, session, declaredMembers] of sessions) {
  const own = Object.getOwnPropertyNames(Object.getPrototypeOf(session)).filter((k) => k !== "constructor" && !k.startsWith("__"));
  if (own.sort().join() !== Object.keys(declaredMembers).sort().join()) throw new Error(`${name}: wasm ${own.sort().join()} != declared ${Object.keys(declaredMembers).sort().join()}`);
}
// A sans-IO Switch connection's getters, typed as what they hold.
const sw = new switchOnly.SwitchSession(JSON.stringify({ agentId: "a" }));
sw.start(1);
const swState: SwitchStatus["state"] = sw.state;
const swWire: SwitchStatus["wire"] = sw.wire;
const swCursor: number | undefined = sw.cursor;
const swGeneration: string | undefined = sw.generation;
const swRooms: string[] = sw.rooms;
const swAttempt: number = sw.attempt;
const swGot = JSON.stringify([swState, swWire, swCursor ?? null, swGeneration ?? null, swRooms, swAttempt]);
if (swGot !== '["opening","websocket",null,null,[],0]') throw new Error(`SwitchSession getters: ${swGot}`);
sw.free();
// What the engine hands out, against literals typed as the package declares them: a literal the
// type refuses fails to compile, one the engine does not give fails here.
const canon = (v: unknown): string =>
  JSON.stringify(v, (_, x: unknown) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
function same<T>(got: string | undefined, want: T, what: string): void {
  if (got === undefined || canon(JSON.parse(got)) !== canon(want)) throw new Error(`${what}: the engine gave ${got}, the literal is ${canon(want)}`);
}
// MoltZap: a `null` result, and pushes without params, leave the payload out.
const mz = new MoltZapSession(JSON.stringify({ agentKey: "moltzap_agent_k" }));
mz.handleOpen(1);
const helloId = mz.connect(1);
mz.handleText(2, JSON.stringify({ jsonrpc: "2.0", id: helloId, result: {} }));
same<MoltZapSessionEvent>(mz.pollEvent(), { type: "connected", id: helloId, generation: "current", hello: {} }, "connected");
const callId = mz.call(3, "x/y", "{}");
mz.handleText(4, JSON.stringify({ jsonrpc: "2.0", id: callId, result: null }));
same<MoltZapSessionEvent>(mz.pollEvent(), { type: "response", id: callId }, "a null result");
for (const [method, event] of [
  ["messages/received", { type: "messageReceived" }],
  ["conversations/created", { type: "conversationCreated" }],
  ["conversations/archived", { type: "conversationArchived" }],
  ["presence/changed", { type: "presenceChanged" }],
  ["agent/other", { type: "other", name: "agent/other" }],
] satisfies [string, MoltZapEvent][]) {
  mz.handleText(5, JSON.stringify({ jsonrpc: "2.0", method }));
  same<MoltZapEvent>(mz.pollEvent(), event, `${method} without params`);
}
mz.free();
// Switch: what the engine always writes (even when the server sent none) is required in the types.
const always = (e: SwitchEvent): string | number => {
  switch (e.type) {
    case "disconnected":
      return e.retry_in_ms + e.attempt + e.reason;
    case "event":
      return e.room_id;
    case "subscription_changed":
    case "evicted":
      return e.reason;
    default:
      return "";
  }
};
const swConn = "00000000-0000-4000-8000-000000000001";
const swe = new switchOnly.SwitchSession(JSON.stringify({ agentId: "a", connectionId: swConn, connectAttempts: 2 }));
swe.start(1);
swe.handleOpenFailed(2, 503, "busy");
swe.handleTimeout(1e6);
swe.handleOpen(1e6);
for (const frame of [
  { event: "connection_state", data: { connection_id: swConn, agent_id: "a", scope: "single", filter: "all", spawn_capable: false, rooms: [], cursor: 0 } },
  { event: "message", id: 1, data: { type: "message", room_id: "r", payload: {}, sequence: 1 } },
  { event: "subscription_changed", data: { rooms: ["r"] } },
  { event: "evicted", data: { code: "taken_over" } },
]) swe.handleText(1e6, JSON.stringify(frame));
const swTypes: string[] = [];
for (let text; (text = swe.pollEvent()) !== undefined; ) {
  const e = JSON.parse(text) as SwitchEvent;
  swTypes.push(e.type);
  const required = { disconnected: ["reason", "retry_in_ms", "attempt"], event: ["room_id"], subscription_changed: ["reason"], evicted: ["reason"] }[e.type as string] ?? [];
  if (required.some((k) => !(k in e)) || always(e) === undefined) throw new Error(`a field the type requires is missing: ${text}`);
}
if (swTypes.join() !== "disconnected,connected,event,subscription_changed,evicted,stopped") throw new Error(`Switch events: ${swTypes.join()}`);
swe.free();
(globalThis as unknown as { console: { log(m: string): void } }).console.log(`strict consumer: ${Object.keys(KINDS).length} error kinds and every event type, as the engine has; agentwire/rkt, /moltzap, /switch load their own modules`);
