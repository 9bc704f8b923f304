/** Switch Rooms: `SwitchClient` (through the relay: the browser never holds the agent key; or,
 * where the key may be, a Node server or a Worker, directly to Switch) and `SwitchSession` (the
 * sans-IO connection, for your own transport). */
import { SwitchDriver, SwitchSession as WasmSwitchSession } from "./wasm/agentwire_wasm.js";
import { call, engineOptions, Events, jsonArg, open, type CallOptions, type ConnectOptions } from "./calls.js";
import { AgentwireError, agentwireError, toError, type ErrorInfo } from "./errors.js";
import { Client } from "./client.js";

/** The connection's options (`agentwire_switch::ConnectionConfig`); absent fields keep the
 * engine's defaults. NaN, Infinity and negative numbers are refused with kind `invalid` (leave
 * `maxReconnectAttempts` out for no limit). */
export interface SwitchOptions {
  /** The agent this connection is for (the relay token's `agent_id`). */
  agentId: string;
  /** The connection's id, kept across reconnects (default: a fresh UUID). */
  connectionId?: string | undefined;
  /** Rooms to claim at the open, with takeover, so catch-up covers them (default none). */
  rooms?: string[] | undefined;
  /** `single` (default): one room at a time; `all`: every room the agent belongs to. */
  scope?: "single" | "all" | undefined;
  /** `all` (default): everything in the covered rooms; `addressed`: only what is notifiable. */
  filter?: "all" | "addressed" | undefined;
  /** Where the first open starts: `head` (default: new events only) or after a sequence (a
   * saved cursor; a string of digits for one past 2^53 − 1). Later opens resume after the last
   * sequence received. */
  startFrom?: "head" | number | `${bigint}` | undefined;
  /** The `generation` of the last `connected` state, to fence a reconnect against a newer
   * connection of the same id. */
  expectedGeneration?: number | string | undefined;
  /** Whether this connection can take spawned sessions (default false). */
  spawnCapable?: boolean | undefined;
  /** The protocol version spoken (default: the engine's). */
  protocol?: number | undefined;
  /** The oldest protocol version accepted (`protocol` is the one spoken; default: the same). */
  protocolAccepts?: number | undefined;
  /** The client's name, reported to the server and never judged. */
  client?: string | undefined;
  /** The client's version, reported with `client`. */
  clientVersion?: string | undefined;
  /** `websocket` (default; the relay speaks only this, whatever the server behind it); `sse`:
   * the event stream and HTTP beats of a released Switch server (switch-core 0.19, which has no
   * WebSocket route), opened directly with the agent key as `token` (a `fetch` with
   * `Authorization: Bearer`; no `webSocket` needed); `auto`: the WebSocket first, then SSE for
   * good if the upgrade is refused with 403, 404, 405 or 426 before the first attach. `auto`
   * needs a WebSocket that tells a refused upgrade's status (`fetchWebSocket` in a Worker);
   * undici's and a browser's see only a close 1006, and `connect` then rejects with kind `closed`
   * (use `sse` for a released server there). A browser has no key to send: it uses the relay. */
  transport?: "websocket" | "sse" | "auto" | undefined;
  /** `false`: stop at the first disconnect (default true: reconnect with the backoff and resume
   * from the cursor). */
  reconnect?: boolean | undefined;
  /** Reconnects in a row before it stops (default: no limit; Infinity is refused, leave it
   * out). */
  maxReconnectAttempts?: number | undefined;
  /** Opens tried before the first attach (default 1: `connect` rejects when the first fails,
   * retryable: kind `closed`, the HTTP error, or `timeout` for the open deadline); 0: reopen
   * with the backoff until attached (bound it with `timeoutMs`). */
  connectAttempts?: number | undefined;
  /** The delay before reconnect `n`: a random draw up to `baseMs * factor^n`, at most `maxMs`,
   * at least `minMs` (defaults 500, 30 000, 2, 100). */
  backoff?: { baseMs?: number; maxMs?: number; factor?: number; minMs?: number } | undefined;
  /** From an open to its `connected` state, in ms (default 10 000). */
  openTimeoutMs?: number | undefined;
  /** The ping interval until the server says its own, in ms (default 2 000). */
  heartbeatIntervalMs?: number | undefined;
  /** Intervals without a ping before the socket counts as dead and is reopened (default 3). */
  missedHeartbeats?: number | undefined;
  /** Released servers (SSE): how long a beat waits for its answer, in ms (default 4 000). */
  beatTimeoutMs?: number | undefined;
  /** Released servers (SSE): no byte for this long and the stream counts as dead, in ms
   * (default 45 000). */
  streamIdleTimeoutMs?: number | undefined;
  /** The engine's queue of undelivered events (default 4096): past it, later events wait for a
   * reopen from the cursor; none is lost. */
  maxQueuedEvents?: number | undefined;
  /** The engine's queue of undelivered events in bytes (default 64 MiB): past it, as past
   * `maxQueuedEvents`, later events wait for a reopen from the cursor; none is lost. The
   * clients of one entry share one wasm memory, so what their queues hold together is bounded
   * too (256 MiB): past it, a queue keeps 1 MiB (its own bound when less). */
  maxQueuedBytes?: number | undefined;
  /** Largest frame taken in, in bytes, on either wire: a WebSocket message, or an SSE event's
   * data and line (default 1 MiB, at most 64 MiB). */
  maxMessageBytes?: number | undefined;
  /** How deep a frame's JSON may nest (default 64, at most 128). */
  maxDepth?: number | undefined;
  /** How long an operation waits (default 30 000). */
  opTimeoutMs?: number | undefined;
}

