/**
 * agentwire: RKT, MoltZap and Switch Rooms clients, one Rust engine compiled to WebAssembly.
 * Import from `agentwire`; the entry for your host (browser, Node, Workers) loads the module.
 * `agentwire/rkt`, `agentwire/moltzap` and `agentwire/switch` load a smaller module with one
 * protocol each.
 */
export * from "./common.js";
export * from "./rkt.js";
export * from "./moltzap.js";
export * from "./switch.js";
