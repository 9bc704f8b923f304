#!/usr/bin/env bash
# scripts/fuzz.sh SECS TARGET [CRATE]: fuzzes TARGET of crates/agentwire-CRATE/fuzz for SECS
# seconds (default 60). CRATE `rkt` (the default): `decode` (the codec, the default target),
# `server` (the server session in line and whole-message mode, with the reference agent) or
# `client` (the client session driven by a script of replies, commands, time and closes; a
# request's params and context read by `json::json_arg`, as bindings read them, against
# serde_json) or `resolve` (the address resolver).
# CRATE `moltzap`: `frame` (the frame decoder), `endpoint` (the harness endpoint driven by the
# script of tests/script/endpoint.rs, current or released: a released reconnect's recovery
# answered with fuzzed `conversations/list` cursors and `messages/list` rows; each record
# delivered at most once, the recovery bounded and ended), `session` (the client session driven by a
# script of operations; every event's JSON text read back as its value), `register` (the
# registration answer decoder) or `harness` (the harness's parsers: canonical JSON, parts,
# schemas, answers, addresses, ids, each read back from what it writes; `Message::parse` and
# `from_wrapped` against their derived `Deserialize`; an endpoint's records read from any
# `messages/received` push or recovery answer).
# CRATE `switch`: `sse` (the SSE parser, chunked three ways), `frame`
# (both frame decoders, with re-encoding), `connection` (the connection driven by a script),
# `configured` (the same script under extreme configurations), `request` (the open paths and
# operation requests built from any ids, rooms, names and arguments: no dot segment, only
# allowed characters) or `ops` (the decoders of the HTTP answers and error bodies).
# CRATE `core`: `read` (the JSON reader, against serde_json), `http` (the HTTP/1.1 answer
# head and chunked decoders, read by read) or `redact` (`redact::url`, how error messages quote
# addresses, on any text and on URLs built from parts: no query, fragment or user information
# left, only the input's own text, a fixed point).
# CRATE `relay`: `token` (relay token verification, on raw tokens and on claims the harness
# signs), `bridge` (the SSE bridge driven by a script of upstream bytes, pongs, beat answers and
# timeouts), `route` (the router on any method, URL, headers and body a browser can send) or
# `config` (`Config::from_env` on any value of any setting: a refusal names the wrong setting,
# nothing shown depends on a secret, a configuration taken reads back as itself).
# Prints the executions and crashes; exits 1 when a crash was found.
#
# The toolchain is stable, so RUSTC_BOOTSTRAP=1 lets cargo-fuzz use the nightly-only flags it
# needs (-Zsanitizer, -Cpasses=sancov). AddressSanitizer is tried first; `--sanitizer none` is
# the fallback if that build fails. Set FUZZ_SANITIZER=none to skip ASan, and FUZZ_TARGET_DIR to
# build into one target directory for every crate (scripts/test.sh does, to share the builds).
# Builds have debug assertions and overflow checks on (`-a`).
set -euo pipefail

secs="${1:-60}"
target="${2:-decode}"
crate="${3:-rkt}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fuzz="$root/crates/agentwire-$crate/fuzz"
[ -d "$fuzz" ] || { echo "no fuzz package at $fuzz" >&2; exit 2; }
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz" >&2
    cargo install --locked cargo-fuzz@0.13.2
fi

cd "$fuzz"
corpus="corpus/$target"
mkdir -p "$corpus" "artifacts/$target"
# Seed the corpus with every golden vector's wire text (RKT).
if [ "$crate" = rkt ] && [ "$target" != resolve ] && command -v python3 >/dev/null; then
    python3 - "$root/tests/vectors/rkt" "$corpus" <<'PY'
import json, pathlib, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for f in sorted(src.glob("*.json")):
    (dst / f"vector-{f.stem}").write_text(json.loads(f.read_text())["wire"], encoding="utf-8")
PY
fi
# Seed the frame corpus with every frame of the released captures (MoltZap), the generation
# byte (1: released) first.
if [ "$crate" = moltzap ] && [ "$target" = frame ] && command -v python3 >/dev/null; then
    python3 - "$root/tests/vectors/moltzap-2026.425" "$corpus" <<'PY'
