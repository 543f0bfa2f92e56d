"""RocketMQ remoting connections for the fault tests (stdlib only).

Frames are built and read by tests/compat/fake_broker.py (JSON headers; a ROCKETMQ-coded answer
is decoded too). A Conn is one TCP connection; a reader thread demultiplexes answers by opaque
and hands server-initiated requests (NOTIFY_BROKER_ROLE_CHANGED pushed on the connection) to an
optional callback.
"""

import os
import socket
import struct
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compat"))

from fake_broker import ONEWAY_FLAG, RESPONSE_FLAG, encode, parse_lenient, read_exact  # noqa: E402
from fake_broker import read_frame as _read_frame  # noqa: E402

# request codes (CONTROLLER.md §2)
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
BROKER_HEARTBEAT = 904
ALTER_SYNC_STATE_SET = 1001
ELECT_MASTER = 1002
REGISTER_BROKER = 1003
GET_REPLICA_INFO = 1004
GET_METADATA_INFO = 1005
GET_SYNC_STATE_DATA = 1006
GET_BROKER_EPOCH_CACHE = 1007
NOTIFY_BROKER_ROLE_CHANGED = 1008
UPDATE_CONTROLLER_CONFIG = 1009
GET_CONTROLLER_CONFIG = 1010
GET_NEXT_BROKER_ID = 1012
APPLY_BROKER_ID = 1013

SUCCESS = 0
NOT_LEADER = 2007
MASTER_STILL_EXIST = 2011


class RemotingError(Exception):
    """No answer: connection refused/closed/timed out, or an undecodable frame."""


class Timeout(RemotingError):
    """The request was sent but no answer came in time (outcome unknown)."""


def read_frame(sock):
    return _read_frame(lambda n: read_exact(sock, n))


class Reply:
    def __init__(self, head, body):
        self.code = head.get("code")
        self.remark = head.get("remark")
        self.ext = head.get("extFields") or {}
        self.body = body

    def json(self):
        if not self.body:
            return None
        try:
            return parse_lenient(self.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return None


_opaque = [0]
_opaque_lock = threading.Lock()


def next_opaque():
    with _opaque_lock:
        _opaque[0] += 1
        return _opaque[0]


class Conn:
    """One connection; concurrent requests allowed; on_request(head, body, conn) gets pushes."""

    def __init__(self, addr, timeout=3.0, on_request=None, connect_timeout=None):
        self.addr = addr
        self.timeout = timeout
        self.on_request = on_request
        host, port = addr.rsplit(":", 1)
        try:
            self.sock = socket.create_connection((host, int(port)),
                                                 timeout=connect_timeout or timeout)
        except OSError as e:
            raise RemotingError("%s: connect: %s" % (addr, e)) from e
        self.sock.settimeout(None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.wlock = threading.Lock()
        self.pending = {}
        self.plock = threading.Lock()
        self.closed = False
        self.error = None
        self.thread = threading.Thread(target=self._read_loop, daemon=True)
        self.thread.start()

    def _read_loop(self):
        try:
            while True:
                head, body = read_frame(self.sock)
                if head.get("flag", 0) & RESPONSE_FLAG:
                    with self.plock:
                        slot = self.pending.pop(head.get("opaque"), None)
                    if slot is not None:
                        slot[1] = (head, body)
                        slot[0].set()
                elif self.on_request is not None:
                    try:
                        self.on_request(head, body, self)
                    except Exception:  # noqa: BLE001 - a callback bug must not kill the conn
                        pass
        except (OSError, ValueError, struct.error) as e:
            self.error = e
        finally:
            self.closed = True
            with self.plock:
                slots, self.pending = list(self.pending.values()), {}
            for slot in slots:
                slot[0].set()

    def request(self, code, ext=None, body=b"", timeout=None):
        """The Reply; Timeout when sent but unanswered, RemotingError when it could not be sent
        (ConnectionLost-after-send also raises Timeout: the outcome is unknown)."""
        if self.closed:
            raise RemotingError("%s: connection closed" % self.addr)
        opaque = next_opaque()
        slot = [threading.Event(), None]
        with self.plock:
            self.pending[opaque] = slot
        frame = encode(code, ext, body, opaque)
        try:
            with self.wlock:
                self.sock.sendall(frame)
        except OSError as e:
            with self.plock:
                self.pending.pop(opaque, None)
            self.close()
            raise RemotingError("%s: send %d: %s" % (self.addr, code, e)) from e
        if not slot[0].wait(timeout if timeout is not None else self.timeout):
            with self.plock:
                self.pending.pop(opaque, None)
            raise Timeout("%s: request %d: no answer in %.1fs" % (
                self.addr, code, timeout if timeout is not None else self.timeout))
        if slot[1] is None:
            raise Timeout("%s: request %d: connection lost (%s)" % (self.addr, code, self.error))
        return Reply(*slot[1])

    def oneway(self, code, ext=None, body=b""):
        frame = encode(code, ext, body, next_opaque(), ONEWAY_FLAG)
        try:
            with self.wlock:
                self.sock.sendall(frame)
        except OSError as e:
            self.close()
            raise RemotingError("%s: one-way %d: %s" % (self.addr, code, e)) from e

    def respond(self, head, code=0, ext=None, body=b""):
        if head.get("flag", 0) & ONEWAY_FLAG:
            return
        frame = encode(code, ext, body, head.get("opaque", 0), RESPONSE_FLAG)
        with self.wlock:
            self.sock.sendall(frame)

    def close(self):
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def once(addr, code, ext=None, body=b"", timeout=2.0):
    c = Conn(addr, timeout=timeout)
    try:
        return c.request(code, ext, body)
    finally:
        c.close()


def parse_controllers(spec):
    """'ip:p;ip:p' or 'n0=ip:p;n1=ip:p' -> [(name, addr)] (names n0.. by position)."""
    out = []
    for i, item in enumerate(x.strip() for x in spec.split(";")):
        if not item:
            continue
        if "=" in item:
            name, addr = item.split("=", 1)
        else:
            name, addr = "n%d" % len(out), item
        out.append((name.strip(), addr.strip()))
    return out


def replica_state(reply):
    """A 1004 answer as the register value: dict masterId, masterEpoch, sss, sssEpoch."""
    ext = reply.ext
    body = reply.json() or {}
    mid = ext.get("masterBrokerId")
    return {
        "masterId": int(mid) if mid not in (None, "", "null") else None,
        "masterAddr": ext.get("masterAddress"),
        "masterEpoch": int(ext.get("masterEpoch", 0) or 0),
        "sss": sorted(int(x) for x in (body.get("syncStateSet") or [])),
        "sssEpoch": int(body.get("syncStateSetEpoch", 0) or 0),
    }
