"""Processes of a controller test: our name servers (with an embedded controller node, or a
standalone controller) and Java 5.3.3 brokers in controller mode, each stopped by its PID.

Everything lives under one work directory: `<work>/<name>/` holds a node's files,
`<work>/logs/<name>.out|.err` its output, `<work>/brokers/broker-PORT/` a broker's state
(store, identity and epoch files, broker.conf, logs). `Cluster.close()` stops whatever is still
running, stopped brokers included (SIGCONT first, so a SIGSTOPped one can die).
"""

import os
import random
import signal
import socket
import subprocess
import threading
import time

from controller import remoting


def log(line):
    print(line, flush=True)


def pick_ports(n, broker_ports=0):
    """n free loopback ports, plus broker_ports remoting ports P with P-2, P and P+1 free, chosen
    10 apart in 20002-32000 (below the usual ephemeral range, as the README of java-broker asks)."""
    held, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        held.append(s)
        ports.append(s.getsockname()[1])
    for s in held:
        s.close()
    taken = set(ports)
    rng = random.Random()
    brokers = []
    for _ in range(2000):
        if len(brokers) == broker_ports:
            break
        p = rng.randrange(2000, 3200) * 10 + 1  # ...1: P-2 .. P+1 stay inside one decade
        span = {p - 2, p - 1, p, p + 1}
        if span & taken or not all(_free(q) for q in (p - 2, p, p + 1)):
            continue
        taken |= set(range(p - 5, p + 6))
        brokers.append(p)
    if len(brokers) < broker_ports:
        raise RuntimeError("found no free loopback ports for %d brokers" % broker_ports)
    return ports, brokers


def _free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def alive(pid):
    """True while pid runs (a zombie or a missing process is not running)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_until(what, fn, timeout, interval=0.2):
    """Calls fn until it returns a true value (returned) or timeout seconds pass (then None).
    RemotingError and OSError from fn count as "not yet"; `what` only names the wait."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            v = fn()
            if v:
                return v
        except (remoting.RemotingError, OSError):
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


class Node:
    """One name server process of ours: with `ctl` (a ControllerGroup node id) it embeds that
    controller node; with standalone=True it runs `namesrv --controller` and serves only it."""

    def __init__(self, cluster, name, ns_port, group=None, self_id=None, standalone=False, extra=""):
        self.cluster, self.name, self.ns_port = cluster, name, ns_port
        self.group, self.self_id, self.standalone, self.extra = group, self_id, standalone, extra
        self.dir = os.path.join(cluster.work, name)
        self.proc = None
        self.starts = 0
        os.makedirs(self.dir, exist_ok=True)

    @property
    def ns_addr(self):
        return "127.0.0.1:%d" % self.ns_port

    @property
    def ctl_addr(self):
        return self.group.addr_of(self.self_id) if self.group else None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def properties(self):
        lines = ["bindAddress=127.0.0.1"]  # loopback only, the controller's listener too
        if not self.standalone:
            lines += ["listenPort=%d" % self.ns_port, "kvConfigPath=%s/kvConfig.json" % self.dir]
        lines += ["configStorePath=%s/%s.properties" % (self.dir, "controller" if self.standalone else "namesrv")]
        if self.group:
            if not self.standalone:
                lines.append("enableControllerInNamesrv=true")
            lines += [
                "controllerDLegerGroup=%s" % self.group.name,
                "controllerDLegerPeers=%s" % self.group.peers,
                "controllerDLegerSelfId=%s" % self.self_id,
                "controllerStorePath=%s/controller-store" % self.dir,
            ]
        if self.extra:
            lines.append(self.extra.strip())
        return "\n".join(lines) + "\n"

    def boot_lines(self):
        if self.standalone:
            return ["The Controller Server boot success"]
        lines = ["The Name Server boot success"]
        if self.group:
            lines.append("The ControllerManager boot success")
        return lines

    def start(self, timeout=90):
        """Starts the process and waits for its boot line(s); True on success."""
        # Boot lines of earlier runs stay in the .out file: count them.
        self.starts += 1
        conf = os.path.join(self.dir, "node.conf")
        with open(conf, "w") as f:
            f.write(self.properties())
        out = os.path.join(self.cluster.logs, self.name + ".out")
        err = os.path.join(self.cluster.logs, self.name + ".err")
        argv = [self.cluster.namesrv_bin] + (["--controller"] if self.standalone else []) + ["-c", conf]
        env = dict(os.environ, ROCKETMQ_HOME=self.dir, HOME=self.dir)
        with open(out, "ab") as o, open(err, "ab") as e:
            self.proc = subprocess.Popen(argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL, env=env)
        self.cluster.track(self)
        want = self.boot_lines()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = read_text(out)
            if all(text.count(w) >= self.starts for w in want):
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        log("%s did not boot (exit %s); last output:\n%s%s" % (
            self.name, self.proc.poll(), tail(out), tail(err)))
        return False

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self, grace=15):
        if not self.proc or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            log("%s (pid %d) ignored SIGTERM for %d s; killing it" % (self.name, self.proc.pid, grace))
            self.proc.kill()
            self.proc.wait(10)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def close(self):
        self.stop()


