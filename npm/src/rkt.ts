/** RKT over WebSocket: `RktClient` (the engine's driver behind an idiomatic API) and
 * `RktSession` (the sans-IO session, for your own transport). */
import { RktDriver, RktSession as WasmRktSession, rktDecode as wasmRktDecode } from "./wasm/agentwire_wasm.js";
import {
  abortError,
  after,
  call,
  engineOptions,
  Events,
  jsonArg,
  open,
  parseBody,
  Queue,
  signalOf,
  unanswered,
  type AbortSignalLike,
  type CallOptions,
  type ConnectOptions,
} from "./calls.js";
import { agentwireError, toError, type AgentwireError, type ErrorInfo } from "./errors.js";
import type { Transmit } from "./session.js";
import { Client } from "./client.js";

/** The engine's options (`agentwire_rkt::ClientConfig`); absent fields keep its defaults.
 * NaN, Infinity and negative numbers are refused with kind `invalid` (no option has an infinite value). */
export interface RktOptions {
  /** The HELLO's `User-Agent` (default `agentwire/<version>`). */
  userAgent?: string | undefined;
  /** The HELLO's `From`: who the client is (an agent id, a DID). */
  from?: string | undefined;
  /** The HELLO's `Capabilities`. */
  capabilities?: string[] | undefined;
  /** `TTL` of each message in seconds, and how long a request waits (default 30, at least 1). */
  ttlS?: number | undefined;
  /** Largest message accepted, in bytes (default 1 MiB, at most 64 MiB). */
  maxMessageSize?: number | undefined;
  /** Calls waiting for their reply at once (default 1024); one more is refused with kind
   * `limit`. */
  maxInFlight?: number | undefined;
  /** Out-of-order chunks a stream holds while it waits for a missing `Seq` (default 1024);
   * past it the stream fails with kind `limit`. */
  maxStreamBuffer?: number | undefined;
  /** The same bound in bytes, for all streams together (default 8 MiB). */
  maxStreamBufferBytes?: number | undefined;
  /** From the socket's open to HELLO_ACK (and the AUTH of `apiKey`), in ms (default 10 000);
   * the socket's open has the same bound. At least 1. */
  handshakeTimeoutMs?: number | undefined;
  /** Sent as `AUTH {scheme: "bearer"}` right after the handshake; `connect` resolves once the
   * server has taken it, and rejects with kind `auth` when it is refused. */
  apiKey?: string | undefined;
  /** PING when idle for half the server's session timeout, or sooner to leave 65 s before it
   * ends (a hidden tab's timers run once a minute), but not before a quarter of it (default
   * true). A PING without a PONG
   * within `ttlS` closes the connection (an `error` event of kind `timeout`) when the server
   * answered a PING before and nothing else arrived since. */
  keepalive?: boolean | undefined;
}

export interface RktConnectOptions extends RktOptions, Omit<ConnectOptions, "onEvent"> {
  /** Each event as it arrives, instead of `events()`. It may be called before `connect`
   * resolves; an exception it throws is logged (`console.error`) and does not stop the client. */
  onEvent?: ((event: RktEvent) => void) | undefined;
}

export type RktPriority = "LOW" | "NORMAL" | "HIGH" | "URGENT";

export interface RktRequestOptions extends CallOptions {
  /** The REQUEST's `Priority` (none by default). */
  priority?: RktPriority | undefined;
  /** This request's TTL in seconds: how long it waits for its reply (default `ttlS`). NaN,
   * Infinity and negative numbers are refused with kind `invalid`. */
  ttlS?: number | undefined;
  /** The REQUEST's `To`: the agent it is for, when the server routes. */
  to?: string | undefined;
  /** The REQUEST body's `context`: a JSON value. */
  context?: unknown | undefined;
}

/** What the server said in HELLO_ACK. */
export interface RktServerInfo {
  /** The `ws://` or `wss://` URL connected to. */
  url: string;
  /** The protocol version the server agreed to. */
  agreedVersion: number;
  /** Seconds without a message before the server ends the session (the client's keepalive
   * PINGs at half of it). */
  sessionTimeout: number;
  /** The server's `From`. */
  from?: string;
  /** The server's `User-Agent`. */
  userAgent?: string;
  /** The server's `Capabilities`. */
  capabilities: string[];
}

/** Events that answer no call: an `error` (a message the client could not decode or place, an
 * unsolicited ERROR, an unanswered keepalive), the server's `goodbye`, and `closed` last. RKT
 * does not reconnect: after `closed`, connect again. */
export type RktEvent =
  | { type: "error"; error: ErrorInfo }
  | { type: "goodbye" }
  | { type: "closed"; code: number; reason: string };

