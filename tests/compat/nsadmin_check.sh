#!/usr/bin/env bash
# nsadmin against a live cluster: our name server with the rocketmq-rust broker registered.
#
#   tests/compat/nsadmin_check.sh NSADMIN NAMESRV BROKER_NAME CLUSTER
#
# Prints one PASS/FAIL line per step (the format of the other checks) and exits 1 if any failed.
# Steps: cluster list with the broker's own runtime statistics (106 + 28 to the broker), -m
# totals, topic list (206), route of TBW102 as mqadmin's JSON, -l table and --json (105),
# topicClusterList (106/105), topicList -c (106/206/105 + 300 to the broker), KV round trip
# (100/101/102), wipe and add write permission with their effect on the route (205/327/105).
set -uo pipefail
NSADMIN=$1 NS=$2 BROKER=$3 CLUSTER=$4
FAILED=0
OUT="$(mktemp)"; ERR="$(mktemp)"
trap 'rm -f "$OUT" "$ERR"' EXIT

# step NAME CODES EXPECTED_EXIT ARGS...: runs nsadmin, keeps stdout/stderr in $OUT/$ERR.
step() {
  local name=$1 codes=$2 want=$3; shift 3
  "$NSADMIN" "$@" >"$OUT" 2>"$ERR"; local rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "FAIL nsadmin: step $name (request code $codes) failed: exit $rc, expected $want; stderr: $(head -c 300 "$ERR")"
    FAILED=1; return 1
  fi
  return 0
}
pass() { echo "PASS nsadmin: step $1 (request code $2): $3"; }
fail() { echo "FAIL nsadmin: step $1 (request code $2) failed: $3"; FAILED=1; }
# expect NAME CODES WHAT PATTERN: the last step's stdout must match the extended regex.
expect() {
  if grep -Eq -- "$4" "$OUT"; then pass "$1" "$2" "$3"; else fail "$1" "$2" "$3 not found in: $(head -c 400 "$OUT")"; fi
}

if step clusterList 106/28 0 clusterList -n "$NS"; then
  expect clusterList 106/28 "$BROKER row with the broker's version and ACTIVATED true" \
    "^$CLUSTER +$BROKER +0 +127\.0\.0\.1:[0-9]+ +V[0-9_A-Z]+ .* true$"
fi
if step clusterList-m 106/28 0 clusterList -m -n "$NS"; then
  expect clusterList-m 106/28 "totals row" "^$CLUSTER +$BROKER +-?[0-9]+ +-?[0-9]+ +-?[0-9]+ +-?[0-9]+$"
fi
if step topicList 206 0 topicList -n "$NS"; then expect topicList 206 "TBW102 listed" "^TBW102$"; fi
if step topicRoute 105 0 topicRoute -n "$NS" -t TBW102; then
  expect topicRoute 105 "fastjson pretty route with the master" $'^\t\t\t"brokerAddrs":\\{0:"127\\.0\\.0\\.1:[0-9]+"$'
fi
if step topicRoute-l 105 0 topicRoute -l -n "$NS" -t TBW102; then
  expect topicRoute-l 105 "table row" "^$CLUSTER +$BROKER +\\{0=127\\.0\\.0\\.1:[0-9]+\\} +[0-9]+ +[0-9]+ +[0-9]+ *$"
fi
if step topicRoute-json 105 0 topicRoute --json -n "$NS" -t TBW102; then
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["brokerDatas"][0]["brokerName"]==sys.argv[2]' "$OUT" "$BROKER"; then
    pass topicRoute-json 105 "valid JSON naming $BROKER"
  else fail topicRoute-json 105 "not the expected JSON"; fi
fi
if step topicClusterList 106/105 0 topicClusterList -n "$NS" -t TBW102; then
  expect topicClusterList 106/105 "the cluster" "^$CLUSTER$"
fi
if step topicList-c 106/206/105/300 0 topicList -c -n "$NS"; then
  expect topicList-c 106/206/105/300 "TBW102 in $CLUSTER" "^$CLUSTER +TBW102 "
fi

# KV round trip
if step updateKvConfig 100 0 updateKvConfig -n "$NS" -s ORDER_TOPIC_CONFIG -k NsadminCompat -v "$BROKER:4"; then
  expect updateKvConfig 100 "success line" "^create or update kv config to namespace success\\.$"
fi
if step updateOrderConf-get 101 0 updateOrderConf -n "$NS" -t NsadminCompat -m get; then
  expect updateOrderConf-get 101 "value read back" "orderConf=\\[$BROKER:4\\] $"
fi
if step deleteKvConfig 102 0 deleteKvConfig -n "$NS" -s ORDER_TOPIC_CONFIG -k NsadminCompat; then
  expect deleteKvConfig 102 "success line" "^delete kv config from namespace success\\.$"
fi
if step updateOrderConf-gone 101 3 updateOrderConf -n "$NS" -t NsadminCompat -m get; then
  pass updateOrderConf-gone 101 "deleted key is QUERY_NOT_FOUND (exit 3)"
fi

# Write permission: wipe, see it in the route, restore.
perm() { "$NSADMIN" topicRoute --json -n "$NS" -t TBW102 | python3 -c 'import json,sys; print(json.load(sys.stdin)["queueDatas"][0]["perm"])'; }
before=$(perm)
if step wipeWritePerm 205 0 wipeWritePerm -n "$NS" -b "$BROKER"; then
  expect wipeWritePerm 205 "OK line" "^wipe write perm of broker\\[$BROKER\\] in name server\\[$NS\\] OK, [1-9][0-9]*$"
  after=$(perm)
  if [ $((after & 2)) -eq 0 ]; then pass wipe-effect 105 "perm $before -> $after"; else fail wipe-effect 105 "perm still $after"; fi
fi
if step addWritePerm 327 0 addWritePerm -n "$NS" -b "$BROKER"; then
  expect addWritePerm 327 "OK line" "^add write perm of broker\\[$BROKER\\] in name server\\[$NS\\] OK, [1-9][0-9]*$"
  after=$(perm)
  if [ $((after & 2)) -ne 0 ]; then pass add-effect 105 "perm back to $after"; else fail add-effect 105 "perm still $after"; fi
fi
exit $FAILED
