#!/usr/bin/env bash
# Service benchmark behind the tables of docs/performance.md (registration, bytes per
# document, checks; run through `scripts/bench.sh service`): a fresh copsd on loopback, N
# synthetic 4 KB documents registered in bulk (cops bench --seed 7), copsd restarted (its WAL
# flushed into the index) and left until compaction has settled and its block cache is
# warmed, then 300 unmeasured checks and settled again (the seconds all that took and the
# cache's size are printed), then the index's bytes
# per document and three check runs of 20 KB messages: clean at concurrency 1, copied at
# concurrency 1, the half-copied mix at concurrency 4, each followed by copsd's CPU per
# check. After the registration it prints copsd's CPU time for it, its peak memory, the data
# directory's size (and, with --bulk-load, how long `bulk-load end` took); after the checks,
# the serving copsd's peak and current memory.
#
#   scripts/bench-service.sh [--documents N] [--checks N] [--bulk-load] [--data DIR] [-- COPSD-FLAGS...]
#
# --data DIR keeps the data directory there; when it already holds an index, registration
# is skipped and only the checks run (against that index).
#   e.g. scripts/bench-service.sh --documents 100000 -- --verify-k 0
#
# Needs copsd and cops built in ${COPS_BUILD_DIR:-build}. Prints one JSON line per result.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
documents=100000
checks=3000
bulk_load=0
data=
while [ $# -gt 0 ]; do
  case "$1" in
    --documents) documents="$2"; shift 2 ;;
    --checks) checks="$2"; shift 2 ;;
    --bulk-load) bulk_load=1; shift ;;  # register inside cops admin bulk-load begin/end
    --data) data="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "bench-service: unknown argument $1" >&2; exit 2 ;;
  esac
done
copsd_flags=("$@")

work="$(mktemp -d /tmp/cops-bench-XXXXXX)"
datadir="${data:-$work/data}"
existing=0
[ -n "$data" ] && [ -e "$data/params" ] && existing=1
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

start() {
  rm -f "$work/port"
  "$build/server/copsd" --data-dir "$datadir" --listen 127.0.0.1:0 --port-file "$work/port" \
    --log-level warn "${copsd_flags[@]}" &
  pid=$!
  for _ in $(seq 600); do [ -s "$work/port" ] && break; sleep 0.1; done
  [ -s "$work/port" ] || { echo "bench-service: copsd did not start" >&2; exit 1; }
  server="127.0.0.1:$(cat "$work/port")"
}
stop() { kill -TERM "$pid"; wait "$pid" || true; pid=""; }
cops() { "$build/client/cops" --server "$server" "$@"; }
# copsd's peak and current resident memory (VmHWM, VmRSS) in MiB.
peak_rss() {
  awk '/^VmHWM/ {h = $2} /^VmRSS/ {r = $2}
       END {printf "{\"copsd_peak_rss_mib\": %d, \"copsd_rss_mib\": %d}\n", h / 1024, r / 1024}' \
    "/proc/$pid/status"
}

if [ "$existing" = 0 ]; then
  start
  if [ "$bulk_load" = 1 ]; then cops admin bulk-load begin; fi
  cops bench --seed 7 --documents "$documents" --document-bytes 4000 --checks 0 \
    --concurrency 2 --bulk 4096 --bench-json
  # copsd's CPU for the registration (user + system, from /proc/PID/stat), its peak resident
  # memory so far, and the data directory's bytes at the end of the load.
  awk '{printf "{\"copsd_cpu_seconds\": %.2f}\n", ($14 + $15) / 100}' "/proc/$pid/stat"
  peak_rss
  echo "{\"data_dir_bytes\": $(du -sb "$datadir" | cut -f1)}"
  if [ "$bulk_load" = 1 ]; then
    ended=$(date +%s)
    cops admin bulk-load end  # its full compaction
    echo "{\"bulk_load_end_seconds\": $(($(date +%s) - ended))}"
  fi
  stop
fi
start
started=$(date +%s.%N)
# Settled: no compaction pending, running or due once idle (copsd --idle-compaction-seconds),
# the block cache warmed, the hash filter filled
# (at most 10 minutes).
settle() {
  for _ in $(seq 600); do
    s="$(cops --json stats)"
    python3 -c 'import json,sys; s=json.loads(sys.argv[1]); sys.exit(0 if s["pending_compaction_bytes"]==0 and s["running_compactions"]==0 and not s.get("block_cache_warming") and not s.get("hash_filter_filling") and not s.get("idle_compaction_due") else 1)' "$s" && break
    sleep 1
  done
}
settle
# Then 300 unmeasured checks, and settled again: after a registration, a compaction started
# with the first checks (~3 s of CPU at 10^5 documents; likely RocksDB rewriting the newest
# bottommost files once a lookup's snapshot is released), which the measured runs would
# otherwise run beside.
cops bench --seed 7 --documents 0 --existing "$documents" --checks 300 --first-check 900000 \
  --check-bytes 20000 --copy-fraction 0.5 --concurrency 1 >/dev/null
sleep 1
settle
python3 - "$s" "$(echo "$(date +%s.%N) - $started" | bc)" <<'PY'
import json, sys
s = json.loads(sys.argv[1])
n = max(1, s["documents"])
print(json.dumps({"settled_seconds": round(float(sys.argv[2]), 1),
                  "block_cache_mib": s.get("block_cache_bytes", 0) >> 20}))
print(json.dumps({"documents": s["documents"], "chunking": s["chunking"],
                  "disk_bytes_per_document": round(s["disk_bytes"] / n),
                  "postings_bytes_per_document": round(s.get("postings_disk_bytes", 0) / n),
                  "verify_bytes_per_document": round(s.get("verify_disk_bytes", 0) / n),
                  "text_bytes_per_document": round(s["text_bytes"] / n)}))
PY
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
for run in "0 1" "1 1" "0.5 4"; do
  set -- $run
  before=$(cpu_ticks)
  cops bench --seed 7 --documents 0 --existing "$documents" --checks "$checks" \
    --check-bytes 20000 --copy-fraction "$1" --concurrency "$2" --bench-json
  # copsd's CPU (user + system) per check of this run.
  awk -v t="$(($(cpu_ticks) - before))" -v hz="$(getconf CLK_TCK)" -v n="$checks" \
    'BEGIN {printf "{\"copsd_cpu_ms_per_check\": %.3f}\n", t * 1000 / hz / n}'
done
peak_rss  # serving: the restarted copsd's
