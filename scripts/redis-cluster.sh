#!/usr/bin/env bash
# Starts or stops a Redis Cluster of 3 masters and 3 replicas on loopback,
# for the tests of fpstore's Redis backend and by hand.
#
#   scripts/redis-cluster.sh start DIR [BASE_PORT]   # nodes on BASE_PORT..BASE_PORT+5
#   scripts/redis-cluster.sh stop DIR
#
# Each node keeps its configuration, data, log and pidfile in DIR/PORT; stop
# ends the nodes by the pids in their pidfiles (and removes nothing else).
# start waits until the cluster reports cluster_state:ok and every replica
# has finished its first sync, and prints the seed address, e.g.
# 127.0.0.1:7000. BASE_PORT defaults to 7000.
set -euo pipefail

usage() { echo "usage: $0 start DIR [BASE_PORT] | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
command=$1
dir=$2
base=${3:-7000}

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
  local nodes=()
  for i in 0 1 2 3 4 5; do
    local port=$((base + i))
    if redis-cli -p "$port" ping >/dev/null 2>&1; then
      echo "$0: port $port is taken by a running Redis" >&2
      stop
      exit 1
    fi
    mkdir -p "$dir/$port"
    # Sorted sets stay listpacks up to 256 members (docs/format.md, "Redis layout").
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir/$port" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
      --appendonly yes --appendfsync everysec --save "" \
      --zset-max-listpack-entries 256 \
      --daemonize yes --pidfile "$dir/$port/redis.pid" --logfile "$dir/$port/redis.log"
    nodes+=("127.0.0.1:$port")
  done
  for port in $(seq "$base" $((base + 5))); do
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
  done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 || {
    echo "$0: creating the cluster failed:" >&2
    cat "$dir/create.log" >&2
    stop
    exit 1
  }
  # Up when every node says ok and sees three masters, each with its replica in sync.
  for _ in $(seq 300); do
    local ready=1
    for port in $(seq "$base" $((base + 5))); do
      redis-cli -p "$port" cluster info 2>/dev/null | grep -q "cluster_state:ok" || ready=0
    done
    local synced=0
    for port in $(seq "$base" $((base + 5))); do
      if redis-cli -p "$port" info replication 2>/dev/null | grep -q "master_link_status:up"; then
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
  stop) stop ;;
  *) usage ;;
esac
