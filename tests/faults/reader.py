#!/usr/bin/env python3
"""Linearizability reader: leader-only reads to random controller nodes (stdlib only).

  python3 reader.py --proc r0 --controllers "ip:p;ip:p;ip:p" --set setA --history FILE \
      --duration S [--seed N] [--interval-ms 50] [--read-event keep|on|off|mixed]

Sends, to a node chosen at random each time, CONTROLLER_GET_REPLICA_INFO (1004, op
replica_info) mostly, CONTROLLER_GET_METADATA_INFO (1005, op metadata) and
CONTROLLER_GET_SYNC_STATE_DATA (1006, op sync_state) now and then. Followers answer 2007 (a
fail); a timeout or lost connection is info. --set may be given more than once.

--read-event: "keep" leaves each node's processReadEvent as it is; "on"/"off" set it on every
node at start (UPDATE_CONTROLLER_CONFIG 1009, node-local); "mixed" sets it on for the even
nodes and off for the odd ones. Every read records args.readEvent (the value set, or null).
"""

import argparse
import json
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ctlclient as cc  # noqa: E402
from history import Writer  # noqa: E402


def sync_state_value(r):
    table = (r.json() or {}).get("replicasInfoTable") or {}
    out = {}
    for name, info in table.items():
        mid = info.get("masterBrokerId")
        out[name] = {
            "masterId": int(mid) if mid is not None else None,
            "masterEpoch": int(info.get("masterEpoch", 0) or 0),
            "sssEpoch": int(info.get("syncStateSetEpoch", 0) or 0),
            "sss": sorted(int(x["brokerId"]) for x in info.get("inSyncReplicas") or []),
            "ids": sorted(int(x["brokerId"]) for x in
                          (info.get("inSyncReplicas") or []) + (info.get("notInSyncReplicas") or [])),
            "alive": sorted(int(x["brokerId"]) for x in
                            (info.get("inSyncReplicas") or []) + (info.get("notInSyncReplicas") or [])
                            if x.get("alive")),
        }
    return out


class Reader:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed if a.seed is not None else os.getpid() ^ int(time.time()))
        self.ctls = cc.parse_controllers(a.controllers)
        self.h = Writer(a.history, a.proc)
        self.conns = {}
        self.read_event = {}
        self.stop = threading.Event()

    def conn(self, name):
        c = self.conns.get(name)
        if c is None or c.closed:
            c = cc.Conn(dict(self.ctls)[name], timeout=self.a.timeout, connect_timeout=0.5)
            self.conns[name] = c
        return c

    def call(self, op, name, code, ext=None, body=b"", args=None, decode=None, set_=None):
        args = dict(args or {})
        args["readEvent"] = self.read_event.get(name)
        inv = self.h.invoke(op, node=name, set=set_, args=args)
        try:
            c = self.conn(name)
        except cc.RemotingError as e:
            self.h.complete(inv, "fail", remark="not sent: %s" % e)
            return None
        try:
            r = c.request(code, ext, body)
        except cc.RemotingError as e:
            self.h.complete(inv, "info", remark=str(e))
            c.close()
            self.conns.pop(name, None)
            return None
        value = {}
        if r.code == 0 and decode:
            try:
                value = decode(r)
            except (ValueError, TypeError, KeyError) as e:
                value = {"decode_error": str(e)}
        self.h.complete(inv, "ok" if r.code == 0 else "fail", value=value, code=r.code,
                        remark=r.remark)
        return r

    def set_read_event(self):
        mode = self.a.read_event
        if mode == "keep":
            return
        for i, (name, _addr) in enumerate(self.ctls):
            on = mode == "on" or (mode == "mixed" and i % 2 == 0)
            val = "true" if on else "false"
            r = self.call("config", name, cc.UPDATE_CONTROLLER_CONFIG,
                          body=("processReadEvent=%s\n" % val).encode(),
                          args={"processReadEvent": on})
            if r is not None and r.code == 0:
                self.read_event[name] = on

    def run(self):
        self.set_read_event()
        deadline = time.time() + self.a.duration
        while not self.stop.is_set() and time.time() < deadline:
            name = self.rng.choice(self.ctls)[0]
            x = self.rng.random()
            bset = self.rng.choice(self.a.set)
            if x < 0.8:
                self.call("replica_info", name, cc.GET_REPLICA_INFO, {"brokerName": bset},
                          decode=cc.replica_state, set_=bset)
            elif x < 0.9:
                self.call("metadata", name, cc.GET_METADATA_INFO, decode=lambda r: dict(r.ext))
            else:
                self.call("sync_state", name, cc.GET_SYNC_STATE_DATA,
                          body=json.dumps(self.a.set).encode(), decode=sync_state_value,
                          args={"sets": self.a.set})
            self.stop.wait(self.a.interval_ms / 1000.0 * self.rng.uniform(0.5, 1.5))
        for c in self.conns.values():
            c.close()
        self.h.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--proc", required=True)
    p.add_argument("--controllers", required=True)
    p.add_argument("--set", action="append", required=True)
    p.add_argument("--history", required=True)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--seed", type=int)
    p.add_argument("--interval-ms", type=int, default=50)
    p.add_argument("--timeout", type=float, default=1.0)
    p.add_argument("--read-event", choices=("keep", "on", "off", "mixed"), default="keep")
    a = p.parse_args(argv)
    r = Reader(a)
    signal.signal(signal.SIGTERM, lambda *_: r.stop.set())
    signal.signal(signal.SIGINT, lambda *_: r.stop.set())
    r.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
