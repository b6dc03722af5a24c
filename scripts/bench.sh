#!/usr/bin/env bash
# Reproduces the figures of docs/performance.md, one area per call. Each table there names
# the command behind it; `scripts/bench.sh --help` lists the areas.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"

usage() {
  cat <<'EOF'
Usage: scripts/bench.sh [--build DIR] AREA [OPTIONS] [-- EXTRA...]

Reproduces the figures of docs/performance.md (partition: docs/scale-out-capacity.md).
Binaries come from DIR (default $COPS_BUILD_DIR or ./build); `setup` builds them.

Areas:
  setup      configure and build the benchmark binaries: build/ (RelWithDebInfo: copsd,
             cops, cops-convert-worker, storage_bench, convert_bench, partition_bench) and
             build-rel/ (Release: core_bench)
  core       core_bench: fingerprinting MB/s per chunking (use --build build-rel)
               [--mb N] (corpus MB, default 50) [--quick] [-- BENCHMARK-FLAGS]
  convert    convert_bench: time per document and MB/s per converter
               [--quick] [-- BENCHMARK-FLAGS]
  service    scripts/bench-service.sh: registration, bytes per document, settled checks
               [--documents N] [--checks N] [--bulk-load] [--data DIR] [-- COPSD-FLAGS]
  versus     `service` for two builds side by side in one run, alternating (baseline
             first) for R rounds; each run's JSON lines tagged with its build, then the
             median of each figure per build and the change
               --baseline DIR [--rounds R] (default 3) [SERVICE-OPTIONS] [-- COPSD-FLAGS]
  cached     the same copied checks sent three times to one copsd on an index `service`
             left (pass 2 and 3 find their postings blocks cached)
               --data DIR [--documents N] [--checks N] [--profile] [-- COPSD-FLAGS]
  register   a fresh copsd: registration and copsd's CPU for it, then optionally checks
             right after it, or a kill -9 and the time to serve again
               [--documents N] [--seed S] [--window W] [--bulk-load] [--profile]
               [--no-receipts] [--checks [--idle SECONDS]] [--kill] [-- COPSD-FLAGS]
  storage    storage_bench on a fresh index in a temporary directory (batches of 1,024)
               [--docs N] [--stages REGEX] [-- STORAGE-BENCH-FLAGS]
  import     storage_bench bulk import kept in DIR: load, EndBulkLoad, lookups
               --dir DIR [--docs N] [-- STORAGE-BENCH-FLAGS]
  lookup     storage_bench warm lookups of 1,000 hashes on the index `import` left in DIR
               --dir DIR --docs N [--threads T] [--hugepages] [--min-time S]
               [--stage NAME] (default LookupWarm1000Settled)
  partition  partition_bench: document against chunk-hash partitioning, the same documents
             and checks through the real pipeline, in temporary indexes
             (docs/scale-out-capacity.md)
               [--docs N] (default 20000) [--partitions P] (default 2) [--checks M]
               (default 1000) [-- PARTITION-BENCH-FLAGS]
  overload   a fresh copsd with 200 documents hit by a burst of large checks (default: 400
             checks of 4 MB from 64 client threads); copsd's peak and settled memory
             (VmHWM, VmRSS 3 s after the burst), its CPU, and a normal check right after
               [--checks N] [--check-bytes B] [--concurrency C] [--connections N]
               [-- COPSD-FLAGS]
  compare    bench/compare_batch.py: `cops compare` over a batch (time, peak RSS, planted
             pairs found)
               papers [--papers N] [--kbytes K] [--prior N] [--format F]
               dedupe [--files N] [--kbytes K] [--format F]
  quick      smoke run of the short areas: core --quick, convert --quick,
             storage --docs 1000, service --documents 2000 --checks 300

--quick runs with --benchmark_min_time=0.05 (and core on a 2 MB corpus): it shows the
programs work, not figures to quote.
EOF
}

die() { echo "bench.sh: $*" >&2; exit 2; }
need() { [ -x "$1" ] || die "$1 is missing: run scripts/bench.sh setup (or pass --build DIR)"; }

