#!/usr/bin/env bash
# Side-by-side load test with ../shared/tools/nsbench: our server, nslimit (the ceiling) and,
# when installed, rocketmq-rust's name server, each pinned to CPU 0 with the load on CPU 1.
# Prints one nsbench JSON line per run and a summary table (ratios against nslimit).
#
#   benches/nsbench.sh [workload ...]
#   # default: route route-rocketmq hot-route mixed route-reregister register heartbeat hold hold-1m
#   # also: route-light, route-signed (authMode=enforce with every class signed; nsbench signs
#   #       every request with --access-key/--secret-key, and nslimit gets the same signed load),
#   #       route-scraped (route lookups with the HTTP listener off, then on with /metrics
#   #       scraped every second), hold-scraped (8 x 20 k topics held while /metrics is
#   #       scraped every second: scrape time, series, RSS),
#   #       route-tls (lookups over TLS against nslimit --tls), handshake-tls (connect, TLS
#   #       handshake, one lookup, close, against nslimit --tls), handshake (the same in plaintext),
#   #       route-disabled (plaintext lookups with tls.server.mode=disabled: what permissive costs)
#   # Our server runs in its default TLS mode (permissive, test-mode certificate) unless the
#   # workload says otherwise, so `route` is plaintext lookups in permissive mode.
#
# Environment: NSBENCH_SRC (default ../shared/tools/nsbench), NSBENCH_TARGET (~/.cache/nsbench),
# RMQ_RUST_BIN (~/.cache/rmq-rust/bin/rocketmq-namesrv-rust; skipped when absent),
# NAMESRV_REF_BIN (another namesrv build, e.g. of main, run as "ref" with the plain config of
# "ours": what a change costs, in the same sitting; skipped when unset),
# DURATION (seconds per run, default 10).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NSBENCH_SRC="${NSBENCH_SRC:-$ROOT/../shared/tools/nsbench}"
NSBENCH_TARGET="${NSBENCH_TARGET:-$HOME/.cache/nsbench}"
RMQ_RUST_BIN="${RMQ_RUST_BIN:-$HOME/.cache/rmq-rust/bin/rocketmq-namesrv-rust}"
DURATION="${DURATION:-10}"
WORK="$(mktemp -d)"
OUT="$WORK/results.jsonl"
SERVER_PID=""
SCRAPER_PID=""
cleanup() {
  if [ -n "$SCRAPER_PID" ]; then kill "$SCRAPER_PID" 2>/dev/null || true; fi
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CARGO_TARGET_DIR="$NSBENCH_TARGET" cargo build --quiet --release --manifest-path "$NSBENCH_SRC/Cargo.toml"
(cd "$ROOT" && cargo build --quiet --release)
B="$NSBENCH_TARGET/release"
PORT=29901

free_cpus() { [ "$(nproc)" -ge 2 ]; }
# Runs a command pinned to one CPU, replacing the (sub)shell so that `$!` is its pid.
pin() { if free_cpus; then exec taskset -c "$1" "${@:2}"; else exec "${@:2}"; fi; }

wait_port() {
  for _ in $(seq 1 200); do
    if port_in_use "$1"; then return 0; fi
    sleep 0.05
  done
  echo "server on port $1 did not come up" >&2; return 1
}

port_in_use() { (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }

# Credentials of the signed workloads: an account that may read and register brokers.
SIGN_AK=nsbench-client
SIGN_SK=nsbench-secret
printf 'signatureRequired: [read, broker, admin]\naccounts:\n  - {accessKey: %s, secretKey: %s, broker: true}\n' \
  "$SIGN_AK" "$SIGN_SK" > "$WORK/acl.yml"
chmod 600 "$WORK/acl.yml"

start_server() { # kind port label
  local kind=$1 port=$2 label=$3 auth=""
  if port_in_use "$port"; then echo "port $port is already in use" >&2; return 1; fi
  case $kind in
    ours|ours-auth|ours-http|ref)
      [ "$kind" = ours-auth ] && auth="authMode=enforce\nauthConfigPath=$WORK/acl.yml\n"
      [ "$kind" = ours-http ] && auth="httpListenPort=$((port + 100))\n"
      printf "listenPort=%s\nbindAddress=127.0.0.1\nkvConfigPath=%s/kv.json\nconfigStorePath=%s/ns.properties\nframeMaxLength=67108864\n$auth" \
        "$port" "$WORK" "$WORK" > "$WORK/ours.conf"
      local bin="$ROOT/target/release/namesrv" tls_file=(-Dtls.config.file="$WORK/no-tls.properties")
      # A reference build from before TLS knows no -D options.
      [ "$kind" = ref ] && bin="$NAMESRV_REF_BIN" && tls_file=()
      pin 0 "$bin" ${tls_file[@]+"${tls_file[@]}"} ${OURS_ARGS[@]+"${OURS_ARGS[@]}"} \
        -c "$WORK/ours.conf" >"$WORK/$kind.log" 2>&1 &
      ;;
    nslimit) pin 0 "$B/nslimit" "127.0.0.1:$port" "$BROKERS" ${NSLIMIT_ARGS[@]+"${NSLIMIT_ARGS[@]}"} >"$WORK/nslimit.log" 2>&1 & ;;
    rmq-rust)
      mkdir -p "$WORK/rmq"
      printf 'rocketmqHome = "%s"\nkvConfigPath = "%s/kvConfig.json"\nconfigStorePath = "%s/namesrv.properties"\n[runtime]\nworkerThreads = 1\n' \
        "$WORK/rmq" "$WORK/rmq" "$WORK/rmq" > "$WORK/rmq.toml"
      ROCKETMQ_HOME="$WORK/rmq" pin 0 "$RMQ_RUST_BIN" -c "$WORK/rmq.toml" --listenPort "$port" --bindAddress 127.0.0.1 >"$WORK/rmq.log" 2>&1 &
      ;;
  esac
  SERVER_PID=$!
  wait_port "$port"
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "$kind exited at start-up" >&2; return 1; }
  if [ "$kind" = ours-http ]; then
    # Prometheus' part: one scrape of /metrics per second, from the load's CPU.
    (pin 1 python3 "$ROOT/benches/scrape.py" "http://127.0.0.1:$((port + 100))/metrics" "$WORK/scrapes-$label.jsonl") &
    SCRAPER_PID=$!
  fi
}

