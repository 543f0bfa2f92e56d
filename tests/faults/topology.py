"""One test group (issue 24): 3 controller nodes, the 3 replicas of one broker set, a reader.

Namespaces n0 n1 n2 (namesrv + embedded controller), b0 b1 b2 (CHECKER's brokersim.py, one
replica each), c (reader.py, the observer, truth.py). Everything is torn down by close().

    with Topology("a1", rundir, seed=7) as topo:
        topo.start_nodes(); topo.wait_leader()
        topo.start_clients(duration=60)
        ...
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import netns  # noqa: E402
import nodes as nodes_mod  # noqa: E402
import observe  # noqa: E402

NODES = ["n0", "n1", "n2"]
BROKERS = ["b0", "b1", "b2"]
CLIENT = "c"
BROKER_PORT = 10911
HB_MS = 500
HB_TIMEOUT_MS = 3000


class Topology:
    def __init__(self, tag, rundir, seed=0, faketime=False, disk_mb=0, disk_nodes=None,
                 set_name="setA", cluster="faults", extra_conf=None, with_sim=True,
                 fsync_fault=False):
        self.rundir = os.path.abspath(rundir)
        self.seed = seed
        self.set_name = set_name
        self.cluster = cluster
        self.with_sim = with_sim
        os.makedirs(os.path.join(self.rundir, "history"), exist_ok=True)
        os.makedirs(os.path.join(self.rundir, "logs"), exist_ok=True)
        self.logdir = os.path.join(self.rundir, "logs")
        nodes_mod.sweep_mounts()
        self.net = netns.Net(tag, NODES + BROKERS + [CLIENT])
        self.nodes = {}
        self.brokers = {}  # name -> Popen
        self.broker_starts = {}
        self.reader = None
        self.observer = None
        self.duration = 0
        self.t_clients_end = 0
        try:
            for n in NODES:
                dn = disk_nodes if disk_nodes is not None else NODES
                self.nodes[n] = nodes_mod.Node(
                    self.net, n, NODES, os.path.join(self.rundir, "nodes"),
                    extra_conf=extra_conf, faketime=faketime,
                    disk_mb=disk_mb if n in dn else 0, fsync_fault=fsync_fault)
        except BaseException:
            self.close()
            raise

    # ---- addresses ----------------------------------------------------------------------------
    def controllers_spec(self, named=False):
        if named:
            return ";".join("%s=%s" % (n, self.nodes[n].ctl_addr) for n in NODES)
        return ";".join(self.nodes[n].ctl_addr for n in NODES)

    def controllers(self):
        return [(n, self.nodes[n].ctl_addr) for n in NODES]

    def broker_addr(self, b):
        return "%s:%d" % (self.net.ip(b), BROKER_PORT)

    def broker_of_addr(self, addr):
        if not addr:
            return None
        return self.net.name_of(addr.rsplit(":", 1)[0])

    # ---- controller nodes ---------------------------------------------------------------------
    def start_nodes(self):
        for n in NODES:
            self.nodes[n].start()
        for n in NODES:
            if not self.nodes[n].wait_port(30):
                raise RuntimeError("%s did not open its controller port; log tail:\n%s"
                                   % (n, "\n".join(self.nodes[n].log_tail())))
        self.observer = observe.Observer(self.net, CLIENT, self.controllers(), self.set_name,
                                         os.path.join(self.logdir, "observer.log"))

    def obs(self):
        return self.observer.poll()

    def leader(self):
        return observe.leader_of(self.obs())

    def wait_leader(self, timeout=30):
        v, obs = self.observer.wait(observe.leader_of, timeout)
        return v

    def master(self):
        """(broker namespace, master id, epoch) per the leader, or None."""
        m = observe.master_of(self.obs())
        if not m:
            return None
        return self.broker_of_addr(m[1]), m[0], m[2]

    def replica(self):
        """The leader's GET_REPLICA_INFO answer for the set (dict), or None."""
        obs = self.obs()
        lead = observe.leader_of(obs)
        if not lead:
            return None
        rep = obs["nodes"].get(lead, {}).get("replica") or {}
        return rep if rep.get("code") == 0 else None

    def wait_sss(self, size, timeout):
        """Wait until the set has a master and at least `size` replicas in sync."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            rep = self.replica()
            if rep and rep.get("masterId") is not None and len(rep.get("sss") or []) >= size:
                return rep
            time.sleep(0.3)
        return None

    def wait_master(self, timeout=30, not_epoch=None):
        """Wait until the leader reports a master (with an epoch other than not_epoch, if
        given) whose broker process is alive; returns (broker, id, epoch) or None."""
        def pred(obs):
            m = observe.master_of(obs)
            if not m:
                return None
            b = self.broker_of_addr(m[1])
            if not_epoch is not None and m[2] == not_epoch:
                return None
            if b in self.brokers and self.brokers[b].poll() is not None:
                return None
            return (b, m[0], m[2])
        v, _ = self.observer.wait(pred, timeout)
        return v

    # ---- clients ------------------------------------------------------------------------------
    def start_broker(self, b, duration=None):
        if b in self.brokers and self.brokers[b].poll() is None:
            return
        duration = duration if duration is not None else max(5, self.t_clients_end - time.time())
        self.broker_starts[b] = self.broker_starts.get(b, 0) + 1
        seed = self.seed * 100 + BROKERS.index(b) * 10 + self.broker_starts[b]
        argv = [sys.executable, os.path.join(HERE, "brokersim.py"), "--proc", b,
                "--cluster", self.cluster, "--name", self.set_name, "--addr", self.broker_addr(b),
                "--controllers", self.controllers_spec(), "--history",
                os.path.join(self.rundir, "history", "%s.jsonl" % b),
                "--duration", "%.1f" % duration, "--seed", str(seed),
                "--hb-ms", str(HB_MS), "--hb-timeout-ms", str(HB_TIMEOUT_MS),
                "--alter-prob", "0.5",
                "--state", os.path.join(self.rundir, "brokers", "%s.identity" % b)]
        os.makedirs(os.path.join(self.rundir, "brokers"), exist_ok=True)
        log = open(os.path.join(self.logdir, "%s.log" % b), "ab")
        self.brokers[b] = self.net.popen(b, argv, stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def kill_broker(self, b):
        p = self.brokers.get(b)
        if p and p.poll() is None:
            netns._killpg(p)

    def start_clients(self, duration):
        self.duration = duration
        self.t_clients_end = time.time() + duration
        for b in BROKERS:
            self.start_broker(b, duration)
        argv = [sys.executable, os.path.join(HERE, "reader.py"), "--proc", "r0",
                "--controllers", self.controllers_spec(), "--set", self.set_name,
                "--history", os.path.join(self.rundir, "history", "r0.jsonl"),
                "--duration", "%.1f" % duration, "--seed", str(self.seed)]
        log = open(os.path.join(self.logdir, "r0.log"), "ab")
        self.reader = self.net.popen(CLIENT, argv, stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def stop_clients(self, timeout=8):
        procs = [p for p in list(self.brokers.values()) + [self.reader] if p is not None]
        for p in procs:
            if p.poll() is None:
                try:
                    p.terminate()  # brokersim/reader: SIGTERM = clean stop
                except Exception:
                    pass
        deadline = time.time() + timeout
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                netns._killpg(p)

    def truth(self, wait=20):
        """truth.py inside the client namespace; returns (rc, output)."""
        r = self.net.run(CLIENT, [sys.executable, os.path.join(HERE, "truth.py"), self.rundir,
                                  "--controllers", self.controllers_spec(named=True),
                                  "--set", self.set_name, "--wait", str(wait)],
                         timeout=wait + 30, check=False)
        return r.returncode, (r.stdout + r.stderr).strip()

    # ---- teardown -----------------------------------------------------------------------------
    def close(self):
        try:
            if self.observer:
                self.observer.close()
        except Exception:
            pass
        try:
            self.stop_clients(timeout=2)
        except Exception:
            pass
        for n in self.nodes.values():
            try:
                n.close()
            except Exception as e:
                print("topology: closing %s: %s" % (n.name, e), file=sys.stderr)
        self.net.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
