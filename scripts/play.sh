#!/usr/bin/env bash
# The playground on 127.0.0.1: the RKT reference server (:7749) and the MoltZap peer (:7750,
# current generation) with two registered agents, alice and bob. The session is the RKT REPL:
# a JSON intent per line ({"intent":"weather.current","params":{"city":"Seoul"}}), `discover`,
# `ping`, `help` or `exit`. The MoltZap commands to try from a second terminal are printed.
# `./scripts/play.sh moltzap` makes the session a MoltZap REPL as alice instead.
source "$(dirname "$0")/lib.sh"
need_rust
need_python
cd "$ROOT"
cargo build --release -q -p agentwire-cli
BIN="$ROOT/target/release/agentwire"
RKT_PORT="${RKT_PORT:-7749}"
MZ_PORT="${MOLTZAP_PORT:-7750}"
LOGS="$(mktemp -d)"
trap 'kill "${RKT_SERVER_PID:-}" "${MOLTZAP_PEER_PID:-}" 2>/dev/null || true; rm -rf "$LOGS"' EXIT
start_rkt_server "$BIN" "$RKT_PORT" "$LOGS/rkt.log"
start_moltzap_peer "$BIN" "$MZ_PORT" "$LOGS/moltzap.log"
key() { "$BIN" moltzap register "$1" --server "http://127.0.0.1:$MZ_PORT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])'; }
ALICE="$(key alice)"
BOB="$(key bob)"
MZ="ws://127.0.0.1:$MZ_PORT/ws"
cat <<INFO
RKT reference server  ws://127.0.0.1:$RKT_PORT/rkt (caps weather,forecast)
MoltZap peer          $MZ (current generation; agents alice and bob)
From another terminal, while this one runs:
  $BIN moltzap watch --url $MZ --key $BOB
  $BIN moltzap send  --url $MZ --key $ALICE --to bob "hello bob"
  $BIN moltzap list  --url $MZ --key $BOB
Logs: $LOGS
INFO
if [ "${1:-rkt}" = moltzap ]; then
  echo "MoltZap session as alice: send bob <text> | list | call system/ping {} | quit"
  "$BIN" moltzap connect --url "$MZ" --key "$ALICE"
else
  echo 'RKT session: {"intent":"weather.current","params":{"city":"Seoul"}}   {"intent":"weather.forecast","params":{"days":3},"stream":true}   discover   ping   exit'
  "$BIN" rkt connect "ws://127.0.0.1:$RKT_PORT/rkt"
fi
