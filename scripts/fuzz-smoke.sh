#!/usr/bin/env bash
# Builds the converter fuzz targets with clang + libFuzzer and runs each for a bounded time.
#   scripts/fuzz-smoke.sh [SECONDS]        (default 20 s per target; build dir build-fuzz/)
# Crashes are left as crash-* files in the build dir's corpus/ folder: keep each as a
# regression test in tests/convert/ and fix the bug.
# Internal form used by ctest: fuzz-smoke.sh --run-one FUZZER SEEDER NAME CORPUS SECONDS [SEEDS]
# (SEEDS: the format whose seeds the target starts from, default NAME).
set -euo pipefail
if [ "${1:-}" = "--run-one" ]; then
  fuzzer=$2 seeder=$3 format=$4 corpus=$5 seconds=$6 seeds=${7:-$4}
  dir="$corpus/$format"
  mkdir -p "$dir" "$corpus/artifacts"
  "$seeder" "$seeds" "$dir"
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
cmake --build "$build" -j"${COPS_JOBS:-2}" --target cops-fuzz-seeds "${formats[@]/#/fuzz_}" \
  fuzz_milter
status=0
for f in "${formats[@]}" milter; do
  echo "== fuzz_$f (${seconds}s)"
  seeds=$f
  if [ "$f" = milter ]; then seeds=email; fi  # cops-milter's message path starts from emails
  "$0" --run-one "$build/fuzz/fuzz_$f" "$build/fuzz/cops-fuzz-seeds" "$f" "$build/fuzz/corpus" \
    "$seconds" "$seeds" || status=1
done
exit $status
