#!/usr/bin/env bash
# Instructions per registered document, counted by callgrind: a fresh copsd runs under
# valgrind with collection off until the registration starts (start-up left out), then
# `cops bench` registers DOCUMENTS 4 KB documents in RegisterDocuments streams of 4,096 from 2
# threads (as `scripts/bench.sh register`), and the count stops once copsd is idle again
# (its flushes, with the stored texts' compression, counted). Unlike CPU time, the count does
# not move with the host's load: use it to compare two builds.
#   bench/register-instructions.sh BUILD [DOCUMENTS] [COPSD-FLAGS...]
# Prints the bench's line, then the instructions per document (needs valgrind: `apt-get
# install valgrind`). With COPS_CALLGRIND_OUT=FILE the profile is kept there
# (`callgrind_annotate --inclusive=yes FILE | head -60`).
set -euo pipefail
build=$1 documents=${2:-8192}
shift $(( $# < 2 ? $# : 2 ))
source "$(dirname "$0")/callgrind-copsd.sh"
callgrind_start_copsd "$build" "" "$@"
callgrind_control -i on "$pid" >/dev/null 2>&1
"$build/client/cops" --server "$server" --timeout 3600 bench --seed 7 --documents "$documents" \
  --document-bytes 4000 --checks 0 --concurrency 2 --bulk 4096 --bench-json | grep register || true
# Until copsd's threads are idle (its flushes done): two successive samples of its CPU time
# a second apart that agree.
cpu() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
last=-1
for _ in $(seq 600); do
  now=$(cpu)
  [ "$now" = "$last" ] && break
  last=$now
  sleep 1
done
callgrind_report instructions_per_document "$documents"
