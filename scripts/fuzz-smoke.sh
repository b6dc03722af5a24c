#!/usr/bin/env bash
# Builds the converter fuzz targets with clang + libFuzzer and runs each for a bounded time.
#   scripts/fuzz-smoke.sh [SECONDS]        (default 20 s per target; build dir build-fuzz/)
# Crashes are left as crash-* files in the build dir's corpus/ folder: keep each as a
# regression test in tests/convert/ and fix the bug.
# Internal form used by ctest: fuzz-smoke.sh --run-one FUZZER SEEDER FORMAT CORPUS SECONDS
set -euo pipefail
if [ "${1:-}" = "--run-one" ]; then
  fuzzer=$2 seeder=$3 format=$4 corpus=$5 seconds=$6
  dir="$corpus/$format"
  mkdir -p "$dir" "$corpus/artifacts"
  "$seeder" "$format" "$dir"
  # Leaks in third-party parsers are not what this smoke run looks for.
  ASAN_OPTIONS=detect_leaks=0 "$fuzzer" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=262144 -artifact_prefix="$corpus/artifacts/$format-" \
    -seed="${COPS_FUZZ_SEED:-1}" -print_final_stats=1 "$dir" 2>&1 | tail -n 12
  exit "${PIPESTATUS[0]}"
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-20}"
cmake -S "$root" -B "$build" -G Ninja -DCOPS_FUZZ=ON -DCOPS_BUILD_BENCH=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
formats=(text html email pdf docx odt latex markdown auto)
cmake --build "$build" -j"${COPS_JOBS:-2}" --target cops-fuzz-seeds "${formats[@]/#/fuzz_}"
status=0
for f in "${formats[@]}"; do
  echo "== fuzz_$f (${seconds}s)"
  "$0" --run-one "$build/fuzz/fuzz_$f" "$build/fuzz/cops-fuzz-seeds" "$f" "$build/fuzz/corpus" \
    "$seconds" || status=1
done
exit $status
