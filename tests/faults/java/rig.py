"""One Java scenario's processes (three name servers with embedded controller nodes, three Java
brokers of one set, the Java client) and the views of the set, asked from namespace c.

Views (remoting and watch of tests/compat/controller, run in threads inside namespace c):
  state()        the controller leader's view of the set (1006): master id/address/epoch, alive
                 and in-sync ids; the leader is re-found with 1005 when it stops answering
  cluster(ns)    a name server's brokerAddrs of the set (106)
  role(broker)   a broker's own (brokerId, last epoch) (1007): brokerId 0 once it took the master role
Observers (pollers every 25-50 ms, each change time-stamped with time.time(), the Java client's
clock) record the same during a fault.
"""

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "compat"))

from controller import cluster as cl, remoting, watch  # noqa: E402  (tests/compat/controller)

from java import nsproc, nsthread  # noqa: E402

FAULTS = os.path.abspath(os.path.join(HERE, ".."))
if FAULTS not in sys.path:
    sys.path.insert(0, FAULTS)
import checker  # noqa: E402  (tests/faults: CHECKER's history, reader, truth, checker)
import history  # noqa: E402
import truth  # noqa: E402
from java.nsproc import BROKER_NAME  # noqa: E402

NODES = ["n0", "n1", "n2"]
BROKERS = ["b0", "b1", "b2"]
CLIENT = "c"
NAMES = NODES + BROKERS + [CLIENT]

NsPoller = nsthread.in_ns(watch.Poller)
NsControllerPoller = nsthread.in_ns(watch.ControllerPoller)


def wait_until(fn, timeout, interval=0.2):
    """fn() until it returns a true value (returned) or timeout s pass (None)."""
    return cl.wait_until("", fn, timeout, interval)


