#!/usr/bin/env bash
# Builds the page and serves it at http://127.0.0.1:8080 (PORT=… to change).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --serve
export PATH="$HOME/.cargo/bin:$PWD/node_modules/.bin:$PATH"
# No auto-reload: the served page then makes no request of its own after loading.
exec trunk serve --release --offline --no-autoreload --address 127.0.0.1 --port "${PORT:-8080}"
