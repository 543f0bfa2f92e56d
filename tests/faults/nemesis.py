"""Nemeses of the fault harness (issue 24): each one starts a fault on a Topology and heals it.

    nem = make("partition-leader-minority")
    detail = nem.start(topo, rng)      # logs {"type": "start", "fault": name, "detail": ...}
    ...
    nem.stop(topo)                     # heals, logs {"type": "stop", ...}

Every nemesis is bounded by its caller (the schedule's duration) and its stop() always heals
(idempotent; Topology.close() tears everything down anyway). Targets are picked from the
observer's view at start time (the controller leader, the broker master) or at random from the
seed's rng.

Faults:
  partition-leader-minority  the controller leader alone (peers only, or also its brokers)
  partition-leader-majority  the leader with one follower; the other follower alone
  partition-bridge           two halves that only the bridge node sees both of
  partition-random           random halves over controllers and brokers (#7017, #6662)
  cut-oneway                 one direction of leader<->followers dropped
  asym-master-4800           only the controller leader loses the broker master (#4800)
  loss                       nft numgen random drop of one node's packets
  delay                      every TCP byte to/from one node delayed (relay.py)
  kill-leader / kill-follower / kill-any   kill -9, restart on the same store at stop
  pause-leader / pause-follower   SIGSTOP ... SIGCONT, longer than the election timeout
  clock-jump                 a node's wall clock (or monotonic too) steps (libfaketime)
  disk-full                  a node's store tmpfs filled to the last byte, freed at stop
  fsync-fail                 a node's fsync/fdatasync fail with EIO (LD_PRELOAD shim)
  kill-broker-master         the master replica kill -9, restarted at stop
  pause-broker-master        the master replica SIGSTOPped: a silent master (#9717, #10416)
  kill-broker-slave          a slave replica kill -9 (#7219)
  double-kill-7689           controller leader and broker master kill -9 together (#7689)
"""

import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import topology as topo_mod  # noqa: E402

try:
    from history import Nemesis as _HistNemesis  # CHECKER's writer
except Exception:  # pragma: no cover - history.py not there yet
    _HistNemesis = None

NODES = topo_mod.NODES
BROKERS = topo_mod.BROKERS


class Log:
    """nemesis.jsonl writer (CHECKER's history.Nemesis when present)."""

    def __init__(self, rundir):
        import json
        self.json = json
        self.path = os.path.join(rundir, "history", "nemesis.jsonl")
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.h = _HistNemesis(rundir) if _HistNemesis else None

    def _write(self, typ, fault, detail):
        if self.h:
            return (self.h.start if typ == "start" else self.h.stop)(fault, **detail)
        rec = {"t": time.time(), "proc": "nemesis", "type": typ, "fault": fault, "detail": detail}
        with open(self.path, "a") as f:
            f.write(self.json.dumps(rec) + "\n")
        return rec

    def start(self, fault, **detail):
        return self._write("start", fault, detail)

    def stop(self, fault, **detail):
        return self._write("stop", fault, detail)


def _leader(topo, timeout=10):
    lid = topo.wait_leader(timeout)
    return lid


def _followers(leader):
    return [n for n in NODES if n != leader]


def _master(topo, timeout=10):
    m = topo.wait_master(timeout)
    return m[0] if m else None


class Nemesis:
    name = "?"
    needs = {}  # topology options (faketime, disk_mb)

    def __init__(self, **params):
        self.params = params
        self.active = False
        self.detail = {}

    def start(self, topo, rng, log):
        self.topo, self.rng, self.log = topo, rng, log
        self.detail = self._start() or {}
        self.active = True
        self.detail.setdefault("params", self.params)
        log.start(self.name, **self.detail)
        return self.detail

    def stop(self):
        if not self.active:
            return
        self.active = False
        extra = self._stop() or {}
        d = dict(self.detail)
        d.update(extra)
        self.log.stop(self.name, **d)

    def _start(self):
        raise NotImplementedError

    def _stop(self):
        self.topo.net.heal()


