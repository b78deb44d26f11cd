#!/usr/bin/env bash
# Builds the page and serves it at http://127.0.0.1:8080 (PORT=… to change).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --serve
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
exec trunk serve --release --offline --address 127.0.0.1 --port "${PORT:-8080}"
