"""Name-server nodes with the embedded controller, inside a Net's namespaces (issue 24).

    node = Node(net, "n0", ["n0", "n1", "n2"], workdir)
    node.start(); node.wait_ready()
    node.kill9(); node.restart()          # restart keeps the store
    node.pause(); node.resume()           # SIGSTOP / SIGCONT
    node.clock_jump(+30)                  # needs Node(..., faketime="wall" or "mono")
    node.fill_disk(); node.free_disk()    # needs Node(..., disk_mb=N): the store on a small tmpfs

Each node has its own HOME (<workdir>/<name>/home), store (<workdir>/<name>/store), config
(<workdir>/<name>/namesrv.conf) and log (<workdir>/<name>.log, every start appended).
The binary is $NAMESRV_BIN or target/release/namesrv. Python 3 stdlib only.
"""

import os
import signal
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NS_PORT = 9876
CTL_PORT = 9878
FAKETIME_LIBS = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                 "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                 "/usr/local/lib/faketime/libfaketime.so.1",
                 "/usr/lib/faketime/libfaketime.so.1"]

# short controller timings for tests: brokers heartbeat every 500 ms with a 3 s timeout
TEST_CONF = {
    "scanNotActiveBrokerInterval": 1000,
    "scanInactiveMasterInterval": 1000,
}