/** Every event of the sans-IO session (`RktSession.pollEvent`). */
export type RktSessionEvent =
  | RktEvent
  | ({ type: "ready" } & Omit<RktServerInfo, "url">)
  | { type: "response" | "streamBegin" | "streamEnd"; id: string; body?: unknown }
  | { type: "streamData"; id: string; seq: number; body?: unknown }
  | { type: "authOk"; id: string; auth: { session_token: string; scopes: string[]; expires_in?: number } }
  | { type: "pong"; id: string; rttMs: number }
  | { type: "failed"; id: string; error: ErrorInfo };

/** The MEMORY_GET reply as the server sends it (the reference agent: `{key, value, found}`). */
export interface RktMemoryEntry {
  key?: string;
  value?: unknown;
  found?: boolean;
  [field: string]: unknown;
}

/** Unread chunks a stream holds before it fails with kind `limit`, and the characters of all
 * of a client's streams together. */
const STREAM_CAPACITY = 1024;
const STREAM_BYTES = 1 << 26;

/** An RKT connection: `await RktClient.connect(address, opts)`, then `request`, `stream`,
 * `discover`, `memorySet`/`memoryGet`, `ping`; `close()` (or `await using`) ends it. Calls may
 * run at once; each rejects with an `AgentwireError`. It does not reconnect. */
export class RktClient extends Client<RktEvent> {
  readonly #driver: RktDriver;
  /** The characters of every stream's unread chunks. */
  readonly #unread = { n: 0 };
  /** HELLO_ACK: who the server is and what it offers. */
  readonly server: RktServerInfo;

  private constructor(driver: RktDriver, events: Events<RktEvent>, server: RktServerInfo) {
    super(events, { get over() { return driver.closed; }, close: () => driver.close() });
    this.#driver = driver;
    this.server = server;
  }

  /** Connects to `address` (`rkt://host`, `host[:port]`, `ws://…`) and completes the handshake:
   * the socket's open and then the handshake are each bounded by `handshakeTimeoutMs` (a socket
   * not open by then rejects with kind `timeout`), the whole by `timeoutMs` / `signal` when
   * given. */
  static connect(address: string, opts: RktConnectOptions = {}): Promise<RktClient> {
    opts ??= {};
    return open<RktEvent, RktDriver, RktClient>(
      opts as ConnectOptions,
      "closed",
      (events, onReady, onFail) =>
        new RktDriver(address, engineOptions(opts), opts.webSocket as (() => void) | undefined, events.emit, onReady, onFail),
      (driver, events, json) => {
        const { type, ...info } = JSON.parse(json) as { type: string } & RktServerInfo;
        void type;
        return new RktClient(driver, events, info);
      },
      "RKT session",
    );
  }

  #cancel = (id: string) => this.#driver.cancel(id);

  /** REQUEST `intent`; resolves with the parsed RESPONSE body. */
  request<T = unknown>(intent: string, params?: unknown, opts: RktRequestOptions = {}): Promise<T> {
    return call<string | undefined>(
      (res, rej) => this.#driver.request(intent, toJson(params), requestOptions(opts), res, rej),
      this.#cancel,
      opts,
    ).then((b) => parseBody<T>(b));
  }

  /** REQUEST `intent` with `Stream: true`: the chunks in order (a plain RESPONSE is one chunk).
   * Leaving the loop early cancels the stream; so do `signal` and `timeoutMs`, whose error is
   * the next read (the chunks not read yet are dropped). A stream the server fails gives the
   * chunks that came before its error. */
  stream<T = unknown>(intent: string, params?: unknown, opts: RktRequestOptions = {}): AsyncIterableIterator<T> {
    const { timeoutMs } = opts;
    let signal: AbortSignalLike | undefined;
    let id: string | undefined;
    let stopTimer = () => {};
    const cancel = () => id !== undefined && this.#driver.cancel(id);
    const queue = new Queue<T>(
      STREAM_CAPACITY,
      STREAM_BYTES,
      (q) => {
        // Which bound: this stream's chunks, or the characters of all the client's streams.
        q.end(agentwireError("limit", q.size < STREAM_CAPACITY ? `this client's streams hold ${STREAM_BYTES} characters unread: a reader fell behind` : `${STREAM_CAPACITY} chunks unread on this stream: its reader fell behind`));
        cancel();
      },
      cancel,
      this.#unread,
    );
    const onAbort = () => stop(abortError(signal!));
    queue.onEnd = () => {
      stopTimer();
      signal?.removeEventListener("abort", onAbort);
    };
    // The chunks not read yet are dropped: the next read is the abort or the timeout, "may have
    // run" only when its frame left (`cancel` is true for one held back); the engine's own end
    // of the stream (`cancelled`) is not it.
    let stopping = false;
    const stop = (e: AgentwireError) => {
      stopping = true;
      queue.fail(cancel() === true ? e : unanswered(e));
    };
    const end = (e?: unknown) => stopping || queue.end(e === undefined || e === null ? undefined : toError(e));
    try {
      // Not an AbortSignal: kind `invalid`; one aborted already: nothing is sent.
      signal = signalOf(opts);
      if (signal?.aborted) {
        queue.end(abortError(signal));
        return queue;
      }
      stopTimer = after(timeoutMs, () => stop(agentwireError("timeout", `stream not finished within ${timeoutMs} ms`)));
      id = this.#driver.stream(intent, toJson(params), requestOptions(opts), (b?: string) => queue.push(parseBody<T>(b), b?.length ?? 0), end);
    } catch (e) {
      end(e);
      return queue;
    }
    if (queue.ended) return queue;
    signal?.addEventListener("abort", onAbort, { once: true });
    return queue;
  }

