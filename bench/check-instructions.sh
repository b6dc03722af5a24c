#!/usr/bin/env bash
# Instructions per check, counted by callgrind: copsd runs under valgrind with collection off
# until the measured checks start, so start-up, compactions and cache warming are left out.
# Unlike CPU time, the count does not move with the host's load: use it to compare two builds
# on one index (each on its own copy: a check writes nothing, but copsd may compact).
#   bench/check-instructions.sh BUILD DATA_DIR [COPY_FRACTION] [CONCURRENCY] [CHECKS] [BENCH-FLAGS...]
# BENCH-FLAGS go to the measured checks' `cops bench` (e.g. --no-heavy-revisions); CHECK_BYTES
# sets the checked texts' size (default 20000; 2700 for a mail gateway's messages).
# DATA_DIR: a data directory made by `scripts/bench.sh service --documents 100000 --data DIR`
# (10^5 documents, seed 7). Prints the bench's check line, then the instructions per check
# (needs valgrind: `apt-get install valgrind`). With COPS_CALLGRIND_OUT=FILE the measured checks'
# profile is kept there (`callgrind_annotate --inclusive=yes FILE | head -60`).
set -euo pipefail
build=$1 data=$2 fraction=${3:-0.5} concurrency=${4:-1} checks=${5:-200}
shift $(($# < 5 ? $# : 5))
bench_flags=("$@")
source "$(dirname "$0")/callgrind-copsd.sh"
callgrind_start_copsd "$build" "$data"
cops() { "$build/client/cops" --server "$server" "$@"; }
# Until nothing is compacting, warming the cache or filling the hash filter (its walk of every
# bucket would be counted).
settle() {
  for _ in $(seq 600); do
    python3 -c 'import json,sys; s=json.loads(sys.argv[1]); sys.exit(0 if s["pending_compaction_bytes"]==0 and s["running_compactions"]==0 and not s.get("block_cache_warming") and not s.get("hash_filter_filling") and not s.get("idle_compaction_due") else 1)' \
      "$(cops --json stats)" && return
    sleep 1
  done
}
documents=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["documents"])' "$(cops --json stats)")
settle
# Warm-up checks (other texts), then the measured ones.
bytes=${CHECK_BYTES:-20000}
cops bench --seed 7 --documents 0 --existing "$documents" --checks 100 --first-check 900000 \
  --check-bytes "$bytes" --copy-fraction "$fraction" --concurrency 1 "${bench_flags[@]}" >/dev/null
settle
callgrind_control -i on "$pid" >/dev/null 2>&1
cops bench --seed 7 --documents 0 --existing "$documents" --checks "$checks" --check-bytes "$bytes" \
  --copy-fraction "$fraction" --concurrency "$concurrency" --bench-json "${bench_flags[@]}" |
  grep '"check"' || true
callgrind_report instructions_per_check "$checks"
