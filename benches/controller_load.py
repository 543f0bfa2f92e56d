#!/usr/bin/env python3
"""CPU and memory of our controller leader under the steady traffic of 1 000 broker replicas.

  benches/controller_load.py [--namesrv-bin BIN | --ctl HOST:PORT --pid PID]
                             [--sets 333] [--replicas 3] [--connections 8] [--seconds 60]

A simulator speaks the real controller protocol (RemotingCommand JSON frames, the codec of
tests/compat/fake_broker.py) for SETS broker-sets of REPLICAS replicas each, as Java 5.3.3
brokers in controller mode do (CONTROLLER.md §6): every replica asks for an id (1012) and
applies for it (1013), registers (1003) and heartbeats once; the first replica of each set asks
to be elected (1002) and then grows the in-sync set to every replica (1001). Then, for
SECONDS after a 10 s warm-up, every replica sends BROKER_HEARTBEAT (904, one-way) every second,
GET_REPLICA_INFO (1004) every 5 s and GET_METADATA_INFO (1005) every 10 s, spread evenly over
each second, over CONNECTIONS connections. Replica addresses are 127.0.0.1 ports from 2000 up,
where nothing listens, so the role-change notifications sent after the elections are refused at
once (they happen only while the sets are set up, before the measurement).

By default it starts a standalone one-node controller (`namesrv --controller`, BIN default
target/release/namesrv) with its store in a temporary directory; --ctl/--pid measure a
running leader instead. Measured: the leader's CPU from /proc/PID/stat (utime+stime) over the
window, its RSS and peak RSS from /proc/PID/status, the store's size, and afterwards that the
controller still sees every replica alive and every set with a master (1006). Prints
`cpu_pct_of_one_core=… rss_mb=…` and whether that is within the target (5 % of one core,
64 MB). Exit status 1 only when the controller stopped answering or lost replicas.
"""

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "compat"))

from controller import cluster as cl  # noqa: E402
from controller import remoting  # noqa: E402

CLUSTER = "LoadCluster"
TARGET_CPU_PCT, TARGET_RSS_MB = 5.0, 64.0


def log(line):
    print(line, flush=True)


class Replica:
    def __init__(self, set_no, idx, port):
        self.name = "load-broker-%03d" % set_no
        self.idx = idx
        self.addr = "127.0.0.1:%d" % port
        self.id = None
        self.epoch = -1


