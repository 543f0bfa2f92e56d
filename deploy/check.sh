#!/usr/bin/env bash
# Checks the deployment artefacts offline, so that they cannot rot unnoticed:
#   - deploy/systemd/namesrv.service: `systemd-analyze verify` reports nothing, and
#     `systemd-analyze security --offline` rates its exposure at most 2.0 ("OK");
#   - deploy/kubernetes/*.yaml: `kubernetes-validate --strict` against the Kubernetes
#     schemas (bundled with the PyPI package, installed here if missing), and the pieces
#     agree with each other (ports, probes on /healthz and /readyz, labels, grace periods);
#   - Dockerfile and the files it copies exist, and the image runs as an unprivileged user.
# Run by .ci/run. Exit status: 0 all checks passed, 1 a check failed, 2 a tool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

KUBERNETES_VALIDATE_VERSION=1.37.0
failed=0
fail() { echo "FAIL $*"; failed=1; }
pass() { echo "PASS $*"; }

# --- systemd ---------------------------------------------------------------------------------
if ! command -v systemd-analyze >/dev/null; then
    echo "installing systemd (for systemd-analyze)"
    { timeout 600 apt-get update -qq && timeout 600 apt-get install -y -qq --no-install-recommends systemd; } >/dev/null ||
        { echo "systemd-analyze is required (Debian: apt-get install systemd)"; exit 2; }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# verify insists that ExecStart's program exists: point it at a built binary, if any, else at
# an executable stand-in. Everything else in the unit is checked as shipped.
bin=${NAMESRV_BIN:-}
for candidate in "${CARGO_TARGET_DIR:-target}/release/namesrv" "${CARGO_TARGET_DIR:-target}/debug/namesrv"; do
    [ -n "$bin" ] || { [ -x "$candidate" ] && bin=$(cd "$(dirname "$candidate")" && pwd)/namesrv; }
done
[ -n "$bin" ] || bin=$(command -v true)
sed "s|^ExecStart=/usr/local/bin/namesrv|ExecStart=$bin|" deploy/systemd/namesrv.service >"$work/namesrv.service"
if out=$(systemd-analyze verify "$work/namesrv.service" 2>&1) && [ -z "$out" ]; then
    pass "systemd-analyze verify deploy/systemd/namesrv.service"
else
    fail "systemd-analyze verify deploy/systemd/namesrv.service: $out"
fi
exposure=$(systemd-analyze security --offline=yes "$work/namesrv.service" 2>/dev/null |
    sed -n 's/.*Overall exposure level for namesrv.service: \([0-9.]*\).*/\1/p')
if [ -n "$exposure" ] && awk -v e="$exposure" 'BEGIN { exit !(e <= 2.0) }'; then
    pass "systemd-analyze security: exposure $exposure (at most 2.0)"
else
    fail "systemd-analyze security: exposure '${exposure:-unknown}' (want at most 2.0)"
fi
for key in User= NoNewPrivileges=yes ProtectSystem=strict Restart=on-failure 'ExecReload=/bin/kill -HUP $MAINPID'; do
    grep -qF -- "$key" deploy/systemd/namesrv.service || fail "namesrv.service lacks $key"
done

# --- Kubernetes ------------------------------------------------------------------------------
if ! python3 -c 'import kubernetes_validate, yaml' 2>/dev/null; then
    echo "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION (PyPI)"
    timeout 600 python3 -m pip install --quiet --disable-pip-version-check \
        "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" || { echo "pip install kubernetes-validate failed"; exit 2; }