export interface SwitchConnectOptions extends SwitchOptions, Omit<ConnectOptions, "onEvent"> {
  /** The relay token the app's backend minted for this agent; directly to Switch (`transport`
   * `sse` or `auto`, or a `webSocket` that sends it), the agent key. */
  token: string;
  /** Gets a new relay token; called before the current one's `exp` (a fifth of its remaining
   * life before, at most a minute), and again for each token it returns. The relay closes a
   * socket at its token's `exp` (1008), and the connection reopens with the new token and
   * resumes from its cursor. The clock is looked at every 30 s at most and at every event, the
   * relay's close for an expired token calls it at once (a clock behind the relay's), and a
   * reopen with an expired token waits for the call: a machine that slept, a frozen tab or a
   * page back from the back-forward cache reopens with a new token. Each call has
   * `openTimeoutMs` to answer, and each reopen waits that long at most (per attempt: the wait is
   * not for good); a call with no answer by then has failed. Without it, the reopen at `exp` is
   * refused (the connection stops with kind `auth`) unless `setToken` was called. A failure is a
   * `diagnostic` event of kind `auth`; it is tried again every 5 s until `exp`, and at each
   * reopen. A reopen with an expired token whose call failed is a failed attempt, retried with
   * the backoff (counted by `maxReconnectAttempts`), not an open the relay would refuse. An answer
   * after its call was given up on is taken only if its token expires later than the current
   * one. */
  refreshToken?: (() => string | Promise<string>) | undefined;
  /** Each event as it arrives, instead of `events()`. It is called before `connect` resolves
   * (with `connected` at least); an exception it throws is logged (`console.error`) and does not
   * stop the client. */
  onEvent?: ((event: SwitchEvent) => void) | undefined;
}

/** What the server said when the connection attached (its `connection_state`). */
export interface SwitchConnectionState {
  connection_id: string;
  agent_id: string;
  /** Pass it back as `expectedGeneration` to fence a reconnect. */
  generation: number | string | null;
  scope: string;
  filter: string;
  spawn_capable: boolean;
  /** The rooms this connection holds. */
  rooms: string[];
  /** The sequence the server resumes after. */
  cursor: number;
  protocol: number | null;
  heartbeat_interval_seconds: number | null;
  /** The server's own description, as sent. */
  server: unknown;
  /** The client as the server recorded it, as sent. */
  client: unknown;
}

/** A connection's events, as the engine reports them (snake_case, as the protocol). The
 * connection reconnects by itself: `disconnected` says when it will retry (`retry_in_ms`,
 * `attempt`), `connected` again with `resumed: true` when it has, and `stopped` comes last. */