# ---- setup --------------------------------------------------------------------------------
area_setup() {
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCOPS_BUILD_BENCH=ON
  cmake --build "$root/build" --target copsd cops cops-convert-worker storage_bench convert_bench \
    partition_bench
  cmake -S "$root" -B "$root/build-rel" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCOPS_BUILD_TESTS=OFF -DCOPS_BUILD_BENCH=ON
  cmake --build "$root/build-rel" --target core_bench
}

# ---- Google Benchmark programs ------------------------------------------------------------
area_core() {
  local mb=50 quick=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --mb) mb="$2"; shift 2 ;;
      --quick) mb=2; quick=(--benchmark_min_time=0.05); shift ;;
      --) shift; break ;;
      *) die "core: unknown option $1" ;;
    esac
  done
  need "$build/bench/core_bench"
  COPS_BENCH_MB="$mb" "$build/bench/core_bench" "${quick[@]}" "$@"
}

area_convert() {
  local min_time=(--benchmark_min_time=1)
  while [ $# -gt 0 ]; do
    case "$1" in
      --quick) min_time=(--benchmark_min_time=0.05); shift ;;
      --) shift; break ;;
      *) die "convert: unknown option $1" ;;
    esac
  done
  need "$build/bench/convert_bench"
  # The sandboxed rows spawn cops-convert-worker, found next to it in the build tree.
  need "$build/convert/cops-convert-worker"
  "$build/bench/convert_bench" "${min_time[@]}" "$@"
}

area_storage() {
  local docs=10000
  local stages='^(Register|DiskAfterCompaction|LookupWarm1000Compacted|LookupCold1000Compacted)/'
  while [ $# -gt 0 ]; do
    case "$1" in
      --docs) docs="$2"; shift 2 ;;
      --stages) stages="$2"; shift 2 ;;
      --) shift; break ;;
      *) die "storage: unknown option $1" ;;
    esac
  done
  need "$build/bench/storage_bench"
  "$build/bench/storage_bench" --docs="$docs" --batch=1024 --benchmark_filter="$stages" "$@"
}

area_import() {
  local docs=1000000 dir=
  while [ $# -gt 0 ]; do
    case "$1" in
      --docs) docs="$2"; shift 2 ;;
      --dir) dir="$2"; shift 2 ;;
      --) shift; break ;;
      *) die "import: unknown option $1" ;;
    esac
  done
  [ -n "$dir" ] || die "import: --dir DIR is required (the index is kept there for lookup)"
  need "$build/bench/storage_bench"
  mkdir -p "$(dirname "$dir")"
  /usr/bin/time -f "wall %e s cpu %U+%S maxrss %M KB" \
    "$build/bench/storage_bench" --docs="$docs" --batch=1024 --bulk_load=1 --progress=1 \
    --dir="$dir" \
    --benchmark_filter='^(Register|DiskAfterLoad|LookupWarm1000|EndBulkLoad|LookupWarm1000Settled)/' \
    "$@"
}

area_lookup() {
  local docs= dir= threads=2 min_time=3 stage=LookupWarm1000Settled env=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --docs) docs="$2"; shift 2 ;;
      --dir) dir="$2"; shift 2 ;;
      --threads) threads="$2"; shift 2 ;;
      --min-time) min_time="$2"; shift 2 ;;
      --stage) stage="$2"; shift 2 ;;
      --hugepages) env=(GLIBC_TUNABLES=glibc.malloc.hugetlb=1); shift ;;
      *) die "lookup: unknown option $1" ;;
    esac
  done
  [ -n "$dir" ] && [ -n "$docs" ] || die "lookup: --dir DIR and --docs N (as given to import) are required"
  need "$build/bench/storage_bench"
  env "${env[@]}" "$build/bench/storage_bench" --docs="$docs" --reuse=1 --dir="$dir" \
    --lookup_threads="$threads" --benchmark_filter="$stage" \
    --benchmark_min_time="$min_time"
}

area_partition() {
  local docs=20000 partitions=2 checks=1000
  while [ $# -gt 0 ]; do
    case "$1" in
      --docs) docs="$2"; shift 2 ;;
      --partitions) partitions="$2"; shift 2 ;;
      --checks) checks="$2"; shift 2 ;;
      --) shift; break ;;
      *) die "partition: unknown option $1" ;;
    esac
  done
  need "$build/bench/partition_bench"
  "$build/bench/partition_bench" --docs="$docs" --partitions="$partitions" --checks="$checks" "$@"
}

