"""The building blocks the check and the benchmarks share: a controller group of our nodes, a
broker-set of three Java brokers on it, the waits for "one master" and "all in sync", the Java
client runs (e2e.sh, send-consume.sh) and one measured failover.

A failover is measured from outside only, by polling (watch.py) every 25 ms:
  process gone  (kill -9 only) the killed broker's port refuses connections: the JVM is torn
                down and its sockets closed, the earliest the controller can know;
  detection     the controller no longer reports the old master alive (1006 `alive`), or has
                already moved on;
  election      the controller reports another master with a higher master epoch (1006);
  notification  the new master's own broker reports brokerId 0 (1007): it took the role, from
                NOTIFY_BROKER_ROLE_CHANGED or its own poll;
  route         the name server's route of the sender's topic shows the new master as brokerId 0
                (105);
  first send    the end of the Java sender's OUTAGE stretch that the fault caused.
Each is milliseconds after the fault (kill -9, or SIGSTOP of the master).
"""

import os
import re
import subprocess
import time

from controller import cluster as cl
from controller import remoting, watch

BROKER_NAME = "ctl-broker"
CLUSTER_NAME = "CtlCluster"


def log(line):
    print(line, flush=True)


class Group:
    """k nodes of ours forming one controller group (embedded in name servers, or standalone)."""

    def __init__(self, c, k, standalone=False, name="group1", extra=""):
        ports, _ = cl.pick_ports(2 * k)
        self.ctl = cl.ControllerGroup(name, ports[:k])
        self.nodes = [cl.Node(c, "%s%d" % ("ctl" if standalone else "ns", i), ports[k + i], self.ctl,
                              "n%d" % i, standalone=standalone, extra=extra) for i in range(k)]

    def start(self):
        """Starts every node together; True when all booted."""
        return cl.start_all(self.nodes)

    def running(self):
        return [n for n in self.nodes if n.running()]

    def ns_list(self):
        return ";".join(n.ns_addr for n in self.nodes)

    def ctl_list(self):
        return ";".join(self.ctl.addrs)

    def node_of(self, ctl_addr):
        return next((n for n in self.nodes if n.ctl_addr == ctl_addr), None)

    def agreed_leader(self):
        """The leader address when every running node names the same one, else None."""
        names = set()
        for n in self.running():
            try:
                names.add(remoting.metadata_with_timeout(n.ctl_addr, 1.0).get("controllerLeaderAddress"))
            except remoting.RemotingError:
                return None
        return names.pop() if len(names) == 1 and None not in names else None

    def leader_ready(self, leader):
        """True when `leader` answers a leader-only request (1006) with 0."""
        try:
            remoting.sync_state_data(leader, [BROKER_NAME])
            return True
        except remoting.RemotingError:
            return False


class BrokerSet:
    """Three Java brokers of one broker-set in controller mode."""

    def __init__(self, c, group, count=3):
        _, ports = cl.pick_ports(0, count)
        self.group = group
        self.brokers = [cl.Broker(c, p, BROKER_NAME, CLUSTER_NAME, group.ns_list(), group.ctl_list())
                        for p in ports]

    def by_addr(self, addr):
        return next((b for b in self.brokers if b.addr == addr), None)

    def view(self):
        return watch.ControllerView([n.ctl_addr for n in self.group.running()], BROKER_NAME)

    def state(self):
        v = self.view()
        try:
            return v.state(), v.info()
        finally:
            v.close()

    def route_problems(self, node, info):
        """What the name server `node` shows for the set (106) that disagrees with the
        controller's ReplicasInfo: master as brokerId 0, each slave with its controller id."""
        state = watch.set_state(info)
        want = {"0": state.master_addr}
        for rid, addr in watch.replica_addrs(info).items():
            if rid != state.master_id and rid in state.alive_ids:
                want[str(rid)] = addr
        got = remoting.cluster_addrs(node.ns_addr, BROKER_NAME)
        return [] if got == want else ["%s shows %s, the controller says %s" % (node.name, got, want)]

    def wait_master(self, timeout, in_sync=1):
        """Waits until the controller has a master with every broker alive and at least in_sync
        in-sync replicas, and every running name server shows it; returns (state, info) or
        (None, last problem text)."""
        last = ["nothing yet"]

        def ready():
            state, info = self.state()
            if state is None:
                last[0] = "the controller does not know %s" % BROKER_NAME
                return None
            if state.master_id is None or len(state.alive_ids) < len(self.brokers) or len(state.in_sync_ids) < in_sync:
                last[0] = "controller: %s" % state
                return None
            problems = [p for n in self.group.running() for p in self.route_problems(n, info)]
            if problems:
                last[0] = "; ".join(problems)
                return None
            return state, info

        got = cl.wait_until("master", ready, timeout, 0.25)
        return got if got else (None, last[0])


