#!/usr/bin/env python3
"""Writes vectors.json and invalid-claims.json next to this file.

An implementation of the relay token independent of the Rust and JS ones (Python's hmac,
hashlib and base64), so the vectors check both against a third. Run it from anywhere:
`python3 tests/vectors/relay-token/gen.py`; the output is deterministic.
"""
import base64
import hashlib
import hmac
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent

SECRET = "relay-secret-for-tests-0123456789"  # 33 bytes
OLD = "relay-secret-old-for-tests-abcdef"  # 33 bytes
HEX = bytes(range(32)).hex()  # 32 bytes, not UTF-8 text
NOW_MS = 1_750_000_000_500
NOW_S = NOW_MS // 1000
LIFE = 3600
LEEWAY = 60  # clock skew allowed on the lifetime check (not on expiry)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def key(secret: dict) -> bytes:
    return bytes.fromhex(secret["hex"]) if "hex" in secret else secret["utf8"].encode("utf-8")


def sign_payload(secret: dict, payload: str) -> str:
    return b64(hmac.new(key(secret), payload.encode("ascii"), hashlib.sha256).digest())


def sign_json(secret: dict, text: str) -> str:
    payload = b64(text.encode("utf-8"))
    return f"{payload}.{sign_payload(secret, payload)}"


def canonical(claims: dict) -> str:
    # Keys in the order agent_id, exp, origin, rooms; compact; non-ASCII kept as UTF-8 (as
    # JSON.stringify and serde_json write it).
    ordered = {k: claims[k] for k in ("agent_id", "exp", "origin", "rooms") if k in claims}
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=False)


def utf8(s):
    return {"utf8": s}


S, O, H = utf8(SECRET), utf8(OLD), {"hex": HEX}
cases = []


def case(name, token, expect, secret=S, verify_secrets=None, now_ms=NOW_MS, life=LIFE, note=None):
    c = {"name": name}
    if note:
        c["note"] = note
    c["secret"] = secret
    if verify_secrets is not None:
        c["verify_secrets"] = verify_secrets
    c.update({"now_ms": now_ms, "max_lifetime_s": life, "token": token, "expect": expect})
    cases.append(c)


def valid(name, claims, secret=S, **kw):
    case(name, sign_json(secret, canonical(claims)), {"claims": claims}, secret=secret, **kw)


def error(name, kind, token, **kw):
    case(name, token, {"error": kind}, **kw)


EXP = NOW_S + 300
alice = {"agent_id": "alice", "exp": EXP}
valid("valid-minimal", alice)
valid("valid-origin", {**alice, "origin": "https://app.example.com"})
valid("valid-rooms", {**alice, "rooms": ["lobby", "ops"]})
valid(
    "valid-origin-rooms",
    {
        "agent_id": "agent_01:eu.x-1",
        "exp": EXP,
        "origin": "http://localhost:5173",
        "rooms": ["lobby", 'café "main" \\ ü', "✓ room"],
    },
    note="non-ASCII and escaped characters in a room id: the JSON is UTF-8, `\"` and `\\` escaped",
)
valid("valid-hex-secret", alice, secret=H, note="a secret of 32 raw bytes 00..1f, given in hex")
valid(
    "valid-rotated",
    {**alice, "origin": "http://[::1]:8080"},
    secret=O,
    verify_secrets=[S, O],
    note="signed with the old secret while the relay holds the new one first and the old one second",
)
valid(
    "valid-last-second",
    {"agent_id": "alice", "exp": NOW_S + 1},
    now_ms=NOW_S * 1000 + 999,
    note="now is floored to seconds: exp = now_s + 1 is still valid at .999",
)
valid("valid-max-lifetime", {"agent_id": "alice", "exp": NOW_S + LIFE}, note="exp = now_s + max_lifetime_s is allowed")
valid(
    "valid-lifetime-leeway",
    {"agent_id": "alice", "exp": NOW_S + LIFE + LEEWAY},
    note="the lifetime check allows 60 s of clock skew: exp = now_s + max_lifetime_s + 60 is allowed",
)

minimal = sign_json(S, canonical(alice))
payload, sig = minimal.split(".")

error("forged-wrong-secret", "forged", sign_json(O, canonical(alice)))
error(
    "forged-rotated-out",
    "forged",
    sign_json(O, canonical(alice)),
    verify_secrets=[S, utf8("relay-secret-next-for-tests-98765")],
    note="the old secret is no longer among the relay's",
)
mallory = sign_json(S, canonical({"agent_id": "mallory", "exp": EXP}))
error(
    "forged-spliced",
    "forged",
    f"{mallory.split('.')[0]}.{sig}",
    note="another token's payload under valid-minimal's signature",
)
error("expired", "expired", sign_json(S, canonical({"agent_id": "alice", "exp": NOW_S - 60})))
error(
    "expired-boundary",
    "expired",
    sign_json(S, canonical({"agent_id": "alice", "exp": NOW_S})),
    note="expired when now_s >= exp",
)
error(
    "lifetime",
    "lifetime",
    sign_json(S, canonical({"agent_id": "alice", "exp": NOW_S + LIFE + LEEWAY + 1})),
    note="exp > now_s + max_lifetime_s + 60 (the skew leeway)",
)
error("missing", "missing", "")
error("malformed-one-part", "malformed", payload)
error("malformed-three-parts", "malformed", f"{minimal}.{sig}")
error("malformed-empty-payload", "malformed", f".{sig}")
error("malformed-padding", "malformed", f"{minimal}=")
error("malformed-charset", "malformed", f"{payload} .{sig}")
error("malformed-standard-base64", "malformed", f"+{payload[1:]}.{sig}", note="`+` is standard base64, not base64url")
bad_len = payload + "A" * ((1 - len(payload)) % 4)
assert len(bad_len) % 4 == 1
error("malformed-base64-length", "malformed", f"{bad_len}.{sig}", note="a base64url length of the form 4n+1")
# The signature's 43rd character carries 4 bits; setting an unused low bit makes it non-canonical.
ALPHA = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
last = ALPHA[ALPHA.index(sig[-1]) | 1]
error(
    "malformed-trailing-bits",
    "malformed",
    f"{payload}.{sig[:-1]}{last}",
    note="the signature's last character with a non-zero unused bit",
)
error("malformed-short-signature", "malformed", f"{payload}.{sig[:-1]}", note="a 42-character signature (31 bytes)")
long_payload = "A" * (4096 - 1 - len(sig) + 1)
error("malformed-too-long", "malformed", f"{long_payload}.{sig}", note="4097 bytes, one over MAX_TOKEN_LEN")