stop_server() {
  if [ -n "$SCRAPER_PID" ]; then kill "$SCRAPER_PID" 2>/dev/null || true; wait "$SCRAPER_PID" 2>/dev/null || true; SCRAPER_PID=""; fi
  kill "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

run() { # label kind workload nsbench-args...
  local label=$1 kind=$2; shift 2
  PORT=$((PORT + 1))
  start_server "$kind" "$PORT" "$label"
  (pin 1 "$B/nsbench" --addr "127.0.0.1:$PORT" --pid "$SERVER_PID" --duration "$RUN_DURATION" --label "$label" "$@") \
    | tee -a "$OUT"
  stop_server
}

WORKLOADS=("$@")
[ ${#WORKLOADS[@]} -gt 0 ] || WORKLOADS=(route route-rocketmq hot-route mixed route-reregister register heartbeat hold hold-1m)
for w in "${WORKLOADS[@]}"; do
  BROKERS=4
  RUN_DURATION=$DURATION
  OURS=ours
  OURS_ARGS=()
  NSLIMIT_ARGS=()
  case $w in
    route) args=(--workload route) ;;
    route-rocketmq) args=(--workload route --ser rocketmq) ;;
    # The same lookups at a quarter of the concurrency (32 in flight): latency below saturation.
    route-light) args=(--workload route --pipeline 1) ;;
    hot-route) args=(--workload hot-route) ;;
    # Signed route lookups against authMode=enforce with every class signed (each lookup's
    # signature is verified); nslimit parses the same signed frames.
    route-signed) args=(--workload route --access-key "$SIGN_AK" --secret-key "$SIGN_SK"); OURS=ours-auth ;;
    # Routes while 4 brokers of 10 k topics each re-register (nsbench re-registers its brokers
    # every 30 s, so the run must outlast that).
    route-reregister) args=(--workload route --topics 10000); RUN_DURATION=$(( DURATION > 40 ? DURATION : 40 )) ;;
    mixed) args=(--workload mixed) ;;
    # TLS: the ceiling is nslimit --tls (same P-256 certificate type, no tickets).
    route-tls) args=(--workload route --tls); NSLIMIT_ARGS=(--tls) ;;
    handshake-tls) args=(--workload handshake --tls); NSLIMIT_ARGS=(--tls) ;;
    handshake) args=(--workload handshake) ;;
    route-disabled) args=(--workload route); OURS_ARGS=(-Dtls.server.mode=disabled) ;;
    register) args=(--workload register --topics 10000 --brokers 1 --conns 4 --pipeline 1); BROKERS=1 ;;
    heartbeat) args=(--workload heartbeat --topics 10000 --brokers 1 --conns 4 --pipeline 1); BROKERS=1 ;;
    hold) args=(--workload hold --brokers 8 --topics 20000); BROKERS=8 ;;
    hold-1m) args=(--workload hold --brokers 50 --topics 20000); BROKERS=50 ;;
    route-scraped) args=(--workload route) ;;
    hold-scraped) args=(--workload hold --brokers 8 --topics 20000); BROKERS=8 ;;
    *) echo "unknown workload $w" >&2; exit 2 ;;
  esac
  case $w in
    route-scraped)
      run "ours:$w" ours "${args[@]}"
      run "ours-http:$w" ours-http "${args[@]}"
      run "nslimit:$w" nslimit "${args[@]}"
      continue ;;
    hold-scraped) run "ours-http:$w" ours-http "${args[@]}"; continue ;;
  esac
  run "ours:$w" "$OURS" "${args[@]}"
  case $w in register|heartbeat|hold|hold-1m) ;; *) run "nslimit:$w" nslimit "${args[@]}" ;; esac
  if [ -n "${NAMESRV_REF_BIN:-}" ]; then run "ref:$w" ref "${args[@]}"; fi
  if [ -x "$RMQ_RUST_BIN" ]; then run "rmq-rust:$w" rmq-rust "${args[@]}" || echo "rocketmq-rust failed on $w" >&2; fi
