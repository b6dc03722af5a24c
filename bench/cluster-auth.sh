#!/usr/bin/env bash
# Check throughput of the loopback cluster with authentication on and off, side by side
# (docs/scale-out.md, "Measured figures"): two clusters of scripts/local-cluster.sh up at once,
# one secure (its default: API keys at the router, mutual TLS router -> replicas, NATS users,
# signed events; the calls made by an owner principal without a rate limit) and one open (COPS_SECURE=0), each 3 nats-servers, 2 x 2 replicas and a
# router. The same documents are registered in both, then check runs alternate between them
# (open, secure, open, secure, ...) so that both see the same machine load.
#
#   bench/cluster-auth.sh [--documents N] [--checks N] [--rounds R] [--concurrency C]
#
# Prints one JSON line per run (the `cops bench` report and the setup) and a summary: the
# median calls/s of each and secure / open. Needs copsd and cops in ${COPS_BUILD_DIR:-build}
# and nats-server.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
documents=2000
checks=1000
rounds=3
concurrency=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --documents) documents="$2"; shift 2 ;;
    --checks) checks="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --concurrency) concurrency="$2"; shift 2 ;;
    *) echo "cluster-auth: unknown argument $1" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d /tmp/cops-cluster-auth-XXXXXX)"
results="$work/results.jsonl"
cleanup() {
  for setup in secure open; do  # why calls failed, if any did
    grep -h -m 3 -o 'status=RESOURCE_EXHAUSTED.*' "$work/$setup/router.log" 2>/dev/null |
      sed "s/^/cluster-auth: $setup router: /" >&2 || true
  done
  for setup in secure open; do
    [[ -f "$work/$setup/cluster.env" ]] && "$root/scripts/local-cluster.sh" down "$work/$setup" \
      >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

declare -A addr key
for setup in secure open; do
  secure=1; [[ "$setup" == open ]] && secure=0
  addr[$setup]="$(COPS_SECURE=$secure "$root/scripts/local-cluster.sh" up "$work/$setup" | tail -1)"
  key[$setup]=""
done
# The secure cluster's caller: an owner of the bench collection without a rate limit to hit
# (the admin key's default is 200 requests/s), so that both setups do the same work.
key[secure]="$(COPS_API_KEY="$(cat "$work/secure/admin.key")" "$build/client/cops" \
  --server "${addr[secure]}" --json admin principal create bench --role owner \
  --collection bench --rps 1000000 --burst 1000000 |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')"

bench() {  # SETUP COPS-BENCH-ARGS...: one JSON line
  local setup="$1"; shift
  # (cops bench exits non-zero when a call failed; the report counts them)
  { COPS_API_KEY="${key[$setup]}" "$build/client/cops" --server "${addr[$setup]}" \
      bench --seed 7 --bench-json "$@" || true; } | grep '^{' | tail -1 |
    python3 -c 'import json,sys; r=json.load(sys.stdin); r["setup"]=sys.argv[1]; print(json.dumps(r))' \
      "$setup" | tee -a "$results"
}

for setup in secure open; do
  bench "$setup" --documents "$documents" --document-bytes 4000 --checks 0 --concurrency 4
done
# A registration is acknowledged once one replica of its partition applied it; let the
# others catch up before checks are timed.
sleep 5
for round in $(seq "$rounds"); do
  for setup in open secure; do
    bench "$setup" --documents 0 --existing "$documents" --checks "$checks" --check-bytes 20000 \
      --copy-fraction 0.5 --concurrency "$concurrency" --first-check $((round * checks))
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
checks = [r for r in runs if r["phase"] == "check"]
med = {s: statistics.median(r["calls_per_second"] for r in checks if r["setup"] == s)
       for s in ("open", "secure")}
errors = {s: sum(r["errors"] for r in checks if r["setup"] == s) for s in med}
print(f"checks/s, median of {len(checks)//2} runs each: open {med['open']:.1f}, "
      f"secure {med['secure']:.1f}, secure/open {med['secure']/med['open']:.3f}; "
      f"errors open {errors['open']}, secure {errors['secure']}")
PY
