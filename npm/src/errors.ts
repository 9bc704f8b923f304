/**
 * The one error shape of every protocol, `{kind, code?, message, retryable}`, as an `Error`
 * subclass. The kinds are the engine's (`agentwire_core::ErrorKind`); a test checks this list
 * against the wasm module's `errorKinds()`.
 */
import { errorKinds as wasmErrorKinds, eventTypes as wasmEventTypes, lastPanic, setErrorFactory } from "./wasm/agentwire_wasm.js";

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
 * `requestId`; Switch `status`, `detail`; MoltZap `data`, ...). */
export interface ErrorInfo {
  kind: ErrorKind;
  code?: number;
  message: string;
  retryable: boolean;
  [field: string]: unknown;
}

export class AgentwireError extends Error {
  readonly kind: ErrorKind;
  readonly code: number | undefined;
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

/** Called by each entry once the module is instantiated: errors from the engine become
 * `AgentwireError`s. */
export function registerErrors(): void {
  setErrorFactory((json: string) => {
    try {
      return new AgentwireError(JSON.parse(json) as ErrorInfo);
    } catch (e) {
      return agentwireError("internal", `unreadable error from the engine: ${json}`, e);
    }
  });
}

/** The engine's error kinds (what `ErrorKind` must list). */
export function errorKinds(): string[] {
  return wasmErrorKinds();
}

/** The engine's event `type`s of a protocol (what the package's event types must list). */
export function eventTypes(protocol: "rkt" | "moltzap" | "switch"): string[] {
  return wasmEventTypes(protocol);
}