  /** DISCOVER: the capability manifest. */
  discover<T = unknown>(opts: CallOptions = {}): Promise<T> {
    return call<string | undefined>((res, rej) => this.#driver.discover(res, rej), this.#cancel, opts).then((b) => parseBody<T>(b));
  }

  /** MEMORY_SET `key` = `value`; resolves with the server's acknowledgement. `ttlS`: the
   * entry's TTL in whole seconds (left out: the server's default); NaN, Infinity and negative numbers are refused with kind `invalid`. */
  memorySet(key: string, value: unknown, opts: CallOptions & { namespace?: string | undefined; ttlS?: number | undefined } = {}): Promise<unknown> {
    return call<string | undefined>(
      (res, rej) => this.#driver.memorySet(key, jsonArg(value ?? null, "the value"), opts.namespace, opts.ttlS, res, rej),
      this.#cancel,
      opts,
    ).then((b) => parseBody<unknown>(b));
  }

  /** MEMORY_GET `key`: the reply as the server sends it (`{key, value, found}`); a reply that
   * is not an object, or whose `found` is not a boolean, rejects with kind `decode`. Of `opts`,
   * only `namespace`, `signal` and `timeoutMs` are read. */
  memoryGet(key: string, opts: CallOptions & { namespace?: string | undefined } = {}): Promise<RktMemoryEntry> {
    return call<string | undefined>((res, rej) => this.#driver.memoryGet(key, opts.namespace, res, rej), this.#cancel, opts).then(
      (b) => parseBody<RktMemoryEntry>(b),
    );
  }

  /** PING; resolves with the round trip in milliseconds. */
  ping(opts: CallOptions = {}): Promise<number> {
    return call<string>((res, rej) => this.#driver.ping(res, rej), this.#cancel, opts).then(
      (j) => (JSON.parse(j) as { rttMs: number }).rttMs,
    );
  }

}

function toJson(v: unknown): string | undefined {
  return v === undefined ? undefined : jsonArg(v, "the params");
}

function requestOptions(opts: RktRequestOptions): string {
  return engineOptions(opts, "the request options");
}

/** The sans-IO RKT client session: feed it socket events with the time (ms since the epoch),
 * then drain `pollTransmit`, `pollEvent` and `pollTimeout` until empty (after a command too). It
 * serves one connection: after `closed` it ignores everything, and a new socket takes a new
 * session. */
export interface RktSession {
  /** The socket is open (opened with the subprotocol `rkt.1.0`, which the server requires):
   * the session sends HELLO. */
  handleOpen(now: number): void;
  handleText(now: number, text: string): void;
  handleBinary(now: number, bytes: Uint8Array): void;
  handleClose(now: number, code: number, reason: string): void;
  handleTimeout(now: number): void;
  pollTransmit(): Transmit | undefined;
  /** The next event as JSON text (parse it as `RktSessionEvent`). */
  pollEvent(): string | undefined;
  pollTimeout(): number | undefined;
  request(now: number, intent: string, paramsJson: string | undefined, optionsJson: string | undefined, stream: boolean): string;
  discover(now: number): string;
  memorySet(now: number, key: string, valueJson: string, namespace: string | undefined, ttlS: number | undefined): string;
  memoryGet(now: number, key: string, namespace: string | undefined): string;
  ping(now: number): string;
  cancel(id: string): boolean;
  goodbye(now: number): void;
  /** Frees the wasm memory now (else the garbage collector does). */
  free(): void;
  /** `free()`, for `using`. */
  [Symbol.dispose](): void;
}

export const RktSession: new (optionsJson?: string) => RktSession = WasmRktSession as unknown as new (
  optionsJson?: string,
) => RktSession;

/** One RKT message as the codec reads it. */
export interface RktMessage {
  type: string;
  headers: Record<string, string>;
  /** The body as sent (JSON text), or `null`. */
  body: string | null;
}

/** Decodes one RKT message (at most `maxSize` bytes, default 1 MiB). Throws an
 * `AgentwireError` of kind `decode` whose `info.reason` names what was wrong (e.g.
 * `bad_header_value`) and `info.field` where. */
export function rktDecode(wire: string, maxSize?: number): RktMessage {
  try {
    return JSON.parse(wasmRktDecode(wire, maxSize)) as RktMessage;
  } catch (e) {
    throw toError(e);
  }
}
