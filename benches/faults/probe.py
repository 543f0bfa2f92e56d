#!/usr/bin/env python3
"""Failover probe (runs in the clients' namespace): one thread per controller node polls
CONTROLLER_GET_REPLICA_INFO (1004), one per name server GET_BROKER_CLUSTER_INFO (106), every
--interval-ms, and appends a JSON line per answer to --out:

  {"t", "kind": "ctl", "node", "code", "state": {masterId, masterEpoch, sss, sssEpoch, ...}}
  {"t", "kind": "ns", "node", "code", "addrs": {id: addr}}          (brokerAddrs of --set)
  {"t", "kind": "ctl"|"ns", "node", "error": "..."}                  (no answer)

  python3 probe.py --controllers "n0=ip:p;..." --namesrv "n0=ip:p;..." --set setA --out FILE
"""

import argparse
import json
import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "faults"))

import ctlclient as cc  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--controllers", required=True)
    p.add_argument("--namesrv", default="")
    p.add_argument("--set", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--interval-ms", type=int, default=20)
    p.add_argument("--timeout", type=float, default=0.3)
    a = p.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    fd = os.open(a.out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    lock = threading.Lock()

    def emit(rec):
        line = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        with lock:
            os.write(fd, line)

    def loop(kind, name, addr):
        conn = None
        while not stop.is_set():
            t = time.time()
            rec = {"t": t, "kind": kind, "node": name}
            try:
                if conn is None or conn.closed:
                    conn = cc.Conn(addr, timeout=a.timeout, connect_timeout=a.timeout)
                if kind == "ctl":
                    r = conn.request(cc.GET_REPLICA_INFO, {"brokerName": a.set})
                    rec["code"] = r.code
                    if r.code == 0:
                        rec["state"] = cc.replica_state(r)
                else:
                    r = conn.request(cc.GET_BROKER_CLUSTER_INFO)
                    rec["code"] = r.code
                    table = (r.json() or {}).get("brokerAddrTable") or {}
                    rec["addrs"] = {str(k): v for k, v in
                                    ((table.get(a.set) or {}).get("brokerAddrs") or {}).items()}
                rec["t_end"] = time.time()
            except cc.RemotingError as e:
                rec["error"] = str(e)[:100]
                if conn is not None:
                    conn.close()
                conn = None
            emit(rec)
            stop.wait(a.interval_ms / 1000.0)

    threads = []
    for kind, spec in (("ctl", a.controllers), ("ns", a.namesrv)):
        for name, addr in cc.parse_controllers(spec) if spec else []:
            th = threading.Thread(target=loop, args=(kind, name, addr), daemon=True)
            th.start()
            threads.append(th)
    while not stop.wait(0.2):
        pass
    time.sleep(0.1)
    os.close(fd)


if __name__ == "__main__":
    main()