export type SwitchEvent =
  | { type: "connected"; wire: "websocket" | "sse"; resumed: boolean; state: SwitchConnectionState }
  | {
      type: "event";
      kind: string;
      sequence: number;
      room_id: string;
      bridge_id?: string;
      channel_type?: string;
      payload: unknown;
      gap?: Record<string, unknown>;
    }
  | { type: "subscription_changed"; rooms: string[]; reason: string }
  | { type: "room_released"; room_id: string; session_id?: string }
  | { type: "control"; name: string; data?: unknown }
  | { type: "evicted"; code: string; reason: string; room_id?: string }
  | { type: "disconnected"; code?: number; reason: string; retry_in_ms: number; attempt: number }
  | { type: "stopped"; error?: ErrorInfo }
  | { type: "diagnostic"; error: ErrorInfo };

/** Where a connection is. */
export interface SwitchStatus {
  /** `live` once attached; `backoff` between a disconnect and the next open; `stopped` at the
   * end. */
  state: "idle" | "opening" | "attaching" | "live" | "backoff" | "stopped";
  wire: "websocket" | "sse";
  /** The last sequence delivered in order: where a reopen resumes. */
  cursor?: number;
  /** The `generation` of the last `connected` state; absent from a `taken_over` set aside after a
   * possibly lost attach until the next `connected` (the reopens go unfenced meanwhile). */
  generation?: number | string;
  connectionId: string;
  agentId: string;
  /** The rooms the connection holds. */
  rooms: string[];
  /** The current reconnect attempt, reset when the server is heard from (a ping, or a beat
   * answered) on a socket that has stayed live for the backoff's `maxMs` (30 s by default). */
  attempt: number;
  /** The reason of the last `disconnected`: why it is reconnecting, or was. */
  lastProblem?: string;
  /** Events wait in the engine: `events()` is not read (its buffer is full). */
  held?: true;
}

/** A Switch Rooms connection through the relay: `await SwitchClient.connect(relayUrl, {token,
 * agentId})` (or directly to a released server from Node or a Worker: `connect(switchUrl, {token:
 * agentKey, agentId, transport: "sse"})`), then `op`, `subscribe`, `unsubscribe`, `placements`, `listOps`, and the rooms'
 * events; it reconnects by itself and resumes after the last sequence received. `close()` (or `await using`)
 * ends it. */
export class SwitchClient extends Client<SwitchEvent> {
  readonly #driver: SwitchDriver;

  private constructor(driver: SwitchDriver, events: Events<SwitchEvent>) {
    super(events, { get over() { return driver.stopped; }, close: () => driver.close() });
    this.#driver = driver;
  }

  /** Uses `token` for every later open and HTTP call (the open socket keeps its own until the
   * relay closes it at that token's `exp`, and the connection reopens with this one). Throws
   * kind `invalid` for a token that cannot be one: empty, over 4096 characters, or with a
   * character other than `A-Z a-z 0-9 - _ .`. Its shape is not checked (directly to Switch the
   * token is the agent key): the relay verifies a relay token, and refuses a bad one (`auth`).
   * With `refreshToken`, the next call is due before this token's `exp`. */
  setToken(token: string): void {
    try {
      this.#driver.setToken(token);
    } catch (e) {
      throw toError(e);
    }
  }

  /** Reopens at once if the connection is waiting out its backoff before a reopen, which may
   * be up to `backoff.maxMs` (30 s) away: call it when the network comes back (the `online`
   * event). Returns whether it reopened; otherwise (opening, live, stopped) it does nothing. */
  reconnectNow(): boolean {
    try {
      return this.#driver.reconnectNow();
    } catch (e) {
      throw toError(e);
    }
  }

