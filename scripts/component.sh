#!/usr/bin/env bash
# Builds the WebAssembly component (bindings/component, WIT package agentwire:engine@0.1.0): the
# engine's core module for wasm32-unknown-unknown (with simd128) and the `component` profile,
# encoded as a component by bindings/component/tool (wit-component). Prints its size raw and
# gzipped. Its only import is wasi:random/random.
source "$(dirname "$0")/lib.sh"
need_rust
rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown
cd "$ROOT"
# The paths below are target/'s, as scripts/test.sh's are.
unset CARGO_TARGET_DIR
RUSTFLAGS="-C target-feature=+simd128" \
  cargo build -q -p agentwire-component --target wasm32-unknown-unknown --profile component
cargo build -q -p agentwire-componentize
OUT=target/component
mkdir -p "$OUT"
W="$OUT/agentwire_component.wasm"
target/debug/agentwire-componentize target/wasm32-unknown-unknown/component/agentwire_component.wasm "$W"
echo "component: $W: $(wc -c <"$W") B, $(gzip -9c "$W" | wc -c) B gzipped"
