#!/usr/bin/env bash
# Mail gateways side by side (issue 20): cops-milter + copsd against rspamd 3.4's fuzzy storage,
# both on loopback in one run, the same messages registered in both and checked in both.
#   bench/mail-gateway.sh [REGISTERED] [CHECKS]      (defaults 2000 and 500; data in $OUT)
# Sets (bench/mail_gateway_bench.py make): ~2.7 KB registered messages; exact copies of them;
# excerpts (a ~60-word paragraph of a registered message inside a new ~300-word message);
# unrelated messages. Each set is sent by 8 workers flat out, then the copies at 100
# messages/s for the milter's latency under a steady load. Prints one JSON line per run.
# Needs the build (copsd, cops, cops-milter in $COPS_BUILD_DIR, default build/) and the
# rspamd package (installed here if missing: it is only needed for this comparison).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${COPS_BUILD_DIR:-$root/build}"
registered="${1:-2000}"
checks="${2:-500}"
out="${OUT:-$(mktemp -d /tmp/cops-mail-bench.XXXXXX)}"
py="$root/bench/mail_gateway_bench.py"
if ! command -v rspamd >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends rspamd
fi
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
wait_port() {  # HOST PORT SECONDS
  for _ in $(seq 1 $(($3 * 10))); do
    if (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on $1:$2 after $3 s" >&2
  return 1
}

python3 "$py" make "$out/mail" --registered "$registered" --checks "$checks" >&2

# --- COPS: copsd, the registered messages (as email), cops-milter in front.
"$build/server/copsd" --data-dir "$out/cops" --listen 127.0.0.1:0 --port-file "$out/copsd.port" \
  --log-level warn 2>"$out/copsd.log" &
pids+=($!)
for _ in $(seq 1 300); do [ -s "$out/copsd.port" ] && break; sleep 0.1; done
cops_addr="127.0.0.1:$(cat "$out/copsd.port")"
# Registration is not what is measured: copsd parses each email in its sandboxed worker.
"$build/client/cops" --server "$cops_addr" --timeout 3600 register --collection mail --format email \
  "$out/mail/registered" >/dev/null
echo '{"stats_interval_s": 0, "convert_in_process": '"${COPS_MILTER_IN_PROCESS:-false}"'}' \
  >"$out/milter.json"
"$build/milter/cops-milter" --listen inet:41891@127.0.0.1 --server "$cops_addr" \
  --action headers --config "$out/milter.json" --log-level warn 2>"$out/milter.log" &
pids+=($!)
wait_port 127.0.0.1 41891 10

# --- rspamd: fuzzy storage (sqlite) and a scanner with only fuzzy_check, its own config dir.
r="$out/rspamd"
mkdir -p "$r/db" "$r/run"
cat >"$r/rspamd.conf" <<CONF
options {
  pidfile = "$r/run/rspamd.pid"; dbdir = "$r/db"; rundir = "$r/run"; tempdir = "$r/run";
  hs_cache_dir = "$r/db"; filters = "fuzzy_check";
  dns { nameserver = ["127.0.0.1:53"]; timeout = 0.1s; retransmits = 0; }
}
logging { type = "file"; filename = "$r/rspamd.log"; level = "warning"; }
lua = "/usr/share/rspamd/rules/rspamd.lua";
worker "normal" { bind_socket = "127.0.0.1:41333"; count = 2; }
worker "controller" { bind_socket = "127.0.0.1:41334"; count = 1; password = "bench";
  enable_password = "bench"; secure_ip = "127.0.0.1"; }
worker "fuzzy" { bind_socket = "127.0.0.1:41335"; count = 1; backend = "sqlite";
  hash_file = "$r/db/fuzzy.db"; allow_update = ["127.0.0.1"]; expire = 90d; }
fuzzy_check {
  min_bytes = 0; timeout = 2s;
  rule "local" {
    algorithm = "mumhash"; servers = "127.0.0.1:41335"; symbol = "LOCAL_FUZZY_UNKNOWN";
    mime_types = ["*"]; read_only = false; skip_unknown = true;
    fuzzy_map = { LOCAL_FUZZY_DENIED { max_score = 20.0; flag = 1; } }
  }
}
CONF
rspamd -f -i -c "$r/rspamd.conf" >"$r/out.log" 2>&1 &
pids+=($!)
wait_port 127.0.0.1 41333 600  # the first start compiles its hyperscan databases
wait_port 127.0.0.1 41334 60
rspamc -h 127.0.0.1:41334 -P bench fuzzy_add -f 1 -w 10 "$out/mail/registered" >/dev/null
sleep 70  # the fuzzy storage writes its updates in batches, once a minute

for set in copies excerpts unrelated; do
  python3 "$py" milter 127.0.0.1:41891 "$out/mail" "$set"
  python3 "$py" rspamd 127.0.0.1:41333 "$out/mail" "$set"
done
python3 "$py" milter 127.0.0.1:41891 "$out/mail" copies --rate 100
echo "data and logs: $out" >&2
