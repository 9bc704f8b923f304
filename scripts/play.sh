#!/usr/bin/env bash
# The playground on 127.0.0.1: the RKT reference server (:7749), the MoltZap peer (:7750,
# current generation) with two registered agents, alice and bob, the Switch peer (:7751, the
# WebSocket and the SSE generation) with agents alice and bob in room lobby, the relay in front of
# it (:7752, worker-relay/ in real workerd, holding their keys), and the playground page (:7700,
# playground/: the npm package in the browser against those peers; Switch through the relay with
# tokens the page's server mints). Builds the package and the relay first (AGENTWIRE_SKIP_BUILD=1
# skips the package when npm/dist exists).
#
#   ./scripts/play.sh            the page, and an RKT REPL here: a JSON intent per line
#                                ({"intent":"weather.current","params":{"city":"Seoul"}}),
#                                `discover`, `ping`, `help` or `exit`
#   ./scripts/play.sh moltzap    the page, and a MoltZap REPL as alice
#   ./scripts/play.sh switch     the page, and a Switch watch as bob over all his rooms (post
#                                from another terminal with the printed command)
#   ./scripts/play.sh --no-repl  the page only, until Ctrl-C (also: `page`)
#
# The MoltZap and Switch commands to try from a second terminal are printed. Exiting the session
# (or Ctrl-C) stops everything. Ports: RKT_PORT, MOLTZAP_PORT, SWITCH_PORT, RELAY_PORT,
# PLAYGROUND_PORT.
source "$(dirname "$0")/lib.sh"
MODE="${1:-rkt}"
usage() { echo "usage: $0 [rkt | moltzap | switch | --no-repl]   (ports: RKT_PORT, MOLTZAP_PORT, SWITCH_PORT, RELAY_PORT, PLAYGROUND_PORT)"; }
case "$MODE" in
  rkt | moltzap | switch | page | --no-repl) ;;
  -h | --help | help)
    usage
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    exit 0
    ;;
  *)
    usage >&2
    exit 2
    ;;
esac
RKT_PORT="${RKT_PORT:-7749}"
MZ_PORT="${MOLTZAP_PORT:-7750}"
SW_PORT="${SWITCH_PORT:-7751}"
RELAY_PORT="${RELAY_PORT:-7752}"
PG_PORT="${PLAYGROUND_PORT:-7700}"
need_python
# Every port free before anything is built: a second play.sh while one runs would rebuild the
# package under the first one's page (npm/build.sh empties npm/dist) and only then fail to listen.
if ! python3 - "$0 $*" "RKT_PORT=$RKT_PORT" "MOLTZAP_PORT=$MZ_PORT" "SWITCH_PORT=$SW_PORT" "RELAY_PORT=$RELAY_PORT" \
  "PLAYGROUND_PORT=$PG_PORT" <<'PY'
import socket, sys

def free(port):
    s = socket.socket()
    # As the servers bind: a port left in TIME_WAIT by a session that ended is free.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()

command, ports = sys.argv[1].strip(), [a.split("=", 1) for a in sys.argv[2:]]
busy = [(n, int(p)) for n, p in ports if not free(int(p))]
if busy:
    taken = {int(p) for _, p in ports}
    other = []
    for name, port in busy:
        alt = port + 100
        while alt in taken or not free(alt):
            alt += 1
        taken.add(alt)
        other.append(f"{name}={alt}")
    print("play.sh: in use on 127.0.0.1 (another play.sh running?): "
          + ", ".join(f"{n}={p}" for n, p in busy) + "; nothing was built or started.", file=sys.stderr)
    print(f"Stop the other session, or pick free ports: {' '.join(other)} {command}", file=sys.stderr)
    sys.exit(1)
PY
then
  exit 1
fi
need_rust
need_node
cd "$ROOT"
if [ "${AGENTWIRE_SKIP_BUILD:-0}" != 1 ] || [ ! -f npm/dist/browser.js ]; then
  bash npm/build.sh
