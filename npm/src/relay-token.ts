/**
 * `agentwire/relay-token`: mint relay tokens in an app's backend (Node 20+, Workers, Deno,
 * browsers), so a browser can use Switch Rooms through the relay without the agent key.
 *
 * WebCrypto (`crypto.subtle`, HMAC SHA-256) and `TextEncoder` only: importing this entry never
 * loads the WebAssembly engine. The token is the one the Rust crate mints
 * (`agentwire_relay::token::mint`), byte for byte; the format is in the repository's
 * `docs/relay-token.md`:
 *
 * `base64url(claims JSON) + "." + base64url(HMAC-SHA256(secret, first part))`, claims
 * `{"agent_id", "exp", "origin"?, "rooms"?}`, base64url without padding.
 *
 * @example
 * ```ts
 * import { mintRelayToken } from "agentwire/relay-token";
 * const token = await mintRelayToken(process.env.RELAY_TOKEN_SECRET!, {
 *   agentId: "alice",
 *   expiresIn: 300,
 *   origin: "https://app.example.com",
 *   rooms: ["lobby"],
 * });
 * ```
 */
import { AgentwireError } from "./errors.js";

/** The longest token, in bytes (the relay refuses longer ones). */
export const MAX_TOKEN_LEN = 4096;
/** The most rooms a token may list. */
export const MAX_ROOMS = 64;
/** The shortest secret, in bytes. */
export const MIN_SECRET_LEN = 32;
/** The longest agent id or room id, in UTF-8 bytes. */
export const MAX_ID_LEN = 256;
/** The longest origin, in bytes. */
export const MAX_ORIGIN_LEN = 256;
/** The largest `exp`: 2^53 - 1. */
export const MAX_EXP = Number.MAX_SAFE_INTEGER;
/** The lifetime when neither `exp` nor `expiresIn` is given, in seconds. */
export const DEFAULT_EXPIRES_IN = 300;

/** What a relay token grants. */
export interface RelayTokenClaims {
  /** The agent the browser acts as: 1 to 256 characters of `A-Z a-z 0-9 - _ . :`. */
  agentId: string;
  /** Expiry, Unix seconds (an integer). Give this or `expiresIn`, not both. */
  exp?: number;
  /** Seconds from `now` until expiry (a positive integer; default 300). */
  expiresIn?: number;
  /** The one browser origin allowed, as browsers write `Origin`: `scheme://host[:port]`,
   * lowercase, no path. Absent: every origin the relay allows. */
  origin?: string;
  /** The rooms the browser may use: 1 to 64 distinct ids, each 1 to 256 UTF-8 bytes without
   * `/`, `,` or control characters. Absent: all of the agent's rooms. */
  rooms?: string[];
}

/** Refused claims or secret: an `AgentwireError` of kind `invalid`, not retryable. (The error
 * module loads no engine, so this entry still loads no wasm.) */
export class RelayTokenError extends AgentwireError {
  constructor(message: string) {
    super({ kind: "invalid", message, retryable: false });
    this.name = "RelayTokenError";
  }
}

const encoder = new TextEncoder();
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const AGENT_ID = /^[A-Za-z0-9._:-]+$/;
const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/(?:[a-z0-9.-]+|\[[0-9a-f:.]*:[0-9a-f:.]*\])(?::([1-9][0-9]{0,4}))?$/;
// A `/`, a `,`, a control character (Unicode Cc), or a lone surrogate (which UTF-8 cannot hold).
const BAD_ROOM = /[/,\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function fail(message: string): never {
  throw new RelayTokenError(`relay token: ${message}`);
}

function base64url(bytes: Uint8Array): string {
  let out = "";
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]! + ALPHABET[n & 63]!;
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const n = bytes[i]! << 16;
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]!;
  } else if (rest === 2) {
    const n = (bytes[i]! << 16) | (bytes[i + 1]! << 8);
    out += ALPHABET[n >> 18]! + ALPHABET[(n >> 12) & 63]! + ALPHABET[(n >> 6) & 63]!;
  }
  return out;
}

function checkAgentId(id: unknown): string {
  if (typeof id !== "string") fail("agentId must be a string");
  if (id.length < 1 || id.length > MAX_ID_LEN) fail(`agentId is ${id.length} characters, expected 1 to ${MAX_ID_LEN}`);
  if (!AGENT_ID.test(id)) fail(`agentId ${JSON.stringify(id)} has a character outside A-Z a-z 0-9 - _ . :`);
  return id;
}

function checkOrigin(origin: unknown): string {
  if (typeof origin !== "string") fail("origin must be a string");
  if (origin.length > MAX_ORIGIN_LEN) fail(`origin is ${origin.length} characters, over ${MAX_ORIGIN_LEN}`);
  const m = ORIGIN.exec(origin);
  if (m === null || (m[1] !== undefined && Number(m[1]) > 65535)) {
    fail(`origin ${JSON.stringify(origin)} is not scheme://host[:port] (lowercase, no path)`);
  }
  return origin;
}

