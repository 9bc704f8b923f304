#!/usr/bin/env bash
# Builds the WebAssembly component (bindings/component, WIT package agentwire:engine@0.1.0) for
# wasm32-wasip2 with the `component` profile, and prints its size raw and gzipped.
source "$(dirname "$0")/lib.sh"
need_wasip2
cd "$ROOT"
cargo build -q -p agentwire-component --target wasm32-wasip2 --profile component
W=target/wasm32-wasip2/component/agentwire_component.wasm
echo "component: $W: $(wc -c <"$W") B, $(gzip -9c "$W" | wc -c) B gzipped"