fi
if [ ! -d tests/js/node_modules/playwright-core ]; then
  (cd tests/js && npm ci --no-audit --no-fund --loglevel=error)
fi
cargo build --release -q -p agentwire-cli
bash worker-relay/build.sh
BIN="$ROOT/target/release/agentwire"
LOGS="$(mktemp -d)"
trap 'kill "${RKT_SERVER_PID:-}" "${MOLTZAP_PEER_PID:-}" "${SWITCH_PEER_PID:-}" "${RELAY_PID:-}" "${PLAYGROUND_PID:-}" 2>/dev/null || true; rm -rf "$LOGS"' EXIT
start_rkt_server "$BIN" "$RKT_PORT" "$LOGS/rkt.log"
start_moltzap_peer "$BIN" "$MZ_PORT" "$LOGS/moltzap.log"
start_switch_peer "$BIN" "$SW_PORT" "$LOGS/switch.log"
SW="http://127.0.0.1:$SW_PORT"
sw() { switch_field "$LOGS/switch.log" "$@"; }
LOBBY="$(sw room lobby id)"
# A secret for this session only: the relay verifies with it, the page's server mints with it.
RELAY_SECRET="$(python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
start_relay "$RELAY_PORT" "$LOGS/relay.log" "$BIN" "$LOGS/switch.log" "$RELAY_SECRET" \
  "ALLOWED_ORIGINS=http://127.0.0.1:$PG_PORT" ALLOW_NO_ORIGIN=true
RELAY="http://127.0.0.1:$RELAY_PORT"
# Keys go to the CLI in its environment (MOLTZAP_AGENT_KEY, SWITCH_AGENT_KEY), never as
# arguments: any local user sees a process's arguments (`ps`).
SW_ALICE_ID="$(sw agent alice id)"
SW_BOB_ID="$(sw agent bob id)"
SW_ALICE_KEY="$(sw agent alice key)"
SW_BOB_KEY="$(sw agent bob key)"
# `moltzap register` prints {"agentId","apiKey"}.
"$BIN" moltzap register alice --server "http://127.0.0.1:$MZ_PORT" >"$LOGS/alice.json"
"$BIN" moltzap register bob --server "http://127.0.0.1:$MZ_PORT" >"$LOGS/bob.json"
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$LOGS/$1.json" "$2"; }
ALICE="$(field alice apiKey)"
BOB="$(field bob apiKey)"
MZ="ws://127.0.0.1:$MZ_PORT/ws"

# The playground page: its config (see playground/serve.mjs) from what the peers said.
# The keys and the secret reach python in its environment, out of the process list.
AGENTWIRE_PLAYGROUND_CONFIG="$(MZ_ALICE_KEY="$ALICE" MZ_BOB_KEY="$BOB" SW_ALICE_KEY="$SW_ALICE_KEY" SW_BOB_KEY="$SW_BOB_KEY" \
  RELAY_SECRET="$RELAY_SECRET" python3 - "$RKT_PORT" "$MZ" "$(field alice agentId)" "$(field bob agentId)" \
  "$SW" "$SW_ALICE_ID" "$SW_BOB_ID" "$LOBBY" "$BIN" "$RELAY" <<'PY'
import json, os, sys
a, env = sys.argv[1:], os.environ
print(json.dumps({
    "rkt": f"ws://127.0.0.1:{a[0]}/rkt",
    "moltzap": a[1],
    "moltzapKeys": {"alice": env["MZ_ALICE_KEY"], "bob": env["MZ_BOB_KEY"]},
    "moltzapIds": {"alice": a[2], "bob": a[3]},
    "switch": a[4],
    "switchAgents": {"alice": {"id": a[5], "key": env["SW_ALICE_KEY"]}, "bob": {"id": a[6], "key": env["SW_BOB_KEY"]}},
    "switchLobby": a[7],
    "cli": a[8],
    "switchRelay": {"url": a[9], "secret": env["RELAY_SECRET"]},
}))
PY
)"
AGENTWIRE_PLAYGROUND_CONFIG="$AGENTWIRE_PLAYGROUND_CONFIG" PORT="$PG_PORT" node playground/serve.mjs >"$LOGS/playground.log" 2>&1 &
PLAYGROUND_PID=$!
for _ in $(seq 1 100); do
  if grep -q "^playground on " "$LOGS/playground.log" 2>/dev/null; then break; fi
  if ! kill -0 "$PLAYGROUND_PID" 2>/dev/null; then cat "$LOGS/playground.log" >&2; exit 1; fi
  sleep 0.1
