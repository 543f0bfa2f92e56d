#!/usr/bin/env python3
"""A broker replica of one broker set speaking the real controller protocol (stdlib only).

  python3 brokersim.py --proc b0 --cluster C --name setA --addr IP:PORT \
      --controllers "ip:p;ip:p;ip:p" --history FILE --duration S [--seed N] \
      [--hb-ms 500] [--hb-timeout-ms 3000] [--poll-ms 1000] [--priority P] [--state FILE]

What it does, as a 5.3.3 broker's ReplicasManager does (CONTROLLER.md §6), faster and with
random sync-state-set changes:
- finds the leader with CONTROLLER_GET_METADATA_INFO (1005) on every node;
- without a persisted id: GET_NEXT_BROKER_ID (1012) then APPLY_BROKER_ID (1013, check code
  "<addr>;<ms>"), the id kept in --state (default <rundir>/brokers/<proc>.identity) like the
  brokerIdentity file;
- REGISTER_BROKER_TO_CONTROLLER (1003); no live master in the answer -> ELECT_MASTER (1002,
  broker trigger);
- BROKER_HEARTBEAT (904, one-way) every --hb-ms to every node, Java's header (epoch, maxOffset,
  confirmOffset, heartbeatTimeoutMills, electionPriority);
- GET_REPLICA_INFO (1004) poll every --poll-ms: a higher master epoch is adopted, a higher epoch
  without a master -> ELECT_MASTER;
- as master, ALTER_SYNC_STATE_SET (1001) now and then, growing or shrinking the set at random,
  with the master epoch and sync-state-set epoch it holds (Java's fencing);
- listens on --addr and records NOTIFY_BROKER_ROLE_CHANGED (1008) pushes (op role_notify), also
  pushes that arrive on its own connections.
Every request is recorded in the history (invoke, then ok / fail / info; timeout or connection
lost after sending = info). SIGTERM stops cleanly; SIGKILL is a crash.
"""

import argparse
import os
import random
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctlclient as cc  # noqa: E402
from history import Writer  # noqa: E402

OK_CODES = {
    "next_id": {0}, "apply_id": {0}, "register": {0}, "elect": {0}, "alter_sync": {0},
    "replica_info": {0}, "metadata": {0}, "sync_state": {0},
}


def now_ms():
    return int(time.time() * 1000)