class Partition(Nemesis):
    def groups(self):
        raise NotImplementedError

    def _start(self):
        groups, d = self.groups()
        self.topo.net.partition(groups)
        d["groups"] = groups
        return d


class LeaderMinority(Partition):
    """The leader alone. scope=peers: only controller links; scope=all: the leader also loses
    every broker and the clients (the brokers keep the majority)."""
    name = "partition-leader-minority"

    def groups(self):
        lead = _leader(self.topo)
        scope = self.params.get("scope") or self.rng.choice(["peers", "all"])
        fol = _followers(lead or "n0")
        if scope == "all":
            g = [[lead], fol + BROKERS + ["c"]]
        else:
            g = [[lead], fol]
        return g, {"leader": lead, "scope": scope}


class LeaderMajority(Partition):
    name = "partition-leader-majority"

    def groups(self):
        lead = _leader(self.topo)
        fol = _followers(lead or "n0")
        self.rng.shuffle(fol)
        with_brokers = self.params.get("brokers", self.rng.random() < 0.5)
        minority = [fol[1]]
        if with_brokers:  # the master broker goes with the minority follower
            m = _master(self.topo, 5)
            if m:
                minority.append(m)
        return [[lead, fol[0]], minority], {"leader": lead, "minority": minority}


class Bridge(Partition):
    """n_a <-> bridge <-> n_b; the leader is one end (unless end=follower)."""
    name = "partition-bridge"

    def groups(self):
        lead = _leader(self.topo) or "n0"
        fol = _followers(lead)
        self.rng.shuffle(fol)
        where = self.params.get("leader_at") or self.rng.choice(["end", "bridge"])
        if where == "bridge":
            bridge, a, b = lead, fol[0], fol[1]
        else:
            bridge, a, b = fol[0], lead, fol[1]
        return [[a, bridge], [bridge, b]], {"leader": lead, "bridge": bridge}


class RandomHalves(Partition):
    """Random halves over controllers, brokers and the reader (#7017 / #6662 shapes)."""
    name = "partition-random"

    def groups(self):
        everyone = NODES + BROKERS + ["c"]
        while True:
            a = [x for x in everyone if self.rng.random() < 0.5]
            b = [x for x in everyone if x not in a]
            if a and b and any(n in a for n in NODES) and any(n in b for n in NODES):
                break
        return [a, b], {"leader": self.topo.leader()}


class OneWay(Nemesis):
    """direction=out: the leader's packets to its followers dropped (it still hears them);
    direction=in: the followers' packets to the leader dropped."""
    name = "cut-oneway"

    def _start(self):
        lead = _leader(self.topo) or "n0"
        direction = self.params.get("direction") or self.rng.choice(["out", "in"])
        for f in _followers(lead):
            if direction == "out":
                self.topo.net.cut(lead, f)
            else:
                self.topo.net.cut(f, lead)
        return {"leader": lead, "direction": direction}


class Asym4800(Nemesis):
    """Only the controller leader loses the broker master (both ways); the followers and the
    other replicas still see it (apache/rocketmq#4800)."""
    name = "asym-master-4800"

    def _start(self):
        lead = _leader(self.topo) or "n0"
        m = _master(self.topo) or "b0"
        self.topo.net.partition([[lead], [m]])
        return {"leader": lead, "master": m}


def _leader_or_any(nemesis):
    """The node a network fault hits: the leader or any node, as the params (or the seed) say."""
    target = nemesis.params.get("target") or nemesis.rng.choice(["leader", "any"])
    node = _leader(nemesis.topo) if target == "leader" else nemesis.rng.choice(NODES)
    return node or "n0"


class Loss(Nemesis):
    name = "loss"

    def _start(self):
        node = _leader_or_any(self)
        pct = int(self.params.get("percent") or self.rng.choice([20, 35, 50]))
        self.topo.net.loss(node, pct)
        return {"node": node, "percent": pct}


