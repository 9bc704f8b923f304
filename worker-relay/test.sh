#!/usr/bin/env bash
# The relay's tests in real workerd (Miniflare): builds the engine's wasm (./build.sh), the npm
# package's token helper (esbuild, from npm/src/relay-token.ts) and the Switch peer, checks that
# `wrangler deploy --dry-run` bundles the Worker, then runs every test/*.test.mjs with node's test
# runner. Network: 127.0.0.1 only.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/../scripts/lib.sh"
bash "$HERE/build.sh"
if [ ! -x "$ROOT/npm/node_modules/.bin/esbuild" ]; then
  (cd "$ROOT/npm" && npm ci --no-audit --no-fund --loglevel=error)
fi
"$ROOT/npm/node_modules/.bin/esbuild" "$ROOT/npm/src/relay-token.ts" --bundle --format=esm --target=es2022 \
  --log-level=warning --outfile="$HERE/gen/relay-token.js"
(cd "$ROOT" && cargo build -q -p agentwire-cli)
# The Switch peer the tests start (test/harness.mjs), from CARGO_TARGET_DIR when it is set.
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
export AGENTWIRE_BIN="${AGENTWIRE_BIN:-$TARGET/debug/agentwire}"
export WRANGLER_SEND_METRICS=false
cd "$HERE"
echo "== wrangler deploy --dry-run (the Worker bundles as it would deploy)"
OUT="$(mktemp -d)"
node_modules/.bin/wrangler deploy --dry-run --outdir "$OUT" >"$OUT/log" 2>&1 || { cat "$OUT/log" >&2; exit 1; }
grep -E "Total Upload" "$OUT/log"
rm -rf "$OUT"
node --test --test-reporter=spec --test-concurrency=1 "$@" test/*.test.mjs