  /** Connects through the relay at `relayUrl` (`https://relay.example[/prefix]`) with a relay
   * token (or, with `transport` `sse` or `auto`, to a Switch server with its agent key), and
   * resolves once the connection is attached (`connected`); rejects when it stops first (refused
   * token or key: kind `auth`; eviction), when the first open fails (no relay: kind `closed`,
   * retryable; more with `connectAttempts`), on `signal`, or after `timeoutMs`. Once connected, it reconnects by itself. */
  static connect(relayUrl: string, opts: SwitchConnectOptions): Promise<SwitchClient> {
    // A JavaScript caller may leave the options (or the token) out: the engine then rejects
    // with kind `invalid`, saying what is missing.
    opts ??= {} as SwitchConnectOptions;
    return open<SwitchEvent, { d: SwitchDriver; close(): void; why: string }, SwitchClient>(
      opts as ConnectOptions,
      "stopped",
      (events, onReady, onFail) => {
        const { token = "", refreshToken, webSocket, signal, timeoutMs, ...rest } = opts;
        events.tap = (ev) => {
          if (ev.type === "connected") onReady("");
          // The engine stops a connect whose first open failed (`connectAttempts`).
          if (ev.type === "stopped") onFail(ev.error ? new AgentwireError(ev.error) : agentwireError("closed", "the connection stopped"));
        };
        exactNumbers(rest);
        const d = new SwitchDriver(relayUrl, token, engineOptions(rest), webSocket as (() => void) | undefined, events.emit, refreshToken);
        // A full `events()` buffer holds events back in the engine, which replays from its cursor.
        events.hold = (held) => d.hold(held);
        // A connect given up (a timeout, an abort) closes the driver; a stopped one is closed.
        return { d, close: () => d.stopped || d.close(), get why() { return d.why; } };
      },
      ({ d }, events) => {
        events.tap = undefined;
        return new SwitchClient(d, events);
      },
      "connection",
    );
  }

  /** Operation `name` with `args` (an object) acting for this connection; resolves with its
   * `result`. Each HTTP call is bounded by `timeoutMs` (default `opTimeoutMs`; at least 1,
   * Infinity: the longest a timer holds, about 24.8 days); after `close()`
   * (or once the connection has stopped) calls reject with kind `closed`, and so do those in
   * flight. */
  op<T = unknown>(name: string, args?: object, opts: CallOptions = {}): Promise<T> {
    return this.#http<T>((res, rej) => {
      const json = args === undefined ? undefined : jsonArg(args, "the arguments");
      return this.#driver.op(name, json, opts.timeoutMs, res, rej);
    }, opts.signal);
  }

  /** The operations the server offers: `{operations: {name: {description, input_schema}}}`. */
  listOps<T = unknown>(opts: CallOptions = {}): Promise<T> {
    return this.#http<T>((res, rej) => this.#driver.listOps(opts.timeoutMs, res, rej), opts.signal);
  }

  /** Claims `room` for this connection (kind `state` when a live sibling holds it, unless
   * `takeover`). */
  subscribe<T = unknown>(room: string, opts: CallOptions & { takeover?: boolean | undefined } = {}): Promise<T> {
    return this.#http<T>((res, rej) => this.#driver.subscribe(room, opts.takeover ?? false, opts.timeoutMs, res, rej), opts.signal);
  }

  /** Releases `room` from this connection. */
  unsubscribe<T = unknown>(room: string, opts: CallOptions = {}): Promise<T> {
    return this.#http<T>((res, rej) => this.#driver.unsubscribe(room, opts.timeoutMs, res, rej), opts.signal);
  }

  /** Replaces every placement of this connection (session id → room). */
  placements<T = unknown>(map: Record<string, string>, opts: CallOptions = {}): Promise<T> {
    return this.#http<T>((res, rej) => this.#driver.placements(jsonArg(map, "the placements"), opts.timeoutMs, res, rej), opts.signal);
  }

  /** An HTTP call of the driver: its reply parsed. `signal` aborts the fetch itself (the call
   * rejects with kind `cancelled`, `timeout` for `AbortSignal.timeout`). */
  #http<T>(
    start: (res: (json: string) => void, rej: (e: unknown) => void) => { abort(): void },
    signal?: CallOptions["signal"],
  ): Promise<T> {
    let fetch: { abort(): void };
    return call<string>((res, rej) => ((fetch = start(res, rej)), ""), () => fetch.abort(), { signal }).then((json) => JSON.parse(json) as T);
  }

  /** Where the connection is now: its state, wire, cursor, rooms and reconnect attempt. */
  status(): SwitchStatus {
    return JSON.parse(this.#driver.status()) as SwitchStatus;
  }

  /** The connection's id, kept across reconnects. */
  get connectionId(): string {
    return this.#driver.connectionId;
  }

}

