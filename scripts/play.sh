#!/usr/bin/env bash
# The playground on 127.0.0.1: the RKT reference server (:7749), the MoltZap peer (:7750,
# current generation) with two registered agents, alice and bob, and the Switch peer (:7751, the
# WebSocket and the SSE generation) with agents alice and bob in room lobby. The session is the RKT REPL:
# a JSON intent per line ({"intent":"weather.current","params":{"city":"Seoul"}}), `discover`,
# `ping`, `help` or `exit`. The MoltZap commands to try from a second terminal are printed.
# `./scripts/play.sh moltzap` makes the session a MoltZap REPL as alice instead;
# `./scripts/play.sh switch` makes it a Switch watch as bob in the lobby (post from another
# terminal with the printed command).
source "$(dirname "$0")/lib.sh"
need_rust
need_python
cd "$ROOT"
cargo build --release -q -p agentwire-cli
BIN="$ROOT/target/release/agentwire"
RKT_PORT="${RKT_PORT:-7749}"
MZ_PORT="${MOLTZAP_PORT:-7750}"
SW_PORT="${SWITCH_PORT:-7751}"
LOGS="$(mktemp -d)"
trap 'kill "${RKT_SERVER_PID:-}" "${MOLTZAP_PEER_PID:-}" "${SWITCH_PEER_PID:-}" 2>/dev/null || true; rm -rf "$LOGS"' EXIT
start_rkt_server "$BIN" "$RKT_PORT" "$LOGS/rkt.log"
start_moltzap_peer "$BIN" "$MZ_PORT" "$LOGS/moltzap.log"
start_switch_peer "$BIN" "$SW_PORT" "$LOGS/switch.log"
SW="http://127.0.0.1:$SW_PORT"
LOBBY="$(switch_field "$LOGS/switch.log" room lobby id)"
SW_ALICE="--agent $(switch_field "$LOGS/switch.log" agent alice id) --key $(switch_field "$LOGS/switch.log" agent alice key)"
SW_BOB="--agent $(switch_field "$LOGS/switch.log" agent bob id) --key $(switch_field "$LOGS/switch.log" agent bob key)"
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
Switch peer           $SW (WebSocket and SSE; agents alice and bob in room lobby $LOBBY)
From another terminal, while this one runs:
  $BIN switch watch --url $SW $SW_BOB --room $LOBBY
  $BIN switch post  --url $SW $SW_ALICE --room $LOBBY "hello @bob"
  $BIN switch ops   --url $SW $SW_ALICE
  (add --transport sse to speak the released generation's SSE + beats)
Logs: $LOGS
INFO
if [ "${1:-rkt}" = switch ]; then
  echo "Switch session: bob watching the lobby (Ctrl-C ends it); post as alice from another terminal"
  # shellcheck disable=SC2086
  "$BIN" switch watch --url "$SW" $SW_BOB --room "$LOBBY"
elif [ "${1:-rkt}" = moltzap ]; then
  echo "MoltZap session as alice: send bob <text> | list | call system/ping {} | quit"
  "$BIN" moltzap connect --url "$MZ" --key "$ALICE"
else
  echo 'RKT session: {"intent":"weather.current","params":{"city":"Seoul"}}   {"intent":"weather.forecast","params":{"days":3},"stream":true}   discover   ping   exit'
  "$BIN" rkt connect "ws://127.0.0.1:$RKT_PORT/rkt"
fi
