"""Command line of tests/faults/java.py (see its docstring)."""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback

from java import nsproc, scenarios
from java.scenarios import Abort, Run, log

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))

import netns  # noqa: E402  (tests/faults/netns.py)


def one(name, args, binary, pkg, home, profile, workroot, round_=0):
    run = Run(name, profile)
    workdir = os.path.join(workroot, name if not round_ else "%s-%d" % (name, round_))
    os.makedirs(workdir, exist_ok=True)
    log("=== %s (%s), work %s" % (name, profile, workdir))
    tag = "j%d%s%d" % (os.getpid() % 1000, name.split("-")[1][0] + ("m" if "master-part" in name else ""), round_)
    net = rig = None
    try:
        net = netns.Net(tag, scenarios.rg.NAMES)
        rig = scenarios.rg.Rig(net, workdir, binary, pkg, home, profile)
        scenarios.SCENARIOS[name](run, rig)
    except Abort:
        log("(%s: the remaining steps were skipped after the failure above)" % name)
    except Exception as e:  # a bug or an unexpected answer still tears everything down
        run.violation("unexpected error", "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
    finally:
        if rig is not None:
            rig.close()
        if net is not None:
            net.close()
    took = round(time.monotonic() - run.t_begin, 1)
    log("RESULT %s [%s timeouts]: %d violations, %s s; failover ms after the fault: %s; messages %s"
        % (name, profile.name, len(run.violations), took,
           ", ".join("%s %s" % (k, v) for k, v in run.timings.items()), run.messages))
    return {"scenario": name, "profile": profile.name, "hb_timeout_ms": profile.hb_timeout_ms,
            "violations": run.violations, "notes": run.notes, "timings_ms": run.timings,
            "messages": run.messages, "seconds": took, "workdir": workdir}


def summarize(results):
    """SUMMARY per scenario and timing: median and worst over the runs (ms after the fault)."""
    by = {}
    for r in results:
        for k, v in (r["timings_ms"] or {}).items():
            if v is not None:
                by.setdefault(r["scenario"], {}).setdefault(k, []).append(v)
        m = r.get("messages") or {}
        if m.get("acked") is not None:
            by.setdefault(r["scenario"], {}).setdefault("acked", []).append(m["acked"])
            by[r["scenario"]].setdefault("missing", []).append(m.get("missing") or 0)
    for name, ts in by.items():
        parts = []
        for k, vs in ts.items():
            vs = sorted(vs)
            worst = vs[0] if k == "acked" else vs[-1]
            parts.append("%s %s/%s" % (k, vs[(len(vs) - 1) // 2], worst))
        runs = sum(1 for r in results if r["scenario"] == name)
        log("SUMMARY %s (%d runs; median/worst): %s" % (name, runs, ", ".join(parts)))


def main(argv=None):
    ap = argparse.ArgumentParser(description="Java 5.3.3 brokers against our controller group under faults (issue 24)")
    ap.add_argument("--scenario", action="append", choices=sorted(scenarios.SCENARIOS),
                    help="run only this one (repeatable); default all three")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (stores, logs) even on success")
    ap.add_argument("--work", help="work directory (default: a new one under $TMPDIR)")
    ap.add_argument("--json", help="write the results there as JSON")
    ap.add_argument("--repeat", type=int, default=1, help="run every scenario N times; prints the median and "
                    "worst of each timing (SUMMARY lines)")
    args = ap.parse_args(argv)

    names = args.scenario or list(scenarios.SCENARIOS)
    ok, why = netns.available()
    if not ok:
        log("java faults: skipped: %s" % why)
        log("java faults: 0 scenarios, 0 violations")
        return 0
    binary = os.environ.get("NAMESRV_BIN") or os.path.join(REPO, "target", "release", "namesrv")
    if not os.access(binary, os.X_OK):
        log("java faults: no namesrv binary at %s (cargo build --release --bin namesrv, or NAMESRV_BIN)" % binary)
        log("java faults: 0 scenarios, 1 violations")
        return 1
    pkg = nsproc.find_java_pkg()
    if not pkg:
        log("java faults: the java-broker package was not found (NAMESRV_COMPAT_JAVA_BROKER)")
        log("java faults: 0 scenarios, 1 violations")
        return 1
    home = nsproc.java_home(pkg)
    profile = nsproc.Profile(os.environ.get("FAULTS_JAVA_TIMEOUTS") == "1")
    workroot = args.work or tempfile.mkdtemp(prefix="faults-java-")
    os.makedirs(workroot, exist_ok=True)
    log("java faults: %s; namesrv %s; java-broker %s" % (profile, binary, pkg))
    results = []
    for k in range(max(1, args.repeat)):
        for name in names:
            results.append(one(name, args, binary, pkg, home, profile, workroot, k if args.repeat > 1 else 0))
    summarize(results)
    bad = sum(len(r["violations"]) for r in results)
    with open(args.json or os.path.join(workroot, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    for r in results:
        for v in r["violations"]:
            log("VIOLATION %s: %s" % (r["scenario"], v.splitlines()[0]))
    if bad == 0 and not args.keep and not args.work:
        shutil.rmtree(workroot, ignore_errors=True)
    else:
        log("work directory kept: %s" % workroot)
    log("java faults: %d scenarios, %d violations" % (len(results), bad))
    return 0 if bad == 0 else 1