done
PAGE="$(sed -n 's/^playground on //p' "$LOGS/playground.log")"
if [ -z "$PAGE" ]; then
  echo "the playground server did not start in 10 s" >&2
  cat "$LOGS/playground.log" >&2
  exit 1
fi

cat <<INFO
RKT reference server  ws://127.0.0.1:$RKT_PORT/rkt (caps weather,forecast)
MoltZap peer          $MZ (current generation; agents alice and bob)
From another terminal, while this one runs (each key in the environment, out of \`ps\`):
  # bob watches (MOLTZAP_AGENT_KEY: bob's key)
  MOLTZAP_AGENT_KEY=$BOB $BIN moltzap watch --url $MZ
  # alice sends to bob (MOLTZAP_AGENT_KEY: alice's key)
  MOLTZAP_AGENT_KEY=$ALICE $BIN moltzap send --url $MZ --to bob "hello bob"
  # bob lists his messages (MOLTZAP_AGENT_KEY: bob's key)
  MOLTZAP_AGENT_KEY=$BOB $BIN moltzap list --url $MZ
Switch peer           $SW (WebSocket and SSE; agents alice and bob in room lobby $LOBBY)
From another terminal, while this one runs:
  # bob watches all his rooms (--agent, SWITCH_AGENT_KEY: bob's)
  SWITCH_AGENT_KEY=$SW_BOB_KEY $BIN switch watch --url $SW --agent $SW_BOB_ID --scope all
  # alice posts to the lobby (--agent, SWITCH_AGENT_KEY: alice's)
  SWITCH_AGENT_KEY=$SW_ALICE_KEY $BIN switch post --url $SW --agent $SW_ALICE_ID --room $LOBBY "hello @bob"
  # the operations the server offers (as alice)
  SWITCH_AGENT_KEY=$SW_ALICE_KEY $BIN switch ops --url $SW --agent $SW_ALICE_ID
  (add --transport sse to speak the released generation's SSE + beats)
Relay                 $RELAY (real workerd, holds alice's and bob's keys; the page's origin allowed)
  a token for alice (this session's secret; the page gets its own tokens):
  AGENTWIRE_RELAY_SECRET=$RELAY_SECRET $BIN relay token --agent $SW_ALICE_ID --exp-in 600
Logs: $LOGS

Playground page       $PAGE  (open it in a browser: RKT, MoltZap and Switch from the page)

INFO
case "$MODE" in
  switch)
    # --scope all, not --room: a watch that claims the lobby takes it from every other connection
    # of bob's (the page's), and a later claim (a second watch, the page) takes it back.
    echo "Switch session: bob watching all his rooms, the lobby included (Ctrl-C ends it); post as alice from another terminal"
    SWITCH_AGENT_KEY="$SW_BOB_KEY" "$BIN" switch watch --url "$SW" --agent "$SW_BOB_ID" --scope all
    ;;
  moltzap)
    echo "MoltZap session as alice: send bob <text> | list | call system/ping {} | quit"
    MOLTZAP_AGENT_KEY="$ALICE" "$BIN" moltzap connect --url "$MZ"
    ;;
  page | --no-repl)
    echo "Serving the playground at $PAGE until Ctrl-C"
    wait "$PLAYGROUND_PID"
    ;;
  *)
    echo 'RKT session: {"intent":"weather.current","params":{"city":"Seoul"}}   {"intent":"weather.forecast","params":{"days":3},"stream":true}   discover   ping   exit'
    "$BIN" rkt connect "ws://127.0.0.1:$RKT_PORT/rkt"
    ;;
esac