class Delay(Nemesis):
    name = "delay"

    def _start(self):
        node = _leader_or_any(self)
        ms = int(self.params.get("ms") or self.rng.choice([150, 300, 600]))
        jitter = int(self.params.get("jitter_ms", ms // 3))
        peers = NODES if self.params.get("peers_only", True) else None
        self.topo.net.delay(node, ms, jitter, peers=peers)
        return {"node": node, "ms": ms, "jitter_ms": jitter}


class Kill(Nemesis):
    """kill -9 a controller node (which=leader|follower|any); restarted on its store at stop."""
    name = "kill"

    def _start(self):
        which = self.params.get("which") or "any"
        lead = _leader(self.topo)
        if which == "leader":
            node = lead or "n0"
        elif which == "follower":
            node = self.rng.choice(_followers(lead or "n0"))
        else:
            node = self.rng.choice(NODES)
        self.node = node
        self.topo.nodes[node].kill9()
        return {"node": node, "leader": lead, "which": which}

    def _stop(self):
        self.topo.nodes[self.node].start()
        return {"restarted": self.node}


class Pause(Nemesis):
    name = "pause"

    def _start(self):
        which = self.params.get("which") or "leader"
        lead = _leader(self.topo)
        node = (lead or "n0") if which == "leader" else self.rng.choice(_followers(lead or "n0"))
        self.node = node
        self.topo.nodes[node].pause()
        return {"node": node, "leader": lead, "which": which}

    def _stop(self):
        self.topo.nodes[self.node].resume()


class ClockJump(Nemesis):
    """Steps a node's clock by `seconds` (libfaketime, re-read every second); back at stop."""
    name = "clock-jump"
    needs = {"faketime": "wall"}

    def _start(self):
        which = self.params.get("which") or self.rng.choice(["leader", "any"])
        lead = _leader(self.topo)
        node = (lead or "n0") if which == "leader" else self.rng.choice(NODES)
        secs = int(self.params.get("seconds") or self.rng.choice([-3600, -30, 30, 600, 86400]))
        self.node = node
        self.topo.nodes[node].clock_jump(secs)
        return {"node": node, "seconds": secs, "leader": lead,
                "clock": self.topo.nodes[node].faketime}

    def _stop(self):
        self.topo.nodes[self.node].clock_reset()


class DiskFull(Nemesis):
    """The node's store tmpfs filled: log appends and fsyncs fail with ENOSPC."""
    name = "disk-full"
    needs = {"disk_mb": 16}

    def _start(self):
        which = self.params.get("which") or self.rng.choice(["leader", "follower"])
        lead = _leader(self.topo)
        node = (lead or "n0") if which == "leader" else self.rng.choice(_followers(lead or "n0"))
        self.node = node
        self.log_off = self.topo.nodes[node].log_size()
        self.topo.nodes[node].fill_disk()
        return {"node": node, "leader": lead, "which": which,
                "free_bytes": self.topo.nodes[node].disk_free()}

    def _stop(self):
        n = self.topo.nodes[self.node]
        n.free_disk()
        restarted = False
        core_stopped = n.core_stopped_since(self.log_off)
        if not n.alive() or core_stopped or self.params.get("restart"):
            # a node whose raft core quit on ENOSPC is restarted on its store (an operator
            # frees the disk and restarts it); a node that survived is left running
            n.restart()
            restarted = True
        return {"restarted": restarted, "core_stopped": core_stopped}


class FsyncFail(Nemesis):
    """The node's fsync/fdatasync return EIO (an LD_PRELOAD shim, nodes.FSYNC_SHIM_C): the
    write went to the page cache but is not durable, as on a failing disk."""
    name = "fsync-fail"
    needs = {"fsync_fault": True}

    def _start(self):
        which = self.params.get("which") or self.rng.choice(["leader", "follower"])
        lead = _leader(self.topo)
        node = (lead or "n0") if which == "leader" else self.rng.choice(_followers(lead or "n0"))
        self.node = node
        self.log_off = self.topo.nodes[node].log_size()
        self.topo.nodes[node].fail_fsync(True)
        return {"node": node, "leader": lead, "which": which}

    def _stop(self):
        n = self.topo.nodes[self.node]
        n.fail_fsync(False)
        restarted = False
        core_stopped = n.core_stopped_since(self.log_off)
        if not n.alive() or core_stopped or self.params.get("restart"):
            n.restart()
            restarted = True
        return {"restarted": restarted, "core_stopped": core_stopped}


class KillBrokerMaster(Nemesis):
    name = "kill-broker-master"

    def _start(self):
        m = self.topo.master()
        b = m[0] if m else self.rng.choice(BROKERS)
        self.b = b
        self.topo.kill_broker(b)
        return {"broker": b, "masterId": m[1] if m else None, "epoch": m[2] if m else None}

    def _stop(self):
        if self.params.get("restart", True):
            self.topo.start_broker(self.b)


class PauseBrokerMaster(Nemesis):
    """The master replica stops heartbeating but keeps its connections (SIGSTOP): the silent
    master that the inactive-master scan must replace (#9717, #10416)."""
    name = "pause-broker-master"

    def _start(self):
        m = self.topo.master()
        b = m[0] if m else self.rng.choice(BROKERS)
        self.b = b
        p = self.topo.brokers.get(b)
        if p and p.poll() is None:
            os.killpg(p.pid, signal.SIGSTOP)
        return {"broker": b, "masterId": m[1] if m else None, "epoch": m[2] if m else None}

    def _stop(self):
        p = self.topo.brokers.get(self.b)
        if p and p.poll() is None:
            os.killpg(p.pid, signal.SIGCONT)


class KillBrokerSlave(Nemesis):
    name = "kill-broker-slave"

    def _start(self):
        m = self.topo.master()
        slaves = [b for b in BROKERS if not m or b != m[0]]
        b = self.rng.choice(slaves)
        self.b = b
        self.topo.kill_broker(b)
        if self.params.get("with_leader_kill"):
            lead = _leader(self.topo, 3)
            self.lead = lead
            if lead:
                self.topo.nodes[lead].kill9()
        return {"broker": b, "master": m[0] if m else None,
                "leader_killed": getattr(self, "lead", None)}

    def _stop(self):
        lead = getattr(self, "lead", None)
        if lead:
            self.topo.nodes[lead].start()
        self.topo.start_broker(self.b)


class DoubleKill7689(Nemesis):
    """kill -9 the controller leader and the broker master at the same instant (#7689)."""
    name = "double-kill-7689"

    def _start(self):
        lead = _leader(self.topo)
        m = self.topo.master()
        b = m[0] if m else None
        if lead:
            self.topo.nodes[lead].kill9()
        if b:
            self.topo.kill_broker(b)
        self.lead, self.b = lead, b
        return {"leader": lead, "broker": b, "masterId": m[1] if m else None,
                "epoch": m[2] if m else None}

    def _stop(self):
        if self.lead:
            self.topo.nodes[self.lead].start()
        if self.b and self.params.get("restart_broker", True):
            self.topo.start_broker(self.b)


REGISTRY = {
    "partition-leader-minority": LeaderMinority,
    "partition-leader-majority": LeaderMajority,
    "partition-bridge": Bridge,
    "partition-random": RandomHalves,
    "cut-oneway": OneWay,
    "asym-master-4800": Asym4800,
    "loss": Loss,
    "delay": Delay,
    "kill": Kill,
    "pause": Pause,
    "clock-jump": ClockJump,
    "disk-full": DiskFull,
    "fsync-fail": FsyncFail,
    "kill-broker-master": KillBrokerMaster,
    "pause-broker-master": PauseBrokerMaster,
    "kill-broker-slave": KillBrokerSlave,
    "double-kill-7689": DoubleKill7689,
}


def make(name, **params):
    cls = REGISTRY[name]
    n = cls(**params)
    return n


def needs(names_params):
    """Topology options a list of (name, params) needs: faketime, disk_mb."""
    out = {}
    for name, params in names_params:
        out.update(REGISTRY[name].needs)
        if name == "clock-jump" and params.get("clock") == "mono":
            out["faketime"] = "mono"
    return out
