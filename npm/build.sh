#!/usr/bin/env bash
# Builds the `agentwire` package from source into npm/dist: the wasm32 engine (cargo, profile
# `wasm`), its JS glue (wasm-bindgen, the exact version the crate pins, installed with cargo
# when missing), wasm-opt from npm's binaryen (never Debian's: it breaks wasm-bindgen output),
# short import and export names (short-names.mjs), the TypeScript facade (tsc), esbuild's
# minifier over all the JS, then prints the gzipped sizes against the budget.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

WASM_BUDGET=$((120 * 1024))
JS_BUDGET=$((12 * 1024))

# The wasm32 target and wasm-bindgen-cli at the version bindings/wasm pins (scripts/lib.sh).
source "$ROOT/scripts/lib.sh"
need_node
need_wasm_bindgen
if [ ! -x "$HERE/node_modules/.bin/tsc" ] || [ "$HERE/package-lock.json" -nt "$HERE/node_modules/.package-lock.json" ]; then
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
fi

# One module with all three protocols (`agentwire`), and one per protocol (`agentwire/rkt`, ...):
# the protocols are features of bindings/wasm.
wasm_module() { # <out dir> <cargo feature args...>
  local out="$1"; shift
  (cd "$ROOT" && RUSTFLAGS="$(wasm_rustflags)" cargo build -q --target wasm32-unknown-unknown --profile wasm -p agentwire-wasm "$@")
  mkdir -p "$out"
  wasm-bindgen --target web --out-dir "$out" --out-name agentwire_wasm --remove-name-section \
    --remove-producers-section "$ROOT/target/wasm32-unknown-unknown/wasm/agentwire_wasm.wasm"
  # --converge: -Oz until the size stops falling; --low-memory-unused: the first 1 KiB of memory is
  # the far end of the 1 MiB stack that Rust puts first (data start at 1 MiB), touched only by a
  # stack overflow, so constant offsets may fold into loads and stores. --merge-similar-functions
  # first (before -Oz, where it still finds the monomorphized copies that differ only in constants).
  "$HERE/node_modules/.bin/wasm-opt" --merge-similar-functions -Oz --converge --low-memory-unused --strip-debug --enable-bulk-memory --enable-nontrapping-float-to-int \
    --enable-sign-ext --enable-mutable-globals --enable-multivalue --enable-reference-types \
    "$out/agentwire_wasm_bg.wasm" -o "$out/agentwire_wasm_bg.wasm"
  # Short import and export names in the module and its glue (wasm-bindgen's are long and hashed).
  node "$HERE/short-names.mjs" "$out" >/dev/null
}
rm -rf "$HERE/dist"
# The licence texts go in the tarball as files (npm leaves symbolic links out); git ignores these copies.
cp "$ROOT/LICENSE-MIT" "$ROOT/LICENSE-APACHE" "$HERE/"
echo "== cargo build (wasm32, profile wasm), wasm-bindgen, wasm-opt: all three protocols"
wasm_module "$HERE/dist/wasm"
for p in rkt moltzap switch; do
  echo "== the same for $p alone"
  wasm_module "$HERE/dist/wasm-$p" --no-default-features --features "$p"
done

echo "== tsc"
(cd "$HERE" && node_modules/.bin/tsc -p tsconfig.json)
echo "== esbuild: agentwire/rkt, /moltzap, /switch bundled on their own glue; --minify the rest in place"
(cd "$HERE" && node bundle.mjs)
for f in "$HERE"/dist/*.js "$HERE"/dist/wasm*/agentwire_wasm.js; do
  "$HERE/node_modules/.bin/esbuild" "$f" --minify --format=esm --target=es2022 --log-level=warning \
    --outfile="$f" --allow-overwrite
done