function checkRooms(rooms: unknown): string[] {
  if (!Array.isArray(rooms)) fail("rooms must be an array of strings");
  if (rooms.length < 1 || rooms.length > MAX_ROOMS) {
    fail(`rooms lists ${rooms.length} rooms, expected 1 to ${MAX_ROOMS} (omit it for every room)`);
  }
  const seen = new Set<string>();
  return rooms.map((room: unknown, i) => {
    if (typeof room !== "string") fail(`room ${i + 1} is not a string`);
    if (BAD_ROOM.test(room)) fail(`room ${i + 1} (${JSON.stringify(room)}) has a \`/\`, a \`,\` or a control character`);
    const bytes = encoder.encode(room).length;
    if (bytes < 1 || bytes > MAX_ID_LEN) fail(`room ${i + 1} is ${bytes} bytes, expected 1 to ${MAX_ID_LEN}`);
    if (seen.has(room)) fail(`room ${JSON.stringify(room)} is listed twice`);
    seen.add(room);
    return room;
  });
}

function checkExp(claims: RelayTokenClaims, now: number): number {
  const { exp, expiresIn } = claims;
  if (exp !== undefined && expiresIn !== undefined) fail("give exp or expiresIn, not both");
  if (exp !== undefined) {
    if (typeof exp !== "number" || !Number.isSafeInteger(exp) || exp < 0) {
      fail(`exp must be an integer from 0 to ${MAX_EXP} (Unix seconds)`);
    }
    return exp;
  }
  const life = expiresIn ?? DEFAULT_EXPIRES_IN;
  if (typeof life !== "number" || !Number.isSafeInteger(life) || life < 1) fail("expiresIn must be a positive integer (seconds)");
  if (typeof now !== "number" || !Number.isFinite(now) || now < 0) fail("now must be milliseconds since the Unix epoch");
  const computed = Math.floor(now / 1000) + life;
  if (!Number.isSafeInteger(computed)) fail(`exp would be over ${MAX_EXP}`);
  return computed;
}

function secretBytes(secret: string | Uint8Array): Uint8Array<ArrayBuffer> {
  let bytes: Uint8Array<ArrayBuffer>;
  if (typeof secret === "string") bytes = encoder.encode(secret);
  // Not `instanceof`: a Uint8Array (or Buffer) of another realm (a `vm` context, Jest's, an
  // iframe). `isView` (any realm's typed array or DataView), as the tag alone is any object's.
  else if (ArrayBuffer.isView(secret) && secret[Symbol.toStringTag] === "Uint8Array") bytes = new Uint8Array(secret);
  else fail("the secret must be a string or a Uint8Array");
  if (bytes.length < MIN_SECRET_LEN) fail(`the secret is ${bytes.length} bytes, expected at least ${MIN_SECRET_LEN}`);
  return bytes;
}

/**
 * Mints a relay token for `claims`, signed with `secret` (a string, used as its UTF-8 bytes,
 * or raw bytes; at least 32 bytes; the relay holds the same secret).
 *
 * `exp` is absolute (Unix seconds); `expiresIn` is relative to `now` (milliseconds since the
 * epoch, default `Date.now()`), 300 seconds when neither is given. Keep tokens short-lived: the
 * relay refuses a token whose `exp` is further away than its configured maximum lifetime.
 *
 * @throws {RelayTokenError} kind `invalid`, when a claim or the secret breaks a rule (the same
 * rules as the Rust `mint`) or the token would exceed 4096 bytes. The message never holds the
 * secret.
 */
export async function mintRelayToken(
  secret: string | Uint8Array,
  claims: RelayTokenClaims,
  now: number = Date.now(),
): Promise<string> {
  if (typeof claims !== "object" || claims === null) fail("claims must be an object");
  const key = secretBytes(secret);
  // Keys in this order, optional ones only when set: the canonical form the Rust crate writes.
  const wire: { agent_id: string; exp: number; origin?: string; rooms?: string[] } = {
    agent_id: checkAgentId(claims.agentId),
    exp: checkExp(claims, now),
  };
  if (claims.origin !== undefined) wire.origin = checkOrigin(claims.origin);
  if (claims.rooms !== undefined) wire.rooms = checkRooms(claims.rooms);

  const payload = base64url(encoder.encode(JSON.stringify(wire)));
  const length = payload.length + 1 + 43;
  if (length > MAX_TOKEN_LEN) fail(`the token for agent ${wire.agent_id} would be ${length} bytes, over ${MAX_TOKEN_LEN}`);
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) fail("WebCrypto (crypto.subtle) is not available in this runtime");
  const hmacKey = await subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const sig = await subtle.sign("HMAC", hmacKey, encoder.encode(payload));
  return `${payload}.${base64url(new Uint8Array(sig))}`;
}
