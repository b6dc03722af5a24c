#!/usr/bin/env bash
# Builds the fuzz targets with clang + libFuzzer (the converters, the milter's message path, the
# index's on-disk codec, the access store's records, receipts, the gRPC service's handlers and
# the HTTP API) and runs each for a bounded time, then prints what each reached: executions,
# coverage (cov: edges, ft: features) and corpus, so that a target stuck in a shallow layer
# shows.
#   scripts/fuzz-smoke.sh [SECONDS]        (default 20 s per target; build dir build-fuzz/)
# Crashes are left as crash-* files in the build dir's corpus/ folder: keep each as a
# regression test in tests/ (the directory of the code at fault) and fix the bug.
# Internal form used by ctest: fuzz-smoke.sh --run-one FUZZER SEEDER NAME CORPUS SECONDS [SEEDS]
# (SEEDS: the format whose seeds and fuzz/SEEDS.dict dictionary the target starts from,
# default NAME). It prints libFuzzer's last lines and one "fuzz-stats" line, and leaves the
# log in CORPUS/NAME.log and the stats line in CORPUS/NAME.stats.
set -euo pipefail
if [ "${1:-}" = "--run-one" ]; then
  fuzzer=$2 seeder=$3 format=$4 corpus=$5 seconds=$6 seeds=${7:-$4}
  dir="$corpus/$format"
  log="$corpus/$format.log"
  mkdir -p "$dir" "$corpus/artifacts"
  "$seeder" "$seeds" "$dir"
  dict=()
  dict_file="$(cd "$(dirname "$0")/.." && pwd)/fuzz/$seeds.dict"
  if [ -f "$dict_file" ]; then dict=(-dict="$dict_file"); fi
  # Leaks in third-party parsers are not what this smoke run looks for.
  status=0
  ASAN_OPTIONS=detect_leaks=0 "$fuzzer" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=262144 -artifact_prefix="$corpus/artifacts/$format-" \
    -seed="${COPS_FUZZ_SEED:-1}" -print_final_stats=1 "${dict[@]}" "$dir" >"$log" 2>&1 ||
    status=$?
  tail -n 12 "$log"
  # libFuzzer's last status line ("#N DONE cov: C ft: F corp: U/S ...") and final stats.
  last=$(grep -E '^#[0-9]+.* cov: ' "$log" | tail -n 1 || true)
  field() { sed -nE "s/.* $1: ([^ ]+).*/\\1/p" <<<"$last"; }
  stat() { sed -nE "s/^stat::$1: *([0-9]+).*/\\1/p" "$log" | tail -n 1; }
  printf 'fuzz-stats fuzz_%s execs=%s exec/s=%s cov=%s ft=%s corpus=%s new=%s exit=%s\n' \
    "$format" "$(stat number_of_executed_units)" "$(stat average_exec_per_sec)" \
    "$(field cov)" "$(field ft)" "$(field corp)" "$(stat new_units_added)" "$status" |
    tee "$corpus/$format.stats"
  exit "$status"
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-20}"
cmake -S "$root" -B "$build" -G Ninja -DCOPS_FUZZ=ON -DCOPS_BUILD_BENCH=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
formats=(text html email pdf docx odt latex markdown auto)
# Targets seeded with values COPS's own encoders wrote (fuzz/fuzz_seeds.cc). fuzz_service and
# fuzz_http compile the whole service with clang (about 60 files, ~10 minutes on 2 cores), so
# CI (.ci/run) leaves them out with COPS_FUZZ_SKIP_SERVICE=1 to stay within its time; run them
# with `scripts/fuzz-smoke.sh 60`.
records=(storage_codec access_records receipt)
if [ "${COPS_FUZZ_SKIP_SERVICE:-0}" != 1 ]; then records+=(service http); fi
cmake --build "$build" -j"${COPS_JOBS:-2}" --target cops-fuzz-seeds "${formats[@]/#/fuzz_}" \
  fuzz_milter "${records[@]/#/fuzz_}"
status=0
corpus="$build/fuzz/corpus"
for f in "${formats[@]}" milter "${records[@]}"; do
  echo "== fuzz_$f (${seconds}s)"
  seeds=$f
  if [ "$f" = milter ]; then seeds=email; fi  # cops-milter's message path starts from emails
  rm -f "$corpus/$f.stats"
  "$0" --run-one "$build/fuzz/fuzz_$f" "$build/fuzz/cops-fuzz-seeds" "$f" "$corpus" \
    "$seconds" "$seeds" || status=1
done
# One row per target. corpus: inputs kept / their total size; new: inputs added this run.
echo "== coverage after ${seconds}s per target"
for f in "${formats[@]}" milter "${records[@]}"; do
  cat "$corpus/$f.stats" 2>/dev/null || echo "fuzz-stats fuzz_$f (no stats)"
done | awk 'BEGIN { printf "%-14s %10s %8s %6s %7s %12s %5s %5s\n", "target", "execs",
                    "exec/s", "cov", "ft", "corpus", "new", "exit" }
            { row[1] = $2
              for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
              printf "%-14s %10s %8s %6s %7s %12s %5s %5s\n", row[1], v["execs"], v["exec/s"],
                     v["cov"], v["ft"], v["corpus"], v["new"], v["exit"]
              delete v }'
exit $status
