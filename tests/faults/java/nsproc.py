"""The processes of a Java scenario, each started inside its namespace with Net.popen (its own
process group, killed by Net.close() whatever happens):

  NameServer   our namesrv with an embedded controller node (n0..n2), on the namespace's address
  JavaBroker   an Apache RocketMQ 5.3.3 broker in controller mode (b0..b2)
  SendConsume  java-broker's SendConsume client (c): keyed sends for SECONDS, then consumes

java-broker's broker-start.sh and run-client.sh insist on loopback addresses, which a broker in
a namespace cannot use (the others could not reach it), so the broker.conf and the JVM command
lines are written here with broker-start.sh's settings; only bindAddress/brokerIP1/brokerIP2,
the name server and controller lists, and the timeouts of the chosen profile differ.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

from controller.cluster import read_text, tail  # noqa: E402  (tests/compat/controller)

NS_PORT = 9876
CTL_PORT = 9878
BROKER_PORT = 10911
GROUP = "group1"
BROKER_NAME = "fault-broker"
CLUSTER_NAME = "FaultCluster"

# Net.popen rewrites its state file with a fixed temporary name: calls from two threads at once
# race on it (FileNotFoundError), so this package makes them one at a time.
_popen_lock = threading.Lock()


class Profile:
    """The timeouts a run uses. short (default): a 3 s broker heartbeat timeout and 1 s polls, so
    the three scenarios fit in a few minutes; java (FAULTS_JAVA_TIMEOUTS=1): what a Java 5.3.3
    deployment runs with (broker-start.sh's settings = BrokerConfig's defaults; the
    controller's scans at ControllerConfig's 5 s)."""

    def __init__(self, java):
        self.name = "java" if java else "short"
        if java:
            self.hb_timeout_ms = 10000
            self.broker = {"brokerHeartbeatInterval": 1000, "controllerHeartBeatTimeoutMills": 10000,
                           "syncBrokerMetadataPeriod": 5000, "checkSyncStateSetPeriod": 5000,
                           "syncControllerMetadataPeriod": 10000}
            self.ctl = {"scanNotActiveBrokerInterval": 5000, "scanInactiveMasterInterval": 5000}
        else:
            self.hb_timeout_ms = 3000
            self.broker = {"brokerHeartbeatInterval": 500, "controllerHeartBeatTimeoutMills": 3000,
                           "syncBrokerMetadataPeriod": 1000, "checkSyncStateSetPeriod": 1000,
                           "syncControllerMetadataPeriod": 2000}
            self.ctl = {"scanNotActiveBrokerInterval": 1000, "scanInactiveMasterInterval": 1000}

    @property
    def hb_timeout(self):
        return self.hb_timeout_ms / 1000.0

    def __str__(self):
        return "%s timeouts (broker heartbeat timeout %d ms, interval %d ms; controller scans %d/%d ms)" % (
            self.name, self.hb_timeout_ms, self.broker["brokerHeartbeatInterval"],
            self.ctl["scanNotActiveBrokerInterval"], self.ctl["scanInactiveMasterInterval"])


def find_java_pkg():
    """The java-broker package directory (tests/compat/controller/find-java-broker.sh), or None."""
    r = subprocess.run([os.path.join(REPO, "tests", "compat", "controller", "find-java-broker.sh")],
                       capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def java_home(pkg):
    """JAVA_BROKER_HOME laid out by the package's setup.sh (installs what is missing)."""
    dest = os.environ.get("JAVA_BROKER_HOME") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "java-broker")
    if os.path.isfile(os.path.join(dest, "lib", "rocketmq-broker-5.3.3.jar")) and \
            os.path.isfile(os.path.join(dest, "lib", "rocketmq-client-5.3.3.jar")):
        return dest
    r = subprocess.run([os.path.join(pkg, "bin", "setup.sh"), dest], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("setup.sh failed: %s" % r.stderr[-800:])
    return r.stdout.strip().splitlines()[-1]


class Proc:
    """A process in a namespace, in its own process group (pgid = pid: `ip netns exec` execs)."""

    def __init__(self, net, ns, log):
        self.net, self.ns, self.log = net, ns, log
        self.proc = None
        self.paused = False
        self.starts = 0

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def _popen(self, argv, env=None, cwd=None):
        self.starts += 1
        with open(self.log, "ab") as o:
            o.write(("\n===== start %d at %.3f: %s\n" % (self.starts, time.time(), " ".join(argv))).encode())
            o.flush()
            with _popen_lock:
                self.proc = self.net.popen(self.ns, argv, stdout=o, stderr=subprocess.STDOUT,
                                           env=env, cwd=cwd)
        self.paused = False

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.running():
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def kill9(self):
        """SIGKILL to the process group; returns once it is reaped."""
        if self.running():
            self.signal(signal.SIGKILL)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                pass
        self.paused = False

    def pause(self):
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self):
        self.signal(signal.SIGCONT)
        self.paused = False

    def close(self):
        if self.running():
            if self.paused:
                self.signal(signal.SIGCONT)
            self.kill9()


