/** What every entry exports besides its protocols: the error type, the engine's lists, and the
 * shared types. */
export { AgentwireError, type ErrorInfo, type ErrorKind } from "./errors.js";
export { errorKinds, eventTypes } from "./info.js";
export { fetchWebSocket } from "./fetch-socket.js";
export type { AbortSignalLike, CallOptions, ConnectOptions, WebSocketConstructor } from "./calls.js";
export type { Transmit } from "./session.js";
export type { Client } from "./client.js";
