#!/usr/bin/env python3
"""The fault harness (issue 24): real processes, injected faults, a checked history.

    python3 tests/faults/faults.py --quick            # the CI set + the simulation
    python3 tests/faults/faults.py --long             # the long set
    python3 tests/faults/faults.py --schedule kill-leader,pause-leader --seed 7
    python3 tests/faults/faults.py --list
    options: --keep (keep run dirs), --work DIR, --no-sim, --java, --sim-seeds N

For each schedule: a Net and a Topology (3 controller nodes, 3 brokersim replicas, a reader),
steady state (a leader and a master), the schedule's faults (each bounded and healed), recovery
(a leader and a live master again), truth.py, checker.check(rundir), expectations on the
observer's timeline; one line `schedule <name> seed <s>: ok (...)` or its violations; then
everything torn down (namespaces, nft, processes, tmpfs), also on Ctrl-C or an exception.
The simulation (`cargo test --release --lib controller::sim`, SIM_SEEDS) and, with --java,
java.py add their counts; the last line is `faults: N schedules, M violations`; exit 0 only
with zero violations. Needs root (network namespaces); run.sh checks that first.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import netns  # noqa: E402
import nemesis as nem_mod  # noqa: E402
import nodes as nodes_mod  # noqa: E402
import observe  # noqa: E402
import schedules as sched_mod  # noqa: E402
import topology as topo_mod  # noqa: E402

STEADY_TIMEOUT = 25.0


class Timeline(threading.Thread):
    """Polls the observer every `interval` s; keeps (t, leader, master broker, id, epoch)."""

    def __init__(self, topo, path, interval=0.25):
        super().__init__(daemon=True)
        self.topo, self.interval = topo, interval
        self.points = []
        self.stop_ev = threading.Event()
        self.f = open(path, "a")

    def run(self):
        while not self.stop_ev.is_set():
            try:
                obs = self.topo.obs()
            except Exception:
                break
            lead = observe.leader_of(obs)
            m = observe.master_of(obs, lead)
            b = self.topo.broker_of_addr(m[1]) if m else None
            alive = bool(b and b in self.topo.brokers and self.topo.brokers[b].poll() is None)
            pt = {"t": obs["t"], "leader": lead, "master": b, "masterId": m[0] if m else None,
                  "epoch": m[2] if m else None, "master_alive": alive,
                  "claims": sorted(n for n, o in obs["nodes"].items() if o.get("isLeader"))}
            self.points.append(pt)
            self.f.write(json.dumps(pt) + "\n")
            self.f.flush()
            self.stop_ev.wait(self.interval)

    def stop(self):
        self.stop_ev.set()
        self.join(5)
        self.f.close()


def _first(points, t0, pred):
    for p in points:
        if p["t"] >= t0 and pred(p):
            return p["t"] - t0
    return None


def run_schedule(s, work, keep=False, idx=0, log=print):
    """Runs one schedule; returns (violations: list[str], summary: str, result: dict)."""
    rundir = os.path.join(work, "%s-s%d" % (s.name, s.seed))
    if os.path.exists(rundir):
        shutil.rmtree(rundir)
    os.makedirs(rundir)
    with open(os.path.join(rundir, "schedule.json"), "w") as f:
        json.dump(s.to_dict(), f, indent=1)
    with open(os.path.join(rundir, "config.json"), "w") as f:
        json.dump({"enableElectUncleanMaster": False, "controllers": topo_mod.NODES}, f)
    rng = random.Random(s.seed)
    opts = nem_mod.needs(s.faults())
    tag = "%03x%02d" % (os.getpid() % 4096, idx % 100)
    violations, result = [], {"schedule": s.name, "seed": s.seed}
    t_start = time.time()
    topo = tl = None
    active = []
    try:
        topo = topo_mod.Topology(tag, rundir, seed=s.seed, faketime=opts.get("faketime", False),
                                 disk_mb=opts.get("disk_mb", 0),
                                 fsync_fault=opts.get("fsync_fault", False))
        nlog = nem_mod.Log(rundir)
        topo.start_nodes()
        t_nodes = time.time()
        if not topo.wait_leader(STEADY_TIMEOUT):
            raise HarnessError("no controller leader %.0f s after start" % STEADY_TIMEOUT)
        duration = s.length() + 90
        topo.start_clients(duration)
        tl = Timeline(topo, os.path.join(rundir, "logs", "timeline.jsonl"))
        tl.start()
        m = topo.wait_master(STEADY_TIMEOUT)
        if not m:
            raise HarnessError("no broker master %.0f s after the brokers started" % STEADY_TIMEOUT)
        time.sleep(1.5)  # steady state: heartbeats, a few sync-state-set changes, reads
        up = s.min_uptime() - (time.time() - t_nodes)
        if up > 0:
            time.sleep(up)
        failover_possible = True
        if "failover_within" in s.expect:
            # A clean failover needs another replica in the sync-state set at the fault. The
            # master grows and shrinks the set about once in two seconds, so it is read last,
            # right before the fault: read before the min_uptime wait it could be stale (once the
            # set shrank to the master alone in that wait, and the election rightly found nobody).
            rep = topo.wait_sss(2, 15.0)
            failover_possible = rep is not None
            result["sss_at_fault"] = rep.get("sss") if rep else None
        m = topo.master() or m
        result["steady_master"] = {"broker": m[0], "id": m[1], "epoch": m[2]}
        t_first = None
        epoch0 = None
        for st in s.steps:
            n = nem_mod.make(st.fault, **st.params)
            detail = n.start(topo, rng, nlog)
            active.append(n)
            t0 = time.time()
            if t_first is None:
                t_first = t0
                epoch0 = m[2]
            log_detail = {k: v for k, v in detail.items() if k != "params"}
            result.setdefault("faults", []).append({"fault": st.fault, "t": t0 - t_start,
                                                    "detail": log_detail})
            time.sleep(max(0.0, st.dur - (time.time() - t0)))
            n.stop()
            active.remove(n)
            time.sleep(st.gap)
        t_heal = time.time()
        rec_within = s.expect.get("recover_within", 30.0)
        got = topo.wait_master(rec_within)
        if not got:
            o = topo.obs()
            violations.append("recovery: no leader with a live master %.0f s after the last heal "
                              "(leader %s, claims %s)" % (
                                  rec_within, observe.leader_of(o),
                                  [n for n, x in o["nodes"].items() if x.get("isLeader")]))
        result["recovered_after"] = round(time.time() - t_heal, 2)
        if "epoch_stable" in s.expect:
            time.sleep(s.expect["epoch_stable"])
            e1 = topo.master()
            time.sleep(3.0)
            e2 = topo.master()
            if e1 and e2 and e1[2] != e2[2]:
                violations.append("epoch_stable: the master epoch moved %s -> %s %.0f s after the "
                                  "heal with a live master (#10875)" % (e1[2], e2[2],
                                                                        s.expect["epoch_stable"]))
        time.sleep(1.0)
        tl.stop()
        pts = tl.points
        if t_first is not None:
            lead0 = (result["faults"][0]["detail"] or {}).get("leader")
            if lead0:
                dt = _first(pts, t_first, lambda p: p["leader"] not in (None, lead0))
                result["new_leader_after"] = None if dt is None else round(dt, 2)
            if epoch0 is not None:
                dt = _first(pts, t_first, lambda p: p["epoch"] is not None and p["epoch"] > epoch0
                            and p["master_alive"])
                result["new_master_after"] = None if dt is None else round(dt, 2)
        if "failover_within" in s.expect and not failover_possible:
            result["failover"] = "n/a (sync-state set never grew past the master)"
        elif "failover_within" in s.expect and t_first is not None:
            budget = s.expect["failover_within"]
            dt = _first(pts, t_first, lambda p: p["epoch"] is not None and epoch0 is not None
                        and p["epoch"] > epoch0 and p["master_alive"])
            result["failover"] = None if dt is None else round(dt, 2)
            if dt is None or dt > budget:
                violations.append("failover: no new live master within %.1f s of the fault "
                                  "(took %s)" % (budget, "never" if dt is None else "%.2f s" % dt))
        # every client/node process that died on its own
        for name, node in topo.nodes.items():
            if not node.alive():
                violations.append("node %s exited (rc %s); log tail: %s" % (
                    name, node.exit_code(), " | ".join(node.log_tail(5))))
        topo.stop_clients()
        rc, out = topo.truth(wait=15)
        result["truth"] = out[-300:]
        if rc != 0:
            violations.append("truth: no leader view after the run: %s" % out[-300:])
        violations += check(rundir)
    except HarnessError as e:
        violations.append("harness: %s" % e)
        _dump_tails(topo, violations)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - a harness bug counts as a failed schedule
        violations.append("harness: %s\n%s" % (e, traceback.format_exc(limit=6)))
        _dump_tails(topo, violations)
    finally:
        for n in active:
            try:
                n.stop()
            except Exception:
                pass
        if tl is not None and tl.is_alive():
            tl.stop()
        if topo is not None:
            topo.close()
    result["wall"] = round(time.time() - t_start, 1)
    result["violations"] = violations
    with open(os.path.join(rundir, "result.json"), "w") as f:
        json.dump(result, f, indent=1)
    if not violations and not keep:
        shutil.rmtree(rundir, ignore_errors=True)
    summ = ["%.0fs" % result["wall"]]
    if "failover" in result:
        summ.append("failover %s s" % result["failover"])
    elif result.get("new_master_after") is not None:
        summ.append("new master %.2f s" % result["new_master_after"])
    if result.get("new_leader_after") is not None:
        summ.append("new leader %.2f s" % result["new_leader_after"])
    if "recovered_after" in result:
        summ.append("recovered %.1f s" % result["recovered_after"])
    return violations, ", ".join(summ), result


class HarnessError(Exception):
    pass


def _dump_tails(topo, violations):
    if topo is None:
        return
    for name, node in topo.nodes.items():
        tail = node.log_tail(4)
        if tail:
            violations.append("  %s log: %s" % (name, " | ".join(tail)))


_checker = None


def check(rundir):
    """CHECKER's checker.check(rundir) -> list of violations (strings or dicts)."""
    global _checker
    if _checker is None:
        try:
            import checker as c
            _checker = c
        except ImportError:
            _checker = False
    if _checker is False:
        return ["checker: tests/faults/checker.py is not in the tree; history unchecked"]
    out = []
    for v in _checker.check(rundir):
        if isinstance(v, dict):
            out.append(json.dumps(v, default=str)[:2000])
        else:
            out.append(str(v)[:2000])
    return out


