#!/usr/bin/env bash
# Compatibility harness: runs the RKT guide's example clients (unchanged except for
# the server URL) against a running RKT server.
#
#   tests/compat/run.sh ws://127.0.0.1:PORT/rkt
#
# Installs its own tools (idempotent): node packages via `npm ci` when node_modules is
# missing or stale (hash of package.json + package-lock.json kept in
# node_modules/.lock-hash), and a Python venv in tests/compat/.venv when missing or stale
# (hash of requirements.txt in .venv/.req-hash).
#
# Clients:
#   ts-raw-client   rkt/raw-client.ts via tsx        expects exit 0 and "Got data: ...Seoul..."
#   python-client   rkt/rkt_client.py via websockets expects exit 0, "Connected!", "Weather data: ...Seoul..."
#   wscat-hello     rkt/wscat-paste.txt piped into wscat, one frame per line; expects a HELLO_ACK
#   wscat-echo      rkt/wscat-paste-echo.txt (HELLO then REQUEST echo); expects a RESPONSE
#   go-client       rkt/main.go (gorilla/websocket, google/uuid from Debian's packages, GOPATH
#                   mode); expects exit 0, "Handshake: HELLO_ACK", "Response data: ...Seoul..."
#
# Env: COMPAT_TIMEOUT (hard per-client timeout in s, default 20),
#      COMPAT_ONLY (space-separated client names to run, default all).
# Exit status: 0 when every client passed. Last line: "N passed, M failed".
set -euo pipefail

URL=${1:-}
if [[ -z "$URL" ]]; then
  echo "usage: $0 ws://HOST:PORT/rkt" >&2
  exit 2
fi

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"
T=${COMPAT_TIMEOUT:-20}
ONLY=${COMPAT_ONLY:-}

# ---------------------------------------------------------------- install (idempotent)
node_hash=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [[ ! -f node_modules/.lock-hash || "$(cat node_modules/.lock-hash)" != "$node_hash" ]]; then
  echo "compat: installing node packages (npm ci)" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
  echo "$node_hash" > node_modules/.lock-hash
fi

py_hash=$(sha256sum requirements.txt | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || ! -f .venv/.req-hash || "$(cat .venv/.req-hash)" != "$py_hash" ]]; then
  echo "compat: creating .venv and installing requirements.txt" >&2
  rm -rf .venv
  python3 -m venv .venv
  .venv/bin/pip install --disable-pip-version-check --quiet -r requirements.txt >&2
  echo "$py_hash" > .venv/.req-hash
fi

# ---------------------------------------------------------------- helpers
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rkt-compat.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

passed=0
failed=0

want() { [[ -z "$ONLY" || " $ONLY " == *" $1 "* ]]; }

# report NAME RC OUT CHECK_FN: print one line, dump output on failure
report() {
  local name=$1 rc=$2 out=$3 check=$4 why=""
  if [[ $rc -eq 124 || $rc -eq 137 ]]; then
    why="timed out after ${T}s (rc=$rc)"
  elif [[ $rc -ne 0 ]]; then
    why="exit status $rc"
  elif ! why=$("$check" "$out"); then
    :
  else
    why=""
  fi
  if [[ -z "$why" ]]; then
    echo "compat: $name ok"
    passed=$((passed + 1))
  else
    echo "compat: $name FAILED ($why)"
    echo "----- $name output -----"
    cat "$out"
    [[ -s "$out" && -n "$(tail -c1 "$out")" ]] && echo
    echo "----- end $name output -----"
    failed=$((failed + 1))
  fi
}

# Checks print a reason and return 1 on failure.
check_ts() {
  grep -q '^Got data: ' "$1" || { echo "no 'Got data:' line"; return 1; }
  if grep -Eq '^Got data: (undefined|null)$' "$1"; then echo "'Got data:' has no data"; return 1; fi
  # console.log pretty-prints objects over several lines: look from `Got data:` to the end.
  sed -n '/^Got data: /,$p' "$1" | grep -q "city: 'Seoul'" || { echo "'Got data:' does not show city 'Seoul'"; return 1; }
}
check_go() {
  grep -q '^Handshake: HELLO_ACK$' "$1" || { echo "no 'Handshake: HELLO_ACK' line"; return 1; }
  grep -q '^Response data: map\[.*city:Seoul' "$1" || { echo "'Response data:' does not show city Seoul"; return 1; }
}
check_py() {
  grep -q '^Connected!' "$1" || { echo "no 'Connected!' line"; return 1; }
  grep -q '^Weather data: ' "$1" || { echo "no 'Weather data:' line"; return 1; }
  if grep -Eq '^Weather data: None$' "$1"; then echo "'Weather data:' has no data"; return 1; fi
  grep -q '^Weather data: .*Seoul' "$1" || { echo "'Weather data:' does not mention Seoul"; return 1; }
}
# wscat prints received frames raw (no "< " prefix, since stdout is not a TTY), and
# readline writes a "> " prompt after each line it sends, so the first received frame
# appears as "> > ... > RKT/1.0 HELLO_ACK". Match without anchoring.
check_hello_ack() {
  grep -q 'RKT/1\.0 HELLO_ACK' "$1" || { echo "no HELLO_ACK received"; return 1; }
  grep -q '^Reply-To: aaaaaaaa-0000-0000-0000-000000000001' "$1" \
    || { echo "HELLO_ACK lacks 'Reply-To: <the HELLO Message-ID>'"; return 1; }
}
check_echo() {
  check_hello_ack "$1" || return 1
  grep -q 'RKT/1\.0 RESPONSE' "$1" || { echo "no RESPONSE received"; return 1; }
  grep -q '^Reply-To: aaaaaaaa-0000-0000-0000-000000000002' "$1" \
    || { echo "RESPONSE lacks 'Reply-To: <the REQUEST Message-ID>'"; return 1; }
  grep -q 'Seoul' "$1" || { echo "RESPONSE does not echo the params"; return 1; }
}

