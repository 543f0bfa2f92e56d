#!/usr/bin/env bash
# Checks the Prometheus alert rules offline, so that they cannot rot unnoticed:
#   - `promtool check rules` on namesrv-rules.yml: the YAML, every PromQL expression and
#     every annotation template;
#   - every rule has a `for:`, a severity label (critical or warning), a summary and a
#     description, and namesrv-rules.test.yml tests every alert;
#   - `promtool test rules` on namesrv-rules.test.yml: each alert fires when it should, stays
#     silent when it should not, and its annotations read as written there.
# promtool comes with Debian's `prometheus` package, installed here (apt-get) when missing.
# That the expressions name metrics the server exposes is tests/integration/deploy.rs's check.
# Run by deploy/check.sh. Exit status: 0 all checks passed, 1 a check failed or a tool could
# not be installed.
set -euo pipefail
cd "$(dirname "$0")"

RULES=namesrv-rules.yml
TESTS=namesrv-rules.test.yml
failed=0
fail() { echo "FAIL $*"; failed=1; }
pass() { echo "PASS $*"; }

# --- tools -----------------------------------------------------------------------------------
packages=()
command -v promtool >/dev/null || packages+=(prometheus)
python3 -c 'import yaml' 2>/dev/null || packages+=(python3-yaml)
if [ ${#packages[@]} -gt 0 ]; then
    echo "installing ${packages[*]} (apt-get; for promtool and the rule checks)"
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    if ! { $sudo env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get update -qq &&
        $sudo env DEBIAN_FRONTEND=noninteractive timeout 900 \
            apt-get install -y -qq --no-install-recommends "${packages[@]}"; } >"$log" 2>&1; then
        tail -n 20 "$log"
        echo "FAIL apt-get install ${packages[*]} (promtool is in Debian's prometheus package)"
        exit 1
    fi
    command -v promtool >/dev/null || { echo "FAIL no promtool after apt-get install prometheus"; exit 1; }
fi

# --- the rules -------------------------------------------------------------------------------
if out=$(promtool check rules "$RULES" 2>&1); then
    pass "promtool check rules deploy/prometheus/$RULES ($(grep -o '[0-9]* rules found' <<<"$out"))"
else
    fail "promtool check rules deploy/prometheus/$RULES: $out"
fi

if out=$(python3 - "$RULES" "$TESTS" <<'PY'
import sys, yaml

rules = [r for g in yaml.safe_load(open(sys.argv[1]))["groups"] for r in g["rules"]]
tests = yaml.safe_load(open(sys.argv[2]))["tests"]
tested = {t["alertname"] for test in tests for t in test.get("alert_rule_test") or []}
firing = {t["alertname"] for test in tests for t in test.get("alert_rule_test") or []
          if t.get("exp_alerts")}
silent = {t["alertname"] for test in tests for t in test.get("alert_rule_test") or []
          if not t.get("exp_alerts")}
problems = []
for r in rules:
    name = r.get("alert")
    if name is None:
        continue
    if "for" not in r:
        problems.append(f"{name}: no for:")
    if (r.get("labels") or {}).get("severity") not in ("critical", "warning"):
        problems.append(f"{name}: severity is not critical or warning")
    for a in ("summary", "description"):
        if not (r.get("annotations") or {}).get(a):
            problems.append(f"{name}: no {a} annotation")
    if name not in firing:
        problems.append(f"{name}: no test that it fires")
    if name not in silent:
        problems.append(f"{name}: no test that it stays silent")
unknown = tested - {r.get("alert") for r in rules}
if unknown:
    problems.append(f"tests of alerts that do not exist: {sorted(unknown)}")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
); then
    pass "every alert has for:, a severity, a summary, a description, and a firing and a silent test"
else
    fail "deploy/prometheus/$RULES and $TESTS:"$'\n'"$out"
fi

if out=$(promtool test rules "$TESTS" 2>&1); then
    pass "promtool test rules deploy/prometheus/$TESTS"
else
    fail "promtool test rules deploy/prometheus/$TESTS: $out"
fi

if [ "$failed" -ne 0 ]; then
    echo "alert rule checks FAILED"
    exit 1
fi
echo "alert rule checks passed"
