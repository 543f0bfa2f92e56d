#!/usr/bin/env bash
# Wall time of nsadmin commands with hyperfine (Debian package `hyperfine`), against our release
# server holding a realistic cluster: 3 name servers, each with 2 brokers x $TOPICS topics
# (examples/nsadmin_fixture.rs registers them and answers the brokers' runtime-info requests).
#
#   benches/nsadmin.sh                 # TOPICS=50000 (the figure benches/README.md reports)
#   TOPICS=1000 benches/nsadmin.sh     # a small cluster
#
# Servers are pinned to CPU 0, nsadmin to CPU 1 (when there are two CPUs). Reference in the same
# run: `nsadmin --version` (process start, no request). Everything is stopped by PID at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOPICS="${TOPICS:-50000}"
RUNS="${RUNS:-30}"
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 2; }
WORK="$(mktemp -d)"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$ROOT" && cargo build --quiet --release --bins --example nsadmin_fixture)
T="${CARGO_TARGET_DIR:-$ROOT/target}/release"
pin() { if [ "$(nproc)" -ge 2 ]; then taskset -c "$1" "${@:2}"; else "${@:2}"; fi; }

port_in_use() { (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }
NODES=()
for i in 0 1 2; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$WORK/ns$i"
  printf 'listenPort=%s\nbindAddress=127.0.0.1\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\nframeMaxLength=67108864\n' \
    "$port" "$WORK/ns$i" "$WORK/ns$i" > "$WORK/ns$i.conf"
  pin 0 "$T/namesrv" -c "$WORK/ns$i.conf" >"$WORK/ns$i.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 200); do port_in_use "$port" && break; sleep 0.05; done
  NODES+=("127.0.0.1:$port")
done
N1="${NODES[0]}"
ALL="${NODES[0]};${NODES[1]};${NODES[2]}"

"$T/examples/nsadmin_fixture" --topics "$TOPICS" --brokers 2 --hold-secs 900 "${NODES[@]}" >"$WORK/fixture.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 1200); do grep -q ready "$WORK/fixture.log" && break; sleep 0.1; done
grep -q ready "$WORK/fixture.log" || { cat "$WORK/fixture.log" >&2; exit 2; }
"$T/nsadmin" updateKvConfig -n "$ALL" -s ORDER_TOPIC_CONFIG -k Topic1 -v broker-0:8 >/dev/null

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); $TOPICS topics x 2 brokers on 3 nodes"
NS="$T/nsadmin"
HF=(hyperfine -N --warmup 3 --runs "$RUNS" --export-markdown "$WORK/reads.md")
pin 1 "${HF[@]}" \
  "$NS --version" \
  "$NS clusterList -n $N1" \
  "$NS clusterList -m -n $N1" \
  "$NS topicRoute -n $N1 -t Topic1" \
  "$NS topicRoute -l -n $N1 -t Topic1" \
  "$NS topicRoute --json -n $N1 -t Topic1" \
  "$NS topicClusterList -n $N1 -t Topic1" \
  "$NS getNamesrvConfig -n $N1" \
  "$NS updateOrderConf -m get -n $N1 -t Topic1" \
  "$NS topicList -n $N1"
cat "$WORK/reads.md"
pin 1 hyperfine -N --warmup 1 --runs "${DIFF_RUNS:-5}" --export-markdown "$WORK/diff.md" \
  "$NS diff -n $ALL -s ORDER_TOPIC_CONFIG --ignoreConfig kvConfigPath,configStorePath,listenPort"
cat "$WORK/diff.md"