# Wait until process PID has an established TCP connection that has received bytes
# (the server's 101 Switching Protocols), i.e. its WebSocket is open. wscat 6 drops any
# stdin line read before the socket opens, so a paste must not be written earlier.
wait_ws_open() {
  local pid=$1 i
  if ! command -v ss >/dev/null 2>&1; then sleep 2; return 0; fi
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    if ss -Htinp state established 2>/dev/null | awk -v p="pid=$pid," '
        index($0, p) { hit = 1; next }
        hit && match($0, /bytes_received:[0-9]+/) { if (substr($0, RSTART + 15) + 0 > 0) found = 1 }
        { hit = 0 }
        END { exit !found }'; then
      sleep 0.2   # the 101 has arrived; give node a moment to emit 'open'
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# run_wscat PASTE OUT EXPECT_REGEX: pipe PASTE into wscat line by line (stdin not a
# TTY), keep stdin open until EXPECT_REGEX shows up in the output (at most 10 s), then
# close stdin, which makes wscat close the socket and exit 0. Sets RC.
run_wscat() {
  local paste=$1 out=$2 expect=$3 fifo tpid npid fd i
  fifo="$WORK/fifo.$RANDOM"
  mkfifo "$fifo"
  timeout -k 2 "$T" node_modules/.bin/wscat -c "$URL" --subprotocol rkt.1.0 <"$fifo" >"$out" 2>&1 &
  tpid=$!
  exec {fd}>"$fifo"
  npid=""
  for ((i = 0; i < 50; i++)); do
    npid=$(pgrep -P "$tpid" 2>/dev/null | head -n1 || true)
    [[ -n "$npid" ]] && break
    sleep 0.1
  done
  if [[ -n "$npid" ]] && wait_ws_open "$npid"; then
    cat "$paste" >&"$fd" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      grep -q "$expect" "$out" 2>/dev/null && break
      kill -0 "$tpid" 2>/dev/null || break
      sleep 0.1
    done
    sleep 0.3   # let any trailing frames be printed
  else
    echo "(harness: wscat's WebSocket never opened)" >>"$out"
  fi
  exec {fd}>&-
  RC=0
  wait "$tpid" || RC=$?
  rm -f "$fifo"
}

# ---------------------------------------------------------------- clients
export RKT_URL="$URL"

if want ts-raw-client; then
  out="$WORK/ts.out"; RC=0
  timeout -k 2 "$T" node_modules/.bin/tsx rkt/raw-client.ts >"$out" 2>&1 </dev/null || RC=$?
  report ts-raw-client "$RC" "$out" check_ts
fi

if want python-client; then
  out="$WORK/py.out"; RC=0
  timeout -k 2 "$T" .venv/bin/python rkt/rkt_client.py >"$out" 2>&1 </dev/null || RC=$?
  report python-client "$RC" "$out" check_py
fi

if want wscat-hello; then
  out="$WORK/wscat-hello.out"
  run_wscat rkt/wscat-paste.txt "$out" 'RKT/1\.0 HELLO_ACK'
  report wscat-hello "$RC" "$out" check_hello_ack
fi

if want wscat-echo; then
  out="$WORK/wscat-echo.out"
  run_wscat rkt/wscat-paste-echo.txt "$out" 'RKT/1\.0 RESPONSE'
  report wscat-echo "$RC" "$out" check_echo
fi

if want go-client; then
  out="$WORK/go.out"; RC=0
  # Debian's golang-github-* packages install under /usr/share/gocode; no module proxy is used.
  GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS=-mod=mod GOCACHE="$WORK/gocache" \
    timeout -k 2 60 go run rkt/main.go >"$out" 2>&1 </dev/null || RC=$?
  report go-client "$RC" "$out" check_go
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
