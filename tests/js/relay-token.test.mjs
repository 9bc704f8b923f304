// `agentwire/relay-token` against the golden vectors (tests/vectors/relay-token/): every valid
// vector minted byte for byte, every invalid claim refused with kind "invalid".
//
//   node --test tests/js/relay-token.test.mjs          (after npm/build.sh: imports agentwire/relay-token)
//
// AGENTWIRE_RELAY_TOKEN_MODULE=/path/to/relay-token.js points it at another build of the module
// (for example npm/src/relay-token.ts compiled alone with tsc).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import vm from "node:vm";
import { pathToFileURL } from "node:url";

const override = process.env.AGENTWIRE_RELAY_TOKEN_MODULE;
const mod = await import(override ? pathToFileURL(override).href : "agentwire/relay-token");
const { mintRelayToken, RelayTokenError, MAX_TOKEN_LEN, MIN_SECRET_LEN, MAX_ROOMS } = mod;

const dir = new URL("../vectors/relay-token/", import.meta.url);
const cases = JSON.parse(readFileSync(new URL("vectors.json", dir), "utf8"));
const invalid = JSON.parse(readFileSync(new URL("invalid-claims.json", dir), "utf8"));

/** A vector's secret: `{utf8}` as the string itself (UTF-8 encoded by the helper), `{hex}` as bytes. */
function secret(s) {
  if (typeof s.utf8 === "string") return s.utf8;
  return Uint8Array.from(s.hex.match(/../g), (h) => parseInt(h, 16));
}

/** Wire claims (snake_case) as the helper's claims. */
function claims(wire) {
  const c = { agentId: wire.agent_id, exp: wire.exp };
  if ("origin" in wire) c.origin = wire.origin;
  if ("rooms" in wire) c.rooms = wire.rooms;
  return c;
}

async function refused(promise, pattern) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof RelayTokenError, String(e));
    assert.ok(e instanceof Error);
    assert.equal(e.kind, "invalid");
    assert.equal(e.retryable, false);
    assert.equal(e.info.kind, "invalid");
    if (pattern) assert.match(e.message, pattern);
    return true;
  });
}

test("its errors are AgentwireErrors, from an entry that loads no engine", async (t) => {
  if (override) return t.skip("another build of the module");
  const { AgentwireError } = await import("agentwire");
  await assert.rejects(mintRelayToken("short", { agentId: "a" }), (e) => e instanceof AgentwireError);
  // What the entry imports: the error module alone, which imports nothing.
  const dist = new URL("../../npm/dist/", import.meta.url);
  const imports = (f) => [...readFileSync(new URL(f, dist), "utf8").matchAll(/(?:from|import)\s*"([^"]+)"/g)].map((m) => m[1]);
  assert.deepEqual(imports("relay-token.js"), ["./errors.js"]);
  assert.deepEqual(imports("errors.js"), []);
});

test("constants match the Rust crate", () => {
  assert.equal(MAX_TOKEN_LEN, 4096);
  assert.equal(MIN_SECRET_LEN, 32);
  assert.equal(MAX_ROOMS, 64);
});

test("every valid vector is minted byte for byte", async () => {
  const valid = cases.filter((c) => "claims" in c.expect);
  assert.ok(valid.length >= 8, `${valid.length} valid vectors`);
  for (const c of valid) {
    const token = await mintRelayToken(secret(c.secret), claims(c.expect.claims), c.now_ms);
    assert.equal(token, c.token, c.name);
    assert.match(token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/, c.name);
  }
});

test("a hex secret and its bytes in a subarray mint the same", async () => {
  const c = cases.find((c) => c.name === "valid-hex-secret");
  const bytes = secret(c.secret);
  const padded = new Uint8Array(bytes.length + 8);
  padded.set(bytes, 4);
  assert.equal(await mintRelayToken(padded.subarray(4, 4 + bytes.length), claims(c.expect.claims)), c.token);
});

