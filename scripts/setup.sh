#!/usr/bin/env bash
# Installs what tensorpeek's build and tests need, skipping whatever is already there.
# A fresh machine needs Rust, Node 20 and Python 3.11; everything else comes from
# crates.io, npm, PyPI and Debian. The two `cargo install`s are the slow part the first time.
#
#   scripts/setup.sh          everything (build + browser tests)
#   scripts/setup.sh --serve  only what building and serving the page needs
set -euo pipefail
cd "$(dirname "$0")/.."

TRUNK_VERSION=0.21.14
WASM_BINDGEN_VERSION=0.2.130   # must equal Cargo.lock's wasm-bindgen and Trunk.toml
WASM_OPT_VERSION=132           # binaryen from npm (package.json); Debian's is too old

serve_only=0
[[ "${1:-}" == "--serve" ]] && serve_only=1

say() { printf '[setup] %s\n' "$*"; }
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"

if rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "wasm32 target: present"
else
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

# The two build tools are compiled from crates.io. They are tools, not the product: built
# with a light release profile (no LTO, many codegen units, opt-level 0) instead of their own
# fat-LTO, one-unit profile, without their TLS and update-check features (the build runs
# --offline and never downloads), and both at once so that one's serial steps (a link, a big
# crate) overlap the other's. Measured in README.md ("The two commands").
# At opt-level 0 Trunk at run time only copies, hashes and serves a few files; wasm-bindgen-cli
# installs in 70 s and 130 CPU-seconds instead of 139 s and 267 at opt-level 1 (2026-12-07,
# alone, registry present), and its runs take ~1 s longer on each of the page's wasm files
# and the wasm tests' (0.3 → 1 s; 0.9 → 3.3 s for the largest test binary).
light=(env CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=64
       CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=false
       CARGO_PROFILE_RELEASE_INCREMENTAL=false)
pids=()
if [[ "$(trunk --version 2>/dev/null || true)" == "trunk $TRUNK_VERSION" ]]; then
  say "trunk $TRUNK_VERSION: present"
else
  say "installing trunk $TRUNK_VERSION (light profile, no default features)"
  "${light[@]}" cargo install --quiet --locked --no-default-features "trunk@$TRUNK_VERSION" &
  pids+=($!)
fi

if [[ "$(wasm-bindgen --version 2>/dev/null || true)" == "wasm-bindgen $WASM_BINDGEN_VERSION"* ]]; then
  say "wasm-bindgen $WASM_BINDGEN_VERSION: present"
else
  # No --locked: the locked webpki-roots is not in every registry mirror.
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (light profile, no default features)"
  "${light[@]}" cargo install --quiet --no-default-features "wasm-bindgen-cli@$WASM_BINDGEN_VERSION" &
  pids+=($!)
fi
# While the tools compile, so does the page: the same `cargo build`s that Trunk runs for
# index.html's four wasm files (same target, profiles, bins and --offline), so that Trunk's
# own build finds them fresh and only runs wasm-bindgen and wasm-opt (the workers with only
# feature `worker`, as index.html asks: the library without the page's views). The tools'
# builds have one-core stretches (a link, a big crate) that this fills. A failure here is not fatal:
# Trunk builds again and reports it.
page_build=""
if [[ ${#pids[@]} -gt 0 ]]; then
  say "building the page's wasm beside them (log: target/setup-page-build.log)"
  mkdir -p target
  ( cargo fetch --locked \
    && cargo build --target=wasm32-unknown-unknown --release --offline --bin tensorpeek --bin tensorpeek-peek \
    && cargo build --target=wasm32-unknown-unknown --profile worker --offline \
         --no-default-features --features worker --bin tensorpeek-worker --bin tensorpeek-values ) > target/setup-page-build.log 2>&1 &
  page_build=$!
fi
# The downloads below (npm, Debian, PyPI) run while the two tools compile.
wait_tools() {
  for pid in "${pids[@]}"; do wait "$pid" || { say "a cargo install failed"; exit 1; }; done
  pids=()
  if [[ -n "$page_build" ]]; then
    wait "$page_build" && say "page wasm: built" || say "page wasm: the early build failed (Trunk will build and report it)"
    page_build=""
  fi
}

# npm ci brings playwright-core and binaryen (wasm-opt) into node_modules; rerun only
# when package-lock.json changed since the last install.
if [[ -f node_modules/.package-lock.json && node_modules/.package-lock.json -nt package-lock.json ]] \
   && [[ "$(node_modules/.bin/wasm-opt --version 2>/dev/null || true)" == *"version_$WASM_OPT_VERSION"* ]]; then
  say "node_modules: up to date"
else
  say "npm ci"
  npm ci --no-audit --no-fund
fi
wasm-opt --version | grep -q "version_$WASM_OPT_VERSION" || { say "wasm-opt is not version $WASM_OPT_VERSION"; exit 1; }

[[ $serve_only == 1 ]] && { wait_tools; exit 0; }

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  say "chromium + chromedriver: present"
else
  say "installing chromium and chromium-driver from Debian"
  sudo_=""; [[ $(id -u) != 0 ]] && sudo_="sudo"
  $sudo_ apt-get update
  $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver
fi

if python3 -c 'import safetensors, gguf, numpy' 2>/dev/null; then
  say "python safetensors, gguf, numpy: present"
else
  say "pip install safetensors gguf numpy"
  python3 -m pip install --quiet safetensors gguf numpy
fi
wait_tools
