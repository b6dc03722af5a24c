#!/usr/bin/env bash
# Scale-out figures of docs/scale-out.md (issue 24): one copsd against a partitioned cluster on
# loopback, the same documents and checks through each.
#
#   bench/scale-out.sh [--documents N] [--checks N] [--partitions P] [--replicas R]
#                      [--cluster-only] [--keep DIR]
#
# (a) single: one copsd, no NATS (not with --cluster-only).
# (b) cluster: one nats-server with JetStream, P partitions x R replicas (default 2 x 2,
#     `copsd --follow --partitions P --partition p`) and a router (`copsd --route`).
# Each registers the same N synthetic 4 KB documents (cops bench --seed 7, one RegisterDocument
# call per document, 4 client threads), then runs four check runs of 20 KB messages: clean and
# copied (--copy-fraction 0 and 1), at concurrency 1 and 4. For every run it prints one JSON
# line: the `cops bench` report (calls/s, p50/p90/p99 ms, violations) plus the CPU each
# process spent per call (ms, from /proc/PID/stat utime + stime before and after the run) and
# the client's. Then a summary table (stderr) and each index node's disk bytes and RSS.
# Defaults: 10000 documents, 2000 checks per run (a few minutes on 2 cores).
#
# Needs copsd and cops in ${COPS_BUILD_DIR:-build} and nats-server on the PATH.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
documents=10000
checks=2000
partitions=2
replicas_per_partition=2
cluster_only=0
keep=
while [ $# -gt 0 ]; do
  case "$1" in
    --documents) documents="$2"; shift 2 ;;
    --checks) checks="$2"; shift 2 ;;
    --partitions) partitions="$2"; shift 2 ;;
    --replicas) replicas_per_partition="$2"; shift 2 ;;
    --cluster-only) cluster_only=1; shift ;;
    --keep) keep="$2"; shift 2 ;;  # keep logs and data there
    *) echo "scale-out: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v nats-server >/dev/null || { echo "scale-out: nats-server is not installed" >&2; exit 1; }
[ -x "$build/server/copsd" ] && [ -x "$build/client/cops" ] ||
  { echo "scale-out: build copsd and cops first ($build)" >&2; exit 1; }

