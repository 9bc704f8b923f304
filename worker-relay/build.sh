#!/usr/bin/env bash
# Builds the relay's engine for the Worker: agentwire-relay-wasm (cargo, wasm32, profile wasm)
# and its glue (wasm-bindgen --target web, the pinned version) into worker-relay/gen/, and the
# Worker's npm packages (miniflare, wrangler, ws) when missing. `wrangler deploy` bundles
# src/index.js with gen/. Cargo's output is read from CARGO_TARGET_DIR when it is set (else
# ./target at the workspace root).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../scripts/lib.sh"
need_node
need_wasm_bindgen
if [ ! -x "$HERE/node_modules/.bin/wrangler" ] || [ "$HERE/package-lock.json" -nt "$HERE/node_modules/.package-lock.json" ]; then
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
fi
(cd "$ROOT" && RUSTFLAGS="$(wasm_rustflags)" cargo build -q --target wasm32-unknown-unknown --profile wasm -p agentwire-relay-wasm)
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
mkdir -p "$HERE/gen"
wasm-bindgen --target web --out-dir "$HERE/gen" --out-name agentwire_relay_wasm --remove-name-section \
  --remove-producers-section "$TARGET/wasm32-unknown-unknown/wasm/agentwire_relay_wasm.wasm"
printf 'relay wasm: %d bytes (%d gzipped)\n' "$(wc -c <"$HERE/gen/agentwire_relay_wasm_bg.wasm")" \
  "$(gzip -9 -c "$HERE/gen/agentwire_relay_wasm_bg.wasm" | wc -c)"