class Broker:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed if a.seed is not None else os.getpid() ^ now_ms())
        self.ctls = cc.parse_controllers(a.controllers)
        self.addr_to_name = {addr: name for name, addr in self.ctls}
        self.host_to_name = {}
        for name, addr in self.ctls:
            host = addr.rsplit(":", 1)[0]
            self.host_to_name[host] = None if host in self.host_to_name else name
        self.h = Writer(a.history, a.proc)
        self.stop = threading.Event()
        self.conns = {}
        self.clock = threading.Lock()
        self.leader = None
        self.leader_checked = 0.0
        self.state_file = a.state or os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(a.history))), "brokers",
            a.proc + ".identity")
        self.id = self._load_id()
        self.registered = False
        self.master_id = None
        self.master_epoch = 0
        self.sss = []
        self.sss_epoch = 0
        self.role = None
        self.epoch = -1  # the broker's last epoch-file entry
        self.max_offset = 0
        self.known_ids = {1, 2, 3}
        self.lock = threading.RLock()
        self.poll_now = False
        self.ns = [x.strip() for x in (a.namesrv or "").split(";") if x.strip()]
        self.ns_wake = threading.Event()
        self.ns_conns = {}
        self.dv_counter = 0

    # ------------------------------------------------------------------ identity file
    def _load_id(self):
        try:
            with open(self.state_file) as f:
                cluster, name, bid = f.read().strip().split("#")[:3]
            if cluster == self.a.cluster and name == self.a.name:
                return int(bid)
        except (OSError, ValueError):
            pass
        return None

    def _save_id(self, bid):
        os.makedirs(os.path.dirname(self.state_file), exist_ok=True)
        tmp = self.state_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%s#%s#%d" % (self.a.cluster, self.a.name, bid))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.state_file)

    # ------------------------------------------------------------------ connections
    def conn(self, name):
        with self.clock:
            c = self.conns.get(name)
            if c is not None and not c.closed:
                return c
        addr = dict(self.ctls)[name]
        c = cc.Conn(addr, timeout=self.a.req_timeout, connect_timeout=0.5,
                    on_request=lambda head, body, cn, n=name: self.on_push(head, body, cn, n))
        with self.clock:
            old = self.conns.get(name)
            self.conns[name] = c
        if old is not None:
            old.close()
        return c

    def drop(self, name):
        with self.clock:
            c = self.conns.pop(name, None)
        if c is not None:
            c.close()

    def call(self, op, name, code, ext=None, body=b"", args=None, decode=None):
        """One recorded request; returns the Reply or None (no answer)."""
        inv = self.h.invoke(op, node=name, set=self.a.name, args=args or {})
        try:
            c = self.conn(name)
        except cc.RemotingError as e:
            self.h.complete(inv, "fail", remark="not sent: %s" % e)
            return None
        try:
            r = c.request(code, ext, body)
        except cc.Timeout as e:
            self.h.complete(inv, "info", remark=str(e))
            self.drop(name)  # Java closes the channel after a timeout
            return None
        except cc.RemotingError as e:
            self.h.complete(inv, "info", remark=str(e))
            self.drop(name)
            return None
        value = {}
        try:
            value = decode(r) if decode else {}
        except (ValueError, TypeError, KeyError) as e:
            value = {"decode_error": str(e)}
        typ = "ok" if r.code in OK_CODES.get(op, {0}) else "fail"
        self.h.complete(inv, typ, value=value, code=r.code, remark=r.remark)
        if r.code == cc.NOT_LEADER and name == self.leader:
            self.leader = None
        return r

    # ------------------------------------------------------------------ pushes
    def on_push(self, head, body, conn, node):
        code = head.get("code")
        if code == cc.NOTIFY_BROKER_ROLE_CHANGED:
            r = cc.Reply(head, body)
            value = role_value(r)
            self.h.event("ok", "role_notify", node=node, set=self.a.name,
                         args={"via": "conn"}, value=value, code=0)
            self.adopt(value, "notify")
            try:
                conn.respond(head, 0)
            except OSError:
                pass
        else:
            try:
                conn.respond(head, 3, body=b"")
            except OSError:
                pass

    def serve(self):
        host, port = self.a.addr.rsplit(":", 1)
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((host, int(port)))
        srv.listen(16)
        srv.settimeout(0.5)
        self.srv = srv
        while not self.stop.is_set():
            try:
                s, peer = srv.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            node = self.host_to_name.get(peer[0]) or "?"
            threading.Thread(target=self._serve_conn, args=(s, node), daemon=True).start()

    def _serve_conn(self, s, node):
        s.settimeout(None)

        class _C:
            wlock = threading.Lock()

            def respond(self_, head, code=0, ext=None, body=b""):
                if head.get("flag", 0) & cc.ONEWAY_FLAG:
                    return
                frame = cc.encode(code, ext, body, head.get("opaque", 0), cc.RESPONSE_FLAG)
                with self_.wlock:
                    s.sendall(frame)

        c = _C()
        try:
            while not self.stop.is_set():
                head, body = cc.read_frame(s)
                if head.get("code") == cc.NOTIFY_BROKER_ROLE_CHANGED:
                    r = cc.Reply(head, body)
                    value = role_value(r)
                    self.h.event("ok", "role_notify", node=node, set=self.a.name,
                                 args={"via": "listen"}, value=value, code=0)
                    self.adopt(value, "notify")
                    c.respond(head, 0)
                elif head.get("code") == cc.GET_BROKER_EPOCH_CACHE:
                    c.respond(head, 0, body=self.epoch_cache())
                else:
                    c.respond(head, 3)
        except (OSError, ValueError):
            pass
        finally:
            try:
                s.close()
            except OSError:
                pass

    def epoch_cache(self):
        import json
        with self.lock:
            bid = 0 if self.role == "master" else (self.id if self.role else -1)
            return json.dumps({"brokerId": bid, "brokerName": self.a.name,
                               "clusterName": self.a.cluster,
                               "epochList": [{"endOffset": 9223372036854775807,
                                              "epoch": max(self.epoch, 0), "startOffset": 0}],
                               "maxOffset": self.max_offset}).encode()

    # ------------------------------------------------------------------ role
    def adopt(self, v, source):
        """Applies a role input if its master epoch is greater (Java's rule), or, for the
        master at the same epoch, a newer sync-state set."""
        with self.lock:
            me = v.get("masterEpoch")
            if me is None:
                return
            mid = v.get("masterId")
            if me > self.master_epoch:
                if mid is None:
                    # epoch moved on without a master: note it, elect on the next poll
                    self.master_epoch, self.master_id = me, None
                    self.role = None
                    self.poll_now = True
                    if v.get("sssEpoch") is not None and v.get("sss") is not None:
                        self.sss, self.sss_epoch = list(v["sss"]), v["sssEpoch"]
                    return
                self.master_epoch, self.master_id = me, mid
                if v.get("sssEpoch") is not None and v.get("sss") is not None:
                    self.sss, self.sss_epoch = list(v["sss"]), v["sssEpoch"]
                self.role = "master" if mid == self.id else "slave"
                self.epoch = me
                self.ns_wake.set()
            elif me == self.master_epoch and self.role == "master" and \
                    v.get("sssEpoch") is not None and v["sssEpoch"] > self.sss_epoch:
                self.sss, self.sss_epoch = list(v.get("sss") or []), v["sssEpoch"]

    # ------------------------------------------------------------------ heartbeats
    def heartbeat_loop(self):
        period = self.a.hb_ms / 1000.0
        while not self.stop.wait(period):
            with self.lock:
                if self.id is None or not self.registered:
                    continue
                if self.role == "master":
                    self.max_offset += self.rng.randint(100, 1000)
                elif self.role == "slave":
                    self.max_offset += self.rng.randint(0, 1000)
                ext = {
                    "clusterName": self.a.cluster, "brokerAddr": self.a.addr,
                    "brokerName": self.a.name, "brokerId": self.id, "epoch": self.epoch,
                    "maxOffset": self.max_offset, "confirmOffset": self.max_offset,
                    "heartbeatTimeoutMills": self.a.hb_timeout_ms,
                    "electionPriority": self.a.priority,
                }
            for name, _addr in self.ctls:
                inv = self.h.invoke("heartbeat", node=name, set=self.a.name,
                                    args={"brokerId": ext["brokerId"], "epoch": ext["epoch"],
                                          "maxOffset": ext["maxOffset"]})
                try:
                    self.conn(name).oneway(cc.BROKER_HEARTBEAT, ext)
                    self.h.complete(inv, "ok")
                except cc.RemotingError as e:
                    self.h.complete(inv, "info" if "one-way" in str(e) else "fail",
                                    remark=str(e))

    # ------------------------------------------------------------------ steps
    def find_leader(self):
        leader = None
        # the first node naming a leader wins, as in Java's broker; the order differs from
        # replica to replica (and from refresh to refresh), as the brokers' configs would
        order = list(self.ctls)
        self.rng.shuffle(order)
        for name, _addr in order:
            r = self.call("metadata", name, cc.GET_METADATA_INFO, decode=lambda r: dict(r.ext))
            if r is not None and r.code == 0:
                la = r.ext.get("controllerLeaderAddress")
                if la and la in self.addr_to_name and leader is None:
                    leader = self.addr_to_name[la]
        self.leader = leader
        self.leader_checked = time.time()
        return leader

    def get_id(self, leader):
        r = self.call("next_id", leader, cc.GET_NEXT_BROKER_ID,
                      {"clusterName": self.a.cluster, "brokerName": self.a.name},
                      decode=lambda r: {"nextBrokerId": int(r.ext.get("nextBrokerId", -1))})
        if r is None or r.code != 0:
            return False
        bid = int(r.ext.get("nextBrokerId", -1))
        check = "%s;%d" % (self.a.addr, now_ms())
        r = self.call("apply_id", leader, cc.APPLY_BROKER_ID,
                      {"clusterName": self.a.cluster, "brokerName": self.a.name,
                       "appliedBrokerId": bid, "registerCheckCode": check},
                      args={"appliedBrokerId": bid, "registerCheckCode": check})
        if r is None or r.code != 0:
            return False
        self._save_id(bid)
        self.id = bid
        self.known_ids.add(bid)
        return True

    def register(self, leader):
        r = self.call("register", leader, cc.REGISTER_BROKER,
                      {"clusterName": self.a.cluster, "brokerName": self.a.name,
                       "brokerId": self.id, "brokerAddress": self.a.addr,
                       "invokeTime": now_ms()},
                      args={"brokerId": self.id, "brokerAddress": self.a.addr},
                      decode=register_value)
        if r is None or r.code != 0:
            return False
        self.registered = True
        v = register_value(r)
        if v.get("masterId") is not None:
            self.adopt(v, "register")
        else:
            self.elect(leader)
        return True

    def elect(self, leader):
        r = self.call("elect", leader, cc.ELECT_MASTER,
                      {"clusterName": self.a.cluster, "brokerName": self.a.name,
                       "brokerId": self.id, "designateElect": "false",
                       "invokeTime": now_ms()},
                      args={"brokerId": self.id, "designateElect": False},
                      decode=elect_value)
        if r is not None and r.code in (0, cc.MASTER_STILL_EXIST):
            v = elect_value(r)
            for k in (v.get("members") or {}):
                try:
                    self.known_ids.add(int(k))
                except ValueError:
                    pass
            if v.get("masterId") is not None:
                self.adopt(v, "elect")

    def poll(self, leader):
        r = self.call("replica_info", leader, cc.GET_REPLICA_INFO, {"brokerName": self.a.name},
                      decode=cc.replica_state)
        if r is None:
            return
        if r.code == 2008:
            self.registered = False
            return
        if r.code != 0:
            return
        v = cc.replica_state(r)
        self.known_ids.update(v["sss"])
        with self.lock:
            greater = v["masterEpoch"] > self.master_epoch
            masterless = v["masterId"] is None
            no_role = self.role is None
        if (greater or no_role) and masterless:
            self.adopt(v, "poll")
            self.elect(leader)
        else:
            self.adopt(v, "poll")

    def maybe_alter(self, leader):
        with self.lock:
            if self.role != "master" or self.rng.random() > self.a.alter_prob:
                return
            cur = set(self.sss) | {self.id}
            others = sorted(self.known_ids - cur)
            removable = sorted(cur - {self.id})
            if self.a.alter_mode == "grow":
                if not others:
                    return
                new = cur | set(others)
            elif others and (not removable or self.rng.random() < 0.6):
                new = cur | {self.rng.choice(others)}
            elif removable:
                new = cur - {self.rng.choice(removable)}
            else:
                return
            new = sorted(new)
            master_epoch, sss_epoch, mid = self.master_epoch, self.sss_epoch, self.id
        import json
        body = json.dumps({"syncStateSet": new, "syncStateSetEpoch": sss_epoch}).encode()
        r = self.call("alter_sync", leader, cc.ALTER_SYNC_STATE_SET,
                      {"brokerName": self.a.name, "masterBrokerId": mid,
                       "masterEpoch": master_epoch, "invokeTime": now_ms()}, body,
                      args={"masterBrokerId": mid, "masterEpoch": master_epoch,
                            "sss": new, "sssEpoch": sss_epoch},
                      decode=alter_value)
        if r is None:
            return
        if r.code == 0:
            v = alter_value(r)
            with self.lock:
                if self.master_epoch == master_epoch and v.get("sssEpoch", 0) > self.sss_epoch:
                    self.sss, self.sss_epoch = list(v.get("sss") or new), v["sssEpoch"]
        elif r.code in (2000, 2001, 2002):
            self.poll_now = True

    def step(self):
        if self.leader is None or time.time() - self.leader_checked > self.a.leader_refresh:
            self.find_leader()
        leader = self.leader
        if leader is None:
            return
        if self.id is None:
            if not self.get_id(leader):
                return
        if not self.registered:
            self.register(leader)
            return
        self.poll(leader)
        self.maybe_alter(leader)

    # ------------------------------------------------------------------ name servers
    def ns_body(self, master_epoch):
        import json
        import zlib
        self.dv_counter += 1
        stamp = now_ms()
        dv = {"counter": self.dv_counter, "stateVersion": master_epoch, "timestamp": stamp}
        table = {}
        for t in ("FaultsTopic", "FaultsTopic2"):
            table[t] = {"attributes": {}, "order": False, "perm": 6, "readQueueNums": 4,
                        "topicFilterType": "SINGLE_TAG", "topicName": t, "topicSysFlag": 0,
                        "writeQueueNums": 4}
        wrapper = {"dataVersion": dv,
                   "mappingDataVersion": {"counter": 0, "stateVersion": 0, "timestamp": stamp},
                   "topicConfigTable": table, "topicQueueMappingDetailMap": {},
                   "topicQueueMappingInfoMap": {}}
        body = json.dumps({"filterServerList": [], "topicConfigSerializeWrapper": wrapper},
                          separators=(",", ":")).encode()
        return body, zlib.crc32(body) & 0x7FFFFFFF

    def ns_loop(self):
        last, last_t = None, 0.0
        while not self.stop.is_set():
            self.ns_wake.wait(0.5)
            self.ns_wake.clear()
            with self.lock:
                role, me, bid = self.role, self.master_epoch, self.id
            if role is None or bid is None:
                continue
            if (role, me) == last and time.time() - last_t < 10:
                continue
            last, last_t = (role, me), time.time()
            body, crc = self.ns_body(me)
            ext = {"brokerName": self.a.name, "brokerAddr": self.a.addr,
                   "clusterName": self.a.cluster, "haServerAddr": self.a.addr,
                   "brokerId": 0 if role == "master" else bid, "compressed": "false",
                   "bodyCrc32": crc, "enableActingMaster": "false"}
            for i, addr in enumerate(self.ns):
                inv = self.h.invoke("ns_register", node="ns%d" % i, set=self.a.name,
                                    args={"brokerId": ext["brokerId"], "stateVersion": me})
                try:
                    c = self.ns_conns.get(addr)
                    if c is None or c.closed:
                        c = self.ns_conns[addr] = cc.Conn(addr, timeout=1.0, connect_timeout=0.5)
                    r = c.request(103, ext, body)
                    self.h.complete(inv, "ok" if r.code == 0 else "fail", code=r.code,
                                    remark=r.remark)
                except cc.RemotingError as e:
                    self.h.complete(inv, "info", remark=str(e))
                    c = self.ns_conns.pop(addr, None)
                    if c is not None:
                        c.close()
                    last = None  # retry soon

    def run(self):
        threading.Thread(target=self.serve, daemon=True).start()
        if self.ns:
            threading.Thread(target=self.ns_loop, daemon=True).start()
        threading.Thread(target=self.heartbeat_loop, daemon=True).start()
        deadline = time.time() + self.a.duration
        while not self.stop.is_set() and time.time() < deadline:
            try:
                self.step()
            except Exception as e:  # noqa: BLE001 - keep the replica running
                self.h.event("info", "error", remark=repr(e))
            wait = self.a.poll_ms / 1000.0 * self.rng.uniform(0.7, 1.3)
            if self.poll_now:
                self.poll_now, wait = False, 0.05
            self.stop.wait(wait)
        self.stop.set()
        with self.clock:
            for c in self.conns.values():
                c.close()
        self.h.close()


