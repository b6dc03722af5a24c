#!/usr/bin/env bash
# A synchronous check over the HTTP API against the same check over gRPC (docs/api.md,
# "Speed"): a fresh copsd with --http-listen in a temporary directory, DOCUMENTS (default
# 2000) synthetic documents registered, then bench/http_check_bench: ~3 KB messages (half
# with a copied passage) at concurrency 8, gRPC and HTTP interleaved twice, SECONDS (default
# 4) each (COPS_BENCH_ROUNDS rounds, default 2). Under a minute at 2,000 documents; the import
# of 100,000 takes a few minutes. Usage: scripts/bench-http.sh [DOCUMENTS] [SECONDS] [-- COPSD-FLAGS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
documents="${1:-2000}"
seconds="${2:-4}"
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
work="$(mktemp -d)"
# COPS_BENCH_DATA=DIR keeps the data directory there: a second run reuses its documents
# (the import of 100,000 takes minutes on a loaded host) instead of registering them again.
data="${COPS_BENCH_DATA:-$work/data}"
if [ -n "${COPS_BENCH_DATA:-}" ] && [ -e "$data/.bench-documents" ]; then
  [ "$(cat "$data/.bench-documents")" = "$documents" ] || { echo "$data holds other documents" >&2; exit 2; }
  registered=--registered
else
  registered=
fi
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$build/server/copsd" --data-dir "$data" --listen 127.0.0.1:0 --port-file "$work/port" \
  --http-listen 127.0.0.1:0 --http-port-file "$work/http-port" --warm-cache false "$@" \
  > "$work/copsd.log" 2>&1 &
pid=$!
for _ in $(seq 600); do [ -s "$work/port" ] && [ -s "$work/http-port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { cat "$work/copsd.log" >&2; exit 2; }
"$build/bench/http_check_bench" --grpc "127.0.0.1:$(cat "$work/port")" \
  --http "127.0.0.1:$(cat "$work/http-port")" --documents "$documents" $registered \
  --seconds "$seconds" --concurrency 8 --check-bytes 3000 --rounds "${COPS_BENCH_ROUNDS:-2}"
[ -z "${COPS_BENCH_DATA:-}" ] || echo "$documents" > "$data/.bench-documents"