class NameServer(Proc):
    def __init__(self, net, ns, workdir, binary, peers, self_id, profile):
        super().__init__(net, ns, os.path.join(workdir, "logs", ns + ".log"))
        self.dir = os.path.join(workdir, ns)
        self.binary, self.peers, self.self_id, self.profile = binary, peers, self_id, profile
        os.makedirs(self.dir, exist_ok=True)
        self.ip = net.ip(ns)

    @property
    def ns_addr(self):
        return "%s:%d" % (self.ip, NS_PORT)

    @property
    def ctl_addr(self):
        return "%s:%d" % (self.ip, CTL_PORT)

    def conf(self):
        lines = ["bindAddress=%s" % self.ip, "listenPort=%d" % NS_PORT,
                 "kvConfigPath=%s/kvConfig.json" % self.dir, "configStorePath=%s/namesrv.properties" % self.dir,
                 "enableControllerInNamesrv=true", "controllerDLegerGroup=%s" % GROUP,
                 "controllerDLegerPeers=%s" % self.peers, "controllerDLegerSelfId=%s" % self.self_id,
                 "controllerStorePath=%s/controller-store" % self.dir]
        lines += ["%s=%s" % kv for kv in self.profile.ctl.items()]
        return "\n".join(lines) + "\n"

    def start(self, timeout=60):
        """Starts it (on its existing store) and waits for both boot lines; True on success."""
        path = os.path.join(self.dir, "node.conf")
        with open(path, "w") as f:
            f.write(self.conf())
        before = read_text(self.log)
        want = ["The Name Server boot success", "The ControllerManager boot success"]
        n0 = [before.count(w) for w in want]
        env = dict(os.environ, ROCKETMQ_HOME=self.dir, HOME=self.dir)
        self._popen([self.binary, "-c", path], env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = read_text(self.log)
            if all(text.count(w) > c for w, c in zip(want, n0)):
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        print("%s did not boot (exit %s):\n%s" % (self.ns, self.proc.poll(), tail(self.log)), flush=True)
        return False


class JavaBroker(Proc):
    """One broker of the set, in controller mode, state in <workdir>/<ns>/ (store, identity and
    epoch files, broker.conf, stdout.log, logs/rocketmqlogs/)."""

    def __init__(self, net, ns, workdir, home, ns_list, ctl_list, profile, heap="256m"):
        self.state = os.path.join(workdir, ns)
        super().__init__(net, ns, os.path.join(self.state, "stdout.log"))
        self.home, self.ns_list, self.ctl_list, self.profile, self.heap = home, ns_list, ctl_list, profile, heap
        self.ip = net.ip(ns)

    @property
    def addr(self):
        return "%s:%d" % (self.ip, BROKER_PORT)

    def conf(self):
        st = self.state
        lines = [
            "brokerClusterName=%s" % CLUSTER_NAME, "brokerName=%s" % BROKER_NAME,
            "namesrvAddr=%s" % self.ns_list, "listenPort=%d" % BROKER_PORT,
            "bindAddress=%s" % self.ip, "brokerIP1=%s" % self.ip, "brokerIP2=%s" % self.ip,
            "fetchNamesrvAddrByAddressServer=false", "metricsExporterType=DISABLE", "storeType=default",
            "autoCreateTopicEnable=true", "autoCreateSubscriptionGroup=true", "flushDiskType=ASYNC_FLUSH",
            "storePathRootDir=%s/store" % st, "storePathCommitLog=%s/store/commitlog" % st,
            "mappedFileSizeCommitLog=16777216", "mappedFileSizeConsumeQueue=60000",
            "mappedFileSizeTimerLog=16777216", "mapperFileSizeBatchConsumeQueue=460000",
            "maxHashSlotNum=50000", "maxIndexNum=200000", "deleteWhen=04", "fileReservedTime=48",
            # controller mode (RIP-44), as broker-start.sh with RMQ_CONTROLLER
            "enableControllerMode=true", "controllerAddr=%s" % self.ctl_list,
            "fetchControllerAddrByDnsLookup=false", "brokerId=-1", "brokerRole=SLAVE",
            "allAckInSyncStateSet=true", "storePathEpochFile=%s/store/epochFileCheckpoint" % st,
            "storePathBrokerIdentity=%s/store/brokerIdentity" % st,
            "registerNameServerPeriod=10000", "haMaxTimeSlaveNotCatchup=15000", "minInSyncReplicas=1",
        ]
        lines += ["%s=%s" % kv for kv in self.profile.broker.items()]
        return "\n".join(lines) + "\n"

    def argv(self, conf):
        h = self.home
        cp = ":".join(sorted(os.path.join(h, "lib", j) for j in os.listdir(os.path.join(h, "lib")) if j.endswith(".jar")))
        return ["java", "-server", "-Xms" + self.heap, "-Xmx" + self.heap, "-XX:+UseG1GC",
                "-XX:-OmitStackTraceInFastThrow", "-XX:-UseLargePages", "-XX:MaxDirectMemorySize=512m",
                "-Djava.net.preferIPv4Stack=true", "-Duser.home=" + self.state, "-Drocketmq.home.dir=" + h,
                "-Drocketmq.namesrv.addr=" + self.ns_list.split(";")[0],
                "-Drmq.logback.configurationFile=%s/conf/rmq.broker.logback.xml" % h,
                "-Dcom.rocketmq.sendMessageWithVIPChannel=false",
                "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
                "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
                "--add-opens", "java.base/java.util=ALL-UNNAMED", "-cp", cp,
                "org.apache.rocketmq.broker.BrokerStartup", "-c", conf, "-n", self.ns_list]

    def start(self, fresh=False):
        """Launches the JVM (fresh: on an empty state dir); boot is waited for with booted()."""
        if fresh:
            shutil.rmtree(self.state, ignore_errors=True)
        os.makedirs(os.path.join(self.state, "store"), exist_ok=True)
        conf = os.path.join(self.state, "broker.conf")
        with open(conf, "w") as f:
            f.write(self.conf())
        self.boots_before = read_text(self.log).count("boot success")
        env = dict(os.environ, HOME=self.state, ROCKETMQ_HOME=self.home, NAMESRV_ADDR=self.ns_list)
        self._popen(self.argv(conf), env=env, cwd=self.state)

    def booted(self):
        """True once this start logged "boot success"; raises when the JVM exited."""
        if self.proc.poll() is not None:
            raise RuntimeError("broker %s exited (%s):\n%s" % (self.ns, self.proc.poll(), tail(self.log, 30)))
        return read_text(self.log).count("boot success") > self.boots_before


class SendConsume(Proc):
    """java-broker's SendConsume (e2e/classes) in namespace c, as run-client.sh runs it."""

    def __init__(self, net, ns, workdir, pkg, home, ns_list, topic, seconds, interval_ms=50, consume_s=60):
        super().__init__(net, ns, os.path.join(workdir, "logs", "send-consume-%s.log" % topic))
        self.pkg, self.home, self.ns_list, self.topic = pkg, home, ns_list, topic
        self.args = [ns_list, topic, str(seconds), str(interval_ms), str(consume_s)]
        self.t_start = None

    def start(self):
        h = self.home
        t = os.path.join(h, "state", "client-faults")
        os.makedirs(t, exist_ok=True)
        jars = sorted(os.path.join(h, "lib", j) for j in os.listdir(os.path.join(h, "lib")) if j.endswith(".jar"))
        cp = ":".join([os.path.join(self.pkg, "e2e", "classes")] + jars)
        argv = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Duser.home=" + t,
                "-Djava.net.preferIPv4Stack=true", "-Drocketmq.namesrv.addr=" + self.ns_list.split(";")[0],
                "-Drmq.logback.configurationFile=%s/conf/rmq.client.logback.xml" % h,
                "-Drocketmq.log.root=%s/logs/rocketmqlogs" % t, "-Dcom.rocketmq.sendMessageWithVIPChannel=false",
                "--add-opens", "java.base/java.nio=ALL-UNNAMED", "--add-opens", "java.base/java.lang=ALL-UNNAMED",
                "-cp", cp, "SendConsume"] + self.args
        self.t_start = time.time()
        self._popen(argv, env=dict(os.environ, HOME=t, NAMESRV_ADDR=self.ns_list))
        return self

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill9()
            return None

    def output(self):
        return read_text(self.log)

    def outages(self):
        """[(start_s, end_s, ms)] of the OUTAGE lines (epoch seconds)."""
        return [(int(a) / 1000.0, int(b) / 1000.0, int(ms))
                for a, b, ms in re.findall(r"^OUTAGE (\d+) (\d+) (\d+)$", self.output(), re.M)]

    def counts(self):
        """(acked, received, missing) from SENT/RECEIVED, None where absent."""
        out = self.output()
        m = re.search(r"^SENT acked=(\d+)", out, re.M)
        r = re.search(r"^RECEIVED (\d+)/(\d+) missing=(\d+)", out, re.M)
        return (int(m.group(1)) if m else None, int(r.group(1)) if r else None, int(r.group(3)) if r else None)

    def summary(self):
        return "; ".join(l for l in self.output().splitlines()
                         if re.match(r"^(SENT|RECEIVED|missing|PASS|FAIL)", l))

    def passed(self):
        lines = self.output().strip().splitlines()
        return bool(lines) and lines[-1] == "PASS"
