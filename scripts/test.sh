#!/usr/bin/env bash
# One command: install dependencies, build everything (tests and benchmarks) and run the test suite.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" -DCOPS_BUILD_TESTS=ON -DCOPS_BUILD_BENCH=ON -DCOPS_WERROR=ON "$@"
cd "${COPS_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j"${COPS_JOBS:-$(nproc)}" --timeout 600
