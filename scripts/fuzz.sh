#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...] — runs the cargo-fuzz targets in fuzz/ one after the
# other, each for SECONDS (default 60), and prints one line per target: executions,
# coverage (libFuzzer's edge count), speed. Exits non-zero when a target finds an input
# that breaks an invariant (the input is saved in fuzz/artifacts/TARGET/; make it a named
# test in tests/fuzz_regressions.rs — docs/fuzzing.md).
#
# Installs what is missing, idempotently: a dated nightly toolchain (`rustup toolchain
# install nightly-2026-05-20`; FUZZ_TOOLCHAIN overrides it) and cargo-fuzz (`cargo install cargo-fuzz`). Seeds come from tests/fixtures
# (fuzz/make_dicts_and_seeds.py); the corpus grows in fuzz/corpus/ (not committed).
#
# Environment: FUZZ_RUNS=N stops each target after N executions instead of the time;
# FUZZ_ARGS adds libFuzzer options (`-seed=1`: the same mutations every run);
# FUZZ_SEEDS_ONLY=1 starts each target from its seeds alone (a fresh copy, fuzz/corpus/
# untouched), so that with FUZZ_RUNS and a fixed -seed the same code gives the same result
# (CI's smoke, .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
SECONDS_EACH=${1:-60}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(safetensors gguf companions assembly decode pickle torch)

say() { printf '[fuzz] %s\n' "$*"; }

# A dated nightly, so that CI builds the targets with the toolchain they were run with
# (FUZZ_TOOLCHAIN=nightly takes the newest).
TC=${FUZZ_TOOLCHAIN:-nightly-2026-05-20}
if ! rustup run "$TC" rustc --version >/dev/null 2>&1; then
  say "rustup toolchain install $TC"
  rustup toolchain install "$TC" --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  say "cargo install cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
python3 fuzz/make_dicts_and_seeds.py
# Safe Rust: no sanitizer (2-3x the executions of AddressSanitizer); overflow checks and
# debug assertions stay on (cargo-fuzz's default), so an unchecked overflow is a crash.
nice cargo +"$TC" fuzz build -s none >/dev/null 2>&1 || nice cargo +"$TC" fuzz build -s none

dict_of() { case $1 in safetensors) echo safetensors;; gguf|decode) echo gguf;; pickle|torch) echo pickle;; *) echo json;; esac; }
# Longest input per target: room for real headers (the seeds) without slowing every run.
max_len_of() { case $1 in safetensors) echo 16384;; gguf) echo 65546;; companions) echo 16384;; assembly) echo 16384;; decode) echo 1200;; pickle) echo 16384;; torch) echo 65536;; esac; }

LOGS=fuzz/logs
mkdir -p "$LOGS"
status=0
summary=()
for t in "${TARGETS[@]}"; do
  if [ -n "${FUZZ_RUNS:-}" ]; then
    stop="-runs=$FUZZ_RUNS"
    say "$t: $FUZZ_RUNS runs"
  else
    stop="-max_total_time=$SECONDS_EACH"
    say "$t: $SECONDS_EACH s"
  fi
  corpus="fuzz/corpus/$t"
  if [ -n "${FUZZ_SEEDS_ONLY:-}" ]; then
    corpus=$(mktemp -d)
    cp fuzz/corpus/"$t"/seed-* "$corpus"/
  fi
  start=$(date +%s)
  if nice cargo +"$TC" fuzz run -s none "$t" "$corpus" -- \
      "$stop" -dict="fuzz/dict/$(dict_of "$t").dict" -max_len="$(max_len_of "$t")" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 ${FUZZ_ARGS:-} >"$LOGS/$t.log" 2>&1; then
    result=ok
  else
    result="FAILED (see $LOGS/$t.log and fuzz/artifacts/$t/)"
    status=1
  fi
  secs=$(( $(date +%s) - start ))
  [ -z "${FUZZ_SEEDS_ONLY:-}" ] || rm -rf "$corpus"
  runs=$(grep -Eo 'number_of_executed_units: [0-9]+' "$LOGS/$t.log" | grep -Eo '[0-9]+' | tail -n 1 || true)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$LOGS/$t.log" | tail -n 1 || true)
  summary+=("$(printf '%-12s %-8s %12s runs  %6s s  %s' "$t" "$result" "${runs:-?}" "$secs" "${cov:-}")")
done
printf '\n==== fuzz summary\n'
printf '%s\n' "${summary[@]}"
exit $status
