#!/usr/bin/env bash
# Builds the npm package in npm/: the wasm of `src/js/` (bin tensorpeek-js, without the page:
# --no-default-features --features js), wasm-bindgen --target web (one output for Node and
# browsers: Node hands it the bytes, a browser the URL), wasm-opt from the repository's npm
# binaryen at -O1, as Trunk does for the page (README, Performance: why -O1).
# Profile `worker` (opt-level 3), as the page's values worker: stats decodes every element.
# Prints the wasm's size and gzipped size.
#
#   scripts/build-npm.sh          build into npm/wasm/
#   scripts/build-npm.sh --pack   then `npm pack` into target/npm/ (prints the tarball)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
target_dir="${CARGO_TARGET_DIR:-target}"
cargo build --offline --target wasm32-unknown-unknown --no-default-features --features js \
  --bin tensorpeek-js --profile worker
out=npm/wasm
rm -rf "$out"
wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name tensorpeek_js \
  "$target_dir/wasm32-unknown-unknown/worker/tensorpeek-js.wasm"
wasm-opt -O1 --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  "$out/tensorpeek_js_bg.wasm" -o "$out/tensorpeek_js_bg.wasm"
wasm="$out/tensorpeek_js_bg.wasm"
echo "npm wasm: $(stat -c %s "$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) gzipped"
if [[ "${1:-}" == "--pack" ]]; then
  mkdir -p target/npm
  (cd npm && npm pack --silent --pack-destination ../target/npm) | tail -n 1 | sed 's|^|target/npm/|'
fi
