#!/usr/bin/env bash
# Compatibility suite: real, independent RocketMQ software against our name server.
#
#   tests/compat/run.sh [--only fake|ali-ons|rust|prometheus|browser|controller] ...
#
# Starts target/release/namesrv (or $NAMESRV_BIN) on a free loopback port with its files in a
# temporary directory, then runs
#   fake     tests/compat/fake_broker.py registers like a 4.9.x broker, a 5.x broker (JSON body)
#            and a 5.x broker (zlib-compressed body) and asserts the routes, cluster info,
#            topic lists and data versions the name server derives;
#   ali-ons  ali-ons 3.12.0 (npm) route lookups (registered topic, TBW102, unknown topic) with its
#            stock version 121 (legacy JSON) and a current version, once per registration style;
#   rust     the rocketmq-rust 1.0.0 broker registers with the name server, nsadmin's commands
#            run against that live cluster (tests/compat/nsadmin_check.sh), the
#            rocketmq-client-rust 1.0.0 checks (tests/compat/rust-client) run through it, and the
#            broker must be gone from the name server after it shuts down. Two more name
#            servers run with authMode=enforce (read and admin signed; everything signed with
#            127.0.0.1 trusted by address), the broker registers with them too, and the client's
#            ACL hook (AclClientRPCHook) signs against them (`rust-client auth`). TLS: the client
#            with TLS on (`rust-client tls`) against the first name server (permissive, the
#            default; a fake broker registers in plaintext) and against a fourth with
#            tls.server.mode=enforcing (a fake broker registers over TLS); nsadmin --tls and
#            JAVA_OPT=-Dtls.enable=true against it too;
#   prometheus  Debian's Prometheus scrapes /metrics of the name server and of the signed one
#            every second while the rocketmq-rust broker and client run (so it implies rust); its
#            query API must show the broker live (1), route lookups rising, then 0 live brokers
#            after the broker stops; promtool check metrics must pass on the body; every panel
#            of deploy/grafana/namesrv.json must have data (tests/compat/grafana_check.py);
#   browser  headless Chromium (Debian's chromium) opens the status page of a name server
#            holding fake brokers, topics and KV entries, on a laptop and a phone screen, and
#            saves screenshots (tests/compat/status_page.py);
#   controller  Apache RocketMQ 5.3.3 brokers (the java-broker package, a Debian JRE) in controller
#            mode against our controller (tests/compat/controller_check.py): standalone
#            (`namesrv --controller`); three brokers of one set on a name server embedding a
#            one-node controller (one master in the controller and our routes, replication,
#            e2e, kill -9 and SIGSTOP of the master with no acknowledged message lost, the killed
#            broker rejoining as slave); the same set on three name servers embedding a
#            three-node group (kill -9 of the controller leader, then of the broker master); and
#            the set moved to a controller without its data (identity files, then without them).
#            Failover timings are printed as RESULT lines under their check.
# Everything is stopped by PID at the end. Exit status: 0 if every check passed, 1 if any check
# failed, 2 if the environment could not be prepared (tool missing, install failed, no ports).
#
# Heavy installs go to ${NAMESRV_COMPAT_CACHE:-$HOME/.cache/namesrv-compat} (outside the clone)
# and are reused by later runs: the broker (cargo install, 15-30 min on 2 cores the first time),
# the client checks' build (7-15 min), ali-ons' node_modules (seconds). Warm runs take ~15 s.
# The prometheus and browser groups apt-get install `prometheus` / `chromium` when missing
# (about 1-3 min; needs root or password-less sudo). The controller group lays the java-broker
# package out in the cache (seconds; its setup.sh apt-installs a JRE and Debian jar packages when
# missing, 1-3 min); its four checks then take 5-7 min on 2 cores (JVM start-ups dominate).
#
# Environment:
#   NAMESRV_BIN             name server binary to test (default: cargo build --release, then
#                           <target dir>/release/namesrv)
#   NSADMIN_BIN             nsadmin binary (default: beside NAMESRV_BIN, built if missing)
#   NAMESRV_COMPAT_CACHE    cache directory (default $HOME/.cache/namesrv-compat)
#   NAMESRV_COMPAT_KEEP=1   keep the temporary directory (logs, stores) even on success
#   NAMESRV_COMPAT_BROKER_PORT  listen port of the rocketmq-rust broker (default: a free one;
#                           the broker also uses PORT-2 and PORT+1)
#   NAMESRV_COMPAT_SCREENSHOTS  where the browser check saves its screenshots (default: the
#                           temporary directory's screenshots/)
#   NAMESRV_COMPAT_JAVA_BROKER  the java-broker package (default: the first of ../shared/peers/
#                           java-broker beside this clone, beside the main worktree of a git
#                           worktree, or beside the clone's origin when that is a local path).
#                           Its setup.sh installs a JRE and Debian jars with apt when missing
#                           (root or sudo) and lays it out in $NAMESRV_COMPAT_CACHE/java-broker.
set -Eeuo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE="${NAMESRV_COMPAT_CACHE:-$HOME/.cache/namesrv-compat}"
BROKER_CRATE_VERSION=1.0.0
ALI_ONS_VERSION=3.12.0
CLUSTER=DefaultCluster