class ControllerGroup:
    """A controller group's identity: name, ids n0..n(k-1) and their request/peer ports."""

    def __init__(self, name, ports):
        self.name = name
        self.ids = ["n%d" % i for i in range(len(ports))]
        self.ports = dict(zip(self.ids, ports))

    def addr_of(self, node_id):
        return "127.0.0.1:%d" % self.ports[node_id]

    @property
    def peers(self):
        return ";".join("%s-%s" % (i, self.addr_of(i)) for i in self.ids)

    @property
    def addrs(self):
        return [self.addr_of(i) for i in self.ids]


class Broker:
    """A Java 5.3.3 broker in controller mode, run by java-broker's broker-start.sh."""

    def __init__(self, cluster, port, name, cluster_name, ns_list, ctl_list):
        self.cluster, self.port, self.name, self.cluster_name = cluster, port, name, cluster_name
        self.ns_list, self.ctl_list = ns_list, ctl_list
        self.state = os.path.join(cluster.work, "brokers", "broker-%d" % port)
        self.pid = None
        self.stopped = False

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def env(self, fresh):
        return dict(os.environ, JAVA_BROKER_HOME=self.cluster.java_home, RMQ_NS=self.ns_list,
                    RMQ_CONTROLLER=self.ctl_list, RMQ_BROKER_PORT=str(self.port),
                    RMQ_BROKER_NAME=self.name, RMQ_CLUSTER=self.cluster_name, RMQ_STATE=self.state,
                    RMQ_FRESH="1" if fresh else "0", RMQ_WAIT="150")

    def start(self, fresh=True):
        """Starts the broker and waits for its boot line; True on success."""
        script = os.path.join(self.cluster.java_pkg, "bin", "broker-start.sh")
        out = os.path.join(self.cluster.logs, "broker-%d.start.log" % self.port)
        with open(out, "ab") as o:
            r = subprocess.run([script], env=self.env(fresh), stdout=subprocess.PIPE, stderr=o,
                               stdin=subprocess.DEVNULL, timeout=200)
        text = r.stdout.decode().strip()
        if r.returncode != 0 or not text.isdigit():
            log("broker %s did not start (status %d):\n%s" % (self.addr, r.returncode, tail(out)))
            return False
        self.pid = int(text)
        self.stopped = False
        self.cluster.track(self)
        return True

    def running(self):
        return self.pid is not None and alive(self.pid)

    def kill9(self):
        if self.running():
            os.kill(self.pid, signal.SIGKILL)
            self.wait_gone()

    def wait_gone(self):
        """Waits until the process and its listening ports are gone: a JVM's main thread shows as
        a zombie while its other threads still exit and hold the sockets."""
        wait_until("ports closed", lambda: not any(_listening(p) for p in (self.port, self.port - 2)), 10, 0.01)
        wait_until("broker gone", lambda: not alive(self.pid), 10, 0.05)

    def sigstop(self):
        os.kill(self.pid, signal.SIGSTOP)
        self.stopped = True

    def sigcont(self):
        os.kill(self.pid, signal.SIGCONT)
        self.stopped = False

    def close(self):
        # Cleanup is fast rather than graceful: a graceful stop takes ~9 s per broker.
        if self.running():
            if self.stopped:
                os.kill(self.pid, signal.SIGCONT)
            os.kill(self.pid, signal.SIGKILL)
            self.wait_gone()


def _listening(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


class Cluster:
    """The work directory, the binaries and every process started, for cleanup."""

    def __init__(self, work, namesrv_bin, java_pkg=None, java_home=None, pids_file=None):
        self.work, self.namesrv_bin = work, namesrv_bin
        self.pids_file = pids_file or os.path.join(work, "pids")
        self.java_pkg, self.java_home = java_pkg, java_home
        self.logs = os.path.join(work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self._procs = []
        self._lock = threading.Lock()

    def track(self, p):
        """Remembers a started process for close(), and appends its PID to the pids file so that
        the caller's own cleanup can stop it even if this Python process is killed."""
        with self._lock:
            if p not in self._procs:
                self._procs.append(p)
            with open(self.pids_file, "a") as f:
                f.write("%d\n" % p.pid)

    def start_brokers(self, brokers, fresh=True):
        """Starts brokers together (as a deployment does); True when all booted."""
        return start_all(brokers, lambda b: b.start(fresh))

    def close(self):
        with self._lock:
            procs = list(reversed(self._procs))
        for p in procs:  # brokers first (started last), then the nodes
            try:
                p.close()
            except Exception as e:  # cleanup goes on whatever one process did
                log("cleanup of %s: %s" % (getattr(p, "name", p), e))


def start_all(procs, start=lambda p: p.start()):
    """Starts the processes together, one thread each, by start(p); True when every one booted."""
    ok = [False] * len(procs)

    def run(i, p):
        ok[i] = start(p)

    threads = [threading.Thread(target=run, args=(i, p)) for i, p in enumerate(procs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return all(ok)


def read_text(path):
    """A log file's text; "" when it cannot be read."""
    try:
        with open(path, "r", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def tail(path, n=25):
    """The last n lines of a log file, indented for a report."""
    return "".join("    %s\n" % l for l in read_text(path).splitlines()[-n:])
