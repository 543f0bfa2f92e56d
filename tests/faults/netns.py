"""Network namespaces for the fault harness (issue 24).

A `Net` makes one namespace per node (`f<tag><name>`), each with one veth into a bridge that lives
in a hub namespace of its own (`f<tag>hub`). The addresses are a random 10.<200+k>.0.0/24 that
exists only inside those namespaces: nothing touches the host's interfaces, nothing is routed out
(the namespaces have no default route). Faults are nftables rules in a table `inet faults` inside
each node's namespace; delay goes through `relay.py` (this kernel has no netem).

    with Net("a1", ["n0", "n1", "n2", "b0", "c"]) as net:
        p = net.popen("n0", ["sleep", "5"])
        net.partition([["n0"], ["n1", "n2"]])
        net.heal()

Python 3 stdlib only. Needs root (CAP_NET_ADMIN + CAP_SYS_ADMIN for `ip netns`).
"""

import atexit
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STATE_DIR = "/tmp/faults-netns"  # one file per live Net: pid + namespaces, for sweep()
RELAY_MARK = 0x2A  # relay's own upstream connections carry this mark and skip the redirect
TABLE = "faults"

_live = []  # every Net not closed yet, for atexit / signals
_live_lock = threading.Lock()
_handlers_installed = False


def _run(argv, check=True, input=None):
    p = subprocess.run(argv, input=input, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError("%s: rc=%d %s" % (" ".join(argv), p.returncode, p.stderr.strip()))
    return p


def available():
    """(True, "") when this process can build namespaces and nft rules, else (False, why)."""
    if sys.platform != "linux":
        return False, "not Linux"
    if os.geteuid() != 0:
        return False, "not root (network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN)"
    try:
        with open("/proc/self/status") as f:
            caps = [l for l in f if l.startswith("CapEff:")][0].split()[1]
        eff = int(caps, 16)
        if not (eff >> 12) & 1:
            return False, "no CAP_NET_ADMIN"
        if not (eff >> 21) & 1:
            return False, "no CAP_SYS_ADMIN (needed by ip netns)"
    except Exception as e:  # pragma: no cover
        return False, "cannot read capabilities: %s" % e
    for tool in ("ip", "nft"):
        if not shutil.which(tool):
            return False, "`%s` not found (apt-get install -y iproute2 nftables)" % tool
    # A real probe: can we make a namespace and an nft table inside it?
    probe = "fprobe%d" % os.getpid()
    try:
        r = _run(["ip", "netns", "add", probe], check=False)
        if r.returncode != 0:
            return False, "ip netns add failed: %s" % r.stderr.strip()
        r = _run(["ip", "netns", "exec", probe, "nft", "add", "table", "inet", TABLE], check=False)
        if r.returncode != 0:
            return False, "nft inside a namespace failed: %s" % r.stderr.strip()
        r = _run(["ip", "-n", probe, "link", "add", "pb0", "type", "bridge"], check=False)
        if r.returncode != 0:
            return False, "cannot create a bridge: %s" % r.stderr.strip()
    finally:
        _run(["ip", "netns", "del", probe], check=False)
    return True, ""


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def sweep():
    """Delete namespaces left by a Net whose process died without closing it (kill -9)."""
    if not os.path.isdir(STATE_DIR):
        return
    for fn in os.listdir(STATE_DIR):
        path = os.path.join(STATE_DIR, fn)
        try:
            with open(path) as f:
                st = json.load(f)
        except Exception:
            continue
        if _pid_alive(st.get("pid", 0)):
            continue
        for pid in st.get("pgids", []):
            try:
                os.killpg(pid, signal.SIGKILL)
            except Exception:
                pass
        for ns in st.get("namespaces", []):
            _run(["ip", "netns", "del", ns], check=False)
        try:
            os.unlink(path)
        except OSError:
            pass


def _close_all(*_):
    with _live_lock:
        nets = list(_live)
    for n in nets:
        try:
            n.close()
        except Exception as e:  # pragma: no cover
            print("netns: close failed: %s" % e, file=sys.stderr)


def _install_handlers():
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(_close_all)
    if threading.current_thread() is not threading.main_thread():
        return

    def on_term(signum, frame):
        # Turn SIGTERM/SIGHUP into SystemExit so `with` blocks and finally clauses run.
        raise SystemExit(128 + signum)

    for s in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(s) in (signal.SIG_DFL, None):
            signal.signal(s, on_term)


class Net:
    def __init__(self, tag, names, subnet_k=None):
        if not names or len(set(names)) != len(names):
            raise ValueError("names must be unique and non-empty")
        self.tag = str(tag)
        self.names = list(names)
        self.k = random.randrange(0, 55) if subnet_k is None else subnet_k
        self.prefix = "10.%d.0" % (200 + self.k)
        self.hub = "f%shub" % self.tag
        self._ips = {n: "%s.%d" % (self.prefix, 10 + i) for i, n in enumerate(self.names)}
        self._procs = []  # Popen objects started by popen()
        self._relays = {}  # name -> Popen of its relay
        self._closed = False
        self._lock = threading.Lock()
        self._state_path = os.path.join(STATE_DIR, "%s-%d" % (self.tag, os.getpid()))
        _install_handlers()
        sweep()
        with _live_lock:
            _live.append(self)
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    # ---- construction -------------------------------------------------------------------------
    def ns(self, name):
        return "f%s%s" % (self.tag, name)

    def _namespaces(self):
        return [self.hub] + [self.ns(n) for n in self.names]

    def _save_state(self):
        os.makedirs(STATE_DIR, exist_ok=True)
        st = {"pid": os.getpid(), "namespaces": self._namespaces(),
              "pgids": [p.pid for p in self._procs + list(self._relays.values())
                        if p.poll() is None]}
        tmp = self._state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(st, f)
        os.replace(tmp, self._state_path)

    def _build(self):
        for ns in self._namespaces():
            if os.path.exists("/run/netns/" + ns):
                raise RuntimeError("namespace %s exists already (another run with tag %r?)"
                                   % (ns, self.tag))
        self._save_state()
        _run(["ip", "netns", "add", self.hub])
        _run(["ip", "-n", self.hub, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", self.hub, "link", "set", "br0", "up"])
        salt = "%04x" % random.randrange(0x10000)
        for i, n in enumerate(self.names):
            ns = self.ns(n)
            _run(["ip", "netns", "add", ns])
            tmpname = "fv%s%d" % (salt, i)  # unique in every namespace; renamed to eth0 below
            port = "p%d" % i
            _run(["ip", "link", "add", tmpname, "netns", ns, "type", "veth",
                  "peer", "name", port, "netns", self.hub])
            _run(["ip", "-n", self.hub, "link", "set", port, "master", "br0"])
            _run(["ip", "-n", self.hub, "link", "set", port, "up"])
            _run(["ip", "-n", ns, "link", "set", tmpname, "name", "eth0"])
            _run(["ip", "-n", ns, "addr", "add", self._ips[n] + "/24", "dev", "eth0"])
            _run(["ip", "-n", ns, "link", "set", "eth0", "up"])
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
            # IPv6 off: no router solicitations or DAD noise on the test bridge.
            _run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                 check=False)
            self._nft(n, self._base_ruleset())
        self._save_state()

    def _base_ruleset(self):
        return (
            "table inet %s {\n"
            "  chain input { type filter hook input priority 0; policy accept; }\n"
            "  chain output { type filter hook output priority 0; policy accept; }\n"
            "  chain natout { type nat hook output priority -100; policy accept; }\n"
            "}\n" % TABLE)

    def _nft(self, name, script):
        _run(["ip", "netns", "exec", self.ns(name), "nft", "-f", "-"], input=script)

    def _rules(self, name, lines):
        """Append rules to `name`'s table: lines are (chain, rule text)."""
        if not lines:
            return
        script = "".join("add rule inet %s %s %s\n" % (TABLE, c, r) for c, r in lines)
        self._nft(name, script)

    def ruleset(self, name):
        return _run(["ip", "netns", "exec", self.ns(name), "nft", "list", "table", "inet",
                     TABLE]).stdout

    # ---- public API ---------------------------------------------------------------------------
    def ip(self, name):
        return self._ips[name]

    def name_of(self, ip):
        for n, a in self._ips.items():
            if a == ip:
                return n
        return None

    def popen(self, name, argv, **kw):
        """Run argv inside `name`'s namespace in its own process group (killed at close())."""
        if self._closed:
            raise RuntimeError("net closed")
        full = ["ip", "netns", "exec", self.ns(name)] + list(argv)
        kw.setdefault("start_new_session", True)
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(full, **kw)
        with self._lock:
            self._procs.append(p)
        self._save_state()
        return p

    def run(self, name, argv, timeout=30, check=True):
        """Run argv inside `name`'s namespace and wait (helper for ss, nft, etc.)."""
        p = subprocess.run(["ip", "netns", "exec", self.ns(name)] + list(argv),
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise RuntimeError("%s in %s: rc=%d %s" % (argv, name, p.returncode, p.stderr))
        return p

    def _ipset(self, names):
        return "{ %s }" % ", ".join(self._ips[n] for n in names)

    def _drop_between(self, a, others):
        """Drop traffic between node a and the nodes `others`, both directions, inside a."""
        if not others:
            return []
        s = self._ipset(others)
        return [("input", "iifname \"eth0\" ip saddr %s drop" % s),
                ("output", "oifname \"eth0\" ip daddr %s drop" % s)]

    def partition(self, groups):
        """Two nodes keep talking iff they share a group; nodes in no group talk to everyone.

        partition([["n0"], ["n1", "n2"]])          leader n0 alone
        partition([["n0", "n1"], ["n1", "n2"]])    n1 bridges n0 and n2
        Rules are added on top of the current ones (call heal() first for a fresh start)."""
        member = {}
        for gi, g in enumerate(groups):
            for n in g:
                if n not in self._ips:
                    raise KeyError(n)
                member.setdefault(n, set()).add(gi)
        listed = list(member)
        for a in listed:
            others = [b for b in listed if b != a and not (member[a] & member[b])]
            self._rules(a, self._drop_between(a, others))

    def cut(self, src, dst):
        """One-way: packets from src to dst are dropped (dst's packets to src still arrive)."""
        self._rules(src, [("output", "oifname \"eth0\" ip daddr %s drop" % self._ips[dst])])
        self._rules(dst, [("input", "iifname \"eth0\" ip saddr %s drop" % self._ips[src])])

    def loss(self, name, percent, peers=None):
        """Drop `percent`% of `name`'s packets at random (nft numgen), both directions."""
        percent = int(percent)
        if not 0 <= percent <= 100:
            raise ValueError("percent")
        match = ""
        if peers:
            match = "ip daddr %s " % self._ipset(peers)
        if percent == 0:
            return
        rnd = "" if percent >= 100 else "numgen random mod 100 < %d " % percent
        rin = ("input", "iifname \"eth0\" %s%sdrop" % (match.replace("daddr", "saddr"), rnd))
        rout = ("output", "oifname \"eth0\" %s%sdrop" % (match, rnd))
        self._rules(name, [rin, rout])

    def _relay(self, name, delay_ms, jitter_ms):
        """Start (or reuse) the delaying relay inside `name`'s namespace; returns its port."""
        if name in self._relays and self._relays[name].poll() is None:
            return self._relays[name].relay_port
        port = 18000 + random.randrange(0, 2000)
        argv = [sys.executable, os.path.join(HERE, "relay.py"), "--listen", "127.0.0.1:%d" % port,
                "--delay-ms", str(delay_ms), "--jitter-ms", str(jitter_ms),
                "--mark", str(RELAY_MARK)]
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(name)] + argv,
                             start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = p.stdout.readline()  # "relay listening 127.0.0.1:P" once bound
        if not line.startswith("relay listening"):
            p.kill()
            raise RuntimeError("relay in %s did not start: %r" % (name, line))
        p.relay_port = port
        self._relays[name] = p
        self._save_state()
        return port

    def delay(self, name, delay_ms, jitter_ms=0, peers=None):
        """Delay every TCP byte between `name` and `peers` (default: every other node) by
        delay_ms (+ up to jitter_ms) each way: new connections are redirected (nft dnat in the
        initiator's namespace) to a relay there that forwards each chunk after the delay;
        connections opened before are reset so they reconnect through the relay."""
        peers = [p for p in (peers or self.names) if p != name]
        plan = {name: peers}
        for p in peers:
            plan.setdefault(p, []).append(name)
        for a, dsts in plan.items():
            port = self._relay(a, delay_ms, jitter_ms)
            s = self._ipset(dsts)
            self._rules(a, [
                ("natout", "ip daddr %s meta l4proto tcp meta mark != %d dnat ip to 127.0.0.1:%d"
                 % (s, RELAY_MARK, port)),
                # established connections this side opened before the redirect: reset them
                ("output", "oifname \"eth0\" ip daddr %s meta l4proto tcp ct direction original "
                 "meta mark != %d reject with tcp reset" % (s, RELAY_MARK)),
            ])
        # localnet routing for the dnat to 127.0.0.1 of locally generated packets
        for a in plan:
            self.run(a, ["sysctl", "-qw", "net.ipv4.conf.all.route_localnet=1"], check=False)

    def heal(self):
        """Remove every fault rule and stop the relays (their connections break and reconnect)."""
        for n in self.names:
            self._nft(n, "flush table inet %s\n" % TABLE)
        for name, p in list(self._relays.items()):
            _killpg(p)
        self._relays.clear()
        self._save_state()

    def close(self):
        with self._lock:
            if self._closed:
                return
            self._closed = True
            procs = list(self._procs) + list(self._relays.values())
        for p in procs:
            _killpg(p)
        for ns in reversed(self._namespaces()):
            if os.path.exists("/run/netns/" + ns):
                _run(["ip", "netns", "del", ns], check=False)
        try:
            os.unlink(self._state_path)
        except OSError:
            pass
        with _live_lock:
            if self in _live:
                _live.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _killpg(p):
    if p.poll() is not None:
        return
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except Exception:
        try:
            p.kill()
        except Exception:
            pass
    try:
        p.wait(timeout=5)
    except Exception:
        pass


def _selftest():
    ok, why = available()
    print("available:", ok, why)
    if not ok:
        sys.exit(1)
    srv = ("import socket,sys;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
           "s.bind(('0.0.0.0',7000));s.listen(5)\n"
           "while True:\n c,_=s.accept();d=c.recv(100);c.sendall(d);c.close()")
    cli = ("import socket,sys,time;t=time.time();s=socket.create_connection((sys.argv[1],7000),2);"
           "s.sendall(b'x');s.recv(10);print('%.3f'%(time.time()-t))")
    with Net("st%d" % (os.getpid() % 1000), ["a", "b", "c"]) as net:
        for n in net.names:
            net.popen(n, [sys.executable, "-c", srv])
        time.sleep(0.5)

        def rtt(src, dst):
            r = net.run(src, [sys.executable, "-c", cli, net.ip(dst)], check=False)
            return float(r.stdout) if r.returncode == 0 else None
        assert rtt("a", "b") is not None, "no connectivity"
        net.partition([["a"], ["b", "c"]])
        assert rtt("a", "b") is None and rtt("b", "a") is None and rtt("b", "c") is not None
        net.heal()
        net.partition([["a", "b"], ["b", "c"]])
        assert rtt("a", "b") is not None and rtt("c", "b") is not None and rtt("a", "c") is None
        net.heal()
        net.cut("a", "b")
        assert rtt("a", "b") is None and rtt("a", "c") is not None
        net.heal()
        net.loss("a", 100)
        assert rtt("a", "c") is None
        net.heal()
        net.delay("a", 200)
        d = rtt("a", "b")
        d2 = rtt("c", "a")
        d3 = rtt("b", "c")
        print("delay a->b %.3f c->a %.3f b->c %.3f" % (d, d2, d3))
        assert d >= 0.4 and d2 >= 0.4 and d3 < 0.2
        net.heal()
        assert rtt("a", "b") < 0.2
        print("netns selftest ok")


if __name__ == "__main__":
    _selftest()
