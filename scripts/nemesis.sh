#!/usr/bin/env bash
# A soak of the cluster's randomized fault test (tests/server/cluster_nemesis_test.cc): three
# nats-servers, 2 partitions x 2 replicas and a router on loopback; clients register,
# unregister and check while a nemesis kills -9, pauses and restarts servers (and fills a
# replica's tmpfs, as root) on a schedule drawn from the seed; then the history is checked.
#
#   scripts/nemesis.sh [--minutes N] [--seed S]     (default: 5 minutes, seed 1)
#
# Prints the operations, the faults injected and the anomalies found (0 expected); exit code
# 0 when the history holds. Needs the test built (cmake --build build --target
# cluster_nemesis_test copsd) and nats-server.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
minutes=5
seed=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) minutes="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    *) echo "nemesis: unknown argument $1 (--minutes N --seed S)" >&2; exit 2 ;;
  esac
done
[[ "$minutes" =~ ^[0-9]+$ && "$seed" =~ ^[0-9]+$ ]] ||
  { echo "nemesis: --minutes and --seed take whole numbers" >&2; exit 2; }
binary="$build/tests/server/cluster_nemesis_test"
[[ -x "$binary" ]] || { echo "nemesis: build $binary first" >&2; exit 2; }
COPS_BUILD_DIR="$build" COPS_NEMESIS_SECONDS=$((minutes * 60)) COPS_NEMESIS_SEED="$seed" \
  exec "$binary"