def _master_fields(ext):
    """The master a controller answer's header names: id, address and epoch."""
    mid = ext.get("masterBrokerId")
    return {
        "masterId": int(mid) if mid not in (None, "", "null") else None,
        "masterAddr": ext.get("masterAddress"),
        "masterEpoch": int(ext["masterEpoch"]) if ext.get("masterEpoch") else None,
    }


def _sss(body):
    return sorted(int(x) for x in (body.get("syncStateSet") or []))


def _header_sss_epoch(ext):
    return int(ext["syncStateSetEpoch"]) if ext.get("syncStateSetEpoch") else None


def role_value(r):
    ext, body = r.ext, r.json() or {}
    return dict(_master_fields(ext), sssEpoch=_header_sss_epoch(ext), sss=_sss(body))


def register_value(r):
    ext, body = r.ext, r.json() or {}
    return dict(_master_fields(ext), sss=_sss(body),
                sssEpoch=int(body.get("syncStateSetEpoch", 0) or 0))


def elect_value(r):
    ext, body = r.ext, r.json() or {}
    group = body.get("brokerMemberGroup") or {}
    return dict(_master_fields(ext), sssEpoch=_header_sss_epoch(ext), sss=_sss(body),
                members={str(k): v for k, v in (group.get("brokerAddrs") or {}).items()})