# ---- the service: copsd and cops on loopback ----------------------------------------------
area_service() {
  need "$build/server/copsd"
  need "$build/client/cops"
  COPS_BUILD_DIR="$build" "$root/scripts/bench-service.sh" "$@"
}

# versus: `service` from the baseline build and from this one, alternately.
area_versus() {
  local baseline="" rounds=3
  local args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --baseline) baseline="$(cd "$2" && pwd)"; shift 2 ;;
      --rounds) rounds="$2"; shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  [ -n "$baseline" ] || die "versus: --baseline DIR (the other build directory) is required"
  need "$baseline/server/copsd"
  need "$baseline/client/cops"
  need "$build/server/copsd"
  need "$build/client/cops"
  local out
  out="$(mktemp /tmp/cops-versus-XXXXXX)"
  for round in $(seq "$rounds"); do
    for side in baseline this; do
      local dir="$build"
      [ "$side" = baseline ] && dir="$baseline"
      echo "== round $round: $side ($dir)" >&2
      COPS_BUILD_DIR="$dir" "$root/scripts/bench-service.sh" "${args[@]}" |
        python3 -c 'import json,sys
for line in sys.stdin:
    try: j = json.loads(line)
    except ValueError: continue
    j["build"] = sys.argv[1]; j["round"] = int(sys.argv[2]); print(json.dumps(j), flush=True)' \
          "$side" "$round" | tee -a "$out"
    done
  done
  python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}  # (build, figure) -> values
for line in open(sys.argv[1]):
    j = json.loads(line)
    b = j["build"]
    if "documents_per_second" in j:
        runs.setdefault((b, "registration, documents/s"), []).append(j["documents_per_second"])
    elif "copsd_cpu_seconds" in j:
        runs.setdefault((b, "copsd CPU for the registration, s"), []).append(j["copsd_cpu_seconds"])
    elif j.get("phase") == "check":
        # The three check runs of bench-service.sh, in order: clean x1, copied x1, mix x4.
        seen = runs.setdefault((b, "_check_count", j["round"]), [])
        label = ["checks/s, clean, 1 client", "checks/s, copied, 1 client",
                 "checks/s, half copied, 4 clients"][len(seen) % 3]
        seen.append(1)
        runs.setdefault((b, label), []).append(j["calls_per_second"])
    elif "copsd_cpu_ms_per_check" in j:
        seen = runs.setdefault((b, "_cpu_count", j["round"]), [])
        label = ["copsd CPU ms/check, clean", "copsd CPU ms/check, copied",
                 "copsd CPU ms/check, half copied"][len(seen) % 3]
        seen.append(1)
        runs.setdefault((b, label), []).append(j["copsd_cpu_ms_per_check"])
figures = []
for (b, f, *rest) in runs:
    if not f.startswith("_") and f not in figures:
        figures.append(f)
print("| figure | baseline (median) | this build (median) | change |")
print("| --- | --- | --- | --- |")
for f in figures:
    a, t = runs.get(("baseline", f)), runs.get(("this", f))
    if not a or not t:
        continue
    ma, mt = statistics.median(a), statistics.median(t)
    print("| %s | %.2f | %.2f | %+.1f%% |" % (f, ma, mt, 100.0 * (mt - ma) / ma if ma else 0.0))
PY
  rm -f "$out"
}

work=""
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$work" ]; then rm -rf "$work"; fi
}

# service_workdir: checks that copsd and cops are built, makes the temp dir `work` and removes
# it (and stops copsd) at exit.
service_workdir() {
  need "$build/server/copsd"
  need "$build/client/cops"
  work="$(mktemp -d /tmp/cops-bench-XXXXXX)"
  trap cleanup EXIT
}

