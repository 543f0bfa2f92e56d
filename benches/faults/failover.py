#!/usr/bin/env python3
"""Failover under faults, measured (issue 24): per nemesis, the time from the fault to a
committed new master (for controller-leader faults: to a new controller leader answering
leader-only requests) and to the new master in the name servers' routes, median and worst over
RUNS runs, with short timeouts and with Java's.

  python3 benches/faults/failover.py [--runs N] [--only NEMESIS,...] [--profiles short,java]
                                     [--out DIR]

Each run is a fresh group in network namespaces (tests/faults/topology.py: three name servers
with the embedded controller, three brokersim replicas of one set, a probe in the clients'
namespace polling every node's CONTROLLER_GET_REPLICA_INFO and every name server's
GET_BROKER_CLUSTER_INFO every 20 ms). The replicas keep every live replica in the sync-state
set (--alter-mode grow) and register with the name servers (id 0 as master, stateVersion =
master epoch), as controller-mode Java brokers do. Times are from just before the fault to the
end of the first probe answer that shows it. The fault comes at least WARM (env, default 12) s
after the nodes started: a node's inactive-master scan waits 10 s from its start before it may
replace a master, which a double kill right after start would measure instead of the failover.

Profiles: short = broker heartbeat 500 ms, heartbeat timeout 3 s, controller scans 1 s;
java = heartbeat 1 s, timeout 10 s, scans 5 s (Java's defaults).
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FAULTS = os.path.join(ROOT, "tests", "faults")
sys.path.insert(0, FAULTS)

PROFILES = {
    "short": {"hb": 500, "timeout": 3000, "scan": 1000},
    "java": {"hb": 1000, "timeout": 10000, "scan": 5000},
}
NEMESES = ["master-kill9", "master-sigstop", "double-kill", "leader-partitioned",
           "leader-paused", "leader-killed"]
WARM = float(os.environ.get("WARM", "12"))  # s from the nodes' start to the fault
MASTER_FAULTS = {"master-kill9", "master-sigstop", "double-kill"}


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def read_probe(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def leader_state(recs, since=0.0):
    """The latest ctl answer with code 0 after `since`: (node, state)."""
    for r in reversed(recs):
        if r.get("kind") == "ctl" and r.get("code") == 0 and r["t"] >= since:
            return r["node"], r["state"]
    return None, None


def make_topology(tag, rundir, seed, prof):
    import topology

    class BenchTopology(topology.Topology):
        def start_broker(self, b, duration=None):
            if b in self.brokers and self.brokers[b].poll() is None:
                return
            duration = duration if duration is not None else max(
                5, self.t_clients_end - time.time())
            self.broker_starts[b] = self.broker_starts.get(b, 0) + 1
            argv = [sys.executable, os.path.join(FAULTS, "brokersim.py"), "--proc", b,
                    "--cluster", self.cluster, "--name", self.set_name,
                    "--addr", self.broker_addr(b), "--controllers", self.controllers_spec(),
                    "--history", os.path.join(self.rundir, "history", "%s.jsonl" % b),
                    "--duration", "%.1f" % duration,
                    "--seed", str(self.seed * 100 + topology.BROKERS.index(b) * 10
                                  + self.broker_starts[b]),
                    "--hb-ms", str(prof["hb"]), "--hb-timeout-ms", str(prof["timeout"]),
                    "--poll-ms", "1000", "--alter-mode", "grow", "--alter-prob", "1",
                    "--leader-refresh", "2",
                    "--namesrv", ";".join(self.nodes[n].ns_addr for n in topology.NODES),
                    "--state", os.path.join(self.rundir, "brokers", "%s.identity" % b)]
            os.makedirs(os.path.join(self.rundir, "brokers"), exist_ok=True)
            lg = open(os.path.join(self.logdir, "%s.log" % b), "ab")
            self.brokers[b] = self.net.popen(b, argv, stdout=lg, stderr=subprocess.STDOUT)
            lg.close()

    conf = {"scanNotActiveBrokerInterval": prof["scan"],
            "scanInactiveMasterInterval": prof["scan"]}
    return BenchTopology(tag, rundir, seed=seed, extra_conf=conf), topology


def one_run(nemesis, profile, run, outdir, settle_timeout=60):
    prof = PROFILES[profile]
    rundir = os.path.join(outdir, profile, nemesis, str(run))
    os.makedirs(rundir, exist_ok=True)
    tag = "fb%d" % (os.getpid() % 1000)
    topo, topomod = make_topology(tag, rundir, run + 1, prof)
    res = {"nemesis": nemesis, "profile": profile, "run": run, "commit": None, "route": None}
    probe = None
    try:
        topo.start_nodes()
        t_nodes = time.time()
        if not topo.wait_leader(30):
            res["error"] = "no controller leader"
            return res
        duration = 300
        topo.t_clients_end = time.time() + duration
        for b in topomod.BROKERS:
            topo.start_broker(b, duration)
        probe_path = os.path.join(rundir, "probe.jsonl")
        probe = topo.net.popen(topomod.CLIENT, [
            sys.executable, os.path.join(HERE, "probe.py"),
            "--controllers", topo.controllers_spec(named=True),
            "--namesrv", ";".join("%s=%s" % (n, topo.nodes[n].ns_addr) for n in topomod.NODES),
            "--set", topo.set_name, "--out", probe_path], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        # ready: a master, every replica in sync, the master at id 0 in the routes
        deadline = time.time() + settle_timeout
        ready = None
        while time.time() < deadline:
            time.sleep(0.3)
            recs = read_probe(probe_path)
            node, st = leader_state(recs, time.time() - 1.0)
            if not st or st.get("masterId") is None or len(st.get("sss") or []) < 3:
                continue
            routed = any(r.get("kind") == "ns" and (r.get("addrs") or {}).get("0")
                         == st.get("masterAddr") and r["t"] > time.time() - 1.0 for r in recs)
            if routed:
                ready = (node, st)
                break
        if not ready:
            res["error"] = "not ready in %ds" % settle_timeout
            return res
        time.sleep(1.0 + prof["hb"] / 1000.0)  # a few heartbeats with everyone in sync
        # a warm group: a node waits 10 s from its start (or the largest broker heartbeat
        # timeout) before its inactive-master scan may act; production nodes are long past it
        while time.time() < t_nodes + WARM:
            time.sleep(0.2)
        lead, st = ready
        old_master, old_epoch, old_addr = st["masterId"], st["masterEpoch"], st["masterAddr"]
        mb = topo.broker_of_addr(old_addr)
        res.update(old_leader=lead, old_master=old_master, old_epoch=old_epoch)
        # ---- the fault
        t0 = time.time()
        if nemesis == "master-kill9":
            topo.kill_broker(mb)
        elif nemesis == "master-sigstop":
            os.killpg(topo.brokers[mb].pid, signal.SIGSTOP)
        elif nemesis == "double-kill":
            topo.nodes[lead].kill9()
            topo.kill_broker(mb)
        elif nemesis == "leader-partitioned":
            others = [n for n in topomod.NODES if n != lead]
            topo.net.partition([[lead], others + topomod.BROKERS + [topomod.CLIENT]])
        elif nemesis == "leader-paused":
            topo.nodes[lead].pause()
        elif nemesis == "leader-killed":
            topo.nodes[lead].kill9()
        res["t_fault"] = t0
        limit = 30 + 3 * prof["timeout"] / 1000.0
        new_addr = None
        while time.time() < t0 + limit:
            time.sleep(0.25)
            recs = read_probe(probe_path)
            for r in recs:
                if r["t"] < t0 or r.get("kind") != "ctl" or r.get("code") != 0:
                    continue
                s = r["state"]
                if nemesis in MASTER_FAULTS:
                    if s["masterEpoch"] > old_epoch and s.get("masterId") not in (None,
                                                                                 old_master):
                        res["commit"] = r.get("t_end", r["t"]) - t0
                        res["new_master"] = s["masterId"]
                        new_addr = s.get("masterAddr")
                        break
                elif r["node"] != lead:
                    res["commit"] = r.get("t_end", r["t"]) - t0
                    res["new_leader"] = r["node"]
                    break
            if res["commit"] is not None and nemesis not in MASTER_FAULTS:
                break
            if new_addr:
                for r in recs:
                    if r["t"] >= t0 and r.get("kind") == "ns" and \
                            (r.get("addrs") or {}).get("0") == new_addr:
                        res["route"] = r.get("t_end", r["t"]) - t0
                        break
                if res["route"] is not None:
                    break
        if res["commit"] is None:
            res["error"] = "no new %s within %.0fs" % (
                "master" if nemesis in MASTER_FAULTS else "leader", limit)
        # undo the fault before teardown
        if nemesis == "master-sigstop":
            try:
                os.killpg(topo.brokers[mb].pid, signal.SIGCONT)
            except OSError:
                pass
        elif nemesis == "leader-partitioned":
            topo.net.heal()
        elif nemesis == "leader-paused":
            topo.nodes[lead].resume()
        return res
    except Exception as e:  # noqa: BLE001 - one failed run must not stop the bench
        res["error"] = "%s: %s" % (type(e).__name__, e)
        return res
    finally:
        if probe is not None and probe.poll() is None:
            try:
                os.killpg(probe.pid, signal.SIGTERM)
            except OSError:
                pass
        try:
            topo.close()
        except Exception as e:  # noqa: BLE001
            log("teardown: %s" % e)
        with open(os.path.join(rundir, "result.json"), "w") as f:
            json.dump(res, f, indent=1, sort_keys=True)


def fmt(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    return "%6.2f / %6.2f s" % (statistics.median(xs), max(xs))


def table(results, profiles, nemeses):
    lines = ["%-20s %-6s %4s  %-22s %-22s %s" % ("nemesis", "timeo", "runs",
                                                 "commit median / worst", "route median / worst",
                                                 "failed")]
    for nem in nemeses:
        for prof in profiles:
            rs = [r for r in results if r["nemesis"] == nem and r["profile"] == prof]
            if not rs:
                continue
            bad = [r for r in rs if r.get("error")]
            route = fmt([r["route"] for r in rs]) if nem in MASTER_FAULTS else "(master unchanged)"
            lines.append("%-20s %-6s %4d  %-22s %-22s %s" % (
                nem, prof, len(rs), fmt([r["commit"] for r in rs]), route,
                "; ".join(sorted({r["error"] for r in bad})) if bad else ""))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description="failover under faults")
    p.add_argument("--runs", type=int, default=int(os.environ.get("RUNS", "3")))
    p.add_argument("--only", default="")
    p.add_argument("--profiles", default="short,java")
    p.add_argument("--out", default=os.environ.get("OUT") or "/tmp/faults-bench")
    a = p.parse_args(argv)
    import netns
    ok, why = netns.available()
    if not ok:
        print("faults bench: skipped, network namespaces not available: %s" % why)
        return 0
    nemeses = [x for x in a.only.split(",") if x] or NEMESES
    profiles = [x for x in a.profiles.split(",") if x]
    os.makedirs(a.out, exist_ok=True)
    results = []
    for prof in profiles:
        for nem in nemeses:
            for run in range(a.runs):
                r = one_run(nem, prof, run, a.out)
                results.append(r)
                log("%s %s run %d: commit %s route %s %s" % (
                    nem, prof, run, "%.3f" % r["commit"] if r["commit"] is not None else "-",
                    "%.3f" % r["route"] if r.get("route") is not None else "-",
                    r.get("error", "")))
                with open(os.path.join(a.out, "results.json"), "w") as f:
                    json.dump(results, f, indent=1, sort_keys=True)
    print()
    print("failover under faults (%d runs each; short = hb 500 ms / timeout 3 s / scans 1 s, "
          "java = hb 1 s / timeout 10 s / scans 5 s)" % a.runs)
    print(table(results, profiles, nemeses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
