#!/usr/bin/env bash
# The release build of the page into dist/ (`trunk build --release --offline`), skipped when
# dist/ is already the release build of these very files: Trunk's hooks stamp each build with
# the digest of its inputs (scripts/page-stamp.sh), and Trunk itself has no such check (it
# runs wasm-bindgen and wasm-opt over all three wasm files on every build: a minute or more
# here). FORCE=1 builds anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
want="release $(scripts/page-stamp.sh digest)"
if [[ "${FORCE:-}" != 1 && -f dist/index.html && -f target/page-build.stamp && "$(cat target/page-build.stamp)" == "$want" ]]; then
  echo "dist/ is the release build of these files (target/page-build.stamp): not rebuilt"
  exit 0
fi
trunk build --release --offline