gz() { gzip -9 -c "$@" | wc -c; }
WASM_GZ="$(gz "$HERE/dist/wasm/agentwire_wasm_bg.wasm")"
# The glue and the facade the engine entries load; relay-token.js (for app backends, no wasm) is
# its own entry and is reported apart.
ENGINE_JS=()
for f in "$HERE"/dist/*.js "$HERE/dist/wasm/agentwire_wasm.js"; do
  [ "$f" = "$HERE/dist/relay-token.js" ] || ENGINE_JS+=("$f")
done
JS_GZ="$(cat "${ENGINE_JS[@]}" | gzip -9 -c | wc -c)"
printf 'size: wasm %d bytes (%d gzipped; budget %d)\n' "$(wc -c <"$HERE/dist/wasm/agentwire_wasm_bg.wasm")" "$WASM_GZ" "$WASM_BUDGET"
printf 'size: JS glue + facade %d bytes (%d gzipped; budget %d)\n' "$(cat "${ENGINE_JS[@]}" | wc -c)" "$JS_GZ" "$JS_BUDGET"
# Each protocol's own entry: its module, and what its browser entry loads (its bundle, the shared
# modules, its glue), each against the same budget.
OVER=0
for p in rkt moltzap switch; do
  P_WASM_GZ="$(gz "$HERE/dist/wasm-$p/agentwire_wasm_bg.wasm")"
  P_JS_GZ="$(cat "$HERE/dist/$p/browser.js" "$HERE"/dist/{errors,calls,client,session,fetch-socket}.js "$HERE/dist/wasm-$p/agentwire_wasm.js" | gzip -9 -c | wc -c)"
  printf 'size: agentwire/%s alone: wasm %d bytes (%d gzipped), JS %d gzipped\n' "$p" \
    "$(wc -c <"$HERE/dist/wasm-$p/agentwire_wasm_bg.wasm")" "$P_WASM_GZ" "$P_JS_GZ"
  if [ "$P_WASM_GZ" -gt "$WASM_BUDGET" ] || [ "$P_JS_GZ" -gt "$JS_BUDGET" ]; then
    echo "size: agentwire/$p OVER BUDGET" >&2
    OVER=1
  fi
done
# relay-token.js and the error module it imports.
printf 'size: agentwire/relay-token %d bytes (%d gzipped)\n' "$(cat "$HERE"/dist/{relay-token,errors}.js | wc -c)" \
  "$(cat "$HERE"/dist/{relay-token,errors}.js | gzip -9 -c | wc -c)"
if [ "$WASM_GZ" -gt "$WASM_BUDGET" ] || [ "$JS_GZ" -gt "$JS_BUDGET" ] || [ "$OVER" = 1 ]; then
  # Over budget is reported on every build. AGENTWIRE_SIZE_STRICT=1 makes any of it fatal;
  # AGENTWIRE_SIZE_STRICT=entries only a protocol's own entry, or the JS, over it (what the
  # tests build with: each is within it, the three together are not; docs/size.md).
  if [ "$OVER" = 1 ]; then
    echo "size: OVER BUDGET: a protocol's own entry is over it (above)" >&2
  elif [ "$JS_GZ" -gt "$JS_BUDGET" ]; then
    echo "size: OVER BUDGET: the JS glue and facade, $JS_GZ of $JS_BUDGET bytes gzipped" >&2
  else
    # Known: the budget (the SDK issue's) is for all three protocols in one module, an open
    # question (docs/size.md); each protocol's own entry is within it.
    echo "size: all three protocols together are over the budget (wasm $WASM_GZ of $WASM_BUDGET bytes gzipped), an open question (docs/size.md), not a failure unless AGENTWIRE_SIZE_STRICT=1; each protocol's own entry is within it" >&2
  fi
  case "${AGENTWIRE_SIZE_STRICT:-0}" in
    1) exit 1 ;;
    entries) if [ "$OVER" = 1 ] || [ "$JS_GZ" -gt "$JS_BUDGET" ]; then exit 1; fi ;;
  esac
fi
