#!/usr/bin/env bash
# ThreadSanitizer run of the concurrency tests: builds the named test binaries (and only what
# they link) with clang and -DCOPS_SANITIZE=thread into build-tsan/, then runs each; a data
# race, a lock-order inversion or any other TSan report fails the run.
#   scripts/tsan.sh [TEST[=FILTER]...]   TEST: a test binary's name, e.g. admission_control_test;
#                                        FILTER: its --gtest_filter (default: every test)
# Without TESTs it runs the list below. COPS_TSAN_FILTER is the filter of TESTs given without
# one.
# Debian's Abseil is not built with TSan: tests/testing/tsan_absl_mutex.cc (linked into every
# test binary of this build) tells TSan of absl::Mutex's locking. Third-party reports that
# remain are suppressed, each with its reason, in scripts/tsan.supp.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_TSAN_BUILD_DIR:-$root/build-tsan}"
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  # The index's lookup pool, its concurrent writes, warm-up and reopen after a full disk,
  # admission control, the stream watchdog and revoked streams (service_access_test), usage
  # reservations, the audit queue, the retention sweeper, the converter worker pool, the
  # memtable's skip list (readers during inserts).
  tests=(parallel_parts_test
         "index_test=*Concurrent*:*Parallel*:*Warm*:*DiskFull*:*Reopen*"
         admission_control_test usage_ledger_test audit_sink_test
         retention_sweeper_test service_access_test worker_pool_test memtable_rep_test)
fi
targets=()
for t in "${tests[@]}"; do targets+=("${t%%=*}"); done
cmake -S "$root" -B "$build" -G Ninja -DCOPS_SANITIZE=thread -DCOPS_BUILD_TESTS=ON \
  -DCOPS_BUILD_BENCH=OFF -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"${COPS_JOBS:-$(nproc)}" --target "${targets[@]}"
status=0
for t in "${tests[@]}"; do
  name="${t%%=*}"
  filter="${COPS_TSAN_FILTER:-*}"
  [ "$name" != "$t" ] && filter="${t#*=}"
  bin=$(find "$build/tests" -type f -name "$name" -perm -u+x | head -n 1)
  echo "== $name ($filter)"
  TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 suppressions=$root/scripts/tsan.supp ${TSAN_OPTIONS:-}" \
    "$bin" --gtest_filter="$filter" || { echo "== $name: FAILED (exit $?)"; status=1; }
done
exit $status
