#!/usr/bin/env bash
# The conversion audit's native throughput and memory: the sparse Llama-3.2-3B-shaped
# checkpoint (2 shards, 6.4 GB, tests/make_sparse_checkpoint.py) against the matching
# sparse BF16 GGUF (6.4 GB, tests/make_sparse_gguf.py --dtype bf16 --rope-freqs) — or with
# MOE=1 the Qwen3-30B-A3B-shaped pair (2 × 61 GB) —, audited
# by `tensorpeek bench-audit`, which prints GB/s of source bytes and peak RSS.
#
# Each of RUNS (3) runs first drops the three files from the page cache
# (posix_fadvise DONTNEED, these files only) and times `cat` of them — what the kernel
# delivers in that state: reading a hole means zero-filling page-cache pages, which on a
# VM whose memory sat idle can be slow — then drops them again and runs the audit cold;
# a last run is warm (the files in the page cache). Then the page: tests/e2e/bench_audit.mjs
# audits the same pair in Chromium (RUNS runs; PAGE=0 skips it). Needs what scripts/setup.sh
# installs (python3 with gguf and numpy, Trunk, Chromium, playwright-core).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
out=tests/e2e/out
mkdir -p "$out"
cargo build --profile bench-native --bin tensorpeek 2>&1 | tail -n 1
if [[ "${MOE:-0}" == 1 ]]; then
  # The Qwen3-30B-A3B-shaped pair: 13 shards (18,867 tensors, experts one by one) and the
  # BF16 GGUF with stacked experts, 61 GB each.
  ckpt="$out/qwen3moe-30b-ckpt" gguf="$out/qwen3moe-30b.bf16.sparse.gguf"
  [[ -f "$ckpt/config.json" ]] || python3 tests/make_sparse_checkpoint.py "$ckpt" --qwen3moe
  [[ -f "$gguf" ]] || python3 tests/make_sparse_gguf_moe.py "$gguf"
  files=("$ckpt"/*.safetensors "$gguf")
else
  ckpt="$out/llama32-3b-ckpt" gguf="$out/llama32-3b.bf16.sparse.gguf"
  [[ -f "$ckpt/config.json" ]] || python3 tests/make_sparse_checkpoint.py "$ckpt"
  [[ -f "$gguf" ]] || python3 tests/make_sparse_gguf.py "$gguf" --dtype bf16 --rope-freqs
  files=("$ckpt"/model-0000{1,2}-of-00002.safetensors "$gguf")
fi
evict() { python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "${files[@]}"; }
audit() { target/bench-native/tensorpeek bench-audit "$ckpt" --against "$gguf" || true; }
for i in $(seq "${RUNS:-3}"); do
  evict
  TIMEFORMAT=%R
  secs=$( { time cat "${files[@]}" > /dev/null; } 2>&1 )
  echo "run $i, cold: cat of the same files took $secs s"
  evict
  audit
done
echo "warm (in the page cache):"
audit
evict
if [[ "${PAGE:-1}" == 1 ]]; then
  export PATH="$PWD/node_modules/.bin:$PATH"
  trunk build --release --offline 2>&1 | tail -n 1
  echo "the page (Chromium), the same pair:"
  node tests/e2e/bench_audit.mjs
  evict
fi