import pathlib, re, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
if src.is_dir():
    for f in sorted(src.glob("*.out")):
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines()):
            m = re.match(r"^\[\w+\] (=>|<=) (.*)$", line)
            if m:
                (dst / f"capture-{f.stem}-{n}").write_bytes(b"\x01" + m.group(2).encode())
PY
fi

# Seed the harness's messages mode (MoltZap `harness`, mode byte 3: a `messages/received` push,
# 013: the same in a group, 007: the answer to a recovery's `agent/message/list`).
if [ "$crate" = moltzap ] && [ "$target" = harness ]; then
    m1='{"id":"m1","conversationId":"c1","senderId":"bob","parts":[{"type":"text","text":"hi"}],"createdAt":"2026-12-02T12:36:49.853Z"}'
    m2='{"id":"m2","conversationId":"c2","senderId":"carol","postId":"p2","parts":[{"type":"text","text":"q"},{"type":"data","value":{"org.social-harness/collective":{"kind":"operation","op":"multicast"}}}],"createdAt":"t"}'
    printf '\003{"message":%s}' "$m1" >"$corpus/seed-push"
    printf '\013{"message":%s}' "$m2" >"$corpus/seed-push-group"
    printf '\007{"messages":[%s,%s,{"id":"m3","conversationId":"c1","senderId":"bob","parts":[{"type":"image"}]},5]}' \
        "$m1" "$m2" >"$corpus/seed-recovered"
fi

# Seed the relay's router with a request of each kind it serves (flags byte first: 0 is a
# token for agent-a, the `auto` upstream, no prefix).
if [ "$crate" = relay ] && [ "$target" = route ] && command -v python3 >/dev/null; then
    python3 - "$corpus" <<'PY'
import pathlib, sys
dst = pathlib.Path(sys.argv[1])
ws = "https://relay.example/agents/agent-a/connection/ws?connection_id=00000000-0000-4000-8000-000000000001&rooms=r1"
seeds = {
    "ws": f"GET\n{ws}\nUpgrade: websocket\nOrigin: https://app.example\nSec-WebSocket-Protocol: agentwire.v1, agentwire.token.TOKEN\n\n",
    "op": "POST\nhttps://relay.example/agents/agent-a/ops/post_message\nOrigin: https://app.example\nAuthorization: Bearer TOKEN\nX-Switch-Connection-Id: c-1\nContent-Type: application/json\n\n{\"body\":\"hi\"}",
    "list": "GET\nhttps://relay.example/agents/agent-a/ops\nOrigin: https://app.example\nAuthorization: Bearer TOKEN\n\n",
    "preflight": "OPTIONS\nhttps://relay.example/agents/agent-a/ops/post_message\nOrigin: https://app.example\nAccess-Control-Request-Method: POST\n\n",
}
for name, text in seeds.items():
    (dst / f"seed-{name}").write_bytes(b"\x00" + text.encode())
PY
fi

# Seed the relay configuration (relay `config`: NUL-separated settings, each a byte, the index
# of its name in config.rs's SETTINGS plus their number, so never NUL, then its value) with
# every setting at a good value other than its default, and a loopback IPv6 upstream with a
# list of origins.
if [ "$crate" = relay ] && [ "$target" = config ] && command -v python3 >/dev/null; then
    python3 - "$root/crates/agentwire-relay/src/config.rs" "$corpus" <<'PY'
import pathlib, re, sys
src, dst = pathlib.Path(sys.argv[1]).read_text(), pathlib.Path(sys.argv[2])
names = re.findall(r'"([A-Z_]+)"', re.search(r"pub const SETTINGS: \[&str; \d+\] = \[(.*?)\];", src, re.S).group(1))
seeds = {
    "every": {
        "UPSTREAM": "https://switch.example:8443/api/", "UPSTREAM_GENERATION": "sse",
        "AGENT_KEYS": '{"agent-a":"sk_switch_aaaa","agent-b":"sk_switch_bbbb"}',
        "RELAY_TOKEN_SECRET_PREVIOUS": "fedcba9876543210fedcba9876543210", "ALLOW_NO_ORIGIN": "true",
        "PATH_PREFIX": "/switch/", "MAX_MESSAGE_BYTES": "4096", "MAX_BODY_BYTES": "2048",
        "RATE_LIMIT_PER_MINUTE": "6", "RATE_LIMIT_BURST": "3", "FRAME_LIMIT_PER_MINUTE": "60",
        "FRAME_LIMIT_BURST": "40", "MAX_TOKEN_LIFETIME_S": "60", "UPSTREAM_TIMEOUT_MS": "500",
        "PING_INTERVAL_MS": "1000", "UPSTREAM_IDLE_MS": "5000", "MAX_UNACKED_BYTES": "65536",
    },
    "loopback": {
        "UPSTREAM": "http://[::1]:8080/api", "UPSTREAM_GENERATION": "websocket",
        "ALLOWED_ORIGINS": "http://127.0.0.1:7700, https://app.example",
    },
}
for name, env in seeds.items():
    pieces = [bytes([names.index(k) + len(names)]) + v.encode() for k, v in env.items()]
    (dst / f"seed-{name}").write_bytes(b"\0".join(pieces))