def alter_value(r):
    body = r.json() or {}
    e = r.ext.get("newSyncStateSetEpoch")
    return {"sssEpoch": int(e) if e not in (None, "") else None,
            "sss": _sss(body)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--proc", required=True)
    p.add_argument("--cluster", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--addr", required=True)
    p.add_argument("--controllers", required=True)
    p.add_argument("--history", required=True)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--seed", type=int)
    p.add_argument("--hb-ms", type=int, default=500)
    p.add_argument("--hb-timeout-ms", type=int, default=3000)
    p.add_argument("--poll-ms", type=int, default=1000)
    p.add_argument("--req-timeout", type=float, default=3.0)
    p.add_argument("--leader-refresh", type=float, default=3.0)
    p.add_argument("--alter-prob", type=float, default=0.5)
    p.add_argument("--priority", type=int, default=2147483647)
    p.add_argument("--state")
    p.add_argument("--namesrv", default="",
                   help="'ip:port;...' name servers to REGISTER_BROKER with (id 0 as master, the "
                        "controller id as slave, stateVersion = master epoch) on every role change "
                        "and every 10 s")
    p.add_argument("--alter-mode", choices=("random", "grow"), default="random",
                   help="random: grow or shrink at random; grow: add every known replica (as a "
                        "Java master does once its slaves caught up)")
    a = p.parse_args(argv)
    b = Broker(a)
    signal.signal(signal.SIGTERM, lambda *_: b.stop.set())
    signal.signal(signal.SIGINT, lambda *_: b.stop.set())
    b.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
