#!/usr/bin/env bash
# The npm package, as a user gets it: built (scripts/build-npm.sh), packed (`npm pack`),
# installed from the tarball into an empty folder, then used there — Node 20
# (tests/npm/node.test.mjs: every report compared with the CLI's --json), Chromium
# (tests/npm/browser.test.mjs: the library by URL and Blob in its worker, <tensorpeek-view>),
# and `tsc --noEmit` on a TypeScript consumer (tests/npm/consumer.ts). Prints the tarball's
# and the wasm's sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export PATH="$HOME/.cargo/bin:$ROOT/node_modules/.bin:$PATH"
target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" = /* ]] || target_dir="$ROOT/$target_dir"

# NPM_BUILT=1: scripts/build-npm.sh has just run (scripts/test.sh builds it beside the browser tests).
[[ "${NPM_BUILT:-}" == 1 ]] || scripts/build-npm.sh
# The CLI the reports are compared with: $TENSORPEEK (scripts/test.sh names its copy of
# the debug build), else this checkout's debug build.
if [[ -n "${TENSORPEEK:-}" ]]; then
  cli=$TENSORPEEK
else
  cargo build --offline --bin tensorpeek
  cli="$target_dir/debug/tensorpeek"
fi
export TP_ROOT="$ROOT" TP_CLI="$cli"

mkdir -p target/npm
rm -f target/npm/tensorpeek-*.tgz
tarball="$ROOT/target/npm/$(cd npm && npm pack --silent --pack-destination "$ROOT/target/npm" | tail -n 1)"
echo "npm tarball: $(basename "$tarball") $(stat -c %s "$tarball") bytes"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp tests/npm/*.mjs tests/npm/consumer.ts tests/npm/tsconfig.json "$tmp/"
cd "$tmp"
npm init -y >/dev/null
npm install --no-audit --no-fund --offline "$tarball" >/dev/null
echo "installed: $(node -p "require('./node_modules/tensorpeek/package.json').version") in $tmp"

node --test --test-concurrency=1 --test-reporter=spec node.test.mjs browser.test.mjs
tsc -p tsconfig.json && echo "tsc --noEmit: consumer.ts checks"