class JavaClient:
    """e2e.sh / send-consume.sh of the java-broker package, output kept in a log."""

    def __init__(self, c, script, args, log_name):
        self.c = c
        self.argv = [os.path.join(c.java_pkg, "bin", script)] + [str(a) for a in args]
        self.log = os.path.join(c.logs, log_name)
        self.proc = None

    def start(self):
        env = dict(os.environ, JAVA_BROKER_HOME=self.c.java_home)
        with open(self.log, "wb") as o:
            self.proc = subprocess.Popen(self.argv, stdout=o, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)
        return self

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            return None

    def output(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def outages(self):
        """[(start_epoch_s, end_epoch_s, ms)] from the OUTAGE lines."""
        return [(int(a) / 1000.0, int(b) / 1000.0, int(ms))
                for a, b, ms in re.findall(r"^OUTAGE (\d+) (\d+) (\d+)$", self.output(), re.M)]

    def summary(self):
        lines = [l for l in self.output().splitlines() if re.match(r"^(SENT|RECEIVED|sent |received |missing|PASS|FAIL)", l)]
        return "; ".join(lines)

    def passed(self):
        lines = self.output().strip().splitlines()
        return bool(lines) and lines[-1] == "PASS"

    def client_log(self, lines=60):
        """This client's own lines of the Java clients' shared log (run-client.sh writes every
        client's to one file under the java-broker home; the scripts exec the JVM, so its pid is
        ours), for a failure's report."""
        path = os.path.join(self.c.java_home, "state", "client", "logs", "rocketmqlogs", "rocketmq_client.log")
        mine = " [%d] " % self.proc.pid
        try:
            with open(path, errors="replace") as f:
                picked = [l.rstrip()[:300] for l in f if mine in l]
        except OSError as e:
            return "no client log (%s)" % e
        return "\n".join(picked[-lines:]) or "no line of pid %d in %s" % (self.proc.pid, path)

    def report(self):
        """What a failed run printed besides its summary (stack traces, OUTAGE lines) and its
        client log lines."""
        out = [l for l in self.output().splitlines() if l.strip()]
        return "its output (last 60 lines):\n%s\nits client log:\n%s" % ("\n".join(out[-60:]), self.client_log())


def e2e(c, ns_list, topic, count=50, timeout=60):
    j = JavaClient(c, "e2e.sh", [ns_list, topic, count, timeout], "e2e-%s.log" % topic).start()
    j.wait(timeout + 60)
    return j


class Failover:
    """One measured fault of the current master: `fault` is "kill" (kill -9) or "stop" (SIGSTOP,
    so no connection closes and only the heartbeat timeout reveals it)."""

    def __init__(self, bset, topic, fault="kill"):
        self.bset, self.topic, self.fault = bset, topic, fault
        self.old = None
        self.new = None
        self.t0 = None
        self.segments = {}
        self.pollers = []

    def run(self, state, info, timeout):
        """Faults the master of `state`; waits until the controller and every running name
        server show a new master (or timeout). Returns a list of problems (empty: success)."""
        self.old = state
        group = self.bset.group
        ctl = watch.ControllerPoller([n.ctl_addr for n in group.running()], BROKER_NAME)
        routes = [watch.Poller("route-" + n.name, n.ns_addr, watch.route_master(self.topic, BROKER_NAME))
                  for n in group.running()]
        addrs = watch.replica_addrs(info)
        victim = self.bset.by_addr(state.master_addr)
        others = [b for b in self.bset.brokers if b is not victim and b.running()]
        roles = {b.addr: watch.Poller("role-%d" % b.port, b.addr, watch.broker_role) for b in others}
        self.pollers = [ctl] + routes + list(roles.values())
        for p in self.pollers:
            p.start()
        time.sleep(0.5)  # every poller has a first value from before the fault
        self.t0 = time.time()
        if self.fault == "kill":
            victim.kill9()
            # The JVM's teardown (threads, mapped store files) before its sockets close is the
            # operating system's part of the failover, not the controller's.
            self.segments["process_gone"] = round((time.time() - self.t0) * 1000)
        else:
            victim.sigstop()
        self.victim = victim

        def moved(v):
            return isinstance(v, watch.SetState) and v.master_id not in (None, state.master_id) \
                and (v.master_epoch or 0) > (state.master_epoch or 0)

        deadline = time.monotonic() + timeout
        new = None
        while time.monotonic() < deadline:
            t = ctl.first(moved, self.t0)
            if t is not None:
                new = next(v for tt, v in ctl.history() if tt >= t and moved(v))
                if all(r.first(lambda a: a == new.master_addr, self.t0) for r in routes):
                    break
            time.sleep(0.05)
        time.sleep(0.3)
        for p in self.pollers:
            p.stop()
        problems = []
        if new is None:
            problems.append("no new master in the controller within %.0f s (last: %s)" % (timeout, ctl.last_value()))
            return problems
        self.new = new
        ms = lambda t: None if t is None else round((t - self.t0) * 1000)
        self.segments["detection"] = ms(ctl.first(
            lambda v: isinstance(v, watch.SetState) and (state.master_id not in v.alive_ids or moved(v)), self.t0))
        self.segments["election"] = ms(ctl.first(moved, self.t0))
        nb = roles.get(new.master_addr)
        self.segments["notification"] = ms(nb.first(lambda v: isinstance(v, tuple) and v and v[0] == 0, self.t0)) if nb else None
        route_ts = [r.first(lambda a: a == new.master_addr, self.t0) for r in routes]
        self.segments["route"] = None if None in route_ts else ms(max(route_ts))
        if None in route_ts:
            problems.append("the new master %s is not shown as brokerId 0 by %s" % (
                new.master_addr, ", ".join(n.name for n, t in zip(group.running(), route_ts) if t is None)))
        if new.master_id not in state.in_sync_ids:
            problems.append("the new master %s was not in the in-sync set %s" % (new.master_id, sorted(state.in_sync_ids)))
        if new.master_addr != addrs.get(new.master_id):
            problems.append("the new master's address %s is not replica %s's %s" % (
                new.master_addr, new.master_id, addrs.get(new.master_id)))
        self.routes = routes
        return problems

    def first_send(self, sender):
        """ms from the fault to the end of the sender's outage that the fault caused."""
        for start, end, _ in sender.outages():
            if end > self.t0:
                return round((end - self.t0) * 1000)
        return None

    def route_history_after(self, t):
        """Addresses each name server's route showed as brokerId 0 after time t."""
        return {r.name: [(round((tt - self.t0) * 1000), v) for tt, v in r.history() if tt > t] for r in self.routes}

    def result_line(self, label, sender=None):
        seg = dict(self.segments)
        if sender is not None:
            seg["first_send"] = self.first_send(sender)
        parts = ["%s %s" % (k.replace("_", " "), "n/a" if v is None else "+%d ms" % v) for k, v in seg.items()]
        return "RESULT %s: master %s -> %s (epoch %s -> %s): %s" % (
            label, self.old.master_id, self.new.master_id if self.new else "?",
            self.old.master_epoch, self.new.master_epoch if self.new else "?", ", ".join(parts))
