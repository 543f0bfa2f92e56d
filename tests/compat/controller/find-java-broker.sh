#!/usr/bin/env bash
# Prints the directory of the java-broker package (Apache RocketMQ 5.3.3 broker jars and client
# scripts), which is kept outside the repository as ../shared/peers/java-broker beside it.
# Looks, in order: $NAMESRV_COMPAT_JAVA_BROKER (only there, when set); beside this clone; beside
# the main worktree when this is a git worktree; beside the clone's origin when that is a local
# path (a CI clone of the main repository). Exit status 1 (and the places tried on stderr) when
# none has bin/setup.sh.
set -uo pipefail
if [ -n "${NAMESRV_COMPAT_JAVA_BROKER:-}" ]; then  # given: that one or nothing
  [ -x "$NAMESRV_COMPAT_JAVA_BROKER/bin/setup.sh" ] || { echo "NAMESRV_COMPAT_JAVA_BROKER=$NAMESRV_COMPAT_JAVA_BROKER has no bin/setup.sh" >&2; exit 1; }
  (cd "$NAMESRV_COMPAT_JAVA_BROKER" && pwd); exit 0
fi
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
origin="$(git -C "$REPO" remote get-url origin 2>/dev/null || true)"
origin="${origin#file://}"
common="$(git -C "$REPO" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)"
tried=()
for c in "$REPO/../shared/peers/java-broker" \
         ${common:+"$common/../../shared/peers/java-broker"} ${origin:+"$origin/../shared/peers/java-broker"}; do
  [ -n "$c" ] || continue
  if [ -x "$c/bin/setup.sh" ]; then (cd "$c" && pwd); exit 0; fi
  tried+=("$c")
done
echo "java-broker package not found; tried: ${tried[*]} (set NAMESRV_COMPAT_JAVA_BROKER)" >&2
exit 1
