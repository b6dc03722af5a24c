#!/usr/bin/env bash
# A COPS cluster on this machine, on loopback (docs/scale-out.md, "A cluster on one machine"):
#
#   scripts/local-cluster.sh up DIR            start every member; prints the address clients
#                                              use (HOST:PORT) as its last line
#   scripts/local-cluster.sh status DIR        which members run, and the cluster map
#   scripts/local-cluster.sh restart DIR NAME  start member NAME again on its old data
#   scripts/local-cluster.sh down DIR          stop every member
#
# Members: nats-1..nats-3 (nats-server, one JetStream cluster, file storage in DIR/NAME);
# index-p<P>r<R> (copsd --follow --partitions --partition: replica R of partition P, in the
# cluster map) and `router` (copsd --route: registrations and checks, replicas from the map).
# With PARTITIONS=0 below: `primary` (copsd --log) and full read-only replicas instead of the
# router. Each member has DIR/NAME (data), DIR/NAME.log and DIR/NAME.pid; the ports chosen
# at `up` are kept in DIR/cluster.env, so a restarted member keeps its address.
# Secure by default (COPS_SECURE=0: the open setup): DIR/secrets/ (0700) holds a CA and node
# certificates (replicas serve mutual TLS and believe identities forwarded by the router's
# certificate only), the cluster key signing events and map records, the NATS users'
# passwords and nats.conf (a user per copsd member, each
# allowed the subjects it needs: docs/scale-out.md, "NATS's own security"); the router (or
# the primary) runs with authentication on and its admin API key is copied to DIR/admin.key
# (0600). DIR/secrets/client.pem/.key is a client certificate for calling replicas directly.
# copsd comes from $COPS_BUILD_DIR/server/copsd (default: build/ of this checkout), or $COPSD.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
copsd="${COPSD:-${COPS_BUILD_DIR:-$root/build}/server/copsd}"
PATH="$PATH:/usr/sbin"  # Debian installs nats-server there

# ---- The layout ----------------------------------------------------------------------------
PARTITIONS="${COPS_PARTITIONS:-2}"  # P; 0: unpartitioned, a --log primary and full replicas
REPLICAS=2                          # R: index replicas per partition
HEARTBEAT_MS=1000                   # cluster map heartbeat (a member is live for 3 of them)
NATS_SERVERS=3                      # a JetStream cluster of 3 keeps quorum with one down
SECURE="${COPS_SECURE:-1}"          # 0: no NATS users, TLS or authentication (loopback only)
SUBJECT=cops.registrations          # copsd's defaults: the log's subject, the map's bucket
BUCKET=COPS_CLUSTER
# -------------------------------------------------------------------------------------------

usage() {
  sed -n '3,7p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# N free loopback TCP ports, space-separated.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

index_members() {
  local p r
  for ((p = 0; p < (PARTITIONS > 0 ? PARTITIONS : 1); p++)); do
    for ((r = 1; r <= REPLICAS; r++)); do echo "index-p${p}r${r}"; done
  done
}

# The copsd members, in start order: replicas before the router that looks them up.
copsd_members() {
  if ((PARTITIONS == 0)); then echo primary; fi
  index_members
  if ((PARTITIONS > 0)); then echo router; fi
}

# The member clients use.
entry_member() { if ((PARTITIONS > 0)); then echo router; else echo primary; fi; }

members() {
  local i
  for ((i = 1; i <= NATS_SERVERS; i++)); do echo "nats-$i"; done
  copsd_members
}

running() {  # member NAME is running
  local pid_file="$dir/$1.pid"
  [[ -f "$pid_file" ]] && kill -0 "$(cat "$pid_file")" 2>/dev/null
}

# Polls (every 0.1 s, up to 30 s) until command "$@" succeeds.
# Polls "$@" every 0.1 s, up to WAIT_TENTHS times (default 300: 30 s).
wait_for() {
  local i
  for ((i = 0; i < ${WAIT_TENTHS:-300}; i++)); do
    if "$@"; then return 0; fi
    sleep 0.1
  done
  return 1
}

log_has() { grep -q "$2" "$dir/$1.log" 2>/dev/null; }

# Ports are picked free at `up` and bound later: another process may take one in between.
# Whether member NAME's log, from byte OFFSET on, says its port was taken.
port_taken() {  # NAME [OFFSET]
  tail -c +"$((${2:-0} + 1))" "$dir/$1.log" 2>/dev/null |
    grep -qiE "address already in use|cannot listen on"
}

# Sets KEY to VALUE in DIR/cluster.env (a port taken before it was bound) and reloads it.
set_env() {  # KEY VALUE
  sed -i "s|^$1=.*|$1='$2'|" "$dir/cluster.env"
  source "$dir/cluster.env"
}

nats_url() {
  local url="" port
  for port in $NATS_PORTS; do url+="${url:+,}nats://127.0.0.1:$port"; done
  echo "$url"
}

# ---- Secure setup: certificates, NATS users and their permissions ---------------------------
secrets() { echo "$dir/secrets"; }

# The NATS password of copsd member NAME, whose user is its name.
nats_password() { cat "$(secrets)/nats-$1.password"; }

# Permissions of member NAME's NATS user. Every node may use the JetStream API to read the
# log and the map (stream info, its own consumers, acks) but not delete, purge, update or
# restore a stream or delete messages; events are published by the router (every
# partition's subject) or the --log primary only, and a member's cluster-map record by that
# member only.
nats_permissions() {
  local name="$1" publish
  case "$name" in
    router) publish="\"$SUBJECT.>\"" ;;
    primary) publish="\"$SUBJECT\", \"\$KV.$BUCKET.members.$name\"" ;;
    *) publish="\"\$KV.$BUCKET.members.$name\"" ;;
  esac
  echo "{publish: {allow: [$publish, \"\$JS.API.>\", \"\$JS.ACK.>\", \"\$JS.FC.>\"],"
  echo "           deny: [\"\$JS.API.STREAM.DELETE.>\", \"\$JS.API.STREAM.PURGE.>\","
  echo "                  \"\$JS.API.STREAM.UPDATE.>\", \"\$JS.API.STREAM.MSG.DELETE.>\","
  echo "                  \"\$JS.API.STREAM.SNAPSHOT.>\", \"\$JS.API.STREAM.RESTORE.>\"]},"
  echo " subscribe: {allow: [\"_INBOX.>\"]}}"
}