PY
fi

# Seed the Switch corpora with the 0.19 captures: `sse` takes the bytes as they are; `frame`
# takes each as an SSE frame (mode byte 1: event NUL data NUL id) and as the WebSocket message
# the same frame becomes (mode byte 0).
if [ "$crate" = switch ] && command -v python3 >/dev/null; then
    python3 - "$root/tests/vectors/switch-0.19" "$corpus" "$target" <<'PY'
import json, pathlib, sys
src, dst, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
if src.is_dir():
    for f in sorted(src.glob("*.sse")):
        raw = f.read_bytes()
        if target == "sse":
            (dst / f"capture-{f.stem}").write_bytes(raw)
        elif target == "frame":
            fields = {}
            for line in raw.decode().splitlines():
                if ": " in line:
                    k, v = line.split(": ", 1)
                    fields[k] = v
            sse = "\0".join([fields.get("event", ""), fields.get("data", "")] + ([fields["id"]] if "id" in fields else []))
            (dst / f"capture-sse-{f.stem}").write_bytes(b"\x01" + sse.encode())
            ws = {"event": fields.get("event"), "data": json.loads(fields.get("data", "{}"))}
            if "id" in fields:
                ws["id"] = int(fields["id"])
            (dst / f"capture-ws-{f.stem}").write_bytes(b"\x00" + json.dumps(ws).encode())
PY
fi

# Seed the relay token target with every vector of tests/vectors/relay-token: its claims, signed
# by the harness (flags byte 2), at the vector's `now` and lifetime; and the token itself (flags
# 0: unsigned by the harness's secret, so refused).
if [ "$crate" = relay ] && [ "$target" = token ] && command -v python3 >/dev/null; then
    python3 - "$root/tests/vectors/relay-token/vectors.json" "$corpus" <<'PY'
import base64, json, pathlib, struct, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for v in json.loads(src.read_text()):
    head = lambda flags: struct.pack("<BQI", flags, v["now_ms"], v["max_lifetime_s"])
    token = v.get("token", "")
    (dst / f"vector-{v['name']}-token").write_bytes(head(0) + token.encode())
    part = token.split(".")[0]
    try:
        claims = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except Exception:
        continue
    (dst / f"vector-{v['name']}-claims").write_bytes(head(2) + claims)
PY
fi

# Seed the resolver with each form of address it takes.
if [ "$crate" = rkt ] && [ "$target" = resolve ]; then
    for a in rkt://h rkts://h:1/p?q=1 'rkt://[::1]:7749' h:80 ws://h/rkt; do
        printf '%s' "$a" >"$corpus/seed-$(printf '%s' "$a" | tr -c 'a-z0-9' _)"
    done
fi

# Seed the HTTP answers (core `http`: read size byte first) with the framings drivers meet.
if [ "$crate" = core ] && [ "$target" = http ]; then
    printf '\000HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}' >"$corpus/seed-length"
    printf '\003HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"e\r\n2;x=1\r\n"}\r\n0\r\nX-T: 1\r\n\r\n' >"$corpus/seed-chunked"
    printf '\007HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 401 Unauthorized\r\n\r\n{"detail":"no"}' >"$corpus/seed-continue"
fi

