#!/usr/bin/env bash
# Every test: native core tests, the wheel / pre-commit hook / GitHub Action
# (scripts/test_integrations.sh), the Blob byte source in headless Chromium
# (wasm-bindgen-test), the release build of the page, the Playwright end-to-end tests
# (including a sparse ~6 GB file generated here), and the npm package from its tarball.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
at() { echo "$(( $(date +%s) - t0 )) s"; }   # seconds since the start, for the step headers
scripts/setup.sh
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
LOGS=target/test-logs
mkdir -p "$LOGS" tests/e2e/out
summary=()

step() { printf '\n==== %s  (at %s)\n' "$*" "$(at)"; }

integrations=""
npm_build=""
trap 'kill $integrations $npm_build 2>/dev/null || true' EXIT   # a failed step below stops them too

# cargo-nextest (on every machine of our kind) runs the tests side by side, each in a
# process of its own (the native integration tests are one binary, tests/main.rs): the long single-threaded ones (tests/memory_bounds.rs'
# groups, the llama.cpp replays) no longer run one after another on one core. Without it,
# `cargo test`.
if cargo nextest --version >/dev/null 2>&1; then
  step "cargo nextest run (native)"
  cargo nextest run --no-fail-fast 2>&1 | tee "$LOGS/native.log"
  summary+=("native:   $(grep -E '^ *Summary ' "$LOGS/native.log" | tail -n 1 | sed -E 's/.*[0-9]+ tests? run: //')")
else
  step "cargo test (native)"
  cargo test 2>&1 | tee "$LOGS/native.log"
  summary+=("native:   $(grep -E '^test result:' "$LOGS/native.log" | awk '{p+=$4; f+=$6} END {print p" passed, "f" failed"}')")
fi

# The CLI the browser and npm tests compare the page and the library with: the debug build
# the native tests have just run, copied, since the integrations below link
# target/debug/tensorpeek again as they build the wheel (a test starting it at that moment
# would find no file).
[[ -x target/debug/tensorpeek ]] || cargo build --quiet --bin tensorpeek
mkdir -p target/test-cli
cp target/debug/tensorpeek target/test-cli/tensorpeek
export TENSORPEEK="$PWD/target/test-cli/tensorpeek"

# The wheel, the pre-commit hook and the GitHub Action run beside every step below. Their
# builds use the dev profile in this target directory (WHEEL_PROFILE, scripts/
# test_integrations.sh): the native step has just compiled every crate they need in it,
# so the wheel's build only links (the pre-commit hook's, from a copy of the repository
# at another path, compiles our crate again). What they check is how the wheel is built,
# installed and run, which the profile does not change. (Until 2026-12-07 they built
# the release profile made light, with a target directory of their own, beside the native
# step: ~150 CPU-seconds of compiling every crate again, on the same two cores.)
step "the wheel, the pre-commit hook and the GitHub Action (beside the steps below)"
(WHEEL_PROFILE=dev scripts/test_integrations.sh && rc=0 || rc=$?; echo "integrations: finished at $(at)"; exit $rc) > "$LOGS/integrations.log" 2>&1 &
integrations=$!

# The npm package's wasm (a fat-LTO build, then wasm-bindgen and binaryen's wasm-opt -O1
# under Node) builds beside the steps below from here, in the `worker` profile's target
# directory, whose dependencies the page's workers built with the same features (its cargo
# step then 54 s of one core, 2026-12-07; a rebuild of the page waits for it). Started
# with the browser tests, as until 2026-12-07, it was the last thing running: in a clean
# set-up's test step (d453c78) the browser tests were done at 509 s and the npm build, then
# running alone, at 584 s.
(scripts/build-npm.sh > "$LOGS/npm-build.log" 2>&1; echo "npm build: exit $? at $(at)" >> "$LOGS/npm-build.log") &
npm_build=$!

