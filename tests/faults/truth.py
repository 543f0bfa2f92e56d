#!/usr/bin/env python3
"""After the heal: every node's final view -> <rundir>/truth.json (stdlib only).

  collect(nodes_ctl_addrs, sets, rundir, wait=20.0) -> dict
  python3 truth.py RUNDIR --controllers "n0=ip:p;n1=ip:p;n2=ip:p" --set setA [--set setB]

nodes_ctl_addrs: {name: "ip:port"} or [(name, addr)] or ["ip:port", ...] (named n0, n1, ...).
Waits (up to `wait` s) until a majority of the reachable nodes name the same leader and that
leader answers 1004 for every set, then asks every node 1005, 1004 per set and 1006; the
leader's answers are the truth ("sets"), each node's own answers are kept under "nodes".

truth.json: {"t", "leader": name|null, "sets": {set: {masterId, masterEpoch, sss, sssEpoch,
ids, alive} | null}, "nodes": {name: {"metadata": {...}|null, "replica_info": {set: {code,
value}}, "sync_state": {code, value}}}}
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctlclient as cc  # noqa: E402
from reader import sync_state_value  # noqa: E402


def _nodes(nodes_ctl_addrs):
    if isinstance(nodes_ctl_addrs, dict):
        return list(nodes_ctl_addrs.items())
    out = []
    for i, x in enumerate(nodes_ctl_addrs):
        out.append(tuple(x) if isinstance(x, (tuple, list)) else ("n%d" % i, x))
    return out


def _ask(addr, code, ext=None, body=b"", timeout=2.0):
    try:
        return cc.once(addr, code, ext, body, timeout=timeout)
    except cc.RemotingError:
        return None


def view(addr, sets):
    out = {"metadata": None, "replica_info": {}, "sync_state": None}
    r = _ask(addr, cc.GET_METADATA_INFO)
    if r is not None and r.code == 0:
        out["metadata"] = dict(r.ext)
    for s in sets:
        r = _ask(addr, cc.GET_REPLICA_INFO, {"brokerName": s})
        out["replica_info"][s] = None if r is None else {
            "code": r.code, "value": cc.replica_state(r) if r.code == 0 else {}}
    r = _ask(addr, cc.GET_SYNC_STATE_DATA, body=json.dumps(list(sets)).encode())
    out["sync_state"] = None if r is None else {
        "code": r.code, "value": sync_state_value(r) if r.code == 0 else {}}
    return out


def collect(nodes_ctl_addrs, sets, rundir, wait=20.0):
    nodes = _nodes(nodes_ctl_addrs)
    by_addr = {a: n for n, a in nodes}
    deadline = time.time() + wait
    leader = None
    while True:
        votes = {}
        for _n, a in nodes:
            r = _ask(a, cc.GET_METADATA_INFO, timeout=1.0)
            if r is not None and r.code == 0 and r.ext.get("controllerLeaderAddress"):
                la = r.ext["controllerLeaderAddress"]
                votes[la] = votes.get(la, 0) + 1
        best = max(votes.items(), key=lambda kv: kv[1]) if votes else None
        if best and best[1] * 2 > len(nodes) and best[0] in by_addr:
            ok = True
            for s in sets:
                r = _ask(best[0], cc.GET_REPLICA_INFO, {"brokerName": s})
                if r is None or r.code not in (0, 2008):
                    ok = False
            if ok:
                leader = by_addr[best[0]]
                break
        if time.time() > deadline:
            break
        time.sleep(0.5)
    truth = {"t": time.time(), "leader": leader, "sets": {}, "nodes": {}}
    for n, a in nodes:
        truth["nodes"][n] = view(a, sets)
    if leader is not None:
        lv = truth["nodes"][leader]
        for s in sets:
            ri = lv["replica_info"].get(s)
            if ri is None or ri["code"] != 0:
                truth["sets"][s] = None
                continue
            st = dict(ri["value"])
            ss = ((lv.get("sync_state") or {}).get("value") or {}).get(s)
            if ss:
                st["ids"], st["alive"] = ss["ids"], ss["alive"]
            truth["sets"][s] = st
    truth["t_end"] = time.time()
    os.makedirs(rundir, exist_ok=True)
    tmp = os.path.join(rundir, "truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(rundir, "truth.json"))
    return truth


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("rundir")
    p.add_argument("--controllers", required=True)
    p.add_argument("--set", action="append", required=True)
    p.add_argument("--wait", type=float, default=20.0)
    a = p.parse_args(argv)
    t = collect(cc.parse_controllers(a.controllers), a.set, a.rundir, a.wait)
    print(json.dumps({"leader": t["leader"], "sets": t["sets"]}, sort_keys=True))
    return 0 if t["leader"] else 1


if __name__ == "__main__":
    sys.exit(main())