// A secret's bytes made in another realm (a `vm` context; Jest's test environment, where
// `Buffer` is the outer realm's; an iframe) are a Uint8Array that is not `instanceof` this
// realm's: they were refused as "not a string or a Uint8Array".
test("a secret's bytes from another realm mint the same", async () => {
  const c = cases.find((c) => c.name === "valid-hex-secret");
  const other = vm.runInNewContext("Uint8Array.from(b)", { b: [...secret(c.secret)] });
  assert.equal(await mintRelayToken(other, claims(c.expect.claims)), c.token);
  // Other views, and arrays of numbers, are still no secret.
  const ok = { agentId: "alice", exp: 1750000300 };
  // Nor an object that only names itself a Uint8Array: it was taken, as 32 zero bytes.
  const forged = { length: 32, [Symbol.toStringTag]: "Uint8Array" };
  for (const s of [new Uint16Array(32), new DataView(new ArrayBuffer(32)), vm.runInNewContext("new Uint16Array(32)"), Array(32).fill(1), forged]) {
    await refused(mintRelayToken(s, ok), /must be a string or a Uint8Array/);
  }
});

test("expiresIn counts from now (seconds, floored), 300 by default", async () => {
  const c = cases.find((c) => c.name === "valid-minimal");
  const { agent_id, exp } = c.expect.claims;
  const s = secret(c.secret);
  assert.equal(await mintRelayToken(s, { agentId: agent_id, expiresIn: 300 }, c.now_ms), c.token);
  assert.equal(await mintRelayToken(s, { agentId: agent_id }, c.now_ms), c.token);
  assert.equal(await mintRelayToken(s, { agentId: agent_id, expiresIn: 299 }, (exp - 299) * 1000 + 999), c.token);
  const now = await mintRelayToken(s, { agentId: agent_id });
  const payload = JSON.parse(Buffer.from(now.split(".")[0], "base64url").toString("utf8"));
  const expect = Math.floor(Date.now() / 1000) + 300;
  assert.ok(Math.abs(payload.exp - expect) <= 2, `${payload.exp} vs ${expect}`);
  assert.deepEqual(Object.keys(payload), ["agent_id", "exp"]);
});

test("every invalid claim is refused", async () => {
  const s = secret(invalid.secret);
  await mintRelayToken(s, claims(invalid.valid_claims));
  await refused(mintRelayToken(secret(invalid.short_secret), claims(invalid.valid_claims)), /at least 32/);
  assert.ok(invalid.invalid.length >= 20);
  for (const c of invalid.invalid) {
    await refused(mintRelayToken(s, claims(c.claims)), undefined).catch((e) => {
      throw new Error(`${c.name}: ${e.message}`);
    });
  }
});

test("what only JS can get wrong is refused", async () => {
  const s = secret(invalid.secret);
  const ok = { agentId: "alice", exp: 1750000300 };
  const bad = [
    { ...ok, exp: 1750000300, expiresIn: 60 },
    { ...ok, exp: 1.5 },
    { ...ok, exp: -1 },
    { ...ok, exp: "1750000300" },
    { ...ok, exp: Number.NaN },
    { agentId: "alice", expiresIn: 0 },
    { agentId: "alice", expiresIn: 2.5 },
    { ...ok, agentId: 42 },
    { ...ok, origin: 7 },
    { ...ok, rooms: "lobby" },
    { ...ok, rooms: ["lobby", 3] },
    { ...ok, rooms: ["\ud800"] },
    { ...ok, rooms: ["a\udc00b"] },
  ];
  for (const c of bad) await refused(mintRelayToken(s, c));
  await refused(mintRelayToken(s, null));
  await refused(mintRelayToken(42, ok));
  await refused(mintRelayToken(s, { agentId: "alice" }, Number.NaN));
  // A string secret counts in UTF-8 bytes: 16 characters, 31 bytes.
  await refused(mintRelayToken("é".repeat(15) + "x", ok), /31 bytes/);
  await mintRelayToken("é".repeat(16), ok);
  // A valid surrogate pair is fine.
  await mintRelayToken(s, { ...ok, rooms: ["😀 room"] });
});

test("the message never holds the secret", async () => {
  const s = "do-not-print-this-secret-0123456789";
  for (const c of invalid.invalid) {
    await assert.rejects(mintRelayToken(s, claims(c.claims)), (e) => !e.message.includes(s) && !e.message.includes("do-not-print"));
  }
  await assert.rejects(mintRelayToken(s.slice(0, 20), { agentId: "a" }), (e) => !e.message.includes(s.slice(0, 20)));
});
