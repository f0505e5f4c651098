#!/usr/bin/env bash
# Starts or stops a Redis Cluster of 3 masters and 3 replicas on loopback,
# for the tests of fpstore's Redis backend and by hand.
#
#   scripts/redis-cluster.sh start DIR [BASE_PORT]   # nodes on BASE_PORT..BASE_PORT+5
#   scripts/redis-cluster.sh restart DIR PORT        # a node stopped or killed, on its files
#   scripts/redis-cluster.sh stop DIR
#
# From the environment:
#   REDIS_CLUSTER_PASSWORD=P  every node asks for the password P (requirepass,
#                             and masterauth for its replicas)
#   REDIS_CLUSTER_TLS=1       the nodes speak TLS only, to clients, replicas and
#                             each other, with certificates made in DIR/tls:
#                             ca.crt signs node.crt, which names 127.0.0.1 and
#                             localhost; clients need no certificate of their own
#
# Each node keeps its configuration, data, log and pidfile in DIR/PORT; stop
# ends the nodes by the pids in their pidfiles (and removes nothing else).
# start waits until the cluster reports cluster_state:ok and every replica
# has finished its first sync, and prints the seed address, e.g.
# 127.0.0.1:7000. BASE_PORT defaults to 7000.
set -euo pipefail

usage() { echo "usage: $0 start DIR [BASE_PORT] | restart DIR PORT | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
command=$1
dir=$2
base=${3:-7000}

password=${REDIS_CLUSTER_PASSWORD:-}
tls=${REDIS_CLUSTER_TLS:-}
# redis-cli reads the password from REDISCLI_AUTH, out of ps's sight.
[ -n "$password" ] && export REDISCLI_AUTH="$password"
cli_tls=()
[ -n "$tls" ] && cli_tls=(--tls --cacert "$dir/tls/ca.crt")
cli() { redis-cli "${cli_tls[@]}" "$@"; }

# A CA and a certificate for every node, made once per DIR.
make_certificates() {
  [ -e "$dir/tls/node.crt" ] && return 0
  command -v openssl >/dev/null || { echo "$0: openssl is needed for REDIS_CLUSTER_TLS" >&2; exit 1; }
  mkdir -p "$dir/tls"
  (
    cd "$dir/tls"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=fpstore test CA" \
      -keyout ca.key -out ca.crt
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout node.key -out node.csr
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >node.ext
    openssl x509 -req -in node.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile node.ext -out node.crt
  ) >"$dir/tls.log" 2>&1 || { cat "$dir/tls.log" >&2; exit 1; }
}

# Starts the node on `port` on its files in DIR/port.
start_node() {
  local port=$1
  # Sorted sets stay listpacks up to 256 members (docs/format.md, "Redis layout").
  local args=(--bind 127.0.0.1 --dir "$dir/$port"
    --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000
    --appendonly yes --appendfsync everysec --save ""
    --zset-max-listpack-entries 256
    --daemonize yes --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log")
  if [ -n "$tls" ]; then
    args+=(--port 0 --tls-port "$port" --tls-cluster yes --tls-replication yes
      --tls-cert-file "$dir/tls/node.crt" --tls-key-file "$dir/tls/node.key"
      --tls-ca-cert-file "$dir/tls/ca.crt" --tls-auth-clients optional)
  else
    args+=(--port "$port")
  fi
  # The password goes in a config file of its own, out of ps's sight.
  if [ -n "$password" ]; then
    printf 'requirepass "%s"\nmasterauth "%s"\n' "$password" "$password" >"$dir/$port/auth.conf"
    chmod 600 "$dir/$port/auth.conf"
    redis-server "$dir/$port/auth.conf" "${args[@]}"
  else
    redis-server "${args[@]}"
  fi
}

stop() {
  local pids=()
  for pidfile in "$dir"/*/redis.pid; do
    [ -e "$pidfile" ] || continue
    local pid
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null && pids+=("$pid")
    rm -f "$pidfile"
  done
  # All asked at once, then waited for: up to 5 s, then killed.
  for _ in $(seq 100); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && return 0
    sleep 0.05
  done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}

start() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null || {
    echo "$0: redis-server and redis-cli are needed (apt-get install redis-server redis-tools)" >&2
    exit 1
  }
  # A cluster left by a run that was killed: its nodes stopped, its files gone.
  stop
  for i in 0 1 2 3 4 5; do rm -rf "${dir:?}/$((base + i))"; done
  mkdir -p "$dir"
  [ -n "$tls" ] && make_certificates
  local nodes=()
  for i in 0 1 2 3 4 5; do
    local port=$((base + i))
    if cli -p "$port" ping >/dev/null 2>&1; then
      echo "$0: port $port is taken by a running Redis" >&2
      stop
      exit 1
    fi
    mkdir -p "$dir/$port"
    start_node "$port"
    nodes+=("127.0.0.1:$port")
  done
  for port in $(seq "$base" $((base + 5))); do
    for _ in $(seq 100); do cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  done
  cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 || {
    echo "$0: creating the cluster failed:" >&2
    cat "$dir/create.log" >&2
    stop
    exit 1
  }
  # Up when every node says ok and sees three masters, each with its replica in sync.
  for _ in $(seq 300); do
    local ready=1
    for port in $(seq "$base" $((base + 5))); do
      cli -p "$port" cluster info 2>/dev/null | grep -q "cluster_state:ok" || ready=0
    done
    local synced=0
    for port in $(seq "$base" $((base + 5))); do
      if cli -p "$port" info replication 2>/dev/null | grep -q "master_link_status:up"; then
        synced=$((synced + 1))
      fi
    done
    [ "$ready" = 1 ] && [ "$synced" = 3 ] && { echo "127.0.0.1:$base"; return 0; }
    sleep 0.1
  done
  echo "$0: the cluster did not come up in 30 s" >&2
  stop
  exit 1
}

case "$command" in
  start) start ;;
  restart) [ $# -ge 3 ] || usage; start_node "$3" ;;
  stop) stop ;;
  *) usage ;;
esac
