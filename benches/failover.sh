#!/usr/bin/env bash
# Failover of our controller with real Apache RocketMQ 5.3.3 brokers, measured over repeated runs
# (benches/failover/failover.py): kill -9 of the master and SIGSTOP of the master with a one-node
# controller embedded in a name server, and kill -9 of the controller leader in a three-node
# group. Per run: detection, election commit, notification (the new master took the role), route
# change, first successful send, in ms after the fault; then median and worst beside Java's.
#
#   benches/failover.sh                      # 5 runs of each (about 15 min on 2 cores)
#   RUNS=3 benches/failover.sh kill leader   # some of them
#
# Environment: RUNS (5); NAMESRV_BIN (default: cargo build --release, then target/release/namesrv);
# NAMESRV_COMPAT_JAVA_BROKER (the java-broker package; default as tests/compat/run.sh finds it);
# NAMESRV_COMPAT_CACHE (where the package is laid out, as in the compat suite); KEEP=1 keeps the
# work directory (logs, stores). Everything is stopped by PID at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-5}"
CACHE="${NAMESRV_COMPAT_CACHE:-$HOME/.cache/namesrv-compat}"
if [ -z "${NAMESRV_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --quiet --release --bin namesrv)
  NAMESRV_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/namesrv"
fi
PKG="$("$ROOT/tests/compat/controller/find-java-broker.sh")"
HOME_DIR="$CACHE/java-broker"
mkdir -p "$CACHE"
"$PKG/bin/setup.sh" "$HOME_DIR" </dev/null >/dev/null
WORK="$(mktemp -d "${TMPDIR:-/tmp}/namesrv-failover.XXXXXX")"
cleanup() {
  local rc=$? p
  # failover.py stops what it started; these are left only if it was killed.
  if [ -f "$WORK/pids" ]; then
    while read -r p; do
      if kill -0 "$p" 2>/dev/null && grep -qE 'BrokerStartup|namesrv' "/proc/$p/cmdline" 2>/dev/null; then
        kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null || true
      fi
    done < "$WORK/pids"
  fi
  if [ "$rc" -eq 0 ] && [ "${KEEP:-0}" != 1 ]; then rm -rf "$WORK"; else echo "logs kept in $WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
only=()
for k in "$@"; do only+=(--only "$k"); done
python3 "$ROOT/benches/failover/failover.py" --namesrv-bin "$NAMESRV_BIN" --java-pkg "$PKG" \
  --java-home "$HOME_DIR" --work "$WORK" --runs "$RUNS" "${only[@]}"
