#!/usr/bin/env bash
# Configures and builds COPS into build/ (or $COPS_BUILD_DIR). Extra args go to cmake configure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${COPS_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
cmake --build "$build" -j"${COPS_JOBS:-$(nproc)}"
