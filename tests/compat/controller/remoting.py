"""The requests the controller checks send, with their answers decoded (stdlib only).

Frames are built and read by fake_broker (JSON headers; a ROCKETMQ-coded answer is decoded
too); this module adds one-way requests, typed answers and the queries the checks need:
CONTROLLER_GET_METADATA_INFO (1005), CONTROLLER_GET_REPLICA_INFO (1004),
CONTROLLER_GET_SYNC_STATE_DATA (1006), GET_BROKER_EPOCH_CACHE (1007, to a broker), the name
server's GET_ROUTEINFO_BY_TOPIC (105) and GET_BROKER_CLUSTER_INFO (106), and the broker-side
controller requests the load simulator sends (1012, 1013, 1003, 1002, 904).
"""

import json
import struct

import fake_broker
from fake_broker import parse_lenient

# request codes (CONTROLLER.md §2)
BROKER_HEARTBEAT = 904
CONTROLLER_ALTER_SYNC_STATE_SET = 1001
CONTROLLER_ELECT_MASTER = 1002
CONTROLLER_REGISTER_BROKER = 1003
CONTROLLER_GET_REPLICA_INFO = 1004
CONTROLLER_GET_METADATA_INFO = 1005
CONTROLLER_GET_SYNC_STATE_DATA = 1006
GET_BROKER_EPOCH_CACHE = 1007
CONTROLLER_GET_NEXT_BROKER_ID = 1012
CONTROLLER_APPLY_BROKER_ID = 1013
GET_ROUTEINFO_BY_TOPIC = fake_broker.GET_ROUTEINFO_BY_TOPIC
GET_BROKER_CLUSTER_INFO = fake_broker.GET_BROKER_CLUSTER_INFO

# response codes
SUCCESS = 0
CONTROLLER_NOT_LEADER = 2007
CONTROLLER_MASTER_STILL_EXIST = 2011

class RemotingError(Exception):
    """A request that got no answer (connection refused, closed or timed out) or an undecodable one."""


class Reply:
    """One decoded answer: code, remark, ext fields and body."""

    def __init__(self, head, body):
        self.code = head.get("code")
        self.remark = head.get("remark")
        self.ext = head.get("extFields") or {}
        self.body = body

    def json(self):
        """The body parsed as fastjson output (unquoted numeric keys accepted); None when empty."""
        if not self.body:
            return None
        return parse_lenient(self.body.decode("utf-8"))

    def __str__(self):
        text = "code %s" % self.code
        if self.remark:
            text += " remark %r" % self.remark
        if self.ext:
            text += " ext %s" % json.dumps(self.ext, sort_keys=True)
        if self.body:
            text += " body %s" % self.body[:300].decode("utf-8", "replace")
        return text


class Client(fake_broker.Connection):
    """A connection that answers calls with Reply and can send one-way requests."""

    def __init__(self, addr, timeout=3.0):
        self.addr = addr
        try:
            super().__init__(addr, timeout=timeout)
        except OSError as e:
            raise RemotingError("%s: %s" % (addr, e)) from e

    def request(self, code, ext=None, body=b""):
        try:
            head, rbody = self.call(code, ext or {}, body)
        except (OSError, ValueError, struct.error) as e:
            raise RemotingError("%s: request %d: %s" % (self.addr, code, e)) from e
        return Reply(head, rbody)

    def oneway(self, code, ext=None, body=b""):
        frame = fake_broker.encode(code, ext, body, self.next_opaque(), fake_broker.ONEWAY_FLAG)
        try:
            with self.lock:
                self.sock.sendall(frame)
        except OSError as e:
            raise RemotingError("%s: one-way %d: %s" % (self.addr, code, e)) from e


def once(addr, code, ext=None, body=b"", timeout=3.0):
    """One request on a fresh connection, closed afterwards."""
    c = Client(addr, timeout=timeout)
    try:
        return c.request(code, ext, body)
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------------

def metadata(conn_or_addr):
    """CONTROLLER_GET_METADATA_INFO (1005): the ext fields (group, controllerLeaderId,
    controllerLeaderAddress, isLeader, peers)."""
    r = _ask(conn_or_addr, CONTROLLER_GET_METADATA_INFO)
    if r.code != SUCCESS:
        raise RemotingError("1005 answered %s" % r)
    return r.ext


def leader_of(addrs, timeout=1.0):
    """The controller leader's address as the reachable nodes report it (1005), or None.

    A node counts only when it names a leader; the answer is the address most nodes name."""
    seen = {}
    for a in addrs:
        try:
            ext = metadata_with_timeout(a, timeout)
        except RemotingError:
            continue
        leader = ext.get("controllerLeaderAddress")
        if leader:
            seen[leader] = seen.get(leader, 0) + 1
    if not seen:
        return None
    return max(seen.items(), key=lambda kv: kv[1])[0]


def metadata_with_timeout(addr, timeout):
    r = once(addr, CONTROLLER_GET_METADATA_INFO, timeout=timeout)
    if r.code != SUCCESS:
        raise RemotingError("1005 answered %s" % r)
    return r.ext


def sync_state_data(conn_or_addr, broker_names):
    """CONTROLLER_GET_SYNC_STATE_DATA (1006): {brokerName: ReplicasInfo} (CONTROLLER.md §3.3)."""
    body = json.dumps(list(broker_names)).encode("utf-8")
    r = _ask(conn_or_addr, CONTROLLER_GET_SYNC_STATE_DATA, body=body)
    if r.code != SUCCESS:
        raise RemotingError("1006 answered %s" % r)
    return (r.json() or {}).get("replicasInfoTable") or {}


def replica_info(conn_or_addr, broker_name):
    """CONTROLLER_GET_REPLICA_INFO (1004): the Reply (ext masterBrokerId/masterAddress/masterEpoch,
    body SyncStateSet)."""
    return _ask(conn_or_addr, CONTROLLER_GET_REPLICA_INFO, {"brokerName": broker_name})


def broker_epoch_cache(conn_or_addr):
    """GET_BROKER_EPOCH_CACHE (1007) to a broker: EpochEntryCache (brokerId 0 when master)."""
    r = _ask(conn_or_addr, GET_BROKER_EPOCH_CACHE)
    if r.code != SUCCESS:
        raise RemotingError("1007 answered %s" % r)
    return r.json() or {}


def cluster_addrs(conn_or_addr, broker_name):
    """GET_BROKER_CLUSTER_INFO (106): brokerAddrs of one broker name, {id(str): addr}."""
    r = _ask(conn_or_addr, GET_BROKER_CLUSTER_INFO)
    if r.code != SUCCESS:
        raise RemotingError("106 answered %s" % r)
    table = (r.json() or {}).get("brokerAddrTable") or {}
    return ((table.get(broker_name) or {}).get("brokerAddrs")) or {}


def route_addrs(conn_or_addr, topic, broker_name):
    """GET_ROUTEINFO_BY_TOPIC (105) as a 5.3.3 client asks it: brokerAddrs of broker_name in the
    topic's route, {id(str): addr}; {} when the topic has no route yet."""
    r = _ask(conn_or_addr, GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    if r.code != SUCCESS:
        return {}
    for bd in (r.json() or {}).get("brokerDatas") or []:
        if bd.get("brokerName") == broker_name:
            return {str(k): v for k, v in (bd.get("brokerAddrs") or {}).items()}
    return {}


def _ask(conn_or_addr, code, ext=None, body=b""):
    if isinstance(conn_or_addr, Client):
        return conn_or_addr.request(code, ext, body)
    return once(conn_or_addr, code, ext, body)
