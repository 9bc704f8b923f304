/** `agentwire/switch`: Switch Rooms alone. The same API as `agentwire`'s Switch Rooms part, with a wasm module
 * built with Switch Rooms only; `AgentwireError` is the one class of every entry. */
export * from "../common.js";
export * from "../switch.js";
