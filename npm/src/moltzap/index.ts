/** `agentwire/moltzap`: MoltZap alone. The same API as `agentwire`'s MoltZap part, with a wasm module
 * built with MoltZap only; `AgentwireError` is the one class of every entry. */
export * from "../common.js";
export * from "../moltzap.js";
