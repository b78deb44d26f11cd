#!/usr/bin/env bash
# Prints, for the sparse ~6 GB Llama-3.2-3B-shaped safetensors file: bytes read and ms
# from drop to rendered inventory in Chromium, and the same for the native CLI (median
# of RUNS=7 runs); the same for a sparse PyTorch zip of the same tensors, and its
# conversion to safetensors (page, CLI, cp).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
mkdir -p tests/e2e/out
trunk build --release --offline 2>&1 | tail -n 1
cargo build --profile bench-native --bin tensorpeek 2>&1 | tail -n 1
file=tests/e2e/out/llama32-3b.sparse.safetensors
python3 tests/make_sparse_safetensors.py "$file"
python3 tests/make_sparse_gguf.py tests/e2e/out/llama32-3b.sparse.gguf
python3 tests/make_bench_files.py tests/e2e/out
# Issue 13's table: every row beside its floor and its target (with issue 25's cold drop over a
# throttled link, ONLY=cold, beside the floor page under the same throttle).
node tests/e2e/bench_page.mjs tests/e2e/out target/bench-native/tensorpeek
node tests/e2e/bench.mjs "$file" target/bench-native/tensorpeek
# Will it run? One projection and a 24-point chart over a 101,013-tensor model (issue 22:
# <= 5 ms natively), and over the Qwen3-30B-A3B-shaped sparse GGUF.
python3 tests/make_sparse_gguf_moe.py tests/e2e/out/moe-100k.sparse.gguf --layers 130 --experts 256 --unmerged
python3 tests/make_sparse_gguf_moe.py tests/e2e/out/qwen3moe-30b.sparse.gguf
target/bench-native/tensorpeek fit tests/e2e/out/moe-100k.sparse.gguf --gpu 24GiB --bench 50
target/bench-native/tensorpeek fit tests/e2e/out/qwen3moe-30b.sparse.gguf --gpu 24GiB --bench 50
# The page: every slider move recomputed on the 101,013-tensor model, no UI-thread task over 50 ms.
node tests/e2e/bench_fit.mjs
# The same on an RPC device, where the compute buffers come from the scheduler and ggml-alloc
# simulated over the reserved graph (8,208 nodes for the 130 blocks): also <= 5 ms.
target/bench-native/tensorpeek fit tests/e2e/out/moe-100k.sparse.gguf --gpu 24GiB --backend rpc --bench 50
target/bench-native/tensorpeek fit tests/e2e/out/qwen3moe-30b.sparse.gguf --gpu 24GiB --backend rpc --bench 50
# The values worker from the file: BF16 → stats of the 788 MB embedding, with and without SHA-256.
node tests/e2e/bench_values.mjs "$file"
# wasm alone (no reads), native and numpy.
scripts/bench_values.sh
# PyTorch zip: inventory, then conversion to safetensors (page, CLI, cp; RUNS=3 by default).
torch=tests/e2e/out/llama32-3b.sparse.pt
python3 tests/make_sparse_torch.py "$torch"
node tests/e2e/bench.mjs "$torch" target/bench-native/tensorpeek
RUNS=${CONVERT_RUNS:-3} node tests/e2e/bench_convert.mjs "$torch" target/bench-native/tensorpeek