def setup_replica(c, r):
    """1012 + 1013 until an id is ours, then 1003 (CONTROLLER.md §6.3)."""
    for _ in range(20):
        got = c.request(remoting.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": CLUSTER, "brokerName": r.name})
        if got.code != 0:
            raise remoting.RemotingError("1012 answered %s" % got)
        want = int(got.ext["nextBrokerId"])
        ap = c.request(remoting.CONTROLLER_APPLY_BROKER_ID, {
            "clusterName": CLUSTER, "brokerName": r.name, "appliedBrokerId": want,
            "registerCheckCode": "%s;%d" % (r.addr, int(time.time() * 1000))})
        if ap.code == 0:
            r.id = want
            break
    else:
        raise remoting.RemotingError("%s: no broker id after 20 attempts" % r.name)
    reg = c.request(remoting.CONTROLLER_REGISTER_BROKER, {
        "clusterName": CLUSTER, "brokerName": r.name, "brokerId": r.id, "brokerAddress": r.addr})
    if reg.code != 0:
        raise remoting.RemotingError("1003 answered %s" % reg)


def heartbeat(c, r):
    c.oneway(remoting.BROKER_HEARTBEAT, {
        "clusterName": CLUSTER, "brokerAddr": r.addr, "brokerName": r.name, "brokerId": r.id,
        "epoch": r.epoch, "maxOffset": 0, "confirmOffset": 0, "heartbeatTimeoutMills": 10000,
        "electionPriority": 2147483647})


def elect_and_sync(c, replicas):
    """The first replica asks to be master (1002), then puts every replica in sync (1001)."""
    first = replicas[0]
    el = c.request(remoting.CONTROLLER_ELECT_MASTER, {
        "clusterName": CLUSTER, "brokerName": first.name, "brokerId": first.id, "designateElect": "false",
        "invokeTime": int(time.time() * 1000)})
    if el.code not in (0, remoting.CONTROLLER_MASTER_STILL_EXIST):
        raise remoting.RemotingError("1002 answered %s" % el)
    epoch, sss_epoch = int(el.ext["masterEpoch"]), int(el.ext["syncStateSetEpoch"])
    for r in replicas:
        r.epoch = epoch
    if int(el.ext["masterBrokerId"]) != first.id:
        return
    body = ('{"syncStateSet":[%s],"syncStateSetEpoch":%d}' % (",".join(str(r.id) for r in replicas), sss_epoch)).encode()
    alt = c.request(remoting.CONTROLLER_ALTER_SYNC_STATE_SET, {
        "brokerName": first.name, "masterBrokerId": first.id, "masterEpoch": epoch,
        "invokeTime": int(time.time() * 1000)}, body)
    if alt.code != 0:
        raise remoting.RemotingError("1001 answered %s" % alt)


class Lane(threading.Thread):
    """One connection carrying the traffic of its share of the sets."""

    def __init__(self, addr, sets):
        super().__init__(daemon=True)
        self.addr, self.sets = addr, sets
        self.replicas = [r for s in sets for r in s]
        self.error = None
        self.sent = {"904": 0, "1004": 0, "1005": 0}
        self.ready = threading.Event()
        self.stop = threading.Event()

    def run(self):
        try:
            c = remoting.Client(self.addr, timeout=10.0)
            for s in self.sets:
                for r in s:
                    setup_replica(c, r)
                for r in s:
                    heartbeat(c, r)
                elect_and_sync(c, s)
            self.ready.set()
            self.steady(c)
        except remoting.RemotingError as e:
            self.error = str(e)
            self.ready.set()

    def steady(self, c):
        n = len(self.replicas)
        tick = 0
        while not self.stop.is_set():
            start = time.monotonic()
            for i, r in enumerate(self.replicas):
                heartbeat(c, r)
                self.sent["904"] += 1
                # replica i polls in second (i mod 5) / (i mod 10): spread, like real brokers
                if (tick + i) % 5 == 0:
                    c.request(remoting.CONTROLLER_GET_REPLICA_INFO, {"brokerName": r.name})
                    self.sent["1004"] += 1
                if (tick + i) % 10 == 0:
                    c.request(remoting.CONTROLLER_GET_METADATA_INFO)
                    self.sent["1005"] += 1
                due = start + (i + 1) / n
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            tick += 1
            rest = start + 1.0 - time.monotonic()
            if rest > 0:
                self.stop.wait(rest)


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def du(path):
    total = 0
    for base, _, files in os.walk(path):
        for fn in files:
            try:
                total += os.path.getsize(os.path.join(base, fn))
            except OSError:
                pass
    return total


def snapshot_file(store):
    for base, _, files in os.walk(store):
        if "snapshot.json" in files:
            return os.path.join(base, "snapshot.json")
    return None


def snapshot_and_restart(node, addr, sets, limit=6000):
    """Writes until the controller has taken a raft snapshot (it takes one every so many log
    entries): each write moves a set's in-sync replicas between {master} and all (1001). Then
    restarts the node and times how long it needs to serve every set again (snapshot + tail)."""
    store = os.path.join(node.dir, "controller-store")
    first = snapshot_file(store)
    before = os.stat(first).st_mtime if first else None
    c = remoting.Client(addr, timeout=10.0)
    writes, t0 = 0, time.monotonic()
    try:
        while writes < limit:
            for s in sets:
                info = remoting.replica_info(c, s[0].name)
                master, epoch = int(info.ext["masterBrokerId"]), int(info.ext["masterEpoch"])
                sss = info.json() or {}
                ids = [r.id for r in s] if len(sss.get("syncStateSet") or []) == 1 else [master]
                body = ('{"syncStateSet":[%s],"syncStateSetEpoch":%d}' % (
                    ",".join(map(str, ids)), sss.get("syncStateSetEpoch", 0))).encode()
                c.request(remoting.CONTROLLER_ALTER_SYNC_STATE_SET, {
                    "brokerName": s[0].name, "masterBrokerId": master, "masterEpoch": epoch,
                    "invokeTime": int(time.time() * 1000)}, body)
                writes += 1
                f = snapshot_file(store)
                if f and (before is None or os.stat(f).st_mtime != before):
                    break
            else:
                continue
            break
    finally:
        c.close()
    f = snapshot_file(store)
    if not f or (before is not None and os.stat(f).st_mtime == before):
        log("no raft snapshot after %d writes" % writes)
        return
    time.sleep(1)  # let a snapshot being written finish
    log("raft snapshot after %d more writes (%.1f s): %s, %.1f KB for %d replicas" % (
        writes, time.monotonic() - t0, os.path.relpath(f, store), os.path.getsize(f) / 1024.0,
        sum(len(s) for s in sets)))
    node.stop()
    t1 = time.monotonic()
    if not node.start():
        log("the controller did not restart")
        return
    names = [s[0].name for s in sets]

    def serving():
        table = remoting.sync_state_data(addr, names)
        return len(table) == len(names)

    ok = cl.wait_until("serving", serving, 60, 0.05)
    log("restart on the snapshot and its tail: serving all %d sets %.0f ms after the start%s" % (
        len(names), (time.monotonic() - t1) * 1000, "" if ok else " (NOT within 60 s)"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--namesrv-bin", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "namesrv"))
    ap.add_argument("--ctl", help="a running controller leader (then --pid too)")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--sets", type=int, default=333)
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="namesrv-ctl-load.")
    c = None
    store = None
    try:
        if args.ctl:
            if not args.pid:
                ap.error("--ctl needs --pid (the process to measure)")
            addr, pid = args.ctl, args.pid
        else:
            c = cl.Cluster(work, os.path.abspath(args.namesrv_bin))
            ports, _ = cl.pick_ports(1)
            group = cl.ControllerGroup("load", ports)
            node = cl.Node(c, "ctl0", 0, group, "n0", standalone=True)
            if not node.start():
                return 1
            addr, pid = node.ctl_addr, node.pid
            store = os.path.join(node.dir, "controller-store")
            if not cl.wait_until("leader", lambda: remoting.metadata(addr).get("isLeader") == "true", 30):
                log("the controller did not become leader within 30 s")
                return 1
        log("controller %s (pid %d): setting up %d sets x %d replicas over %d connections" % (
            addr, pid, args.sets, args.replicas, args.connections))

        base = 2000  # below the ephemeral range: nothing there, and no self-connect on loopback
        sets = [[Replica(s, i, base + s * args.replicas + i) for i in range(args.replicas)] for s in range(args.sets)]
        lanes = [Lane(addr, sets[i::args.connections]) for i in range(args.connections)]
        t0 = time.monotonic()
        for lane in lanes:
            lane.start()
        for lane in lanes:
            lane.ready.wait()
        errors = [lane.error for lane in lanes if lane.error]
        if errors:
            log("set-up failed: %s" % errors[0])
            return 1
        log("set up in %.1f s; warming up %d s" % (time.monotonic() - t0, args.warmup))
        time.sleep(args.warmup)

        hz = os.sysconf("SC_CLK_TCK")
        kinds = ("904", "1004", "1005")
        sent0 = {k: sum(lane.sent[k] for lane in lanes) for k in kinds}
        c0, w0 = cpu_ticks(pid), time.monotonic()
        time.sleep(args.seconds)
        c1, w1 = cpu_ticks(pid), time.monotonic()
        per = {k: sum(lane.sent[k] for lane in lanes) - sent0[k] for k in kinds}
        cpu = (c1 - c0) / hz / (w1 - w0) * 100.0
        rss = status_kb(pid, "VmRSS") / 1024.0
        hwm = status_kb(pid, "VmHWM") / 1024.0

        names = [s[0].name for s in sets]
        table = remoting.sync_state_data(addr, names)
        masters = sum(1 for n in names if (table.get(n) or {}).get("masterBrokerId") is not None)
        alive = sum(1 for n in names for r in ((table.get(n) or {}).get("inSyncReplicas") or [])
                    + ((table.get(n) or {}).get("notInSyncReplicas") or []) if r.get("alive"))
        total = args.sets * args.replicas
        log("window %.1f s: %d requests (%.0f/s; 904 %d, 1004 %d, 1005 %d)" % (
            w1 - w0, sum(per.values()), sum(per.values()) / (w1 - w0), per["904"], per["1004"], per["1005"]))
        log("controller sees %d/%d replicas alive, %d/%d sets with a master (1006)" % (alive, total, masters, args.sets))
        if store:
            log("store %s: %.1f MB" % (store, du(store) / 1e6))
            # the lanes keep heartbeating: an alter names replicas that must be alive
            snapshot_and_restart(node, addr, sets)
        for lane in lanes:
            lane.stop.set()
        for lane in lanes:
            lane.join(5)
        ok = cpu <= TARGET_CPU_PCT and rss <= TARGET_RSS_MB
        log("cpu_pct_of_one_core=%.2f rss_mb=%.1f peak_rss_mb=%.1f (target <= %.0f %% and <= %.0f MB: %s)" % (
            cpu, rss, hwm, TARGET_CPU_PCT, TARGET_RSS_MB, "within" if ok else "OVER"))
        return 0 if alive == total and masters == args.sets else 1
    finally:
        if c is not None:
            c.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log("kept %s" % work)


if __name__ == "__main__":
    sys.exit(main())