/** The sans-IO Switch connection. */
export interface SwitchSession {
  start(now: number): void;
  handleOpen(now: number): void;
  handleOpenFailed(now: number, status: number | undefined, body: string): void;
  /** The open failed before any HTTP answer, for the reason given (a refused connection, DNS). */
  handleOpenError(now: number, reason: string): void;
  handleText(now: number, text: string): void;
  handleBinary(now: number, bytes: Uint8Array): void;
  handleBytes(now: number, chunk: Uint8Array): void;
  handleClose(now: number, code: number, reason: string): void;
  handleHttpResponse(now: number, id: number, status: number, body: string): void;
  handleHttpFailed(now: number, id: number, reason: string): void;
  handleTimeout(now: number): void;
  /** Closes for good: a `close` transmit if the driver took the socket's `open` (an `open` not
   * polled yet is taken back instead), then a `stopped` event. */
  close(now: number): void;
  /** Reopens now if waiting out the backoff (the network came back); whether it did. */
  reconnectNow(now: number): boolean;
  pollTransmit(): SwitchTransmit | undefined;
  /** The next event as JSON text (parse it as `SwitchEvent`). */
  pollEvent(): string | undefined;
  pollTimeout(): number | undefined;
  readonly connectionId: string;
  readonly agentId: string;
  /** Where the connection is (`SwitchClient.status()`'s `state`). */
  readonly state: SwitchStatus["state"];
  /** The transport of the current (or next) open. */
  readonly wire: "websocket" | "sse";
  /** The highest sequence handed out (the resume point), or `undefined` before any. */
  readonly cursor: number | undefined;
  /** The `generation` of the last `connection_state`, as text, or `undefined`. */
  readonly generation: string | undefined;
  /** The covered rooms as the server last reported them. */
  readonly rooms: string[];
  /** Reconnect attempts since the connection was last stable. */
  readonly attempt: number;
  /** Frees the wasm memory now (else the garbage collector does). */
  free(): void;
  /** `free()`, for `using`. */
  [Symbol.dispose](): void;
}

/** What a sans-IO Switch connection wants done: `open` a WebSocket (or, for the SSE wire, an
 * SSE stream) at `path` on the server's origin with `headers` and `Authorization: Bearer <agent
 * key>` added, replacing any socket held; send `text` on the socket; make the `http` call
 * (`Authorization` added) and report its answer with `id` (unless its stream ended first: drop
 * that answer or abort the call; fed in, it is a `diagnostic` of kind `protocol`); `close` the
 * socket or stream and report nothing more about it (a late close event would be taken as the
 * next open failing). An `open` not polled yet when the connection drops its socket is taken
 * back: no `close` follows. */
export type SwitchTransmit =
  | { type: "open"; wire: "websocket" | "sse"; method: string; path: string; headers: Record<string, string> }
  | { type: "text"; text: string }
  | { type: "http"; id: number; method: string; path: string; headers: Record<string, string>; body?: string }
  | { type: "close"; code: number; reason: string };

export const SwitchSession: new (optionsJson: string) => SwitchSession = WasmSwitchSession as unknown as new (
  optionsJson: string,
) => SwitchSession;

/** `startFrom` and `expectedGeneration` past 2^53 − 1 are not exact as numbers: a rounded one is
 * another valid value (a generation that fences the wrong attach ends the connection
 * `taken_over`, for good), so such a number is refused with kind `invalid`; a string of digits
 * is exact. */
function exactNumbers(opts: { startFrom?: unknown; expectedGeneration?: unknown }): void {
  for (const k of ["startFrom", "expectedGeneration"] as const) {
    const v = opts[k];
    if (typeof v == "number" && Math.abs(v) > Number.MAX_SAFE_INTEGER) {
      throw agentwireError("invalid", `\`${k}\` is ${v}: a number past 2^53 − 1 is not exact; pass its digits as a string`);
    }
  }
}
