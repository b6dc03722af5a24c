# Sourced by bench/*-instructions.sh: copsd under callgrind, collection off until the caller
# turns it on, and the count per unit of work at the end (needs valgrind).
#   callgrind_start_copsd BUILD DATA_DIR [COPSD-FLAGS...]   sets work, out, pid, server
#   callgrind_report NAME COUNT   stops collection, stops copsd, prints {"NAME": total / COUNT};
#                                 with COPS_CALLGRIND_OUT=FILE the profile is kept there
#                                 (`callgrind_annotate --inclusive=yes FILE | head -60`)

callgrind_start_copsd() {
  local build=$1 data=$2
  shift 2
  command -v valgrind >/dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
  work=$(mktemp -d)
  out="$work/callgrind.out"
  # GLIBC_TUNABLES set (valgrind's malloc ignores it): copsd would otherwise execute itself
  # again with its own (server/malloc_tuning.h), outside valgrind.
  GLIBC_TUNABLES="${GLIBC_TUNABLES-}" valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$out" "$build/server/copsd" \
    --data-dir "${data:-$work/data}" --listen 127.0.0.1:0 --port-file "$work/port" \
    --log-level warn "$@" 2>"$work/valgrind.log" &
  pid=$!
  trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
  for _ in $(seq 3000); do [ -s "$work/port" ] && break; sleep 0.1; done
  server="127.0.0.1:$(cat "$work/port")"
}

callgrind_report() {
  local name=$1 count=$2 total
  callgrind_control -i off "$pid" >/dev/null 2>&1
  callgrind_control -d "$pid" >/dev/null 2>&1
  kill "$pid"; wait "$pid" 2>/dev/null || true
  # The dump (-d) holds what was measured; the file written at exit, nothing.
  total=$(callgrind_annotate "$out.1" 2>/dev/null |
    awk '/PROGRAM TOTALS/ && !n++ { gsub(",", "", $1); print $1 }')
  python3 -c 'import sys; print("{\"%s\": %d}" % (sys.argv[1], int(sys.argv[2]) // int(sys.argv[3])))' \
    "$name" "$total" "$count"
  if [ -n "${COPS_CALLGRIND_OUT:-}" ]; then cp "$out.1" "$COPS_CALLGRIND_OUT"; fi
}
