#!/usr/bin/env bash
# The component (bindings/component) transpiled with jco and driven from Node (host.mjs) against
# the local peers on 127.0.0.1: the RKT reference server, the MoltZap peer and the Switch peer.
source "$(dirname "$0")/../../../scripts/lib.sh"
need_rust
need_node
need_python
cd "$ROOT"
bash scripts/component.sh
JS="$ROOT/tests/component-host/js"
(cd "$JS" && npm ci --no-audit --no-fund --loglevel=error && node transpile.mjs)
cargo build -q -p agentwire-cli
BIN="$ROOT/target/debug/agentwire"
LOGS="$(mktemp -d)"
trap 'kill "${RKT_SERVER_PID:-}" "${MOLTZAP_PEER_PID:-}" "${SWITCH_PEER_PID:-}" 2>/dev/null || true; rm -rf "$LOGS"' EXIT
start_rkt_server "$BIN" 0 "$LOGS/rkt.log"
RKT_PORT="$(listen_port "$LOGS/rkt.log")"
start_moltzap_peer "$BIN" 0 "$LOGS/moltzap.log"
MZ_PORT="$(listen_port "$LOGS/moltzap.log")"
start_switch_peer "$BIN" 0 "$LOGS/switch.log"
SW_PORT="$(listen_port "$LOGS/switch.log")"
key() { "$BIN" moltzap register "$1" --server "http://127.0.0.1:$MZ_PORT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])'; }
sw() { switch_field "$LOGS/switch.log" "$@"; }
AGENTWIRE_COMPONENT_ENV="$(python3 - "$RKT_PORT" "$MZ_PORT" "$(key alice)" "$(key bob)" "$SW_PORT" \
  "$(sw agent alice id)" "$(sw agent alice key)" "$(sw agent bob id)" "$(sw agent bob key)" "$(sw room lobby id)" <<'PY'
import json, sys
a = sys.argv[1:]
print(json.dumps({
    "rkt": f"ws://127.0.0.1:{a[0]}/rkt",
    "moltzap": f"ws://127.0.0.1:{a[1]}/ws",
    "moltzapKeys": {"alice": a[2], "bob": a[3]},
    "switch": f"http://127.0.0.1:{a[4]}",
    "switchAgents": {"alice": {"id": a[5], "key": a[6]}, "bob": {"id": a[7], "key": a[8]}},
    "switchLobby": a[9],
}))
PY
)"
export AGENTWIRE_COMPONENT_ENV
echo "== node $(node --version): the component through jco (tests/component-host/js)"
(cd "$JS" && node --test --test-reporter=spec component.test.mjs strings.test.mjs)
