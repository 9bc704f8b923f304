/**
 * agentwire: RKT, MoltZap and Switch Rooms clients, one Rust engine compiled to WebAssembly.
 * Import from `agentwire`; the entry for your host (browser, Node, Workers) loads the module.
 */
export { AgentwireError, errorKinds, eventTypes, type ErrorInfo, type ErrorKind } from "./errors.js";
export type { AbortSignalLike, CallOptions, ConnectOptions, WebSocketConstructor } from "./calls.js";
export type { Transmit } from "./session.js";
export type { Client } from "./client.js";
export * from "./rkt.js";
export * from "./moltzap.js";
export * from "./switch.js";
