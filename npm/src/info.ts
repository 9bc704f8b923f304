/** What the loaded wasm module says about the engine, for checks of the package's own types. */
import { errorKinds as wasmErrorKinds, eventTypes as wasmEventTypes } from "./wasm/agentwire_wasm.js";

/** The engine's error kinds (what `ErrorKind` must list). */
export function errorKinds(): string[] {
  return wasmErrorKinds();
}

/** The engine's event `type`s of a protocol (what the package's event types must list); empty
 * for a protocol the entry was built without (`agentwire/rkt` knows only `rkt`). */
export function eventTypes(protocol: "rkt" | "moltzap" | "switch"): string[] {
  return wasmEventTypes(protocol);
}
