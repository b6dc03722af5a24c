#!/usr/bin/env bash
# One gateway path, one set, several passes back to back: a fresh copsd of BUILD registers a
# mail set's messages (as text), `cops admin snapshot` copies its data directory, then a
# cops-milter (over gRPC to that copsd, or --local: in process against the snapshot) takes the
# unrelated set once, unmeasured, and SET (default copies) PASSES times (default 5). For
# comparing one change at a time; bench/mail-gateway.sh is the side-by-side with rspamd.
#   bench/gateway-loop.sh BUILD MAIL_DIR [--set S] [--passes N] [--local] [--compact]
#                         [--callgrind] [-- FLAGS for copsd, or with --local for cops-milter]
# MAIL_DIR: `python3 bench/mail_gateway_bench.py make DIR --registered 10000 --checks 2000`
# (mail-gateway.sh leaves one in its $OUT/mail). --compact registers inside a bulk load, whose
# end compacts the postings (as copsd's idle compaction does a minute after the last write).
# --callgrind (gRPC only) runs the snapshot's copsd under callgrind, counting the last pass:
# prints {"copsd_instructions_per_message": N} (needs valgrind; profile kept at
# COPS_CALLGRIND_OUT). Otherwise one JSON line a pass: messages/s, and the CPU the
# checking process (copsd, or the local milter) spent a message, from /proc/PID/stat.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build=$(cd "$1" && pwd) mail=$(cd "$2" && pwd)
shift 2
set_name=copies passes=5 local=0 compact=0 callgrind=0
while [ $# -gt 0 ]; do
  case "$1" in
    --set) set_name=$2; shift 2 ;;
    --passes) passes=$2; shift 2 ;;
    --local) local=1; shift ;;
    --compact) compact=1; shift ;;
    --callgrind) callgrind=1; shift ;;
    --) shift; break ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
py="$root/bench/mail_gateway_bench.py"
dir=$(mktemp -d /tmp/cops-gateway-loop.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
echo '{"stats_interval_s": 0}' >"$dir/milter.json"
copsd_flags=() milter_flags=()
if [ "$local" = 1 ]; then milter_flags=("$@"); else copsd_flags=("$@"); fi

start_copsd() {  # DATA_DIR: sets copsd_pid, addr
  rm -f "$dir/port"
  "$build/server/copsd" --data-dir "$1" --listen 127.0.0.1:0 --port-file "$dir/port" \
    --log-level warn "${copsd_flags[@]}" 2>>"$dir/copsd.log" &
  copsd_pid=$!
  pids+=($!)
  for _ in $(seq 1 300); do [ -s "$dir/port" ] && break; sleep 0.1; done
  addr="127.0.0.1:$(cat "$dir/port")"
}
start_copsd "$dir/data"
cops() { "$build/client/cops" --server "$addr" "$@"; }
[ "$compact" = 1 ] && cops admin bulk-load begin >/dev/null
cops --timeout 3600 register --collection mail --format text "$mail/registered-text" >/dev/null
[ "$compact" = 1 ] && cops --timeout 3600 admin bulk-load end >/dev/null
cops admin snapshot loop >/dev/null
snapshot="$dir/data/snapshots/loop"

settle() {  # until copsd at $addr compacts nothing and no warm-up reads (`cops stats`)
  for _ in $(seq 1 300); do
    cops --json stats | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(1 if s.get("block_cache_warming") or s.get("running_compactions") else 0)' && break
    sleep 1
  done
}
settle
port=$((42000 + RANDOM % 1000))
if [ "$local" = 1 ]; then
  kill "$copsd_pid"; wait "$copsd_pid" 2>/dev/null || true
  "$build/milter/cops-milter" --listen "inet:$port@127.0.0.1" --data-dir "$snapshot" \
    --action headers --config "$dir/milter.json" --log-level warn "${milter_flags[@]}" \
    2>"$dir/milter.log" &
  checker=$!
  pids+=($!)
else
  checker=$copsd_pid  # the copsd that registered, as a gateway's
  if [ "$callgrind" = 1 ]; then
    kill "$copsd_pid"; wait "$copsd_pid" 2>/dev/null || true
    source "$root/bench/callgrind-copsd.sh"
    # No idle compaction while counting: the snapshot stays as registered (or --compact made it).
    callgrind_start_copsd "$build" "$snapshot" --idle-compaction-seconds 0 "${copsd_flags[@]}"
    trap 'cleanup; rm -rf "$work"' EXIT  # callgrind_start_copsd set its own
    addr=$server
    checker=$pid
    settle
  fi
  "$build/milter/cops-milter" --listen "inet:$port@127.0.0.1" --server "$addr" \
    --action headers --config "$dir/milter.json" --log-level warn 2>"$dir/milter.log" &
  pids+=($!)
fi
for _ in $(seq 1 300); do (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
# The local milter reads its copy into its cache after opening it and says nothing when done:
# a few seconds are plenty for 10^4 messages.
[ "$local" = 1 ] && sleep 5
python3 "$py" milter "127.0.0.1:$port" "$mail" unrelated >/dev/null
cpu() { awk '{print $14 + $15}' "/proc/$checker/stat"; }  # clock ticks
hz=$(getconf CLK_TCK)
for pass in $(seq 1 "$passes"); do
  if [ "$callgrind" = 1 ] && [ "$pass" = "$passes" ]; then callgrind_control -i on "$checker" >/dev/null; fi
  before=$(cpu)
  line=$(python3 "$py" milter "127.0.0.1:$port" "$mail" "$set_name")
  after=$(cpu)
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(json.dumps({"pass": int(sys.argv[2]), "set": d["set"], "messages": d["messages"], "per_second": d["per_second"], "flagged": d["flagged"], "checker_cpu_ms_per_message": round((int(sys.argv[4]) - int(sys.argv[3])) * 1000 / int(sys.argv[5]) / d["messages"], 3)}))' \
    "$line" "$pass" "$before" "$after" "$hz"
done
if [ "$callgrind" = 1 ]; then
  callgrind_report copsd_instructions_per_message "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["messages"])' "$line")"
fi
