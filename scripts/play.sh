#!/usr/bin/env bash
# The playground: the local RKT reference server on 127.0.0.1:7749 and an interactive session
# against it. Type a JSON intent per line ({"intent":"weather.current","params":{"city":"Seoul"}}),
# `discover`, `ping`, `help` or `exit`.
source "$(dirname "$0")/lib.sh"
need_rust
need_python
cd "$ROOT"
cargo build --release -q -p agentwire-cli
BIN="$ROOT/target/release/agentwire"
PORT="${RKT_PORT:-7749}"
LOG="$(mktemp)"
start_rkt_server "$BIN" "$PORT" "$LOG"
trap 'kill "$RKT_SERVER_PID" 2>/dev/null || true; rm -f "$LOG"' EXIT
echo "RKT reference server on ws://127.0.0.1:$PORT/rkt (caps weather,forecast); log: $LOG"
echo 'try: {"intent":"weather.current","params":{"city":"Seoul"}}   {"intent":"weather.forecast","params":{"days":3},"stream":true}   discover   ping   exit'
"$BIN" rkt connect "ws://127.0.0.1:$PORT/rkt"
