"""The harness's view of the controller group (issue 24): who is leader, who is master.

The host has no route into the test network, so the observer runs inside a namespace (the
clients' `c`) as a small server: the harness writes one JSON command a line on its stdin and
reads one JSON answer a line. `Observer(net, "c", controllers)` wraps that.

A poll asks every node CONTROLLER_GET_METADATA_INFO (1005) and CONTROLLER_GET_REPLICA_INFO
(1004) for the broker set, in parallel with a short timeout:

  {"t": ..., "nodes": {"n0": {"up": true, "isLeader": true, "leaderId": "n0",
                              "replica": {"code": 0, "masterId": 1, "masterAddr": ..,
                                          "masterEpoch": 2, "sss": [1, 2], "sssEpoch": 3}},
                       "n1": {"up": false, "error": "..."}, ...}}

These observations are not part of the checked history (the clients record that); the harness
uses them to aim a nemesis (at the leader, at the master) and to wait for recovery.
Python 3 stdlib only.
"""

import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _poll_node(name, addr, set_name, timeout):
    import ctlclient as cc
    out = {"up": False}
    try:
        c = cc.Conn(addr, timeout=timeout, connect_timeout=timeout)
    except cc.RemotingError as e:
        out["error"] = str(e)
        return out
    try:
        r = c.request(cc.GET_METADATA_INFO, {})
        out["up"] = True
        out["isLeader"] = str(r.ext.get("isLeader", "false")).lower() == "true"
        out["leaderId"] = r.ext.get("controllerLeaderId") or None
        out["leaderAddr"] = r.ext.get("controllerLeaderAddress") or None
        if set_name:
            r = c.request(cc.GET_REPLICA_INFO, {"brokerName": set_name})
            rep = {"code": r.code}
            if r.code == 0:
                rep.update(cc.replica_state(r))
            else:
                rep["remark"] = r.remark
            out["replica"] = rep
    except cc.RemotingError as e:
        out["error"] = str(e)
    finally:
        c.close()
    return out


def poll(controllers, set_name, timeout=0.8):
    """controllers: [(name, addr)]."""
    res = {}
    threads = []
    for name, addr in controllers:
        def run(name=name, addr=addr):
            res[name] = _poll_node(name, addr, set_name, timeout)
        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join(timeout * 3 + 1)
    for name, _ in controllers:
        res.setdefault(name, {"up": False, "error": "poll thread stuck"})
    return {"t": time.time(), "nodes": res}


def serve(controllers):
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            cmd = json.loads(line)
            ans = poll(controllers, cmd.get("set"), cmd.get("timeout", 0.8))
        except Exception as e:  # noqa: BLE001
            ans = {"error": repr(e)}
        sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()


# ---- harness side ------------------------------------------------------------------------------
def leader_of(obs):
    """The node the group follows: the leader named by most answering nodes, if that node also
    says isLeader itself; else None. A cut-off node naming itself leader alone does not count
    (known bug 2 of the plan) unless it is the only node answering."""
    nodes = obs.get("nodes", {})
    votes = {}
    for n, o in nodes.items():
        if o.get("up") and o.get("leaderId"):
            votes[o["leaderId"]] = votes.get(o["leaderId"], 0) + 1
    if not votes:
        return None
    best = max(votes.items(), key=lambda kv: kv[1])
    lid, nvotes = best
    if nvotes < 2:
        return None
    lo = nodes.get(lid, {})
    if lo.get("up") and not lo.get("isLeader"):
        return None
    return lid


def master_of(obs, leader=None):
    """(masterId, masterAddr, masterEpoch) from the leader's replica info, or None."""
    leader = leader or leader_of(obs)
    if not leader:
        return None
    rep = obs["nodes"].get(leader, {}).get("replica") or {}
    if rep.get("code") != 0 or rep.get("masterId") is None:
        return None
    return rep["masterId"], rep.get("masterAddr"), rep.get("masterEpoch")


class Observer:
    """A persistent observer process inside namespace `ns` of `net`."""

    def __init__(self, net, ns, controllers, set_name, log_path=None):
        self.set_name = set_name
        spec = ";".join("%s=%s" % (n, a) for n, a in controllers)
        self.proc = net.popen(ns, [sys.executable, os.path.join(HERE, "observe.py"),
                                   "--serve", "--controllers", spec],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=open(log_path, "ab") if log_path else subprocess.DEVNULL,
                              text=True, bufsize=1)
        self.lock = threading.Lock()
        self.last = None

    def poll(self, timeout=0.8):
        with self.lock:
            if self.proc.poll() is not None:
                raise RuntimeError("observer exited")
            self.proc.stdin.write(json.dumps({"set": self.set_name, "timeout": timeout}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("observer exited")
        self.last = json.loads(line)
        return self.last

    def leader(self):
        return leader_of(self.poll())

    def wait(self, pred, timeout, interval=0.25):
        """Poll until pred(obs) is truthy; returns (value, obs) or (None, last obs)."""
        deadline = time.time() + timeout
        obs = None
        while True:
            obs = self.poll()
            v = pred(obs)
            if v:
                return v, obs
            if time.time() >= deadline:
                return None, obs
            time.sleep(interval)

    def close(self):
        try:
            self.proc.stdin.close()
        except Exception:
            pass
        try:
            self.proc.wait(timeout=2)
        except Exception:
            self.proc.kill()


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--controllers", required=True, help="n0=ip:p;n1=ip:p;n2=ip:p")
    ap.add_argument("--set", default=None)
    ap.add_argument("--serve", action="store_true")
    args = ap.parse_args()
    import ctlclient as cc
    controllers = cc.parse_controllers(args.controllers)
    if args.serve:
        serve(controllers)
    else:
        print(json.dumps(poll(controllers, args.set), indent=1))


if __name__ == "__main__":
    main()