# start_copsd DATADIR FLAGS...: starts copsd on a free loopback port; sets pid and server.
start_copsd() {
  local datadir="$1"; shift
  rm -f "$work/port"
  "$build/server/copsd" --data-dir "$datadir" --listen 127.0.0.1:0 --port-file "$work/port" \
    --log-level warn "$@" &
  pid=$!
  for _ in $(seq 600); do [ -s "$work/port" ] && break; sleep 0.05; done
  [ -s "$work/port" ] || die "copsd did not start"
  server="127.0.0.1:$(cat "$work/port")"
}
cops() { "$build/client/cops" --server "$server" "$@"; }
# seconds_since T0_NS NAME: prints {"NAME": seconds since T0_NS (from date +%s%N)}.
seconds_since() {
  awk -v ns="$(( $(date +%s%N) - $1 ))" -v name="$2" 'BEGIN { printf "{\"%s\": %.1f}\n", name, ns / 1e9 }'
}
# copsd's CPU (user + system) and its minor page faults so far.
cpu_seconds() {
  awk '{printf "{\"copsd_cpu_seconds\": %.2f, \"copsd_minor_faults\": %d}\n", ($14 + $15) / 100, $10}' \
    "/proc/$1/stat"
}

area_cached() {
  local data= documents=1000000 checks=3000 profile=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --data) data="$2"; shift 2 ;;
      --documents) documents="$2"; shift 2 ;;
      --checks) checks="$2"; shift 2 ;;
      --profile) profile=1; shift ;;
      --) shift; break ;;
      *) die "cached: unknown option $1" ;;
    esac
  done
  [ -n "$data" ] && [ -e "$data/params" ] || die "cached: --data DIR must hold an index (scripts/bench.sh service --data DIR)"
  service_workdir
  start_copsd "$data" "$@"
  for pass in 1 2 3; do
    if [ "$pass" = 3 ] && [ "$profile" = 1 ]; then
      perf record -F 4000 -g -o "$work/perf.data" -p "$pid" -- sleep 6 2>/dev/null &
      local perf_pid=$!
    fi
    cops bench --seed 7 --documents 0 --existing "$documents" --checks "$checks" \
      --check-bytes 20000 --copy-fraction 1 --concurrency 1 --bench-json
  done
  if [ "$profile" = 1 ]; then
    wait "$perf_pid" || true
    perf report -i "$work/perf.data" --children --sort symbol --stdio 2>/dev/null | head -60 || true
  fi
}

area_register() {
  local documents=100000 seed=7 window=4096 bulk_load=0 profile=0 checks=0 idle=0 kill9=0
  local receipts=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --documents) documents="$2"; shift 2 ;;
      --no-receipts) receipts=(--no-receipts); shift ;;
      --seed) seed="$2"; shift 2 ;;
      --window) window="$2"; shift 2 ;;
      --bulk-load) bulk_load=1; shift ;;
      --profile) profile=1; shift ;;
      --checks) checks=1; shift ;;
      --idle) idle="$2"; shift 2 ;;
      --kill) kill9=1; shift ;;
      --) shift; break ;;
      *) die "register: unknown option $1" ;;
    esac
  done
  service_workdir
  local datadir="$work/data"
  start_copsd "$datadir" "$@"
  if [ "$profile" = 1 ]; then
    # DWARF stacks: libcrypto, libsodium and parts of RocksDB have no frame pointers.
    perf record -F 250 --call-graph dwarf,32768 -o "$work/perf.data" -p "$pid" 2>/dev/null &
    local perf_pid=$!
  fi
  if [ "$bulk_load" = 1 ]; then cops admin bulk-load begin; fi
  cops bench --seed "$seed" --documents "$documents" --document-bytes 4000 --checks 0 \
    --concurrency 2 --bulk "$window" "${receipts[@]}" --bench-json
  cpu_seconds "$pid"
  if [ "$profile" = 1 ]; then
    kill -INT "$perf_pid"; wait "$perf_pid" || true
    perf report -i "$work/perf.data" --no-children --sort dso --stdio -g none 2>/dev/null |
      grep '%' | head -12 || true
    # The registration's stages: the share of samples with the function on the stack
    # (docs/performance.md, Registration).
    perf script -i "$work/perf.data" -F ip,sym 2>/dev/null |
      awk -v re='^(rocksdb::DBImpl::WriteImpl|rocksdb::MemTable::Add|rocksdb::DBImpl::WriteToWAL|rocksdb::FlushJob::Run|rocksdb::CompactionJob::Run|rocksdb::MergeHelper::MergeUntil|cops::(SignReceipt|SigningKey::Sign|EncodeReceiptPayload|Fingerprinter::Fingerprint|Canonicalize|PostingsStore::Add|PostingsStore::AddToBuckets|StoredHashFilter::Add|DocumentStore::Add|PreparedDocument::PreparedDocument|Convert|Sha256|CopyDetector::PrepareRegistration)|grpc::ServerReader<.*>::Read|asm_exc_page_fault|ZSTD_compress[A-Za-z_]*)$' '
        /^[[:space:]]*$/ { if (frames) { samples++; for (n in seen) share[n]++ } delete seen; frames = 0; next }
        { frames++; n = $2; sub(/\[abi:cxx11\]$/, "", n); if (n ~ re) seen[n] = 1 }
        END { for (n in share) printf "%6.2f%%  %s\n", 100 * share[n] / samples, n }' | sort -rn || true
  fi
  if [ "$bulk_load" = 1 ]; then
    local t0; t0=$(date +%s%N)
    cops admin bulk-load end
    seconds_since "$t0" bulk_load_end_seconds
  fi
  if [ "$checks" = 1 ]; then
    sleep "$idle"
    for c in 2 1; do
      cops bench --documents 0 --existing "$documents" --checks 3000 --check-bytes 20000 \
        --concurrency "$c" --bench-json
    done
  fi
  if [ "$kill9" = 1 ]; then
    echo "{\"wal_megabytes\": $(du -cm "$datadir"/index/*.log | tail -1 | cut -f1)}"
    kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=""
    local t0; t0=$(date +%s%N)
    start_copsd "$datadir" "$@"
    seconds_since "$t0" restart_to_serving_seconds
    cops --json stats | python3 -c 'import json,sys; print(json.dumps({"documents_after": json.load(sys.stdin)["documents"]}))'
  fi
}