def claims_error(name, text, note=None):
    error(name, "claims", sign_json(S, text), note=note)


claims_error("claims-unknown-field", f'{{"agent_id":"alice","exp":{EXP},"admin":true}}')
claims_error("claims-duplicate-key", f'{{"agent_id":"alice","agent_id":"root","exp":{EXP}}}')
claims_error("claims-missing-exp", '{"agent_id":"alice"}')
claims_error("claims-exp-string", f'{{"agent_id":"alice","exp":"{EXP}"}}')
claims_error("claims-exp-float", f'{{"agent_id":"alice","exp":{EXP}.0}}', note="types are exact: 1.0 is not an integer")
claims_error("claims-exp-exponent", '{"agent_id":"alice","exp":1.75e9}')
claims_error("claims-agent-number", f'{{"agent_id":42,"exp":{EXP}}}')
claims_error("claims-agent-chars", f'{{"agent_id":"alice/bob","exp":{EXP}}}')
claims_error("claims-origin-null", f'{{"agent_id":"alice","exp":{EXP},"origin":null}}', note="omit, never null")
claims_error("claims-origin-path", f'{{"agent_id":"alice","exp":{EXP},"origin":"https://app.example.com/"}}')
claims_error("claims-rooms-string", f'{{"agent_id":"alice","exp":{EXP},"rooms":"lobby"}}')
claims_error("claims-rooms-empty", f'{{"agent_id":"alice","exp":{EXP},"rooms":[]}}', note="omit for every room")
claims_error("claims-rooms-nested", f'{{"agent_id":"alice","exp":{EXP},"rooms":[["lobby"]]}}')
claims_error("claims-too-deep", f'{{"agent_id":"alice","exp":{EXP},"x":[[[[1]]]]}}')
claims_error("claims-not-object", f'[{{"agent_id":"alice","exp":{EXP}}}]')
claims_error("claims-not-json", "agent_id=alice")
error(
    "secret-too-short",
    "secret",
    minimal,
    verify_secrets=[utf8("short-secret")],
    note="a configuration error, reported whatever the token",
)

(HERE / "vectors.json").write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

# Claims every minter must refuse (with a valid secret), and the one secret it must refuse.
ok = {"agent_id": "alice", "exp": EXP}
invalid = [
    ("agent-empty", {**ok, "agent_id": ""}),
    ("agent-too-long", {**ok, "agent_id": "a" * 257}),
    ("agent-slash", {**ok, "agent_id": "alice/bob"}),
    ("agent-space", {**ok, "agent_id": "alice bob"}),
    ("agent-non-ascii", {**ok, "agent_id": "élise"}),
    ("exp-over-2^53", {**ok, "exp": 2**53}),
    ("origin-path", {**ok, "origin": "https://app.example.com/"}),
    ("origin-no-scheme", {**ok, "origin": "app.example.com"}),
    ("origin-uppercase", {**ok, "origin": "https://App.example.com"}),
    ("origin-null", {**ok, "origin": "null"}),
    ("origin-port-zero", {**ok, "origin": "https://app.example.com:0"}),
    ("origin-port-too-big", {**ok, "origin": "https://app.example.com:65536"}),
    ("origin-port-leading-zero", {**ok, "origin": "https://app.example.com:080"}),
    ("origin-userinfo", {**ok, "origin": "https://u@app.example.com"}),
    ("origin-too-long", {**ok, "origin": "https://" + "a" * 250}),
    ("rooms-empty", {**ok, "rooms": []}),
    ("rooms-too-many", {**ok, "rooms": [f"r{i}" for i in range(65)]}),
    ("room-empty", {**ok, "rooms": ["lobby", ""]}),
    ("room-too-long", {**ok, "rooms": ["é" * 129]}),
    ("room-slash", {**ok, "rooms": ["a/b"]}),
    ("room-comma", {**ok, "rooms": ["a,b"]}),
    ("room-control", {**ok, "rooms": ["a\u0085"]}),
    ("room-twice", {**ok, "rooms": ["lobby", "lobby"]}),
    ("token-too-long", {**ok, "rooms": [f"{i:050d}" for i in range(64)]}),
]
(HERE / "invalid-claims.json").write_text(
    json.dumps(
        {
            "secret": S,
            "short_secret": utf8("x" * 31),
            "valid_claims": ok,
            "invalid": [{"name": n, "claims": c} for n, c in invalid],
        },
        indent=1,
        ensure_ascii=False,
    )
    + "\n",
    encoding="utf-8",
)
print(f"{len(cases)} cases, {len(invalid)} invalid claims")