# Creates DIR/secrets once: a CA, the replicas' server certificate (127.0.0.1), the router's
# node certificate, an operator's client certificate, a password per NATS user, nats.conf.
make_secrets() {
  local s name
  s="$(secrets)"
  [[ -f "$s/nats.conf" ]] && return 0
  command -v openssl > /dev/null || { echo "local-cluster: openssl is needed" >&2; exit 2; }
  mkdir -p "$s" && chmod 700 "$s"
  (
    cd "$s"
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
      -subj /CN=cops-local-ca -keyout ca.key -out ca.pem 2> /dev/null
    leaf() {  # FILE CN EXTENSION
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$2" \
        -keyout "$1.key" -out "$1.csr" 2> /dev/null
      openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
        -extfile <(echo "$3") -out "$1.pem" 2> /dev/null
      rm -f "$1.csr"
    }
    leaf replica localhost "subjectAltName=DNS:localhost,IP:127.0.0.1"
    leaf router router "extendedKeyUsage=clientAuth"
    leaf client operator "extendedKeyUsage=clientAuth"
  )
  for name in $(copsd_members); do
    (umask 077 && openssl rand -hex 24 > "$s/nats-$name.password")
  done
  (umask 077 && openssl rand -hex 32 > "$s/cluster.key")
  {
    echo "authorization {"
    echo "  users = ["
    for name in $(copsd_members); do
      echo "    {user: \"$name\", password: \"$(nats_password "$name")\","
      echo "     permissions: $(nats_permissions "$name")}"
    done
    echo "  ]"
    echo "}"
  } > "$s/nats.conf"
  chmod 600 "$s"/*
}

# copsd flags of member NAME in the secure setup, one a line: its NATS user, and mutual TLS
# between router and replicas.
secure_args() {
  local name="$1" s
  s="$(secrets)"
  ((SECURE)) || return 0
  printf '%s\n' --nats-user "$name" --cluster-key-file "$s/cluster.key"
  case "$name" in
    primary) printf '%s\n' --auth on ;;
    router) printf '%s\n' --auth on --node-ca "$s/ca.pem" --node-cert "$s/router.pem" \
              --node-key "$s/router.key" ;;
    *) printf '%s\n' --tls-cert "$s/replica.pem" --tls-key "$s/replica.key" \
         --tls-client-ca "$s/ca.pem" --trusted-nodes router ;;
  esac
}

start_nats() {  # nats-I
  local name="$1" i="${1#nats-}" routes="" j=0 port
  for port in $ROUTE_PORTS; do
    j=$((j + 1))
    if ((j != i)); then routes+="${routes:+,}nats://127.0.0.1:$port"; fi
  done
  local client_port route_port
  client_port="$(echo "$NATS_PORTS" | cut -d' ' -f"$i")"
  route_port="$(echo "$ROUTE_PORTS" | cut -d' ' -f"$i")"
  mkdir -p "$dir/$name"
  local config=()
  if ((SECURE)); then config=(-c "$(secrets)/nats.conf"); fi
  nats-server "${config[@]}" -n "$name" -a 127.0.0.1 -p "$client_port" -js -sd "$dir/$name" \
    --cluster_name cops-local --cluster "nats://127.0.0.1:$route_port" --routes "$routes" \
    > "$dir/$name.log" 2>&1 &
  echo $! > "$dir/$name.pid"
}

# The gRPC port of copsd member NAME (fixed at `up`).
copsd_port() {
  local names port
  names=($(copsd_members))
  local k=0
  for port in $COPSD_PORTS; do
    if [[ "${names[$k]}" == "$1" ]]; then echo "$port"; return; fi
    k=$((k + 1))
  done
  echo "local-cluster: unknown member $1" >&2
  return 1
}

start_copsd() {  # primary | index-p<P>r<R> | router
  local name="$1" port url p
  port="$(copsd_port "$name")"
  url="$(nats_url)"
  mkdir -p "$dir/$name"
  rm -f "$dir/$name/port"
  local args=(--data-dir "$dir/$name/data" --listen "127.0.0.1:$port"
              --port-file "$dir/$name/port" --log-replicas 3 --heartbeat-ms "$HEARTBEAT_MS")
  local extra
  mapfile -t extra < <(secure_args "$name")
  args+=("${extra[@]}")
  case "$name" in
    primary) args+=(--log "$url" --cluster-node-id "$name") ;;
    router) args+=(--route "$url" --partitions "$PARTITIONS") ;;
    *) args+=(--follow "$url" --cluster-node-id "$name")
       if ((PARTITIONS > 0)); then
         p="${name#index-p}"
         args+=(--partitions "$PARTITIONS" --partition "${p%%r*}")
       else
         args+=(--primary "127.0.0.1:$(copsd_port primary)")
       fi ;;
  esac
  # Like systemd's Restart=on-failure: right after the NATS servers restart, JetStream's
  # streams answer only once their RAFT groups have leaders, and copsd exits UNAVAILABLE
  # until then. Up to 60 s of attempts.
  local attempt pid offset
  for ((attempt = 0; attempt < 30; attempt++)); do
    offset="$(stat -c %s "$dir/$name.log" 2>/dev/null || echo 0)"
    # The password reaches copsd through its environment, never its command line.
    COPS_NATS_PASSWORD="$(if ((SECURE)); then nats_password "$name"; fi)" \
      "$copsd" "${args[@]}" >> "$dir/$name.log" 2>&1 &
    pid=$!
    echo "$pid" > "$dir/$name.pid"
    # Serving (and in the cluster map) once the port file is written.
    wait_for bash -c "[[ -f '$dir/$name/port' ]] || ! kill -0 $pid 2>/dev/null" || true
    if [[ -f "$dir/$name/port" ]]; then
      # The entry member's first admin key, for the operator (copsd wrote it 0600).
      if [[ "$name" == "$(entry_member)" && -f "$dir/$name/data/admin.key" &&
            ! -f "$dir/admin.key" ]]; then
        (umask 077 && cp "$dir/$name/data/admin.key" "$dir/admin.key")
      fi
      return 0
    fi
    if kill -0 "$pid" 2>/dev/null; then break; fi  # running but not serving in 30 s
    if port_taken "$name" "$offset"; then  # another port for it, kept in cluster.env
      local ports names k
      read -r -a ports <<< "$COPSD_PORTS"
      names=($(copsd_members))
      for k in "${!names[@]}"; do
        if [[ "${names[$k]}" == "$name" ]]; then ports[$k]="$(free_ports 1)"; fi
      done
      set_env COPSD_PORTS "${ports[*]}"
      args[3]="127.0.0.1:$(copsd_port "$name")"  # --listen's value
      continue
    fi
    sleep 2
  done
  echo "local-cluster: $name did not start; its log:" >&2
  tail -n 20 "$dir/$name.log" >&2
  return 1
}

start_member() {
  case "$1" in
    nats-*) start_nats "$1"
            wait_for log_has "$1" "Server is ready" ;;
    *) start_copsd "$1" ;;
  esac
}

# Stops members "$@": SIGTERM to all at once, up to 15 s for graceful stops, then SIGKILL.
stop_members() {
  local name pids=() pid i
  for name in "$@"; do
    if [[ -f "$dir/$name.pid" ]]; then
      pid="$(cat "$dir/$name.pid")"
      kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
      rm -f "$dir/$name.pid"
    fi
  done
  for pid in "${pids[@]}"; do
    for ((i = 0; i < 150; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

cmd_up() {
  command -v nats-server > /dev/null ||
    { echo "local-cluster: nats-server is not installed (scripts/install-deps.sh)" >&2; exit 2; }
  [[ -x "$copsd" ]] || { echo "local-cluster: no copsd at $copsd (scripts/build.sh)" >&2; exit 2; }
  mkdir -p "$dir"
  if [[ ! -f "$dir/cluster.env" ]]; then
    local copsd_count
    copsd_count="$(copsd_members | wc -l)"
    local ports
    read -r -a ports <<< "$(free_ports $((2 * NATS_SERVERS + copsd_count)))"
    {
      echo "PARTITIONS=$PARTITIONS"
      echo "SECURE=$SECURE"
      echo "NATS_PORTS='${ports[*]:0:NATS_SERVERS}'"
      echo "ROUTE_PORTS='${ports[*]:NATS_SERVERS:NATS_SERVERS}'"
      echo "COPSD_PORTS='${ports[*]:2*NATS_SERVERS}'"
    } > "$dir/cluster.env"
  fi
  source "$dir/cluster.env"
  if ((SECURE)); then make_secrets; fi
  local name i attempt taken
  for ((attempt = 1; ; attempt++)); do
    for ((i = 1; i <= NATS_SERVERS; i++)); do
      running "nats-$i" || start_nats "nats-$i"
    done
    # Ready, or exited: a server whose port was taken meanwhile exits at once (nats-server
    # does not retry); all of them start again on new ports.
    taken=0
    for ((i = 1; i <= NATS_SERVERS; i++)); do
      wait_for bash -c "grep -q 'Server is ready' '$dir/nats-$i.log' ||
                        ! kill -0 $(cat "$dir/nats-$i.pid") 2>/dev/null" || true
      if ! running "nats-$i" && port_taken "nats-$i"; then taken=1; fi
    done
    ((taken && attempt < 5)) || break
    echo "local-cluster: a NATS port was taken before it was bound; new ports" >&2
    stop_members $(members | grep '^nats-')
    local ports
    read -r -a ports <<< "$(free_ports $((2 * NATS_SERVERS)))"
    set_env NATS_PORTS "${ports[*]:0:NATS_SERVERS}"
    set_env ROUTE_PORTS "${ports[*]:NATS_SERVERS:NATS_SERVERS}"
  done
  # JetStream answers once the servers have elected their meta leader (seconds; longer on a
  # loaded host: up to 60 s each). A server that never hears of one (seen twice in the suite on
  # a loaded 2-core host: its routes up, its log silent after them) gets the servers
  # restarted, up to twice; their JetStream state stays.
  local leaderless
  for ((attempt = 1; ; attempt++)); do
    leaderless=0
    for ((i = 1; i <= NATS_SERVERS; i++)); do
      if ! WAIT_TENTHS=600 wait_for log_has "nats-$i" "metadata leader"; then
        leaderless=$i
        break
      fi
    done
    ((leaderless)) || break
    echo "local-cluster: no JetStream meta leader; see $dir/nats-$leaderless.log, which ends:" >&2
    tail -n 15 "$dir/nats-$leaderless.log" >&2
    ((attempt < 3)) || exit 1
    echo "local-cluster: restarting the NATS servers (attempt $((attempt + 1)) of 3)" >&2
    stop_members $(members | grep '^nats-')
    for ((i = 1; i <= NATS_SERVERS; i++)); do
      mv "$dir/nats-$i.log" "$dir/nats-$i.log.$attempt"
      start_nats "nats-$i"
    done
  done
  # The first copsd creates the log's stream and the map's bucket, 3 replicas each.
  for name in $(copsd_members); do
    running "$name" || start_copsd "$name"
  done
  echo "127.0.0.1:$(copsd_port "$(entry_member)")"
}

cmd_status() {
  source "$dir/cluster.env"
  local name
  for name in $(members); do
    if running "$name"; then
      echo "$name running pid $(cat "$dir/$name.pid")"
    else
      echo "$name stopped"
    fi
  done
  echo "cluster map (node address partition/partitions applied_sequence seconds_ago state):"
  local user=()
  if ((SECURE)); then
    user=(--nats-user "$(entry_member)" --cluster-key-file "$(secrets)/cluster.key")
  fi
  COPS_NATS_PASSWORD="$(if ((SECURE)); then nats_password "$(entry_member)"; fi)" \
    "$copsd" --show-cluster "$(nats_url)" --heartbeat-ms "$HEARTBEAT_MS" "${user[@]}"
}

cmd_restart() {
  source "$dir/cluster.env"
  members | grep -qx "$1" || { echo "local-cluster: no member $1" >&2; exit 2; }
  stop_members "$1"
  start_member "$1"
}

cmd_down() {
  [[ -f "$dir/cluster.env" ]] || return 0
  source "$dir/cluster.env"
  # The copsd nodes first (they leave the cluster map), then the NATS servers.
  stop_members $(members | grep -v '^nats-')
  stop_members $(members | grep '^nats-')
}

[[ $# -ge 2 ]] || usage
command="$1"
dir="$(mkdir -p "$2" && cd "$2" && pwd)"
case "$command" in
  up) cmd_up ;;
  status) cmd_status ;;
  restart) [[ $# -eq 3 ]] || usage; cmd_restart "$3" ;;
  down) cmd_down ;;
  *) usage ;;
esac
