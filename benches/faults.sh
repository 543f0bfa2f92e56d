#!/usr/bin/env bash
# Failover under faults (issue 24): per nemesis — broker master kill -9, master SIGSTOP, double
# kill (controller leader + master, #7689), controller leader partitioned, paused, killed — the
# time from the fault to a committed new master (to a new controller leader for the leader
# faults) and to the new master in the name servers' routes; median and worst over RUNS runs
# (default 3), with short timeouts (heartbeat 500 ms, timeout 3 s, scans 1 s) and with Java's
# (1 s, 10 s, 5 s). Needs root (network namespaces); a built tree (cargo build --release).
#
#   benches/faults.sh                     RUNS=5 benches/faults.sh
#   benches/faults.sh --only master-kill9,double-kill --profiles short
# Results: a table on stdout, per-run JSON (probe answers, histories, logs) under $OUT
# (default /tmp/faults-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${NAMESRV_BIN:-target/release/namesrv}
if [ ! -x "$BIN" ]; then
  echo "faults bench: $BIN missing; run cargo build --release --bin namesrv" >&2
  exit 2
fi
export NAMESRV_BIN=$(readlink -f "$BIN")
exec python3 benches/faults/failover.py "$@"