work="${keep:-$(mktemp -d /tmp/cops-scale-XXXXXX)}"
mkdir -p "$work"
results="$work/results.jsonl"
: >"$results"
declare -A pid addr
cleanup() {
  for name in "${!pid[@]}"; do kill "${pid[$name]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_for() {  # SECONDS COMMAND...: polls COMMAND every 0.1 s
  local tries=$(($1 * 10)); shift
  for _ in $(seq "$tries"); do "$@" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
start_copsd() {  # NAME FLAGS...
  local name="$1"; shift
  mkdir -p "$work/$name"
  "$build/server/copsd" --data-dir "$work/$name/data" --listen 127.0.0.1:0 \
    --port-file "$work/$name/port" --log-level warn "$@" </dev/null >"$work/$name/log" 2>&1 &
  pid[$name]=$!
  wait_for 60 test -s "$work/$name/port" ||
    { echo "scale-out: copsd $name did not start:" >&2; cat "$work/$name/log" >&2; exit 1; }
  addr[$name]="127.0.0.1:$(cat "$work/$name/port")"
}
start_nats() {
  local port; port="$(free_port)"
  mkdir -p "$work/nats"
  nats-server -a 127.0.0.1 -p "$port" -js -sd "$work/nats/store" </dev/null >"$work/nats/log" 2>&1 &
  pid[nats]=$!
  wait_for 20 grep -q "Server is ready" "$work/nats/log" ||
    { echo "scale-out: nats-server did not start" >&2; cat "$work/nats/log" >&2; exit 1; }
  nats_url="nats://127.0.0.1:$port"
}
stop_all() {
  for name in "${!pid[@]}"; do kill "${pid[$name]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pid=()
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
stats() { "$build/client/cops" --server "${addr[$1]}" --json stats; }
json_field() { python3 -c 'import json,sys; print(json.loads(sys.stdin.read())[sys.argv[1]])' "$1"; }
documents_on() { stats "$1" | json_field documents; }
settled() {  # NAME: no compaction pending or running
  stats "$1" | python3 -c 'import json,sys; s=json.load(sys.stdin)
sys.exit(0 if s["pending_compaction_bytes"] == 0 and s["running_compactions"] == 0 else 1)'
}

# run SETUP TARGET NODES -- COPS-BENCH-ARGS...: one `cops bench` run against TARGET with the
# CPU of every process in NODES (names in pid[]) and of the client over it; one JSON line.
run() {
  local setup="$1" target="$2" nodes="$3"; shift 4
  local -A before
  local name
  for name in $nodes; do before[$name]="$(cpu_ticks "${pid[$name]}")"; done
  local out="$work/bench.out" timing="$work/bench.time"
  /usr/bin/time -f '%U %S' -o "$timing" \
    "$build/client/cops" --server "${addr[$target]}" bench --seed 7 --bench-json "$@" >"$out" || true
  local cpu="{"
  for name in $nodes; do
    cpu+="\"$name\": $(( $(cpu_ticks "${pid[$name]}") - ${before[$name]} )),"
  done
  cpu="${cpu%,}}"
  python3 - "$setup" "$cpu" "$(tail -1 "$timing")" "$(getconf CLK_TCK)" "$*" "$out" \
    <<'PY' | tee -a "$results"
import json, sys
setup, cpu, client, hz, args = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
# cops bench prints one line per phase; here each run has one phase.
r = json.loads([l for l in open(sys.argv[6]).read().splitlines() if l.startswith("{")][-1])
calls = max(1, r["calls"])
a = args.split()
opt = lambda k, d: a[a.index(k) + 1] if k in a else d
r.update(setup=setup, concurrency=int(opt("--concurrency", "4")),
         copy_fraction=float(opt("--copy-fraction", "0.5")),
         cpu_ms_per_call={k: round(v * 1000 / hz / calls, 3) for k, v in cpu.items()},
         client_cpu_ms_per_call=round(sum(map(float, client.split())) * 1000 / calls, 3))
if r["phase"] != "check":
    r["copy_fraction"] = None
print(json.dumps(r))
PY
}

checks_for() {  # SETUP TARGET NODES
  local fraction concurrency
  for run_args in "0 1" "1 1" "0 4" "1 4"; do
    read -r fraction concurrency <<<"$run_args"
    run "$1" "$2" "$3" -- --documents 0 --existing "$documents" --checks "$checks" \
      --check-bytes 20000 --copy-fraction "$fraction" --concurrency "$concurrency"
  done
}
register() {  # SETUP TARGET NODES
  run "$1" "$2" "$3" -- --documents "$documents" --document-bytes 4000 --checks 0 \
    --concurrency 4
  tail -1 "$results" | python3 -c 'import json,sys; sys.exit(1 if json.load(sys.stdin)["errors"] else 0)' ||
    { echo "scale-out: registrations failed" >&2; exit 1; }
}
footprint() {  # SETUP NAME...: each index node's documents, disk bytes and RSS
  local setup="$1"; shift
  for name in "$@"; do
    stats "$name" | python3 -c '
import json, sys
s = json.load(sys.stdin)
rss = [l.split()[1] for l in open("/proc/%s/status" % sys.argv[3]) if l.startswith("VmRSS")][0]
print(json.dumps({"setup": sys.argv[1], "node": sys.argv[2], "documents": s["documents"],
                  "disk_bytes": s["disk_bytes"], "rss_bytes": int(rss) * 1024}))' \
      "$setup" "$name" "${pid[$name]}" | tee -a "$results"
  done
}

echo "scale-out: load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores" >&2

# (a) one node.
if [ "$cluster_only" = 0 ]; then
  start_copsd single
  register single single single
  wait_for 600 settled single
  checks_for single single single
  footprint single single
  stop_all
fi

# (b) nats-server, P partitions x R replicas, a router.
setup="cluster-${partitions}x${replicas_per_partition}"
start_nats
replicas=()
# One nats-server keeps one copy of the log: said explicitly (copsd refuses it otherwise).
one_copy=(--log-replicas 1 --allow-unreplicated-log)
route=(--route "$nats_url" --partitions "$partitions" "${one_copy[@]}")
for p in $(seq 0 $((partitions - 1))); do
  for r in $(seq 0 $((replicas_per_partition - 1))); do
    start_copsd "p${p}r${r}" --follow "$nats_url" --partitions "$partitions" --partition "$p" \
      "${one_copy[@]}"
    replicas+=("p${p}r${r}")
    route+=(--replica "$p=${addr[p${p}r${r}]}")
  done
done
start_copsd router "${route[@]}"
nodes="router ${replicas[*]} nats"
register "$setup" router "$nodes"
# Every replica has applied its partition (a registration's ack waits for one replica only).
in_replicas() {  # R: the replicas of rank R hold every document
  local sum=0 p
  for p in $(seq 0 $((partitions - 1))); do sum=$((sum + $(documents_on "p${p}r$1"))); done
  [ "$sum" -eq "$documents" ]
}
for r in $(seq 0 $((replicas_per_partition - 1))); do
  wait_for 120 in_replicas "$r" ||
    { echo "scale-out: the replicas did not apply every registration" >&2; exit 1; }
done
for name in "${replicas[@]}"; do wait_for 600 settled "$name"; done
checks_for "$setup" router "$nodes"
footprint "$setup" "${replicas[@]}"
stop_all

echo "scale-out: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end" >&2
python3 - "$results" >&2 <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"phase"' in l]
print("setup       phase     copy conc  calls/s   p50 ms  p99 ms  errors  CPU ms/call by process")
for r in rows:
    cpu = " ".join("%s %.2f" % kv for kv in r["cpu_ms_per_call"].items())
    print("%-11s %-8s %5s %4d %8.1f %8.2f %7.2f %7d  %s; client %.2f" % (
        r["setup"], r["phase"], r["copy_fraction"] if r["copy_fraction"] is not None else "-", r["concurrency"], r["calls_per_second"],
        r["p50_ms"], r["p99_ms"], r["errors"], cpu, r["client_cpu_ms_per_call"]))
PY