# Seed the URL redaction (core `redact`; mode byte 0: the text as it is, 037: a URL built from
# the lines scheme, user information, host, path, query, fragment) with the forms drivers quote.
if [ "$crate" = core ] && [ "$target" = redact ]; then
    i=0
    for u in 'wss://h.example:8443/ws?token=SECRET' 'https://user:SECRET@h.example/p#frag' 'rkt://a@b@h:1/x?y' \
        'bot:SECRET@h' 'h/p?token=SECRET&next=http://x' 'x@wss://u:SECRET@h/p' 'rkt://[::1]:7749/rkt'; do
        { printf '\000'; printf '%s' "$u"; } >"$corpus/seed-$i"
        i=$((i + 1))
    done
    printf '\037wss\nu:SECRET\nh.example:443\n/ws\ntoken=SECRET\nfrag' >"$corpus/seed-built"
fi

# Seed the session scripts with a clock that leaps 2^63 ms once the session is up (RKT
# `client`: keepalive on, HELLO_ACK, leap; Switch `connection`: open, leap), so overflows in
# timer arithmetic are found in seconds rather than by luck.
if [ "$crate" = rkt ] && [ "$target" = client ]; then
    printf '\001\002\000\377\004\370\077' >"$corpus/seed-leap"
fi
if [ "$crate" = switch ] && [ "$target" = connection ]; then
    printf '\000\000\006\370\077' >"$corpus/seed-leap"
fi

# Seed the Switch `ops` corpus with error bodies of the shapes servers send (decoder byte 1: the raw
# result; status byte 8: 409, 6: 401, 10: 500), so the errors' text is checked from the start.
if [ "$crate" = switch ] && [ "$target" = ops ]; then
    i=0
    for body in '{"detail":{"message":"taken","code":"taken_over"}}' '{"detail":"Not authenticated"}' \
        '{"detail":[{"loc":["body","room_id"],"msg":"field required"}]}' '{"error":"gone","code":"no_stream"}' \
        '{"detail":{"message":"m","contract":"agent-protocol","n":1.5e3,"s":"\ud83d\ude00"}}'; do
        for status in 8 6 10; do
            { printf '\001'; printf "\\$(printf '%03o' "$status")"; printf '%s' "$body"; } >"$corpus/seed-error-$i"
            i=$((i + 1))
        done
    done
fi

sanitizer="${FUZZ_SANITIZER:-address}"
# -a: debug assertions and overflow checks on, so an arithmetic overflow is a crash here even
# though release builds (the wasm and the component among them) would wrap silently.
tdir=(-a)
[ -n "${FUZZ_TARGET_DIR:-}" ] && tdir+=(--target-dir "$FUZZ_TARGET_DIR")
if ! cargo fuzz build "${tdir[@]}" --sanitizer "$sanitizer" "$target"; then
    [ "$sanitizer" = none ] && exit 2
    echo "build with --sanitizer $sanitizer failed; retrying with --sanitizer none" >&2
    sanitizer=none
    cargo fuzz build "${tdir[@]}" --sanitizer none "$target"
fi

before="$(ls "artifacts/$target" | grep -c '^crash-' || true)"
dict=()
[ -f "$target.dict" ] && dict=(-dict="$target.dict")
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
cargo fuzz run "${tdir[@]}" --sanitizer "$sanitizer" "$target" "$corpus" -- \
    -max_total_time="$secs" "${dict[@]}" -print_final_stats=1 2>&1 | tee "$log" | grep -E '^(==|INFO: Seed|#[0-9]+ +DONE|Done|thread|SUMMARY|stat::)' 
status="${PIPESTATUS[0]}"
set -e
after="$(ls "artifacts/$target" | grep -c '^crash-' || true)"

execs="$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)"
elapsed="$(grep -oE '^Done [0-9]+ runs in [0-9]+ second' "$log" | grep -oE 'in [0-9]+' | grep -oE '[0-9]+' || echo "$secs")"
[ "${elapsed:-0}" -gt 0 ] || elapsed=1
crashes=$((after - before))
echo "fuzz $target: sanitizer=$sanitizer seconds=$elapsed execs=$execs execs_per_sec=$((execs / elapsed)) crashes=$crashes corpus=$(ls "$corpus" | wc -l)"
if [ "$crashes" -gt 0 ] || [ "$status" -ne 0 ]; then
    ls -1 "artifacts/$target"/crash-* 2>/dev/null | tail -n "$((crashes > 0 ? crashes : 1))"
    exit 1
fi
