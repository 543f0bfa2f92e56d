"""A delaying TCP relay (issue 24): this kernel has no netem, so delay is done in user space.

Runs inside a node's namespace (netns.Net.delay starts it). nft dnats the node's new TCP
connections to the delayed peers to 127.0.0.1:<port>; the relay reads the original destination
(SO_ORIGINAL_DST), opens its own connection there with SO_MARK set (the dnat rule skips marked
packets), and forwards every chunk in both directions after --delay-ms (+ a random 0..--jitter-ms,
order preserved). A connection's EOF and close are delayed the same way.

    python3 relay.py --listen 127.0.0.1:18001 --delay-ms 200 [--jitter-ms 50] [--mark 42]

Prints "relay listening 127.0.0.1:P" once bound. Python 3 stdlib only.
"""

import argparse
import collections
import random
import socket
import struct
import sys
import threading
import time

SO_ORIGINAL_DST = 80
SO_MARK = 36


def original_dst(conn):
    raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, = struct.unpack("!H", raw[2:4])
    return socket.inet_ntoa(raw[4:8]), port


class Pipe:
    """One direction: src -> dst, every chunk sent `delay` seconds after it was read."""

    def __init__(self, src, dst, delay, jitter, done):
        self.src, self.dst = src, dst
        self.delay, self.jitter = delay, jitter
        self.q = collections.deque()
        self.cv = threading.Condition()
        self.last_due = 0.0
        self.done = done
        threading.Thread(target=self.read, daemon=True).start()
        threading.Thread(target=self.write, daemon=True).start()

    def _push(self, item):
        due = time.monotonic() + self.delay + random.uniform(0, self.jitter)
        due = max(due, self.last_due)
        self.last_due = due
        with self.cv:
            self.q.append((due, item))
            self.cv.notify()

    def read(self):
        while True:
            try:
                data = self.src.recv(65536)
            except OSError:
                data = b""
            if not data:
                self._push(None)
                return
            self._push(data)

    def write(self):
        while True:
            with self.cv:
                while not self.q:
                    self.cv.wait()
                due, item = self.q.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if item is None:
                try:
                    self.dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self.done()
                return
            try:
                self.dst.sendall(item)
            except OSError:
                self.done()
                return


def handle(conn, args):
    try:
        host, port = original_dst(conn)
    except OSError as e:
        print("relay: no original destination: %s" % e, file=sys.stderr)
        conn.close()
        return
    up = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if args.mark:
            up.setsockopt(socket.SOL_SOCKET, SO_MARK, args.mark)
        up.settimeout(5)
        up.connect((host, port))
        up.settimeout(None)
    except OSError:
        conn.close()
        up.close()
        return
    for s in (conn, up):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    left = [2]
    lock = threading.Lock()

    def done():
        with lock:
            left[0] -= 1
            if left[0] == 0:
                conn.close()
                up.close()

    d, j = args.delay_ms / 1000.0, args.jitter_ms / 1000.0
    Pipe(conn, up, d, j, done)
    Pipe(up, conn, d, j, done)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--delay-ms", type=int, default=100)
    ap.add_argument("--jitter-ms", type=int, default=0)
    ap.add_argument("--mark", type=int, default=0x2A)
    args = ap.parse_args()
    host, port = args.listen.rsplit(":", 1)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, int(port)))
    ls.listen(256)
    print("relay listening %s:%s" % (host, port), flush=True)
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=handle, args=(conn, args), daemon=True).start()


if __name__ == "__main__":
    main()
