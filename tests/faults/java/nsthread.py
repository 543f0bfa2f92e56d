"""Threads inside a network namespace of a Net, for the observers of the Java scenarios.

setns(2) with CLONE_NEWNET moves only the calling thread; sockets it creates stay in that
namespace whichever thread uses them later. Python 3.11 has no os.setns, so libc's is called.
"""

import concurrent.futures
import ctypes
import os
import threading

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def enter(path):
    """Moves the calling thread into the network namespace at path (/run/netns/NAME)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, "setns(%s): %s" % (path, os.strerror(e)))
    finally:
        os.close(fd)


def ns_path(net, name):
    return "/run/netns/" + net.ns(name)


class Pool:
    """Worker threads inside one namespace: call(fn, *args) runs fn there and returns its result."""

    def __init__(self, net, name, workers=4):
        self.path = ns_path(net, name)
        self.pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="ns-" + name,
                                                          initializer=enter, initargs=(self.path,))

    def call(self, fn, *args, timeout=30):
        return self.pool.submit(fn, *args).result(timeout)

    def close(self):
        self.pool.shutdown(wait=False, cancel_futures=True)


def in_ns(cls):
    """A Thread subclass (watch.Poller and its kind) whose run() first enters `self.ns_path`."""

    class InNs(cls):
        def __init__(self, ns_path_, *a, **kw):
            super().__init__(*a, **kw)
            self.ns_path = ns_path_

        def run(self):
            enter(self.ns_path)
            super().run()

    InNs.__name__ = "InNs" + cls.__name__
    return InNs


def thread(path, target, *args):
    """A started daemon thread running target(*args) inside the namespace at path."""

    def run():
        enter(path)
        target(*args)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t