step "wasm-bindgen-test in headless Chromium (Blob byte source, SIMD128 statistics)"
# Without the page's feature: the byte source and the statistics need neither Yew nor gloo.
# wasm-bindgen-test-runner gives a whole test binary 20 s and its driver 5 s to start, then
# kills it: wasm_blob ran 11–17 s idle, and a clone's run of this script (2026-12-03, the
# integrations' release build beside it) was killed there. The limits below only stop a hang.
WASM_BINDGEN_TEST_TIMEOUT=900 WASM_BINDGEN_TEST_DRIVER_TIMEOUT=120 \
  cargo test --target wasm32-unknown-unknown --no-default-features --test wasm_blob --test stats_paths 2>&1 | tee "$LOGS/wasm.log"
summary+=("wasm:     $(grep -E '^test result:' "$LOGS/wasm.log" | awk '{p+=$4; f+=$6} END {print p" passed, "f" failed"}')")

step "trunk build --release --offline (skipped when dist/ was built from these very files)"
scripts/build-page.sh 2>&1 | tail -n 5
wasm=$(ls dist/*_bg.wasm | grep -v -e worker -e values -e tensorpeek-peek)
summary+=("build:    $(basename "$wasm") $(stat -c %s "$wasm") bytes, $(gzip -c "$wasm" | wc -c) gzipped")
for worker in dist/tensorpeek-peek_bg.wasm dist/tensorpeek-worker_bg.wasm dist/tensorpeek-values_bg.wasm; do
  summary+=("worker:   $(basename "$worker") $(stat -c %s "$worker") bytes, $(gzip -c "$worker" | wc -c) gzipped")
done

step "sparse files"
python3 tests/make_sparse_safetensors.py tests/e2e/out/llama32-3b.sparse.safetensors
python3 tests/make_sparse_checkpoint.py tests/e2e/out/llama32-3b-ckpt
python3 tests/make_sparse_gguf.py tests/e2e/out/llama32-3b.sparse.gguf
python3 tests/make_sparse_gguf.py tests/e2e/out/llama32-3b.bf16.sparse.gguf --dtype bf16 --rope-freqs
python3 tests/make_sparse_torch.py tests/e2e/out/llama32-3b.sparse.pt

# Two test files at a time (a fresh clone, 2026-12-07: 298 s one at a time, 248 s two at
# a time, the npm build beside both then). Each test waits on the condition it needs, never
# a fixed budget, so a busy machine makes them slower, not red (README, Tests).
step "Playwright end-to-end (node --test, two files at a time)"
node --test --test-concurrency=2 --test-reporter=spec tests/e2e/ 2>&1 | tee "$LOGS/e2e.log"
summary+=("e2e:      $(grep -E '^ℹ (pass|fail) ' "$LOGS/e2e.log" | tr '\n' ' ')")

step "npm package (build, pack, install the tarball; Node 20, Chromium, tsc)"
wait "$npm_build" || true
npm_build=""
cat "$LOGS/npm-build.log"
grep -q '^npm build: exit 0 ' "$LOGS/npm-build.log" || { echo "the npm package's build failed"; exit 1; }
NPM_BUILT=1 scripts/test-npm.sh 2>&1 | tee "$LOGS/npm.log"
summary+=("npm:      $(grep -E '^ℹ (pass|fail) ' "$LOGS/npm.log" | tr '\n' ' ')$(grep -hE '^npm (tarball|wasm):' "$LOGS/npm-build.log" "$LOGS/npm.log" | tr '\n' ' ')")

step "the wheel, the pre-commit hook and the GitHub Action, as their users run them"
integrations_status=0
wait "$integrations" || integrations_status=$?
cat "$LOGS/integrations.log"
summary+=("$(grep -E '^integrations: [0-9]' "$LOGS/integrations.log" | tail -n 1 || echo "integrations: did not finish (exit $integrations_status)") ($(grep -E '^integrations: finished' "$LOGS/integrations.log" | cut -d' ' -f2-))")

step "summary"
printf '%s\n' "${summary[@]}"
echo "total:    $(at)"
[ "$integrations_status" -eq 0 ] || { echo "the integration checks failed (exit $integrations_status)"; exit 1; }