ONLY=()
while [ $# -gt 0 ]; do
  case "$1" in
    --only) [ $# -ge 2 ] || { echo "usage: $0 [--only fake|ali-ons|rust|prometheus|browser|controller] ..." >&2; exit 2; }
            ONLY+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,63p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--only fake|ali-ons|rust|prometheus|browser|controller] ..." >&2; exit 2 ;;
  esac
done
# Prometheus watches the rocketmq-rust broker and client: asking for it asks for them.
for o in "${ONLY[@]}"; do [ "$o" = prometheus ] && ONLY+=(rust); done
wanted() {
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local o; for o in "${ONLY[@]}"; do [ "$o" = "$1" ] && return 0; done
  return 1
}

say() { printf '[compat %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[compat] SETUP ERROR: %s\n' "$*" >&2; exit 2; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is required ($2)"; }

START=$SECONDS
need python3 "fake broker, port picking"
need timeout "coreutils, bounds every step"
wanted ali-ons && { need node "ali-ons checks"; need npm "installs ali-ons"; }
wanted rust && need cargo "installs the rocketmq-rust broker and builds the client checks"
[ -n "${NAMESRV_BIN:-}" ] || need cargo "builds namesrv"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/namesrv-compat.XXXXXX")"
mkdir -p "$WORK/logs" "$CACHE"
NS_PID=""
NS_SIGNED_PID=""
NS_ADDR_PID=""
NS_TLS_PID=""
BROKER_PID=""
BROKER_STORE=""
PROM_PID=""

stop_pid() { # pid name grace-seconds
  local pid=$1 name=$2 grace=$3 i
  [ -n "$pid" ] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < grace * 4; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.25
  done
  say "$name (pid $pid) ignored SIGTERM for ${grace}s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

RESULTS=()
FAILED=0
cleanup() {
  local rc=$?
  # The controller check stops its brokers and nodes itself; these are left only if it was killed.
  if [ -f "$WORK/controller/pids" ]; then
    local p
    while read -r p; do
      if kill -0 "$p" 2>/dev/null && grep -qE 'BrokerStartup|namesrv' "/proc/$p/cmdline" 2>/dev/null; then
        kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null || true
      fi
    done < "$WORK/controller/pids"
  fi
  stop_pid "$BROKER_PID" broker 30
  stop_pid "$PROM_PID" prometheus 15
  stop_pid "$NS_PID" namesrv 15
  stop_pid "$NS_SIGNED_PID" namesrv-signed 15
  stop_pid "$NS_ADDR_PID" namesrv-by-address 15
  [ -z "$BROKER_STORE" ] || rm -rf "$BROKER_STORE"
  stop_pid "$NS_TLS_PID" namesrv-enforcing 15
  if [ "$FAILED" -eq 0 ] && [ "$rc" -eq 0 ] && [ "${NAMESRV_COMPAT_KEEP:-0}" != 1 ]; then
    rm -rf "$WORK"
  else
    echo "logs and stores kept in $WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# Preparation (installs are cached; each is bounded in time)
# ---------------------------------------------------------------------------------------------

if [ -n "${NAMESRV_BIN:-}" ]; then
  [ -x "$NAMESRV_BIN" ] || die "NAMESRV_BIN=$NAMESRV_BIN is not executable"
else
  say "building namesrv and nsadmin (cargo build --release)"
  (cd "$REPO" && timeout 3600 cargo build --release --bin namesrv --bin nsadmin) || die "cargo build --release of namesrv failed"
  NAMESRV_BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/namesrv"
  case "$NAMESRV_BIN" in /*) ;; *) NAMESRV_BIN="$REPO/$NAMESRV_BIN" ;; esac
  [ -x "$NAMESRV_BIN" ] || die "no binary at $NAMESRV_BIN after the build"
fi

# nsadmin is checked against the live cluster; it sits beside the name server binary.
NSADMIN_BIN="${NSADMIN_BIN:-$(dirname "$NAMESRV_BIN")/nsadmin}"
if { wanted rust || wanted controller; } && [ ! -x "$NSADMIN_BIN" ]; then
  (cd "$REPO" && timeout 3600 cargo build --release --bin nsadmin) || die "cargo build --release of nsadmin failed"
  NSADMIN_BIN="${CARGO_TARGET_DIR:-$REPO/target}/release/nsadmin"
  case "$NSADMIN_BIN" in /*) ;; *) NSADMIN_BIN="$REPO/$NSADMIN_BIN" ;; esac
fi

ALI_ONS_DIR="$CACHE/ali-ons"
if wanted ali-ons; then
  stamp="$(cat "$HERE/ali-ons/package.json" "$HERE/ali-ons/package-lock.json" | python3 -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
  if [ ! -f "$ALI_ONS_DIR/node_modules/ali-ons/package.json" ] || [ "$(cat "$ALI_ONS_DIR/.stamp" 2>/dev/null)" != "$stamp" ]; then
    say "installing ali-ons $ALI_ONS_VERSION into $ALI_ONS_DIR (npm ci)"
    rm -rf "$ALI_ONS_DIR"; mkdir -p "$ALI_ONS_DIR"
    cp "$HERE/ali-ons/package.json" "$HERE/ali-ons/package-lock.json" "$ALI_ONS_DIR/"
    (cd "$ALI_ONS_DIR" && timeout 900 npm ci --no-audit --no-fund --loglevel=error) || die "npm ci of ali-ons $ALI_ONS_VERSION failed"
    echo "$stamp" > "$ALI_ONS_DIR/.stamp"
  fi
  installed="$(node -p "require('$ALI_ONS_DIR/node_modules/ali-ons/package.json').version")"
  [ "$installed" = "$ALI_ONS_VERSION" ] || die "cached ali-ons is $installed, expected $ALI_ONS_VERSION"
fi

# apt_install COMMAND PACKAGE...: installs the packages unless COMMAND is already there.
apt_install() {
  local cmd=$1; shift
  command -v "$cmd" >/dev/null 2>&1 && return 0
  command -v apt-get >/dev/null 2>&1 || die "$cmd is required (Debian package: $*)"
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo -n"
  say "installing $* (apt-get install; 1-3 min)"
  t0=$SECONDS
  { $sudo env DEBIAN_FRONTEND=noninteractive timeout 600 apt-get update -qq \
      && $sudo env DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends "$@"; } \
    >"$WORK/logs/apt-$cmd.log" 2>&1 || die "apt-get install $* failed (see $WORK/logs/apt-$cmd.log)"
  command -v "$cmd" >/dev/null 2>&1 || die "apt-get installed $* but there is no $cmd"
  say "$* installed in $((SECONDS - t0)) s"
}
wanted prometheus && apt_install promtool prometheus

JAVA_BROKER_PKG=""
JAVA_BROKER_HOME_DIR="$CACHE/java-broker"
if wanted controller; then
  # Kept outside the repository, beside it (controller/find-java-broker.sh says where it looks).
  JAVA_BROKER_PKG="$("$HERE/controller/find-java-broker.sh")" || die "the java-broker package was not found"
  say "laying out the java-broker package $JAVA_BROKER_PKG in $JAVA_BROKER_HOME_DIR (setup.sh)"
  timeout 1200 "$JAVA_BROKER_PKG/bin/setup.sh" "$JAVA_BROKER_HOME_DIR" </dev/null >/dev/null 2>"$WORK/logs/java-broker-setup.log" \
    || { tail -n 20 "$WORK/logs/java-broker-setup.log" >&2; die "java-broker setup.sh failed (see $WORK/logs/java-broker-setup.log)"; }
fi
wanted browser && apt_install chromium chromium fonts-dejavu-core

BROKER_BIN="$CACHE/broker/bin/rocketmq-broker-rust"
CLIENT_TARGET="$CACHE/rust-client-target"
CLIENT_BIN="$CLIENT_TARGET/release/namesrv-compat-rust-client"
if wanted rust; then
  if ! "$BROKER_BIN" --version 2>/dev/null | grep -qx "version=$BROKER_CRATE_VERSION"; then
    say "installing rocketmq-broker $BROKER_CRATE_VERSION into $CACHE/broker (cargo install; 15-30 min on 2 cores)"
    t0=$SECONDS
    CARGO_TARGET_DIR="$CACHE/broker-build" timeout 5400 \
      cargo install --locked --force --root "$CACHE/broker" rocketmq-broker --version "$BROKER_CRATE_VERSION" \
      || die "cargo install rocketmq-broker $BROKER_CRATE_VERSION failed"
    rm -rf "$CACHE/broker-build" # ~1 GB of intermediate artifacts; only the binary is reused
    say "broker installed in $((SECONDS - t0)) s"
  fi
  say "building the rocketmq-client-rust checks (cargo build --release --locked; cached in $CLIENT_TARGET)"
  t0=$SECONDS
  CARGO_TARGET_DIR="$CLIENT_TARGET" timeout 5400 \
    cargo build --release --locked --quiet --manifest-path "$HERE/rust-client/Cargo.toml" \
    || die "building tests/compat/rust-client failed"
  say "client checks ready after $((SECONDS - t0)) s"
fi

# ---------------------------------------------------------------------------------------------
# Ports and the name server
# ---------------------------------------------------------------------------------------------

read -r NS_PORT BROKER_PORT NS_SIGNED_PORT NS_ADDR_PORT HTTP_PORT PROM_PORT NS_TLS_PORT SIGNED_HTTP_PORT < <(python3 - "${NAMESRV_COMPAT_BROKER_PORT:-}" <<'EOF'
import random, socket, sys

def free(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()

held = []
def any_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); held.append(s); return s.getsockname()[1]
ns, ns_signed, ns_addr, http, prom, ns_tls, signed_http = (any_port() for _ in range(7))
for s in held:
    s.close()
fixed = sys.argv[1]
if fixed:
    broker = int(fixed)
else:
    rng = random.Random()
    for _ in range(200):
        broker = rng.randrange(20002, 32000)  # below the usual ephemeral range
        if not {ns, ns_signed, ns_addr, http, prom, ns_tls, signed_http} & {broker - 2, broker, broker + 1} and all(free(p) for p in (broker - 2, broker, broker + 1)):
            break
    else:
        broker = 0
print(ns, broker, ns_signed, ns_addr, http, prom, ns_tls, signed_http)
EOF
)
[ "${BROKER_PORT:-0}" != 0 ] || die "found no free loopback ports for the broker"
NS="127.0.0.1:$NS_PORT"
NS_HTTP="127.0.0.1:$HTTP_PORT"
PROM="http://127.0.0.1:$PROM_PORT"

# start_namesrv NAME PORT [EXTRA_PROPERTIES]: starts a name server on 127.0.0.1:PORT with its
# files in $WORK/NAME, its config in $WORK/NAME.properties.in, logs in $WORK/logs/NAME.*;
# waits for its boot line and sets STARTED_PID.
start_namesrv() {
  local name=$1 port=$2 extra=${3:-} i rc
  mkdir -p "$WORK/$name"
  printf 'listenPort=%s\nbindAddress=127.0.0.1\nkvConfigPath=%s\nconfigStorePath=%s\n%s' \
    "$port" "$WORK/$name/kvConfig.json" "$WORK/$name/namesrv.properties" "$extra" > "$WORK/$name.properties.in"
  say "starting $NAMESRV_BIN on 127.0.0.1:$port ($name)"
  # Java's mqnamesrv always exports ROCKETMQ_HOME (start-up fails without it); do the same.
  ROCKETMQ_HOME="$WORK/$name" "$NAMESRV_BIN" -c "$WORK/$name.properties.in" \
    >"$WORK/logs/$name.out" 2>"$WORK/logs/$name.err" &
  STARTED_PID=$!
  # Generous: on a heavily loaded machine (parallel builds writing to the same disk) a restart
  # in the warm-restart check once logged its boot line just after a 30 s wait gave up.
  for ((i = 0; i < 360; i++)); do
    grep -q "boot success" "$WORK/logs/$name.out" 2>/dev/null && break
    kill -0 "$STARTED_PID" 2>/dev/null || break
    sleep 0.25
  done
  if ! grep -q "boot success" "$WORK/logs/$name.out" 2>/dev/null; then
    tail -n 20 "$WORK/logs/$name.out" "$WORK/logs/$name.err" >&2 || true
    if kill -0 "$STARTED_PID" 2>/dev/null; then
      die "$name did not report boot success within 90 s"
    fi
    wait "$STARTED_PID" && rc=0 || rc=$?
    STARTED_PID=""
    die "$name exited with status $rc before reporting boot success"
  fi
  say "$(grep "boot success" "$WORK/logs/$name.out")"
}

NS_EXTRA="httpListenPort=$HTTP_PORT
"
start_namesrv namesrv "$NS_PORT" "$NS_EXTRA"
NS_PID=$STARTED_PID

# The signed name server (below) is scraped too, as a second instance of the dashboard: it has
# authentication on and checks the first one as its peer, so the auth and peer panels have data.
NS_SIGNED_HTTP="127.0.0.1:$SIGNED_HTTP_PORT"
NS_SIGNED_PROM=""
if wanted prometheus; then
  NS_SIGNED_PROM="httpListenPort=$SIGNED_HTTP_PORT
namesrvPeers=127.0.0.1:$NS_SIGNED_PORT;$NS
"
  mkdir -p "$WORK/prometheus"
  cat > "$WORK/prometheus/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: namesrv
    static_configs:
      - targets: ['$NS_HTTP']
  - job_name: namesrv-signed
    static_configs:
      - targets: ['$NS_SIGNED_HTTP']
EOF
  say "starting prometheus on $PROM, scraping http://$NS_HTTP/metrics and http://$NS_SIGNED_HTTP/metrics every second"
  prometheus --config.file="$WORK/prometheus/prometheus.yml" --storage.tsdb.path="$WORK/prometheus/data" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/logs/prometheus.log" 2>&1 &
  PROM_PID=$!
  for ((i = 0; i < 120; i++)); do
    python3 -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=1)" "$PROM/-/ready" 2>/dev/null && break
    kill -0 "$PROM_PID" 2>/dev/null || break
    sleep 0.25
  done
  kill -0 "$PROM_PID" 2>/dev/null || { tail -n 20 "$WORK/logs/prometheus.log" >&2; die "prometheus did not start"; }
fi

# Name servers with authentication, for the rocketmq-rust ACL-hook checks. Account keys and
# secrets are made up for this run.
AUTH_ADMIN="compat-admin:admin-$RANDOM$RANDOM"
AUTH_READER="compat-reader:reader-$RANDOM$RANDOM"
NS_SIGNED="127.0.0.1:$NS_SIGNED_PORT"
NS_ADDR="127.0.0.1:$NS_ADDR_PORT"
BROKER_NAMESRVS="$NS"
if wanted rust; then
  accounts="accounts:
  - {accessKey: ${AUTH_ADMIN%%:*}, secretKey: ${AUTH_ADMIN#*:}, admin: true}
  - {accessKey: ${AUTH_READER%%:*}, secretKey: ${AUTH_READER#*:}}"
  # read and admin signed; brokers register unsigned (setup (a) plus signed reads)
  printf 'signatureRequired: [read, admin]\n%s\n' "$accounts" > "$WORK/acl-signed.yml"
  # everything signed; brokers on 127.0.0.1 pass by address (setup (b) with 4.9.x-style brokers)
  printf 'signatureRequired: [read, broker, admin]\nglobalWhiteRemoteAddresses: [127.0.0.1]\n%s\n' \
    "$accounts" > "$WORK/acl-by-address.yml"
  chmod 600 "$WORK"/acl-*.yml
  start_namesrv namesrv-signed "$NS_SIGNED_PORT" "authMode=enforce
authConfigPath=$WORK/acl-signed.yml
$NS_SIGNED_PROM"
  NS_SIGNED_PID=$STARTED_PID
  # Address rules judge the client's address: PROXY headers only from nobody here.
  start_namesrv namesrv-by-address "$NS_ADDR_PORT" "authMode=enforce
authConfigPath=$WORK/acl-by-address.yml
proxyProtocolAllowedAddresses=
"
  NS_ADDR_PID=$STARTED_PID
  BROKER_NAMESRVS="$NS;$NS_SIGNED;$NS_ADDR"
  # TLS only: plaintext clients are closed; the rust broker is not pointed at it.
  start_namesrv namesrv-enforcing "$NS_TLS_PORT" "tls.server.mode=enforcing
tls.config.file=$WORK/no-tls.properties
"
  NS_TLS_PID=$STARTED_PID
fi
NS_TLS="127.0.0.1:$NS_TLS_PORT"

# ---------------------------------------------------------------------------------------------
# Checks
# ---------------------------------------------------------------------------------------------

# record NAME STATUS LOG T0: records one summary line for a check whose output is in LOG.
record() {
  local name=$1 rc=$2 log=$3 t0=$4
  if [ "$rc" -eq 0 ]; then
    RESULTS+=("PASS  $(printf '%-52s %5ss' "$name" $((SECONDS - t0)))")
  else
    FAILED=$((FAILED + 1))
    local why; why="$(grep -E '^FAIL ' "$log" | head -n 5 || true)"
    [ "$rc" -eq 124 ] && why="${why:+$why$'\n'}FAIL $name: did not finish within its time limit (killed)"
    [ -n "$why" ] || why="FAIL $name: exited with status $rc without reporting a step (see $log)"
    RESULTS+=("FAIL  $(printf '%-52s %5ss' "$name" $((SECONDS - t0)))"$'\n'"$(sed 's/^/        /' <<<"$why")")
  fi
}

# check NAME SECONDS COMMAND...: runs COMMAND bounded in time, tees its output to a log and
# records one summary line.
check() {
  local name=$1 limit=$2; shift 2
  local log="$WORK/logs/check-${name//[^A-Za-z0-9._-]/_}.log" t0=$SECONDS rc=0
  say "--- $name"
  timeout --kill-after=15 "$limit" "$@" 2>&1 | tee "$log" || rc=$? # pipefail: the command's status
  record "$name" "$rc" "$log" "$t0"
  return 0
}

FAKE="$HERE/fake_broker.py"
PROMCHECK="$HERE/prometheus_check.py"
STYLES=(v4 v5-json v5-zlib)

if wanted fake; then
  for style in "${STYLES[@]}"; do
    check "fake-broker[$style] registration + routes" 120 \
      python3 "$FAKE" register "$NS" --style "$style" --verify --cluster "$CLUSTER" \
        --broker-name "fake-$style" --broker-addr "127.0.0.1:1$((RANDOM % 9000 + 1000))" \
        --label "fake-broker[$style]"
  done
fi

if wanted ali-ons; then
  for style in "${STYLES[@]}"; do
    addr="127.0.0.1:2$((RANDOM % 9000 + 1000))"
    check "ali-ons $ALI_ONS_VERSION on fake-broker[$style]" 120 \
      env NODE_PATH="$ALI_ONS_DIR/node_modules" \
      python3 "$FAKE" register "$NS" --style "$style" --cluster "$CLUSTER" \
        --broker-name "ons-$style" --broker-addr "$addr" --topics "TopicTest:4:4:6,TBW102:8:8:7" \
        --label "fake-broker[$style] for ali-ons" --command-timeout 90 -- \
      node "$HERE/ali-ons/check.js" "$NS" --topic TopicTest --queues 4 --perm 6 \
        --broker-name "ons-$style" --broker-addr "$addr" --label "ali-ons $ALI_ONS_VERSION [$style]"
  done
fi

if wanted rust; then
  BROKER_DIR="$WORK/rust-broker"
  mkdir -p "$BROKER_DIR/home"
  # The broker refuses to start when the disk of its store is about 90% used (it counts the
  # filesystem's reserved blocks), which a shared build machine reaches: its small store goes
  # to tmpfs when there is one.
  if BROKER_STORE=$(mktemp -d /dev/shm/namesrv-compat-broker.XXXXXX 2>/dev/null); then
    store_dir=$BROKER_STORE
  else
    BROKER_STORE=""
    store_dir="$BROKER_DIR/store"
    mkdir -p "$store_dir"
  fi
  # rocketmq-rust broker configuration (TOML): one master on loopback, small store files.
  cat > "$BROKER_DIR/broker.toml" <<EOF
[broker]
namesrvAddr = "$BROKER_NAMESRVS"
brokerIp1 = "127.0.0.1"
listenPort = $BROKER_PORT
storePathRootDir = "$store_dir"
autoCreateTopicEnable = true

[broker.brokerIdentity]
brokerClusterName = "$CLUSTER"
brokerName = "broker-a"
brokerId = 0

[broker.brokerServerConfig]
bindAddress = "127.0.0.1"

[store]
storeType = "LocalFile"
storePathRootDir = "$store_dir"
brokerRole = "ASYNC_MASTER"
haListenAddress = "127.0.0.1"
haListenPort = $((BROKER_PORT + 1))
# 16 MiB commit-log files, small consume queues and a ~4 MB index instead of ~400 MB
mappedFileSizeCommitLog = 16777216
mappedFileSizeConsumeQueue = 600000
maxHashSlotNum = 50000
maxIndexNum = 200000
EOF
  say "starting rocketmq-broker-rust $BROKER_CRATE_VERSION on 127.0.0.1:$BROKER_PORT (also $((BROKER_PORT - 2)), $((BROKER_PORT + 1)))"
  (cd "$BROKER_DIR" && exec env HOME="$BROKER_DIR/home" ROCKETMQ_HOME="$BROKER_DIR/home" \
      ROCKETMQ_SECURITY_PROFILE=development-insecure-loopback \
      "$BROKER_BIN" -c "$BROKER_DIR/broker.toml" -n "$BROKER_NAMESRVS") >"$WORK/logs/rust-broker.log" 2>&1 &
  BROKER_PID=$!

  check "rocketmq-broker-rust $BROKER_CRATE_VERSION registers" 90 \
    python3 "$FAKE" wait-broker "$NS" broker-a --timeout 75 --pid "$BROKER_PID" \
      --label "rocketmq-broker-rust $BROKER_CRATE_VERSION"
  check "nsadmin against rocketmq-broker-rust $BROKER_CRATE_VERSION" 120 \
    "$HERE/nsadmin_check.sh" "$NSADMIN_BIN" "$NS" broker-a "$CLUSTER"
  ROUTES='sum(namesrv_requests_total{job="namesrv",request_code="get_routeinfo_by_topic"})'
  if wanted prometheus; then
    check "prometheus: scrapes namesrv, sees the broker live" 90 \
      sh -c 'python3 "$1" wait "$2" "up{job=\"namesrv\"}" eq 1 --timeout 30 --label prometheus &&
             python3 "$1" wait "$2" "namesrv_live_brokers{job=\"namesrv\",cluster=\"DefaultCluster\"}" eq 1 --timeout 45 --label prometheus' \
      sh "$PROMCHECK" "$PROM"
    ROUTES_BEFORE="$(python3 "$PROMCHECK" value "$PROM" "$ROUTES" 2>/dev/null || echo 0)"
  fi
  check "rocketmq-client-rust 1.0.0 via the broker" 600 \
    "$CLIENT_BIN" --namesrv "$NS" --broker-name broker-a --cluster "$CLUSTER" --count 100 --wait-secs 60 \
      --expect-config "rocketmqHome=$WORK/namesrv" \
      --expect-config "kvConfigPath=$WORK/namesrv/kvConfig.json" \
      --expect-config "configStorePath=$WORK/namesrv.properties.in" # Java: -c FILE replaces it
  if wanted prometheus; then
    check "prometheus: route lookups rose while the client ran" 60 \
      python3 "$PROMCHECK" wait "$PROM" "$ROUTES" gt "$ROUTES_BEFORE" --timeout 45 --label prometheus
    check "promtool check metrics" 60 python3 "$PROMCHECK" lint "http://$NS_HTTP/metrics"
  fi

  check "rocketmq-client-rust 1.0.0 ACL hook vs enforce" 300 \
    "$CLIENT_BIN" auth --signed "$NS_SIGNED" --by-address "$NS_ADDR" \
      --admin "$AUTH_ADMIN" --reader "$AUTH_READER" --broker-name broker-a --cluster "$CLUSTER" --wait-secs 60

  # Warm restart: the producer keeps sending while the name server is killed
  # (-9) and started, then stopped (SIGTERM) and started; then the same with warm restart
  # off, whose numbers are only reported.
  restart_experiment() { # LABEL EXTRA_PROPERTIES CLIENT_ARGS...
    local label=$1 extra=$2; shift 2
    local stop="$WORK/restarts-$label.stop" log="$WORK/logs/restarts-$label.client.log" client i
    rm -f "$stop"
    timeout --kill-after=15 300 "$CLIENT_BIN" --namesrv "$NS" --broker-name broker-a --cluster "$CLUSTER" \
      --wait-secs 60 --restarts "$label" --stop-file "$stop" "$@" >"$log" 2>&1 &
    client=$!
    for ((i = 0; i < 480; i++)); do
      grep -q '^READY' "$log" 2>/dev/null && break
      kill -0 "$client" 2>/dev/null || break
      sleep 0.25
    done
    if ! grep -q '^READY' "$log" 2>/dev/null; then
      kill "$client" 2>/dev/null || true
      cat "$log"
      echo "FAIL restarts[$label]: the client never had the topic's route"
      return 1
    fi
    # Longer than routeSnapshotIntervalMillis (10 s): the new topic is in the periodic snapshot.
    sleep 12
    say "restarts[$label]: kill -9 of the name server (pid $NS_PID)"
    kill -KILL "$NS_PID"; wait "$NS_PID" 2>/dev/null || true
    start_namesrv namesrv "$NS_PORT" "$NS_EXTRA$(cat "$extra")"; NS_PID=$STARTED_PID
    sleep 5
    say "restarts[$label]: graceful restart (SIGTERM to pid $NS_PID)"
    stop_pid "$NS_PID" namesrv 15; wait "$NS_PID" 2>/dev/null || true
    start_namesrv namesrv "$NS_PORT" "$NS_EXTRA$(cat "$extra")"; NS_PID=$STARTED_PID
    sleep 5
    touch "$stop"
    local rc=0
    wait "$client" || rc=$?
    cat "$log"
    return "$rc"
  }
  : > "$WORK/warm.properties"
  echo "restoreRoutesOnStart=false" > "$WORK/cold.properties"
  for run in "warm restart:warm:--expect-warm" "cold restart (restoreRoutesOnStart=false, reported only):cold:"; do
    IFS=: read -r name label args <<<"$run"
    name="rocketmq-client-rust 1.0.0 producer through $name"
    log="$WORK/logs/check-restarts-$label.log"; t0=$SECONDS; rc=0
    say "--- $name"
    restart_experiment "$label" "$WORK/$label.properties" $args >"$log" 2>&1 || rc=$?
    grep -E '^(RESULT|PASS|FAIL) ' "$log" || true
    record "$name" "$rc" "$log" "$t0"
    RESULTS+=("$(grep -E '^RESULT ' "$log" | sed 's/^RESULT /        /' || true)")
  done
  # The checks that follow want the name server the suite started, with the broker on it.
  stop_pid "$NS_PID" namesrv 15; wait "$NS_PID" 2>/dev/null || true
  start_namesrv namesrv "$NS_PORT" "$NS_EXTRA"; NS_PID=$STARTED_PID
  check "rocketmq-broker-rust $BROKER_CRATE_VERSION known again after the restarts" 60 \
    python3 "$FAKE" wait-broker "$NS" broker-a --timeout 45 --pid "$BROKER_PID" \
      --label "rocketmq-broker-rust $BROKER_CRATE_VERSION"

  # Permissive: a broker registers in plaintext while the client reads over TLS, one port.
  check "rocketmq-client-rust 1.0.0 over TLS, permissive" 240 \
    python3 "$FAKE" register "$NS" --style v5-json --cluster "$CLUSTER" \
      --broker-name fake-plain --broker-addr "127.0.0.1:2$((RANDOM % 9000 + 1000))" \
      --label "fake-broker in plaintext" --command-timeout 200 -- \
    "$CLIENT_BIN" tls --namesrv "$NS" --mode permissive --topic TopicTest --broker-name fake-plain \
      --cluster "$CLUSTER" --wait-secs 60
  check "rocketmq-client-rust 1.0.0 over TLS, enforcing" 240 \
    python3 "$FAKE" register "$NS_TLS" --tls --style v5-json --cluster "$CLUSTER" \
      --broker-name fake-tls --broker-addr "127.0.0.1:2$((RANDOM % 9000 + 1000))" \
      --label "fake-broker over TLS" --command-timeout 200 -- \
    "$CLIENT_BIN" tls --namesrv "$NS_TLS" --mode enforcing --topic TopicTest --broker-name fake-tls \
      --cluster "$CLUSTER" --wait-secs 60
  check "nsadmin --tls and -Dtls.enable=true against enforcing" 60 bash -c '
    set -u; bin=$1 ns=$2; fail=0
    step() { if "${@:2}" >/dev/null 2>&1; then echo "PASS nsadmin: step $1"; else echo "FAIL nsadmin: step $1 failed"; fail=1; fi; }
    step "getNamesrvConfig --tls" "$bin" getNamesrvConfig -n "$ns" --tls
    step "JAVA_OPT=-Dtls.enable=true" env JAVA_OPT="-Dtls.enable=true -Dtls.config.file=/nonexistent" "$bin" getNamesrvConfig -n "$ns"
    "$bin" getNamesrvConfig -n "$ns" >/dev/null 2>&1; rc=$?
    if [ "$rc" = 2 ]; then echo "PASS nsadmin: step plaintext refused (exit 2)"; else echo "FAIL nsadmin: step plaintext refused: exit $rc"; fail=1; fi
    exit $fail' _ "$NSADMIN_BIN" "$NS_TLS"

  say "stopping the broker (pid $BROKER_PID)"
  stop_pid "$BROKER_PID" broker 30
  BROKER_PID=""
  check "rocketmq-broker-rust $BROKER_CRATE_VERSION unregisters on shutdown" 60 \
    python3 "$FAKE" wait-broker "$NS" broker-a --gone --timeout 45 \
      --label "rocketmq-broker-rust $BROKER_CRATE_VERSION"
  if wanted prometheus; then
    check "prometheus: 0 live brokers after the broker stops" 60 \
      sh -c 'python3 "$1" wait "$2" "namesrv_live_brokers{job=\"namesrv\",cluster=\"DefaultCluster\"}" eq 0 --timeout 45 --label prometheus &&
             python3 "$1" wait "$2" "sum(namesrv_broker_evictions_total{job=\"namesrv\"})" ge 1 --timeout 10 --label prometheus' \
      sh "$PROMCHECK" "$PROM"
    # Last, when the run has made every kind of traffic the dashboard shows.
    check "grafana: every dashboard panel's query has data" 60 \
      python3 "$HERE/grafana_check.py" "$PROM" --dashboard "$REPO/deploy/grafana/namesrv.json"
  fi
fi

if wanted browser; then
  SHOTS="${NAMESRV_COMPAT_SCREENSHOTS:-$WORK/screenshots}"
  check "chromium: the status page on a laptop and a phone" 180 \
    python3 "$HERE/status_page.py" "$NS" "$NS_HTTP" --out "$SHOTS"
fi

if wanted controller; then
  for run in "standalone:our standalone controller (namesrv --controller):180" \
             "single:java-broker 5.3.3 x3 vs embedded controller, 1 node:900" \
             "three:java-broker 5.3.3 x3 vs embedded controllers, 3 nodes:900" \
             "migrate:java-broker 5.3.3 x3 moved to a controller without their data:600"; do
    IFS=: read -r scen name limit <<<"$run"
    check "$name" "$limit" python3 "$HERE/controller_check.py" --scenario "$scen" \
      --namesrv-bin "$NAMESRV_BIN" --nsadmin-bin "$NSADMIN_BIN" --java-pkg "$JAVA_BROKER_PKG" --java-home "$JAVA_BROKER_HOME_DIR" \
      --work "$WORK/controller"
    log="$WORK/logs/check-${name//[^A-Za-z0-9._-]/_}.log"
    ! grep -qE '^(RESULT|NOTE) ' "$log" || RESULTS+=("$(grep -E '^(RESULT|NOTE) ' "$log" | sed -E 's/^(RESULT|NOTE) /        \1 /; s/^        RESULT /        /')")
  done
fi

for pair in "namesrv:$NS_PID" "namesrv-signed:$NS_SIGNED_PID" "namesrv-by-address:$NS_ADDR_PID" "namesrv-enforcing:$NS_TLS_PID"; do
  name=${pair%%:*} pid=${pair#*:}
  if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
    FAILED=$((FAILED + 1))
    RESULTS+=("FAIL  $name exited during the suite (see $WORK/logs/$name.err)")
  fi
done

echo
echo "==== namesrv compatibility suite ($NS, $((SECONDS - START)) s) ===="
printf '%s\n' "${RESULTS[@]}"
if [ "$FAILED" -ne 0 ]; then
  echo "$FAILED check(s) FAILED"
  exit 1
fi
echo "all ${#RESULTS[@]} checks passed"
