#!/usr/bin/env bash
# Mail gateways side by side (issue 20): cops-milter + copsd against rspamd 3.4's fuzzy storage,
# both on loopback in one run, the same messages registered in both and checked in both.
#   bench/mail-gateway.sh [REGISTERED] [CHECKS]      (defaults 2000 and 500; data in $OUT)
# Sets (bench/mail_gateway_bench.py make): ~3 KB registered messages; exact copies of them;
# excerpts (a ~60-word paragraph of a registered message inside a new ~300-word message);
# unrelated messages. After one unmeasured pass of the unrelated set through each system, each
# set is sent by 8 workers flat out, twice ("pass": first, then second, its data in the caches
# the first filled), then the copies at 100 messages/s for the milter's
# latency under a steady load. Then, as root with Postfix
# installed, the copies at 100 messages/s through a loopback Postfix, one SMTP session each,
# to an smtpd without a milter, one with cops-milter on a unix socket and one with it over
# TCP: the differences are what the milter adds.
# Prints one JSON line per run, with the driver's own CPU per message and the host's idle cores
# during the run (near 0: the run was CPU-bound, and its rate is the share of the host it got),
# and after each run the CPU copsd and cops-milter (or rspamd's processes) spent per message:
# on a shared host a steadier comparison than messages/s. Needs the build (copsd, cops, cops-milter in $COPS_BUILD_DIR,
# default build/) and the rspamd package (installed here if missing: it is only needed for
# this comparison). With COPS_BASELINE_BUILD_DIR set (another build's directory, or one holding
# server/copsd, client/cops and milter/cops-milter, with cops-convert-worker beside copsd and
# cops-milter or named by COPS_CONVERT_WORKER), a second copsd + cops-milter from it runs
# beside the first and each set goes through both, baseline first, in the same run.
# COPS_SKIP_POSTFIX=1 stops after the paced run; COPS_REGISTER_FORMAT=text: see start_cops.
# A third milter of this build, "cops-milter(local)", checks in process (--data-dir, no gRPC
# hop) against a snapshot of copsd's data directory taken once the messages are registered
# (`cops admin snapshot`, which flushes copsd's memtables first: both then read SST files);
# COPS_LOCAL_MILTER=0 leaves it out.
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
postfix_conf=""
cleanup() {
  [ -n "$postfix_conf" ] && postfix -c "$postfix_conf" stop >/dev/null 2>&1
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
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
echo '{"stats_interval_s": 0, "convert_in_process": '"${COPS_MILTER_IN_PROCESS:-false}"'}' \
  >"$out/milter.json"
start_cops() {  # BUILD NAME MILTER_PORT: sets copsd_pid, milter_pid, cops_addr
  "$1/server/copsd" --data-dir "$out/$2" --listen 127.0.0.1:0 --port-file "$out/$2.port" \
    --log-level warn 2>"$out/$2.log" &
  copsd_pid=$!
  pids+=($!)
  for _ in $(seq 1 300); do [ -s "$out/$2.port" ] && break; sleep 0.1; done
  cops_addr="127.0.0.1:$(cat "$out/$2.port")"
  # Registration is not what is measured: copsd parses each email in a sandboxed converter
  # process of its own (~20-150 ms each); COPS_REGISTER_FORMAT=text registers each message's
  # subject and body as plain text instead, as the email converter reads them.
  if [ "${COPS_REGISTER_FORMAT:-email}" = text ]; then
    "$1/client/cops" --server "$cops_addr" --timeout 3600 register --collection mail \
      --format text "$out/mail/registered-text" >/dev/null
  else
    "$1/client/cops" --server "$cops_addr" --timeout 3600 register --collection mail \
      --format email "$out/mail/registered" >/dev/null
  fi
  # As an operator makes the gateway's copy (README, "Mail gateway"): once copsd's idle
  # compaction has merged the postings and read them into its cache (`cops stats`:
  # idle_compaction_due and block_cache_warming false; ~60 s after the last registration;
  # at once for a build without them). Checks then read SST files, as the local milter's
  # snapshot does: `cops admin snapshot` flushes copsd's memtables first.
  for _ in $(seq 1 300); do
    "$1/client/cops" --server "$cops_addr" --json stats | python3 -c \
      'import json,sys; s=json.load(sys.stdin); sys.exit(1 if s.get("idle_compaction_due") or s.get("block_cache_warming") else 0)' \
      && break
    sleep 1
  done
  "$1/client/cops" --server "$cops_addr" admin snapshot gateway >/dev/null
  "$1/milter/cops-milter" --listen "inet:$3@127.0.0.1" --server "$cops_addr" \
    --action headers --config "$out/milter.json" --log-level warn 2>"$out/$2-milter.log" &
  milter_pid=$!
  pids+=($!)
  wait_port 127.0.0.1 "$3" 10
}
milters=()  # NAME PORT COPSD_PID MILTER_PID, per COPS under test
if [ -n "${COPS_BASELINE_BUILD_DIR:-}" ]; then
  start_cops "$COPS_BASELINE_BUILD_DIR" cops-baseline 41892
  milters+=("cops-milter(baseline) 41892 $copsd_pid $milter_pid")
fi
start_cops "$build" cops 41891
milters+=("cops-milter 41891 $copsd_pid $milter_pid")
if [ "${COPS_LOCAL_MILTER:-1}" != 0 ]; then
  # The gateway's copy of the index, as an operator makes one (start_cops took it).
  "$build/milter/cops-milter" --listen "inet:41893@127.0.0.1" \
    --data-dir "$out/cops/snapshots/gateway" \
    --action headers --config "$out/milter.json" --log-level warn 2>"$out/cops-local-milter.log" &
  pids+=($!)
  milters+=("cops-milter(local) 41893 - $!")  # no copsd in its path
  wait_port 127.0.0.1 41893 30
fi

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
rspamd_pid=$!
pids+=($!)
wait_port 127.0.0.1 41333 600  # the first start compiles its hyperscan databases
wait_port 127.0.0.1 41334 60
# On a loaded host some adds time out (rspamc then exits non-zero): the wait below decides.
rspamc -h 127.0.0.1:41334 -P bench fuzzy_add -f 1 -w 10 "$out/mail/registered" >/dev/null ||
  echo "rspamc fuzzy_add reported failures" >&2
# The storage writes updates in batches, and the scanner stops asking a storage that timed out
# (as during the bulk add) for a while, answering without fuzzy matches: measure only once
# registered messages are found.
registered_files=("$out"/mail/registered/*.eml)
for i in $(seq 1 200); do
  found=0
  for f in "${registered_files[0]}" "${registered_files[-1]}"; do
    if rspamc -h 127.0.0.1:41333 symbols "$f" | grep -q LOCAL_FUZZY_DENIED; then
      found=$((found + 1))
    fi
  done
  [ "$found" = 2 ] && break
  [ "$i" = 200 ] && echo "rspamd never found the registered messages: its figures are not comparable" >&2
  sleep 3
done

# One unmeasured pass of the unrelated set through each system first: processes, connections
# and caches settle (rspamd's storage was written to just before).
for m in "${milters[@]}"; do
  read -r _ port _ _ <<<"$m"
  python3 "$py" milter "127.0.0.1:$port" "$out/mail" unrelated >/dev/null
done
python3 "$py" rspamd 127.0.0.1:41333 "$out/mail" unrelated >/dev/null
cpu_ticks() {  # user + system, in clock ticks; 0 for "-"
  if [ "$1" = - ]; then echo 0; else awk '{print $14 + $15}' "/proc/$1/stat"; fi
}
tick_ms=$((1000 / $(getconf CLK_TCK)))
rspamd_ticks() {  # rspamd's scanners and fuzzy storage (not its controller or hs_helper)
  local t=0 p
  for p in $(ps -o pid=,args= --ppid "$rspamd_pid" | awk '/normal|fuzzy/ {print $1}'); do
    t=$((t + $(cpu_ticks "$p")))
  done
  echo "$t"
}
# What each system spends with no mail (timers, background threads), over 3 s: the CPU per
# message below includes it for the length of each run.
idle() {  # NAME TICKS_COMMAND...
  local name=$1 t0 t1
  shift
  t0=$("$@")
  sleep 3
  t1=$("$@")
  echo "{\"system\": \"$name\", \"measure\": \"idle_cpu_ms_per_s\"," \
    "\"cpu\": $(awk -v t=$((t1 - t0)) -v ms=$tick_ms 'BEGIN {printf "%.1f", t * ms / 3}')}"
}
cops_ticks() { echo $(($(cpu_ticks "$1") + $(cpu_ticks "$2"))); }
for m in "${milters[@]}"; do
  read -r name _ copsd_pid milter_pid <<<"$m"
  idle "$name" cops_ticks "$copsd_pid" "$milter_pid"
done
idle rspamd rspamd_ticks
# Each set twice through each system: the first pass reads what it checks against for the
# first time (COPS: SST blocks into the block cache; rspamd: its sqlite pages), the second finds
# it where the first left it, as a gateway does once it has run for a while with a corpus
# that fits its memory. Every line says which ("pass").
for pass in first second; do
  for set in copies excerpts unrelated; do
    for m in "${milters[@]}"; do
      read -r name port copsd_pid milter_pid <<<"$m"
      copsd0=$(cpu_ticks "$copsd_pid") milter0=$(cpu_ticks "$milter_pid")
      python3 "$py" milter "127.0.0.1:$port" "$out/mail" "$set" --system "$name" |
        sed "s/^{/{\"pass\": \"$pass\", /"
      copsd1=$(cpu_ticks "$copsd_pid") milter1=$(cpu_ticks "$milter_pid")
      # The CPU each COPS process spent per message of the run just reported.
      echo "{\"pass\": \"$pass\", \"system\": \"$name\", \"set\": \"$set\", \"measure\": \"cpu_ms_per_message\"," \
        "\"copsd\": $(awk -v t=$((copsd1 - copsd0)) -v ms=$tick_ms -v n="$checks" 'BEGIN {printf "%.2f", t * ms / n}')," \
        "\"cops_milter\": $(awk -v t=$((milter1 - milter0)) -v ms=$tick_ms -v n="$checks" 'BEGIN {printf "%.2f", t * ms / n}')}"
    done
    rspamd0=$(rspamd_ticks)
    python3 "$py" rspamd 127.0.0.1:41333 "$out/mail" "$set" | sed "s/^{/{\"pass\": \"$pass\", /"
    rspamd1=$(rspamd_ticks)
    echo "{\"pass\": \"$pass\", \"system\": \"rspamd\", \"set\": \"$set\", \"measure\": \"cpu_ms_per_message\"," \
      "\"rspamd\": $(awk -v t=$((rspamd1 - rspamd0)) -v ms=$tick_ms -v n="$checks" 'BEGIN {printf "%.2f", t * ms / n}')}"
  done
done
for m in "${milters[@]}"; do
  read -r name port _ _ <<<"$m"
  python3 "$py" milter "127.0.0.1:$port" "$out/mail" copies --rate 100 --system "$name"
done

# --- Postfix in front (its master starts as root): smtpd on 41826 without a milter, on 41827
# with cops-milter on a unix socket (a second instance), on 41825 with it over TCP; delivery
# discards the mail.
if [ -n "${COPS_SKIP_POSTFIX:-}" ]; then
  echo "Postfix phase skipped (COPS_SKIP_POSTFIX)" >&2
elif [ "$(id -u)" -eq 0 ] && command -v postfix >/dev/null; then
  pf="$out/postfix"
  mkdir -p "$pf/etc" "$pf/spool" "$pf/data"
  chown postfix "$pf/data"
  chmod 755 "$out"
  "$build/milter/cops-milter" --listen "unix:$out/milter.sock" --server "$cops_addr" \
    --action headers --config "$out/milter.json" --log-level info >"$out/milter-unix.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do [ -S "$out/milter.sock" ] && break; sleep 0.1; done
  chmod 666 "$out/milter.sock"  # smtpd runs as the postfix user
  cat >"$pf/etc/main.cf" <<CONF
compatibility_level = 3.6
queue_directory = $pf/spool
data_directory = $pf/data
mail_owner = postfix
setgid_group = postdrop
inet_interfaces = loopback-only
inet_protocols = ipv4
myhostname = bench.localdomain
mydestination = \$myhostname
mynetworks = 127.0.0.0/8
relayhost =
local_transport = discard
default_transport = discard
alias_maps =
alias_database =
local_recipient_maps =
smtpd_peername_lookup = no
smtputf8_enable = no
maillog_file_prefixes = $pf
maillog_file = $pf/maillog
milter_default_action = tempfail
milter_protocol = 6
CONF
  {
    echo "127.0.0.1:41825 inet n - n - - smtpd -o smtpd_milters=inet:127.0.0.1:41891"
    echo "127.0.0.1:41826 inet n - n - - smtpd"
    echo "127.0.0.1:41827 inet n - n - - smtpd -o smtpd_milters=unix:$out/milter.sock"
    for service in "cleanup unix n - n - 0 cleanup" "qmgr unix n - n 300 1 qmgr" \
        "rewrite unix - - n - - trivial-rewrite" "bounce unix - - n - 0 bounce" \
        "defer unix - - n - 0 bounce" "trace unix - - n - 0 bounce" "verify unix - - n - 1 verify" \
        "proxymap unix - - n - - proxymap" "showq unix n - n - - showq" \
        "error unix - - n - - error" "retry unix - - n - - error" \
        "discard unix - - n - - discard" "anvil unix - - n - 1 anvil" \
        "scache unix - - n - 1 scache" "postlog unix-dgram n - n - 1 postlogd"; do
      echo "$service"
    done
  } >"$pf/etc/master.cf"
  postfix -c "$pf/etc" start >/dev/null
  postfix_conf="$pf/etc"
  for port in 41825 41826 41827; do wait_port 127.0.0.1 "$port" 30; done
  for port in 41826 41827 41825 41826 41827 41825; do
    case "$port" in
      41825) name="postfix+cops-milter(tcp)" ;;
      41826) name=postfix ;;
      41827) name="postfix+cops-milter(unix)" ;;
    esac
    before=$(wc -l <"$out/milter-unix.log")
    python3 "$py" smtp "127.0.0.1:$port" "$out/mail" copies --rate 100 --system "$name"
    # What the milter adds at the end of each message (its own latency_ms log field: from
    # Postfix's end-of-data to the milter's reply), for the run through the unix socket.
    if [ "$port" = 41827 ]; then
      tail -n +"$((before + 1))" "$out/milter-unix.log" | python3 "$py" latency --system "$name"
    fi
  done
else
  echo "Postfix phase skipped: needs root and the postfix package" >&2
fi
echo "data and logs: $out" >&2
