#!/bin/sh
# Native, numpy and wasm (Chromium) throughput of decode + stats over a 128256 x 3072 tensor (788 MB).
# Usage: scripts/bench_values.sh     (from the repository root)
set -e
cargo build --profile bench-native --quiet
./target/bench-native/tensorpeek bench-values --dtype BF16
./target/bench-native/tensorpeek bench-values --dtype F16
./target/bench-native/tensorpeek bench-values --dtype F32 --elements 197001216
./target/bench-native/tensorpeek bench-values --dtype Q4_K --gguf
python3 scripts/bench_values.py
# The same decode + stats in wasm, in headless Chromium (the worker's optimisation profile).
PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH" cargo test --quiet --profile worker --target wasm32-unknown-unknown \
  --features bench --test wasm_bench -- --nocapture 2>&1 | grep -E 'wasm decode|test result'
