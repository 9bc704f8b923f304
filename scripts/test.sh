#!/usr/bin/env bash
# Every test: the Rust workspace (unit, property, session, vector and loopback end-to-end tests),
# then the guide's own example clients (TypeScript, Python, Go, wscat) against the reference server
# and the native crate's examples against the local peers,
# then the npm package (built from source) in Node 20, Node 22, Bun, Deno and headless Chromium
# against the local peers and the relay (tests/js/run.sh), then the relay's own tests in real workerd
# (worker-relay/test.sh), then the WebAssembly component from Node through jco
# (tests/component-host/js/run.sh; its wasmtime host runs with the workspace), then every fuzz
# target for FUZZ_SECS (default 8) seconds. Installs what it needs.
source "$(dirname "$0")/lib.sh"
need_rust
need_node
need_python
need_go
cd "$ROOT"
# Every step finds its builds under ./target (the wasip2 runner of .cargo/config.toml, the servers
# the tests start, the sizes printed): a CARGO_TARGET_DIR from the environment is not followed.
unset CARGO_TARGET_DIR
# A clean clone gains nothing from incremental state, and it is a third of target/debug.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi
df -h . | sed 's/^/disk at start: /'

echo "== cargo fmt --check"
cargo fmt --all --check
# The fuzz packages are workspaces of their own, which `--all` does not reach.
for fuzz in crates/*/fuzz; do (cd "$fuzz" && cargo fmt --check); done

echo "== cargo clippy (workspace, warnings are errors)"
cargo clippy --workspace --all-targets -q -- -D warnings
echo "== cargo doc (workspace, warnings such as broken intra-doc links are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps -q
echo "== the library crates package for crates.io (cargo package, each dependency with a version)"
cargo package -q --no-verify --allow-dirty -p agentwire-core -p agentwire-rkt -p agentwire-moltzap \
  -p agentwire-switch -p agentwire-relay -p agentwire-native

echo "== the component (tests/component-host loads it), and clippy on it for wasm32"
bash "$ROOT/scripts/component.sh"
cargo clippy -q -p agentwire-component --target wasm32-unknown-unknown -- -D warnings
rustup target list --installed | grep -qx wasm32-wasip2 || rustup target add wasm32-wasip2
cargo clippy -q -p agentwire-component --target wasm32-wasip2 -- -D warnings

echo "== clippy on bindings/wasm for wasm32: the three protocols, and each alone (npm/build.sh builds all four)"
for p in "" rkt moltzap switch; do
  cargo clippy -q -p agentwire-wasm --target wasm32-unknown-unknown ${p:+--no-default-features --features "$p"} -- -D warnings
done

echo "== agentwire-core's tests as WebAssembly (wasm32-wasip2 with SIMD, in wasmtime: .cargo/config.toml)"
cargo build -q -p agentwire-component-host --bin wasi-test-runner
cargo test -q -p agentwire-core --target wasm32-wasip2 --lib

echo "== cargo test (workspace; bounded: a test that hangs fails the run)"
timeout 2400 cargo test --workspace --all-targets
echo "== doctests (--all-targets leaves them out)"
timeout 600 cargo test --workspace --doc -q

echo "== guide clients against agentwire rkt serve"
cargo build -q -p agentwire-cli
LOG="$(mktemp)"
start_rkt_server "$ROOT/target/debug/agentwire" 0 "$LOG"
PORT="$(listen_port "$LOG")"
trap 'kill "$RKT_SERVER_PID" 2>/dev/null || true; rm -f "$LOG"' EXIT
bash "$ROOT/tests/compat/run.sh" "ws://127.0.0.1:$PORT/rkt"

echo "== the native crate's examples (crates/agentwire-native/examples) against the local peers"
cargo build -q -p agentwire-native --examples
start_moltzap_peer "$ROOT/target/debug/agentwire" 0 "$LOG.moltzap"
MZ_PORT="$(listen_port "$LOG.moltzap")"
start_switch_peer "$ROOT/target/debug/agentwire" 0 "$LOG.switch"
SW_PORT="$(listen_port "$LOG.switch")"
trap 'kill "$RKT_SERVER_PID" "$MOLTZAP_PEER_PID" "$SWITCH_PEER_PID" 2>/dev/null || true; rm -f "$LOG" "$LOG".*' EXIT
mz_key() {
  "$ROOT/target/debug/agentwire" moltzap register "$1" --server "http://127.0.0.1:$MZ_PORT" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["apiKey"])'
}
EXAMPLES="$ROOT/target/debug/examples"
timeout 60 "$EXAMPLES/rkt" "ws://127.0.0.1:$PORT/rkt"
timeout 60 "$EXAMPLES/moltzap" "ws://127.0.0.1:$MZ_PORT/ws" "$(mz_key alice)" "$(mz_key bob)"
timeout 60 "$EXAMPLES/switch" "http://127.0.0.1:$SW_PORT" "$(switch_field "$LOG.switch" agent alice id)" \
  "$(switch_field "$LOG.switch" agent alice key)" "$(switch_field "$LOG.switch" room lobby id)"
kill "$MOLTZAP_PEER_PID" "$SWITCH_PEER_PID" 2>/dev/null || true

echo "== the npm package: build, lint, Node 20, workerd, Node 22, Bun, Deno, Chromium, Vite and webpack (tests/js/run.sh)"
bash "$ROOT/tests/js/run.sh"

echo "== the relay in workerd: security, proxy, bridge, bad input, load (worker-relay/test.sh)"
bash "$ROOT/worker-relay/test.sh"

echo "== the component in Node through jco (tests/component-host/js/run.sh)"
bash "$ROOT/tests/component-host/js/run.sh"

FUZZ_SECS="${FUZZ_SECS:-8}"
echo "== every fuzz target, built and run ${FUZZ_SECS} s from its seeds (scripts/fuzz.sh, no sanitizer; a crash fails)"
need_cxx
for target in crates/*/fuzz/fuzz_targets/*.rs; do
  crate="${target#crates/agentwire-}"
  FUZZ_SANITIZER=none FUZZ_TARGET_DIR="$ROOT/target/fuzz" \
    bash "$ROOT/scripts/fuzz.sh" "$FUZZ_SECS" "$(basename "$target" .rs)" "${crate%%/*}"
done

echo "== disk: target/ $(du -sh target | cut -f1); $(df -h . | awk 'NR==2 {print $4 " free"}')"
