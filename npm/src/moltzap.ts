/** MoltZap over WebSocket: `MoltZapClient` (the engine's driver behind an idiomatic API) and
 * `MoltZapSession` (the sans-IO session, for your own transport). */
import { MoltZapDriver, MoltZapSession as WasmMoltZapSession } from "./wasm/agentwire_wasm.js";
import { call, engineOptions, Events, jsonArg, open, type CallOptions, type ConnectOptions } from "./calls.js";
import { agentwireError, type ErrorInfo } from "./errors.js";
import type { Transmit } from "./session.js";
import { Client } from "./client.js";

export type MoltZapGeneration = "current" | "released";

/** The engine's options (`agentwire_moltzap::SessionConfig`) and the credentials; absent
 * fields keep its defaults. NaN, Infinity and negative numbers are refused with kind `invalid` (no option has an infinite value). */
export interface MoltZapOptions {
  /** `current` (default), `released`, or `auto` (the current handshake, then the released one). */
  generation?: MoltZapGeneration | "auto" | undefined;
  /** How long a call waits for its response, in ms (default 30 000, at least 1). */
  requestTimeoutMs?: number | undefined;
  /** Calls waiting for their response at once (default 1024); one more is refused with kind
   * `limit`. */
  maxInFlight?: number | undefined;
  /** From the socket's open to the connect's answer, in ms (default 10 000, at least 1); the
   * socket's open has the same bound. */
  handshakeTimeoutMs?: number | undefined;
  /** After this many ms without a frame from the server, the engine sends a `system/ping`
   * probe; with no frame within `requestTimeoutMs` of it leaving, the connection is taken as
   * dead: closed (close frame 1000), `disconnected` with code 1006, pending calls rejected with
   * kind `closed` (default 60 000; 0 turns it off). A half-open socket (a laptop that slept, a
   * NAT that forgot the flow) ends so within about 90 s with the defaults. */
  idleProbeMs?: number | undefined;
  /** Prefix of request ids (default `aw-`). */
  idPrefix?: string | undefined;
  /** Largest frame taken in (default 8 MiB, at least 1, at most 64 MiB; a full `agent/message/list`
   * window fits). */
  maxMessageBytes?: number | undefined;
  /** Largest frame sent: a larger request is refused with kind `limit` (default 1 MiB). */
  maxSendBytes?: number | undefined;
  /** `moltzap_agent_…` (both generations). */
  agentKey?: string | undefined;
  /** A user session token (released generation). */
  sessionToken?: string | undefined;
}

/** `MoltZapSession`'s options: the client's, and `pingIntervalMs`, which needs a transport that
 * reports WebSocket pings (`handlePing`); `MoltZapClient` refuses it, since a browser's
 * WebSocket shows no pings. */
export interface MoltZapSessionOptions extends MoltZapOptions {
  /** The server's ping interval, in ms (no default): three intervals without a ping, from
   * `connected` on, report `missedPings` and start the `idleProbeMs` probe. */
  pingIntervalMs?: number | undefined;
}

export interface MoltZapConnectOptions extends MoltZapOptions, Omit<ConnectOptions, "onEvent"> {
  /** Each event as it arrives, instead of `events()`. It may be called before `connect`
   * resolves; an exception it throws is logged (`console.error`) and does not stop the client. */
  onEvent?: ((event: MoltZapEvent) => void) | undefined;
}

/** Where the client is connected and what the server said. */
export interface MoltZapInfo {
  url: string;
  /** The generation spoken (the one `auto` chose). */
  generation: MoltZapGeneration;
  /** The HelloOk result as received. */
  hello: unknown;
}

/** Server pushes and what answers no call; `disconnected` comes last. MoltZap does not
 * reconnect: after `disconnected`, connect again (and read what was missed with
 * `recentMessages`). A push's `data` is its params as sent, left out when the server sent none
 * or `null`. */
export type MoltZapEvent =
  | { type: "messageReceived"; conversationId?: string; messageId?: string; senderId?: string; data?: unknown }
  | {
      type: "conversationCreated" | "conversationUpdated" | "conversationArchived" | "conversationUnarchived";
      conversationId?: string;
      data?: unknown;
    }
  | { type: "presenceChanged"; agentId?: string; status?: string; data?: unknown }
  | { type: "other"; name: string; data?: unknown }
  | { type: "diagnostic"; error: ErrorInfo }
  | { type: "missedPings"; count: number }
  | { type: "disconnected"; code: number; reason: string };

/** Every event of the sans-IO session (`MoltZapSession.pollEvent`). */
export type MoltZapSessionEvent =
  | MoltZapEvent
  | { type: "connected"; id: string; generation: MoltZapGeneration; hello: unknown }
  | { type: "connectFailed" | "failed"; id: string; error: ErrorInfo }
  /** `result` is left out when it is `null`. */
  | { type: "response"; id: string; result?: unknown };

/** Where `send` goes: an agent by name (a DM is created or reused) or a conversation. */
export type MoltZapTarget = { agent: string } | { conversationId: string };

/** A MoltZap connection: `await MoltZapClient.connect(url, {agentKey})`, then `send`, `call`,
 * `recentMessages`, and the server's pushes as events; `close()` (or `await using`) ends it.
 * Calls may run at once; each rejects with an `AgentwireError`. It does not reconnect. */