# ---- overload ------------------------------------------------------------------------------
# memory PID: {"copsd_peak_mb": VmHWM, "copsd_rss_mb": VmRSS} in MiB.
memory() {
  awk '/^VmHWM/ { hwm = $2 } /^VmRSS/ { rss = $2 }
       END { printf "{\"copsd_peak_mb\": %d, \"copsd_rss_mb\": %d}\n", hwm / 1024, rss / 1024 }' \
    "/proc/$1/status"
}

area_overload() {
  local checks=400 check_bytes=4000000 concurrency=64 connections=1
  while [ $# -gt 0 ]; do
    case "$1" in
      --checks) checks="$2"; shift 2 ;;
      --check-bytes) check_bytes="$2"; shift 2 ;;
      --concurrency) concurrency="$2"; shift 2 ;;
      --connections) connections="$2"; shift 2 ;;
      --) shift; break ;;
      *) die "overload: unknown option $1" ;;
    esac
  done
  service_workdir
  start_copsd "$work/data" "$@"
  cops bench --seed 7 --documents 200 --checks 0 --bench-json >/dev/null
  memory "$pid"
  # Fails (exit 2) when calls were shed: the JSON line counts them by status code.
  cops bench --seed 7 --documents 0 --existing 200 --checks "$checks" \
    --check-bytes "$check_bytes" --concurrency "$concurrency" --connections "$connections" \
    --bench-json || true
  memory "$pid"
  cpu_seconds "$pid"
  sleep 3
  memory "$pid"
  cops bench --seed 7 --documents 0 --existing 200 --checks 20 --bench-json
}

# ---- cops compare --------------------------------------------------------------------------
area_compare() {
  need "$build/client/cops"
  need "$build/server/copsd"
  COPS_BUILD_DIR="$build" python3 "$root/bench/compare_batch.py" "$@"
}

area_quick() {
  area_core --quick -- --benchmark_filter=C_word5
  area_convert --quick
  area_storage --docs 1000
  area_service --documents 2000 --checks 300
}

while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    -h|--help|help) usage; exit 0 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { usage >&2; exit 2; }
area="$1"; shift
case "$area" in
  setup) area_setup "$@" ;;
  core) area_core "$@" ;;
  convert) area_convert "$@" ;;
  storage) area_storage "$@" ;;
  import) area_import "$@" ;;
  lookup) area_lookup "$@" ;;
  service) area_service "$@" ;;
  versus) area_versus "$@" ;;
  cached) area_cached "$@" ;;
  register) area_register "$@" ;;
  partition) area_partition "$@" ;;
  overload) area_overload "$@" ;;
  compare) area_compare "$@" ;;
  quick) area_quick "$@" ;;
  *) usage >&2; die "unknown area $area" ;;
esac