def run_sim(seeds, log=print):
    """(seeds, violations) of the deterministic simulation; (0, 0) if it is not in the tree."""
    if not os.path.isdir(os.path.join(ROOT, "src", "controller", "sim")) and \
            not os.path.exists(os.path.join(ROOT, "src", "controller", "sim.rs")):
        log("sim: not in the tree yet (src/controller/sim), 0 seeds")
        return 0, 0
    env = dict(os.environ, SIM_SEEDS=str(seeds))
    t0 = time.time()
    p = subprocess.run(["cargo", "test", "--release", "--lib", "controller::sim", "--",
                        "--nocapture"], cwd=ROOT, env=env, capture_output=True, text=True)
    out = p.stdout + p.stderr
    m = None
    for m in re.finditer(r"sim: (\d+) seeds, (\d+) violations", out):
        pass
    if m is None:
        log("sim: no summary line (cargo rc %d, %.0f s); tail:\n%s"
            % (p.returncode, time.time() - t0, "\n".join(out.splitlines()[-15:])))
        return 0, 1
    n, v = int(m.group(1)), int(m.group(2))
    if p.returncode != 0 and v == 0:
        v = 1
        log("sim: cargo test failed (rc %d) although the summary says 0 violations; tail:\n%s"
            % (p.returncode, "\n".join(out.splitlines()[-15:])))
    log("sim: %d seeds, %d violations (%.0f s)" % (n, v, time.time() - t0))
    if v:
        for line in out.splitlines():
            if "violation" in line.lower() or "seed" in line.lower():
                log("  " + line)
    return n, v


