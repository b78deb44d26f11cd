#!/usr/bin/env bash
# `tensorpeek scan` over 10,000 model files (tests/make_scan_bench.py: 1,000 folders of ten,
# half of them sparse files of 0.6–1.1 GB whose data is a hole): wall time (median of
# RUNS=3, after one warm-up run), bytes read, peak RSS, with the default pool and with
# --jobs 1. Prints one line per configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --profile bench-native --bin tensorpeek 2>&1 | tail -n 1
bin=target/bench-native/tensorpeek
if [ -n "${CARGO_TARGET_DIR:-}" ]; then bin=$CARGO_TARGET_DIR/bench-native/tensorpeek; fi
out=${SCAN_BENCH_DIR:-tests/e2e/out/scan-10k}
python3 tests/make_scan_bench.py "$out" "${FOLDERS:-1000}"
files=$(find "$out" -type f ! -name '*.json' | wc -l)
apparent=$(du -s --apparent-size --block-size=1 "$out" | cut -f1)
disk=$(du -s --block-size=1 "$out" | cut -f1)
echo "files: $files model files, $(printf "%'d" "$apparent") bytes apparent, $(printf "%'d" "$disk") on disk"
runs=${RUNS:-3}
for jobs in default 1; do
  args=(scan "$out" --format json)
  [ "$jobs" = default ] || args+=(--jobs "$jobs")
  "$bin" "${args[@]}" > /dev/null || true   # warm-up: the headers in the page cache
  times=()
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%e %M' -o /tmp/bench_scan.time "$bin" "${args[@]}" > /tmp/bench_scan.out || true
    times+=("$(cat /tmp/bench_scan.time)")
  done
  median=$(printf '%s\n' "${times[@]}" | sort -n | awk -v n="$runs" 'NR == int((n + 1) / 2) {print}')
  summary=$(tail -n 1 /tmp/bench_scan.out)
  read -r secs rss <<< "$median"
  python3 - "$jobs" "$secs" "$rss" "$summary" <<'PY'
import json, sys
jobs, secs, rss, summary = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
n = summary["files"]
print(f"jobs {jobs}: {n:,} files + {summary['models']:,} merged models in {secs:.2f} s "
      f"({n / secs:,.0f} files/s), {summary['bytes_read']:,} bytes read "
      f"({summary['bytes_read'] / n:,.0f} per file), peak RSS {rss / 1024:.1f} MB, "
      f"verdicts: {summary['safe']:,} safe, {summary['error']:,} error, exit {summary['exit']}")
PY
done