fi
for f in deploy/kubernetes/*.yaml; do
    if python3 -m kubernetes_validate --strict --quiet "$f"; then
        pass "kubernetes-validate --strict $f"
    else
        fail "kubernetes-validate --strict $f"
    fi
done
if python3 - deploy/kubernetes/namesrv.yaml <<'PY'
import sys, yaml

docs = {d["kind"]: d for d in yaml.safe_load_all(open(sys.argv[1])) if d}
problems = []
def need(ok, what):
    if not ok:
        problems.append(what)

for kind in ("ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget"):
    need(kind in docs, f"a {kind}")
conf = {}
for line in docs["ConfigMap"]["data"]["namesrv.conf"].splitlines():
    line = line.strip()
    if line and not line.startswith("#") and "=" in line:
        k, v = line.split("=", 1)
        conf[k.strip()] = v.strip()
sts = docs["StatefulSet"]["spec"]
pod = sts["template"]["spec"]
c = pod["containers"][0]
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
need(sts["replicas"] == 3, "3 replicas")
need(docs["Service"]["spec"].get("clusterIP") == "None", "a headless Service")
need(sts["serviceName"] == docs["Service"]["metadata"]["name"], "the StatefulSet's serviceName is the Service")
need(str(ports.get("remoting")) == conf.get("listenPort"), "containerPort remoting == listenPort")
need(str(ports.get("http")) == conf.get("httpListenPort"), "containerPort http == httpListenPort")
need(conf.get("httpBindAddress") == "0.0.0.0", "HTTP reachable by the kubelet (httpBindAddress=0.0.0.0)")
need(c["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness on /healthz")
need(c["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness on /readyz")
labels = sts["template"]["metadata"]["labels"]
for name, sel in (("StatefulSet", sts["selector"]["matchLabels"]),
                  ("Service", docs["Service"]["spec"]["selector"]),
                  ("PodDisruptionBudget", docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"])):
    need(all(labels.get(k) == v for k, v in sel.items()), f"the {name} selects the pods")
need(docs["PodDisruptionBudget"]["spec"].get("maxUnavailable") == 1, "PDB maxUnavailable 1")
stop = int(conf.get("shutdownWaitTimeSeconds", 30)) * (conf.get("enableShutdownGracefully") == "true")
stop += int(conf.get("shutdownGracePeriodMillis", 10000)) / 1000 + 2
need(pod["terminationGracePeriodSeconds"] >= stop, f"terminationGracePeriodSeconds >= {stop}")
need(c["resources"]["requests"]["memory"] and c["resources"]["limits"]["memory"], "memory request and limit")
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
need(conf.get("kvConfigPath", "").startswith(mounts.get("data", "?") + "/"), "kvConfigPath on the data volume")
peers = [p for p in conf.get("namesrvPeers", "").split(";") if p]
need(len(peers) == 3 and all(p.endswith(":" + conf["listenPort"]) for p in peers), "namesrvPeers lists the 3 pods")
for p in problems:
    print(f"inconsistent: {p}")
sys.exit(1 if problems else 0)
PY
then
    pass "deploy/kubernetes/namesrv.yaml is consistent (ports, probes, selectors, grace, volumes)"
else
    fail "deploy/kubernetes/namesrv.yaml is inconsistent"
fi

# --- Container build file --------------------------------------------------------------------
ok=1
while read -r src; do
    [ -e "$src" ] || { fail "Dockerfile copies $src, which does not exist"; ok=0; }
done < <(sed -n 's/^COPY \(--chown=[^ ]* \)\{0,1\}\([^ ]*\) .*/\2/p' Dockerfile | grep -v '^\.$\|^--from')
grep -q '^USER 10001' Dockerfile || { fail "Dockerfile: not an unprivileged USER"; ok=0; }
grep -q '^EXPOSE 9876 8080' Dockerfile || { fail "Dockerfile: EXPOSE 9876 8080"; ok=0; }
grep -q 'cargo build --release --locked --bin namesrv' Dockerfile || { fail "Dockerfile: builds the release binary"; ok=0; }
[ "$ok" = 1 ] && pass "Dockerfile: copies existing files, builds the release binary, runs unprivileged"

# --- Prometheus alert rules (promtool check and unit tests) -----------------------------------
deploy/prometheus/check.sh || failed=1

if [ "$failed" -ne 0 ]; then
    echo "deployment checks FAILED"
    exit 1
fi
echo "deployment checks passed"
