/**
 * The one error shape of every protocol, `{kind, code?, message, retryable}`, as an `Error`
 * subclass. The kinds are the engine's (`agentwire_core::ErrorKind`); a test checks this list
 * against the wasm module's `errorKinds()`.
 */

export type ErrorKind =
  | "decode"
  | "protocol"
  | "remote"
  | "auth"
  | "rate_limited"
  | "version"
  | "timeout"
  | "cancelled"
  | "closed"
  | "limit"
  | "state"
  | "invalid"
  | "internal";

/** What the engine reports: the shared fields, plus the protocol's own (RKT `name`, `details`,
 * `requestId`, `retryAfterS`; MoltZap `name`, `tag`, `data`, `requestId`; Switch `status`,
 * `detail`; `rktDecode`'s `reason`, `field`). Every key the engines write is declared here (a
 * Rust test checks it). */
export interface ErrorInfo {
  /** What went wrong, in agentwire's words: the field to branch on. */
  kind: ErrorKind;
  /** RKT and MoltZap: the protocol's numeric code. Switch: the server's string code (such as
   * `taken_over`); its HTTP status is `status`. */
  code?: number | string;
  /** What went wrong, in words; it never quotes a key or a token. */
  message: string;
  /** Whether the same call may succeed if made again, on this client while it is connected
   * (`timeout`, `rate_limited`, a server's 5xx) or, after `closed`, on a new connection. */
  retryable: boolean;
  /** RKT: the ERROR's `name` (such as `RATE_LIMITED`). MoltZap: the `_tag` when the server sent
   * one, else the code's name (such as `Unauthorized`). */
  name?: string;
  /** RKT: the ERROR's `details`, parsed. */
  details?: unknown;
  /** MoltZap: the `_tag` exactly as the server sent it (current generation). */
  tag?: string;
  /** MoltZap: the error's `data`, parsed; for a frame that could not be decoded,
   * `{field}` naming the key or part at fault. */
  data?: unknown;
  /** RKT: the message the error answers (its `request_id`, else its `Reply-To`). MoltZap: the
   * id of the request, a string or a number as on the wire. */
  requestId?: string | number;
  /** RKT: the `Retry-After` header, in seconds (a 429). */
  retryAfterS?: number;
  /** Switch: the HTTP status of a refused call or socket. */
  status?: number;
  /** Switch: the server's `detail`, parsed when it is JSON. */
  detail?: unknown;
  /** `rktDecode`: what was wrong, the decode error's name (such as `bad_header_value`). */
  reason?: string;
  /** `rktDecode`: the part at fault (a header's name, `start-line`, `headers`, `message`). */
  field?: string;
  [field: string]: unknown;
}

/** Every error agentwire rejects with or reports: the engine's typed error, whichever protocol,
 * entry or host. One class for every entry (`instanceof` holds across them). Branch on `kind`;
 * `code` and `info` carry the protocol's own detail. */
export class AgentwireError extends Error {
  /** What went wrong, in agentwire's words (`info.kind`). */
  readonly kind: ErrorKind;
  /** The protocol's code (`info.code`): a number for RKT and MoltZap, a string for Switch. */
  readonly code: number | string | undefined;
  /** Whether making the same call again is safe and may succeed (`info.retryable`): at once for
   * `timeout` or `rate_limited` (after `info.retryAfterS` when given), on a new connection after
   * `closed` (a closed client stays closed). A call sent and unanswered that is not idempotent
   * (a PAY, a post) may have been carried out: the engine says `false`, and so does the package for
   * a call it gives up on after making it (`timeoutMs`, `AbortSignal.timeout`). */
  readonly retryable: boolean;
  /** Everything the engine said, the protocol's own fields included. */
  readonly info: Readonly<ErrorInfo>;

  constructor(info: ErrorInfo, options?: { cause?: unknown }) {
    super(info.message, options);
    this.name = "AgentwireError";
    this.kind = info.kind;
    this.code = info.code;
    this.retryable = info.retryable;
    this.info = info;
  }
}

/** An error of the shared shape made here (not by the engine). */
export function agentwireError(kind: ErrorKind, message: string, cause?: unknown): AgentwireError {
  const retryable = kind === "timeout" || kind === "closed" || kind === "rate_limited";
  return new AgentwireError({ kind, message, retryable }, cause === undefined ? undefined : { cause });
}

/** Anything thrown or rejected by the wasm module, as an `AgentwireError`. A trap (a panic: a
 * bug) becomes kind `internal` with the panic's message. */
export function toError(e: unknown): AgentwireError {
  if (e instanceof AgentwireError) return e;
  if (e instanceof WebAssembly.RuntimeError) {
    return agentwireError("internal", lastPanic() ?? `agentwire bug: ${e.message}`, e);
  }
  const message = e instanceof Error ? e.message : String(e);
  return agentwireError("internal", message, e);
}

/** What an entry registers of its instance of the wasm module: `agentwire` and each of
 * `agentwire/rkt`, `agentwire/moltzap`, `agentwire/switch` has its own, and this module (which
 * imports none) is shared by them all, so `AgentwireError` is one class for every entry. */
export interface EngineErrors {
  setErrorFactory(factory: (json: string) => Error): void;
  lastPanic(): string | undefined;
}

const engines: { engine: EngineErrors; reported?: string }[] = [];

/** The message of a panic (after one, that instance is unusable): one not reported before
 * first, so a trap in one instance is not reported with another's older panic. */
function lastPanic(): string | undefined {
  let old: string | undefined;
  for (const e of engines) {
    const message = e.engine.lastPanic();
    if (message === undefined) continue;
    if (message !== e.reported) {
      e.reported = message;
      return message;
    }
    old ??= message;
  }
  return old;
}

/** Called by each entry once its module is instantiated: errors from the engine become
 * `AgentwireError`s, and a trap is reported with the panic's message. */
export function registerErrors(engine: EngineErrors): void {
  engine.setErrorFactory((json: string) => {
    try {
      return new AgentwireError(JSON.parse(json) as ErrorInfo);
    } catch (e) {
      return agentwireError("internal", `unreadable error from the engine: ${json}`, e);
    }
  });
  engines.push({ engine });
}
