#!/usr/bin/env bash
# Trunk's pre_build and post_build hooks (Trunk.toml): records which files dist/ was built
# from, so that scripts/build-page.sh can leave a dist/ alone that these very files made
# (scripts/serve.sh builds it, then scripts/test.sh needs the same build).
#   page-stamp.sh begin   the inputs' digest now, into target/page-build.pending
#   page-stamp.sh end     the same digest again: when nothing changed during the build, it is
#                         the stamp (target/page-build.stamp, "<profile> <digest>")
#   page-stamp.sh digest  prints the digest of the inputs as they are now
# The inputs: everything Trunk's build reads (the crate's sources, the page's files, the
# manifests, the cargo config) and the tools' versions.
set -euo pipefail
cd "$(dirname "$0")/.."
digest() {
  {
    find src www index.html Trunk.toml Cargo.toml Cargo.lock .cargo -type f -print0 \
      | sort -z | xargs -0 sha256sum
    rustc -V
    wasm-bindgen --version 2>/dev/null || true
    wasm-opt --version 2>/dev/null || true
  } | sha256sum | cut -d' ' -f1
}
mkdir -p target
case "${1:-}" in
  begin) rm -f target/page-build.stamp; digest > target/page-build.pending ;;
  end)
    now=$(digest)
    if [[ -f target/page-build.pending && "$(cat target/page-build.pending)" == "$now" ]]; then
      echo "${TRUNK_PROFILE:-unknown} $now" > target/page-build.stamp
    fi
    rm -f target/page-build.pending ;;
  digest) digest ;;
  *) echo "usage: $0 begin|end|digest" >&2; exit 2 ;;
esac