def run_java(args, log=print):
    path = os.path.join(HERE, "java.py")
    if not os.path.exists(path):
        log("java faults: tests/faults/java.py is not in the tree yet")
        return 0, 1
    argv = [sys.executable, path]
    if args.work:
        argv += ["--work", os.path.join(args.work, "java")]
    p = subprocess.run(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    m = None
    for line in p.stdout.splitlines():
        log(line)
        mm = re.match(r"java faults: (\d+) scenarios, (\d+) violations", line)
        if mm:
            m = mm
    if m is None:
        return 0, 1
    n, v = int(m.group(1)), int(m.group(2))
    if p.returncode != 0 and v == 0:
        v = 1
    return n, v


def main(argv=None):
    ap = argparse.ArgumentParser(description="fault harness (issue 24)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--long", action="store_true")
    ap.add_argument("--schedule", help="comma-separated schedule names (see --list)")
    ap.add_argument("--seed", type=int, help="with --schedule: the seed")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep every run dir (default: failed)")
    ap.add_argument("--work", help="where run dirs go (default: a temp dir)")
    ap.add_argument("--no-sim", action="store_true")
    ap.add_argument("--no-real", action="store_true", help="only the simulation (and --java)")
    ap.add_argument("--java", action="store_true")
    ap.add_argument("--sim-seeds", type=int, default=300)
    ap.add_argument("--results", help="append every schedule's result (JSON line: timings "
                    "new_leader_after / new_master_after / failover, violations) to this file")
    args = ap.parse_args(argv)
    # Ctrl-C tears down even when started from a shell that ignores SIGINT in the background
    signal.signal(signal.SIGINT, signal.default_int_handler)

    if args.list:
        q = {s.name for s in sched_mod.quick()}
        lg = {s.name for s in sched_mod.long()}
        for s in sched_mod.all_schedules():
            sets = ",".join(x for x, m in (("quick", q), ("long", lg)) if s.name in m)
            print("%-36s seed %-7d %-11s %5.0fs  %s" % (
                s.name, s.seed, sets, s.length(),
                " + ".join(st.fault for st in s.steps)))
        return 0

    if args.schedule:
        scheds = [sched_mod.by_name(n.strip()) for n in args.schedule.split(",") if n.strip()]
        if args.seed is not None:
            scheds = [s.with_seed(args.seed) for s in scheds]
    elif args.long:
        scheds = sched_mod.long()
    else:
        scheds = sched_mod.quick()

    total_n = total_v = 0
    t_all = time.time()
    if not args.no_real:
        ok, why = netns.available()
        if not ok:
            print("faults: real-process schedules skipped: %s" % why, flush=True)
            scheds = []
        elif not os.path.exists(nodes_mod.namesrv_bin()):
            print("faults: %s not built (cargo build --release --bin namesrv, or NAMESRV_BIN)"
                  % nodes_mod.namesrv_bin(), flush=True)
            print("faults: 0 schedules, 1 violations")
            return 1
    else:
        scheds = []
    work = args.work or tempfile.mkdtemp(prefix="faults-")
    os.makedirs(work, exist_ok=True)
    if scheds:
        print("faults: %d schedules, run dirs under %s" % (len(scheds), work), flush=True)
    for i, s in enumerate(scheds):
        viol, summ, res = run_schedule(s, work, keep=args.keep, idx=i)
        if args.results:
            with open(args.results, "a") as f:
                f.write(json.dumps(res, default=str) + "\n")
        total_n += 1
        total_v += len(viol)
        if viol:
            print("schedule %s seed %d: %d violations (%s; run dir %s)"
                  % (s.name, s.seed, len(viol), summ,
                     os.path.join(work, "%s-s%d" % (s.name, s.seed))), flush=True)
            for v in viol:
                print("  - " + v.replace("\n", "\n    "), flush=True)
            print("  reproduce: tests/faults/run.sh --schedule %s --seed %d --keep --no-sim"
                  % (s.name, s.seed), flush=True)
        else:
            print("schedule %s seed %d: ok (%s)" % (s.name, s.seed, summ), flush=True)
    if scheds:
        print("real: %d schedules, %d violations (%.0f s)" % (
            total_n, total_v, time.time() - t_all), flush=True)
    if not args.no_sim:
        n, v = run_sim(args.sim_seeds, log=lambda x: print(x, flush=True))
        total_n += n
        total_v += v
    if args.java:
        n, v = run_java(args, log=lambda x: print(x, flush=True))
        total_n += n
        total_v += v
    if not args.work and not args.keep and total_v == 0:
        shutil.rmtree(work, ignore_errors=True)
    print("faults: %d schedules, %d violations" % (total_n, total_v), flush=True)
    return 0 if total_v == 0 else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("faults: interrupted", flush=True)
        netns._close_all()
        sys.exit(130)