# A failed fsync without a device mapper: an LD_PRELOAD shim whose fsync/fdatasync return EIO
# while the flag file named by FAULTS_FSYNC_FLAG exists (the write itself succeeded, as in
# the fsyncgate reports). Compiled once per machine with the system C compiler.
FSYNC_SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
static int failing(void) {
    const char *flag = getenv("FAULTS_FSYNC_FLAG");
    return flag && access(flag, F_OK) == 0;
}
int fsync(int fd) {
    static int (*real)(int);
    if (failing()) { errno = EIO; return -1; }
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return real(fd);
}
int fdatasync(int fd) {
    static int (*real)(int);
    if (failing()) { errno = EIO; return -1; }
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return real(fd);
}
"""
FSYNC_SHIM = "/tmp/faults-shim/libfaults_fsync.so"


def fsync_shim():
    """Path of the compiled shim (built on first use), or raises."""
    if os.path.exists(FSYNC_SHIM):
        return FSYNC_SHIM
    os.makedirs(os.path.dirname(FSYNC_SHIM), exist_ok=True)
    c = FSYNC_SHIM + ".c"
    with open(c, "w") as f:
        f.write(FSYNC_SHIM_C)
    cc = os.environ.get("CC", "cc")
    tmp = FSYNC_SHIM + ".%d" % os.getpid()
    r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", tmp, c, "-ldl"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("cannot build the fsync shim with %s: %s" % (cc, r.stderr.strip()))
    os.replace(tmp, FSYNC_SHIM)
    return FSYNC_SHIM


def namesrv_bin():
    b = os.environ.get("NAMESRV_BIN") or os.path.join(ROOT, "target", "release", "namesrv")
    return os.path.abspath(b)


def faketime_lib():
    for p in FAKETIME_LIBS:
        if os.path.exists(p):
            return p
    return None


def sweep_mounts():
    """Unmount store tmpfs left by a harness process that died without closing its nodes."""
    try:
        with open("/proc/self/mounts") as f:
            lines = f.read().splitlines()
    except OSError:
        return
    for line in lines:
        parts = line.split()
        if len(parts) < 3 or parts[2] != "tmpfs" or not parts[0].startswith("faults-"):
            continue
        try:
            pid = int(parts[0].split("-")[1])
        except (IndexError, ValueError):
            continue
        try:
            os.kill(pid, 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        subprocess.run(["umount", "-l", parts[1].replace("\\040", " ")], capture_output=True)


class Node:
    def __init__(self, net, name, peers, workdir, extra_conf=None, faketime=False, disk_mb=0,
                 ns_port=NS_PORT, ctl_port=CTL_PORT, binary=None, fsync_fault=False):
        self.net = net
        self.name = name
        self.peers = list(peers)
        self.workdir = os.path.abspath(workdir)
        self.dir = os.path.join(self.workdir, name)
        self.home = os.path.join(self.dir, "home")
        self.store = os.path.join(self.dir, "store")
        self.conf_path = os.path.join(self.dir, "namesrv.conf")
        self.log_path = os.path.join(self.workdir, "%s.log" % name)
        self.ip = net.ip(name)
        self.ns_port, self.ctl_port = ns_port, ctl_port
        self.ns_addr = "%s:%d" % (self.ip, ns_port)
        self.ctl_addr = "%s:%d" % (self.ip, ctl_port)
        self.binary = binary or namesrv_bin()
        self.faketime = faketime
        self.faketime_file = os.path.join(self.dir, "faketime")
        self.clock_offset = 0
        self.disk_mb = disk_mb
        self.fsync_fault = fsync_fault
        self.fsync_flag = os.path.join(self.dir, "fail-fsync")
        self.mounted = False
        self.filler = os.path.join(self.store, "filler")
        self.proc = None
        self.paused = False
        self.starts = 0
        self.conf = dict(TEST_CONF)
        self.conf.update({
            "listenPort": ns_port,
            "enableControllerInNamesrv": "true",
            "controllerDLegerGroup": "faults",
            "controllerDLegerPeers": ";".join("%s-%s:%d" % (p, net.ip(p), ctl_port)
                                              for p in self.peers),
            "controllerDLegerSelfId": name,
            "controllerStorePath": self.store,
            "kvConfigPath": os.path.join(self.home, "kvConfig.json"),
            "configStorePath": os.path.join(self.home, "namesrv.properties"),
        })
        self.conf.update(extra_conf or {})
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(self.store, exist_ok=True)
        if disk_mb:
            self._mount()
        with open(self.conf_path, "w") as f:
            for k, v in self.conf.items():
                f.write("%s=%s\n" % (k, v))
        if faketime:
            if not faketime_lib():
                raise RuntimeError("libfaketime not found (apt-get install -y faketime)")
            self._write_faketime()

    # ---- process ------------------------------------------------------------------------------
    def argv(self):
        argv = [self.binary, "-c", self.conf_path]
        preload = []
        if self.fsync_fault:
            preload.append(fsync_shim())
        if self.faketime:
            # faketime="wall" (or True): only the wall clock jumps (an NTP step);
            # faketime="mono": the monotonic clock too, as a suspended VM would see.
            preload.append(faketime_lib())
            argv = ["FAKETIME_TIMESTAMP_FILE=" + self.faketime_file,
                    "FAKETIME_CACHE_DURATION=1",
                    "FAKETIME_DONT_FAKE_MONOTONIC=%d" % (0 if self.faketime == "mono" else 1),
                    ] + argv
        if self.fsync_fault:
            argv = ["FAULTS_FSYNC_FLAG=" + self.fsync_flag] + argv
        if preload:
            argv = ["env", "LD_PRELOAD=" + ":".join(preload)] + argv
        return argv

    def start(self):
        if self.alive():
            return
        self.starts += 1
        env = dict(os.environ)
        env["HOME"] = self.home
        env.pop("ROCKETMQ_HOME", None)
        env.setdefault("RUST_BACKTRACE", "1")
        log = open(self.log_path, "ab")
        log.write(("\n===== faults: start #%d of %s at %.3f =====\n"
                   % (self.starts, self.name, time.time())).encode())
        log.flush()
        self.proc = self.net.popen(self.name, self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                   env=env, cwd=self.dir)
        log.close()
        self.paused = False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def pid(self):
        return self.proc.pid if self.proc else None

    def _signal(self, sig):
        if not self.alive():
            return False
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def kill9(self):
        if self.paused:
            self.paused = False
        if self._signal(signal.SIGKILL):
            self.proc.wait(timeout=10)

    def stop(self, timeout=5.0):
        if not self.alive():
            return
        if self.paused:
            self.resume()
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill9()

    def pause(self):
        if self._signal(signal.SIGSTOP):
            self.paused = True

    def resume(self):
        if self._signal(signal.SIGCONT):
            self.paused = False

    def restart(self):
        """kill -9 (if running) and start again on the same store."""
        self.kill9()
        self.start()

    def exit_code(self):
        return None if self.proc is None else self.proc.poll()

    def wait_port(self, timeout=20.0):
        """True once the controller port accepts TCP connections (from inside our namespace)."""
        deadline = time.time() + timeout
        probe = ("import socket,sys\n"
                 "try:\n socket.create_connection((sys.argv[1],int(sys.argv[2])),1).close()\n"
                 "except OSError: sys.exit(1)")
        while time.time() < deadline:
            if not self.alive():
                return False
            r = self.net.run(self.name, ["python3", "-c", probe, self.ip, str(self.ctl_port)],
                             check=False)
            if r.returncode == 0:
                return True
            time.sleep(0.2)
        return False

    def log_size(self):
        try:
            return os.path.getsize(self.log_path)
        except OSError:
            return 0

    def log_since(self, offset):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def core_stopped_since(self, offset):
        """Did this node log, after `offset`, that its raft core quit (a failed write)?"""
        return "consensus core stopped" in self.log_since(offset)

    def log_tail(self, n=30):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, 2)
                size = f.tell()
                f.seek(max(0, size - 16384))
                lines = f.read().decode("utf-8", "replace").splitlines()
            return lines[-n:]
        except OSError:
            return []

    # ---- clock --------------------------------------------------------------------------------
    def _write_faketime(self):
        tmp = self.faketime_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%+d\n" % self.clock_offset)
        os.replace(tmp, self.faketime_file)

    def clock_jump(self, seconds):
        """Step this node's clock by `seconds` (relative to now; libfaketime re-reads the file
        at most every second). Cumulative: clock_reset() returns to the real time."""
        if not self.faketime:
            raise RuntimeError("%s was not started with faketime=True" % self.name)
        self.clock_offset += int(seconds)
        self._write_faketime()

    def clock_reset(self):
        if self.faketime:
            self.clock_offset = 0
            self._write_faketime()

    # ---- disk ---------------------------------------------------------------------------------
    def _mount(self):
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm,mode=0755" % self.disk_mb,
                            "faults-%d-%s" % (os.getpid(), self.name), self.store],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("mount tmpfs on %s: %s" % (self.store, r.stderr.strip()))
        self.mounted = True

    def fill_disk(self):
        """Fill the store's tmpfs to the last byte: every later write or fsync fails ENOSPC."""
        if not self.mounted:
            raise RuntimeError("%s has no small disk (disk_mb=0)" % self.name)
        for path, size in ((self.filler, 1 << 20), (self.filler + ".b", 4096),
                           (self.filler + ".c", 1)):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            except OSError:
                break
            chunk = b"\0" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError:
                pass
            finally:
                os.close(fd)

    def fail_fsync(self, on=True):
        """fsync/fdatasync of this node return EIO while on (needs fsync_fault=True)."""
        if not self.fsync_fault:
            raise RuntimeError("%s was not started with fsync_fault=True" % self.name)
        if on:
            open(self.fsync_flag, "w").close()
        else:
            try:
                os.unlink(self.fsync_flag)
            except OSError:
                pass

    def free_disk(self):
        for p in (self.filler, self.filler + ".b", self.filler + ".c"):
            try:
                os.unlink(p)
            except OSError:
                pass

    def disk_free(self):
        st = os.statvfs(self.store)
        return st.f_bavail * st.f_frsize

    def close(self):
        """Stop the process and unmount the tmpfs (the store is lost with it)."""
        if self.paused:
            self.resume()
        self.kill9()
        if self.mounted:
            subprocess.run(["umount", "-l", self.store], capture_output=True)
            self.mounted = False
