#!/bin/sh
# Native and numpy throughput of BF16 -> stats over a 128256 x 3072 tensor (788 MB).
# Usage: scripts/bench_values.sh     (from the repository root)
set -e
cargo build --profile bench-native --quiet
./target/bench-native/tensorpeek bench-values --dtype BF16
./target/bench-native/tensorpeek bench-values --dtype F16
./target/bench-native/tensorpeek bench-values --dtype F32 --elements 197001216
./target/bench-native/tensorpeek bench-values --dtype Q4_K --gguf
python3 scripts/bench_values.py