export class MoltZapClient extends Client<MoltZapEvent> {
  readonly #driver: MoltZapDriver;
  /** Where it is connected, the generation spoken, and the server's HelloOk. */
  readonly info: MoltZapInfo;

  private constructor(driver: MoltZapDriver, events: Events<MoltZapEvent>, info: MoltZapInfo) {
    super(events, { get over() { return driver.closed; }, close: () => driver.close() });
    this.#driver = driver;
    this.info = info;
  }

  /** Connects to `url` (`ws://host:port/ws`) and authenticates with `agentKey` (or
   * `sessionToken`): the socket's open and then the connect are each bounded by
   * `handshakeTimeoutMs` (a socket not open by then rejects with kind `timeout`), the whole by
   * `timeoutMs` and `signal` when given. Without credentials it rejects with kind `invalid`. */
  static connect(url: string, opts: MoltZapConnectOptions): Promise<MoltZapClient> {
    // A JavaScript caller may leave the options out: the engine then says what is missing.
    opts ??= {};
    return open<MoltZapEvent, MoltZapDriver, MoltZapClient>(
      opts as ConnectOptions,
      "disconnected",
      (events, onReady, onFail) =>
        new MoltZapDriver(url, engineOptions(opts), opts.webSocket as (() => void) | undefined, events.emit, onReady, onFail),
      (driver, events, json) => new MoltZapClient(driver, events, JSON.parse(json) as MoltZapInfo),
      "MoltZap connection",
    );
  }

  #cancel = (id: string) => this.#driver.cancel(id);

  /** Any method, with `params` (an object or an array); resolves with the parsed result.
   * `timeoutMs` is the engine's request timeout for this call. */
  call<T = unknown>(method: string, params?: unknown, opts: CallOptions = {}): Promise<T> {
    const { timeoutMs, ...rest } = opts;
    const json = () => (params === undefined ? undefined : jsonArg(params, "the params"));
    return call<string>((res, rej) => this.#driver.call(method, json(), timeoutMs, res, rej), this.#cancel, rest).then(
      (r) => JSON.parse(r) as T,
    );
  }

  /** `messages/send` of one text part; resolves with the result (`{message}`). */
  send<T = { message: unknown }>(to: MoltZapTarget, text: string, opts: CallOptions = {}): Promise<T> {
    const [agent, conversation] = "agent" in to ? [to.agent, undefined] : [undefined, to.conversationId];
    return call<string>((res, rej) => this.#driver.sendText(agent, conversation, text, res, rej), this.#cancel, opts).then(
      (r) => JSON.parse(r) as T,
    );
  }

  /** Recent messages: one conversation's, or the window across all (the method depends on the
   * generation; the engine picks it). `limit` (default 20) is a whole number from 0 to 2^32 - 1,
   * else the call rejects with kind `invalid` (the server takes 1 to 100). */
  recentMessages<T = unknown>(opts: CallOptions & { conversationId?: string | undefined; limit?: number | undefined } = {}): Promise<T> {
    const { conversationId, limit = 20, ...rest } = opts;
    return call<string>(
      (res, rej) => {
        // The engine's u32 would take -1 as 4294967295, 2.7 as 2 and NaN as 0.
        if (!Number.isInteger(limit) || limit < 0 || limit > 0xffff_ffff) throw agentwireError("invalid", `limit is ${limit}: a whole number from 0 to 4294967295`);
        return this.#driver.recentMessages(conversationId, limit, res, rej);
      },
      this.#cancel,
      rest,
    ).then((r) => JSON.parse(r) as T);
  }

}

/** The sans-IO MoltZap client session: feed it socket events with the time (ms since the
 * epoch), then drain `pollTransmit`, `pollEvent` and `pollTimeout` until empty (after a command
 * too). It serves the next socket: after `disconnected`, `handleOpen` and `connect` again. */
export interface MoltZapSession {
  handleOpen(now: number): void;
  handleText(now: number, text: string): void;
  handleBinary(now: number, bytes: Uint8Array): void;
  handlePing(now: number): void;
  handleClose(now: number, code: number, reason: string): void;
  handleTimeout(now: number): void;
  pollTransmit(): Transmit | undefined;
  /** The next event as JSON text (parse it as `MoltZapSessionEvent`). */
  pollEvent(): string | undefined;
  pollTimeout(): number | undefined;
  /** Connects with `{"agentKey": …}` / `{"sessionToken": …}` JSON, a bare agent key, or the
   * options' credentials. */
  connect(now: number, credentials?: string): string;
  call(now: number, method: string, paramsJson?: string, timeoutMs?: number): string;
  cancel(id: string): boolean;
  close(code: number, reason: string): void;
  readonly state: "closed" | "open" | "connecting" | "ready";
  readonly generation: MoltZapGeneration;
  /** Frees the wasm memory now (else the garbage collector does). */
  free(): void;
  /** `free()`, for `using`. */
  [Symbol.dispose](): void;
}

/** `optionsJson`: `JSON.stringify` of a `MoltZapSessionOptions`. */
export const MoltZapSession: new (optionsJson?: string) => MoltZapSession = WasmMoltZapSession as unknown as new (
  optionsJson?: string,
) => MoltZapSession;
