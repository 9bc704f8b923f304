/** `agentwire/rkt`: RKT alone. The same API as `agentwire`'s RKT part, with a wasm module
 * built with RKT only; `AgentwireError` is the one class of every entry. */
export * from "../common.js";
export * from "../rkt.js";