done

echo
echo "== summary (rps = requests/s; eff = requests per server CPU-second; rss in MB)"
python3 - "$OUT" "$WORK" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows:
    kind, w = r["label"].split(":", 1)
    by.setdefault(w, {})[kind] = r
print(f"{'workload':16} {'server':9} {'rps':>9} {'vs limit':>8} {'p99 us':>7} {'eff':>9} {'rss MB':>7}")
for w, kinds in by.items():
    limit = kinds.get("nslimit", {}).get("rps")
    for kind, r in kinds.items():
        rps = r.get("rps") or 0
        ratio = f"{rps / limit:.0%}" if limit and rps else "-"
        rss = (r.get("rss_end_kb") or 0) / 1024
        eff = r.get("req_per_server_cpu_s") or 0
        print(f"{w:16} {kind:9} {rps:9.0f} {ratio:>8} {r.get('p99_us', 0) or 0:7} {eff:9.0f} {rss:7.1f}")
        base = {"ours-http": "ours", "ours": "ref"}.get(kind)
        if base and kinds.get(base, {}).get("rps"):
            b = kinds[base]
            print(f"{'':16} {'':9} vs {base}: rps {rps / b['rps']:.1%}, eff "
                  f"{eff / (b.get('req_per_server_cpu_s') or 1):.1%}")
        path = os.path.join(sys.argv[2], f"scrapes-{kind}:{w}.jsonl")
        if kind == "ours-http" and os.path.exists(path):
            scrapes = [json.loads(l) for l in open(path) if '"ms"' in l]
            if w == "hold-scraped":  # only the scrapes taken while every topic was held
                scrapes = [s for s in scrapes if s["topics"] == max(x["topics"] for x in scrapes)]
            ms = sorted(s["ms"] for s in scrapes)
            if ms:
                print(f"{'':16} {'':9} /metrics: {len(ms)} scrapes, p50 {ms[len(ms) // 2]:.2f} ms, "
                      f"max {ms[-1]:.2f} ms, {scrapes[-1]['series']} series, {scrapes[-1]['bytes']} bytes, "
                      f"namesrv_topics {scrapes[-1]['topics']:.0f}")
PY
