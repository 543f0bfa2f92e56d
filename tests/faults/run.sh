#!/usr/bin/env bash
# The fault harness of issue 24 (fixed interface): tests/faults/run.sh --quick
#
# Runs from a built tree (cargo build --release done; NAMESRV_BIN overrides
# target/release/namesrv). Real-process schedules need root (network namespaces, nft); without
# CAP_NET_ADMIN they are skipped with a message and only the simulation runs. Exits 0 only with
# zero violations; the last line is `faults: N schedules, M violations`.
#   tests/faults/run.sh --quick                 CI: the short set + simulation (300 seeds)
#   tests/faults/run.sh --long                  the long set
#   tests/faults/run.sh --schedule NAME[,NAME] [--seed S] [--keep] [--no-sim]
#   tests/faults/run.sh --list
set -u
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
py="${PYTHON:-python3}"
export NAMESRV_BIN="${NAMESRV_BIN:-$root/target/release/namesrv}"

case " $* " in
  *" --list "*) exec "$py" "$here/faults.py" "$@" ;;
esac

avail="$("$py" -c 'import sys; sys.path.insert(0, sys.argv[1]); import netns; ok, why = netns.available(); print("yes" if ok else why)' "$here" 2>&1)"
if [ "$avail" != "yes" ]; then
  echo "faults: network namespaces not available ($avail): the real-process schedules are SKIPPED; running the simulation only"
  exec "$py" "$here/faults.py" --no-real "$@"
fi
if [ ! -x "$NAMESRV_BIN" ]; then
  echo "faults: $NAMESRV_BIN is missing: run 'cargo build --release --bin namesrv' first (or set NAMESRV_BIN)"
  echo "faults: 0 schedules, 1 violations"
  exit 1
fi
exec "$py" "$here/faults.py" "$@"
