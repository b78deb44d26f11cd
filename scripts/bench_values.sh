#!/bin/sh
# Native, numpy and wasm (Chromium) throughput of decode + stats over a 128256 x 3072 tensor
# (788 MB), a few other types, and the GGUF block decoders alone (examples/decode_bench.rs).
# Usage: scripts/bench_values.sh     (from the repository root)
set -e
cargo build --profile bench-native --quiet
./target/bench-native/tensorpeek bench-values --dtype BF16
./target/bench-native/tensorpeek bench-values --dtype F16
./target/bench-native/tensorpeek bench-values --dtype F32 --elements 197001216
./target/bench-native/tensorpeek bench-values --dtype Q4_K --gguf
./target/bench-native/tensorpeek bench-values --dtype IQ2_XXS --gguf
cargo build --profile bench-native --quiet --example decode_bench
./target/bench-native/examples/decode_bench Q4_K Q8_0 IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ4_NL IQ4_XS TQ1_0 TQ2_0 NVFP4 Q1_0 Q2_0 Q8_1
python3 scripts/bench_values.py
# The same decode + stats in wasm, in headless Chromium (the worker's optimisation profile).
# (No --quiet: cargo hands it on to wasm-bindgen-test-runner 0.2.130, which refuses it.)
PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH" cargo test --profile worker --target wasm32-unknown-unknown \
  --features bench --test wasm_bench -- --nocapture 2>&1 | grep -E 'wasm decode|test result'