class Rig:
    def __init__(self, net, workdir, binary, pkg, home, profile):
        self.net, self.workdir, self.profile = net, workdir, profile
        self.pkg, self.home = pkg, home
        os.makedirs(os.path.join(workdir, "logs"), exist_ok=True)
        peers = ";".join("%s-%s:%d" % (n, net.ip(n), nsproc.CTL_PORT) for n in NODES)
        self.nodes = [nsproc.NameServer(net, n, workdir, binary, peers, n, profile) for n in NODES]
        self.brokers = [nsproc.JavaBroker(net, b, workdir, home, self.ns_list(), self.ctl_list(), profile)
                        for b in BROKERS]
        self.pool = nsthread.Pool(net, CLIENT, workers=6)
        self.c_path = nsthread.ns_path(net, CLIENT)
        self.clients = []

    # ---- addresses ------------------------------------------------------------------------------
    def ns_list(self):
        return ";".join(n.ns_addr for n in self.nodes)

    def ctl_list(self):
        return ";".join(n.ctl_addr for n in self.nodes)

    def node_of(self, ctl_addr):
        return next((n for n in self.nodes if n.ctl_addr == ctl_addr), None)

    def broker_of(self, addr):
        return next((b for b in self.brokers if b.addr == addr), None)

    def live_nodes(self):
        return [n for n in self.nodes if n.running()]

    # ---- start ----------------------------------------------------------------------------------
    def start_nodes(self):
        return cl.start_all(self.nodes)

    def start_brokers(self, fresh=True, timeout=150):
        for b in self.brokers:
            b.start(fresh)
        return wait_until(lambda: all(b.booted() for b in self.brokers), timeout, 0.2)

    def send_consume(self, topic, seconds, consume_s=60):
        sc = nsproc.SendConsume(self.net, CLIENT, self.workdir, self.pkg, self.home, self.ns_list(), topic,
                                seconds, 50, consume_s).start()
        self.clients.append(sc)
        return sc

    # ---- views (from namespace c) ---------------------------------------------------------------
    def ask(self, fn, *args, timeout=15):
        return self.pool.call(fn, *args, timeout=timeout)

    def metadata(self, node, timeout=1.0):
        return self.ask(remoting.metadata_with_timeout, node.ctl_addr, timeout)

    def agreed_leader(self, nodes=None):
        """The leader address every given (running) node names, else None."""
        names = set()
        for n in nodes or self.live_nodes():
            try:
                names.add(self.metadata(n).get("controllerLeaderAddress"))
            except remoting.RemotingError:
                return None
        return names.pop() if len(names) == 1 and None not in names else None

    def leader_ready(self, addr):
        try:
            self.ask(remoting.sync_state_data, addr, [BROKER_NAME])
            return True
        except remoting.RemotingError:
            return False

    def state(self, nodes=None):
        """(SetState or None, ReplicasInfo or None) from the leader the given nodes name."""
        addrs = [n.ctl_addr for n in (nodes or self.live_nodes())]

        def get():
            v = watch.ControllerView(addrs, BROKER_NAME)
            try:
                info = v.info()
                return (watch.set_state(info) if info else None), info
            finally:
                v.close()

        return self.ask(get)

    def cluster(self, node):
        return self.ask(remoting.cluster_addrs, node.ns_addr, BROKER_NAME)

    def route(self, node, topic):
        return self.ask(remoting.route_addrs, node.ns_addr, topic, BROKER_NAME)

    def role(self, broker):
        def get():
            c = remoting.Client(broker.addr, timeout=1.0)
            try:
                return watch.broker_role(c)
            finally:
                c.close()

        return self.ask(get)

    def route_problems(self, node, info):
        state = watch.set_state(info)
        want = {"0": state.master_addr}
        for rid, addr in watch.replica_addrs(info).items():
            if rid != state.master_id and rid in state.alive_ids:
                want[str(rid)] = addr
        got = self.cluster(node)
        return [] if got == want else ["%s shows %s, the controller says %s" % (node.ns, got, want)]

    def wait_master(self, timeout, in_sync=1, nodes=None):
        """Until the controller has a master, every broker alive, >= in_sync in sync, and every
        running name server shows it; (state, info) or (None, last problem)."""
        last = ["nothing yet"]

        def ready():
            state, info = self.state(nodes)
            if state is None:
                last[0] = "the controller does not know %s" % BROKER_NAME
                return None
            if state.master_id is None or len(state.alive_ids) < len(self.brokers) or len(state.in_sync_ids) < in_sync:
                last[0] = "controller: %s" % state
                return None
            problems = [p for n in (nodes or self.live_nodes()) for p in self.route_problems(n, info)]
            if problems:
                last[0] = "; ".join(problems)
                return None
            return state, info

        got = wait_until(ready, timeout, 0.25)
        return got if got else (None, last[0])

    # ---- the recorded history (tests/faults/history.py) -----------------------------------------
    def start_readers(self, namespaces):
        """reader.py (CHECKER's linearizability reader: 1004/1005/1006 to random controller
        nodes) in each namespace, appending to <workdir>/history/r<i>.jsonl until stop_readers."""
        hdir = os.path.join(self.workdir, "history")
        os.makedirs(hdir, exist_ok=True)
        ctl = ";".join("%s=%s" % (n.ns, n.ctl_addr) for n in self.nodes)
        self.readers = []
        for i, ns in enumerate(namespaces):
            r = nsproc.Proc(self.net, ns, os.path.join(self.workdir, "logs", "reader-r%d-%s.log" % (i, ns)))
            r._popen([sys.executable, os.path.join(FAULTS, "reader.py"), "--proc", "r%d" % i, "--controllers", ctl,
                      "--set", BROKER_NAME, "--history", os.path.join(hdir, "r%d.jsonl" % i),
                      "--duration", "900", "--seed", str(i), "--interval-ms", "50"])
            self.readers.append(r)

    def stop_readers(self):
        for r in getattr(self, "readers", []):
            r.signal(15)
        for r in getattr(self, "readers", []):
            try:
                r.proc.wait(10)
            except Exception:
                r.kill9()

    def nemesis(self):
        if not hasattr(self, "_nemesis"):
            self._nemesis = history.Nemesis(self.workdir)
        return self._nemesis

    def check_history(self):
        """truth.json from every node (asked from c), config.json, then checker.check: the
        list of checker Violations."""
        self.stop_readers()
        self.ask(truth.collect, {n.ns: n.ctl_addr for n in self.nodes}, [BROKER_NAME], self.workdir, 20.0, timeout=60)
        import json
        with open(os.path.join(self.workdir, "config.json"), "w") as f:
            json.dump({"enableElectUncleanMaster": False, "controllers": NODES}, f)
        return checker.check(self.workdir)

    # ---- observers ------------------------------------------------------------------------------
    def observers(self, topic):
        return Observers(self, topic)

    def close(self):
        for p in getattr(self, "readers", []) + self.clients + list(reversed(self.brokers)) + self.nodes:
            try:
                p.close()
            except Exception as e:  # cleanup goes on
                print("cleanup of %s: %s" % (p.ns, e), flush=True)
        self.pool.close()


class Observers:
    """Pollers of the controller view, of every name server's route of `topic` (105: the address
    shown as brokerId 0) and of every broker's own role (1007), all from namespace c."""

    def __init__(self, rig, topic):
        self.rig = rig
        p = rig.c_path
        self.ctl = NsControllerPoller(p, [n.ctl_addr for n in rig.nodes], BROKER_NAME, 0.025)
        self.routes = {n.ns: NsPoller(p, "route-" + n.ns, n.ns_addr, watch.route_master(topic, BROKER_NAME), 0.025)
                       for n in rig.nodes}
        self.roles = {b.addr: NsPoller(p, "role-" + b.ns, b.addr, watch.broker_role, 0.05) for b in rig.brokers}
        self.extra = []

    def all(self):
        return [self.ctl] + list(self.routes.values()) + list(self.roles.values()) + self.extra

    def start(self):
        for p in self.all():
            p.start()
        time.sleep(0.5)  # a first value of each before the fault
        return self

    def stop(self):
        for p in self.all():
            p.halt = True
            p._halt.set()
        for p in self.all():
            p.join(5)
