"""The JSONL history of the fault tests (format in /work/faults-plan.md, "History").

Every client process appends to its own file <rundir>/history/<proc>.jsonl, one JSON object a
line, flushed per line (a SIGKILLed process loses at most the line being written):

  {"t": time.time(), "proc": "b0", "type": "invoke|ok|fail|info", "op": "<op>", "node": "n1",
   "set": "<brokerName>", "args": {...}, "value": {...}, "code": <int|null>, "remark": "...",
   "id": <int, pairs an invoke with its completion within one proc>}

The harness appends nemesis events to <rundir>/history/nemesis.jsonl:
  {"t":..., "proc": "nemesis", "type": "start|stop", "fault": "<name>", "detail": {...}}

Reader side: load(rundir) merges every file in time order; ops(events) pairs invokes with
their completions into Op records (an invoke never completed is an info op, end = inf).
"""

import glob
import itertools
import json
import os
import threading
import time

INF = float("inf")


class Writer:
    """Appends records of one process; thread-safe; one write(2) per line."""

    def __init__(self, path, proc):
        self.proc = proc
        self.path = path
        d = os.path.dirname(path)
        if d:
            os.makedirs(d, exist_ok=True)
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.lock = threading.Lock()
        self.ids = itertools.count(int(time.time() * 1000) % 1000000 * 1000)

    def write(self, rec):
        rec.setdefault("t", time.time())
        rec.setdefault("proc", self.proc)
        line = (json.dumps(rec, separators=(",", ":"), default=str) + "\n").encode("utf-8")
        with self.lock:
            try:
                os.write(self.fd, line)
            except OSError:
                pass
        return rec

    def invoke(self, op, node=None, set=None, args=None):  # noqa: A002 - the format's name
        rec = {"type": "invoke", "op": op, "node": node, "set": set, "args": args or {},
               "id": next(self.ids)}
        self.write(rec)
        return rec

    def complete(self, inv, type, value=None, code=None, remark=None):  # noqa: A002
        assert type in ("ok", "fail", "info"), type
        rec = {"type": type, "op": inv["op"], "node": inv.get("node"), "set": inv.get("set"),
               "args": inv.get("args") or {}, "value": value if value is not None else {},
               "code": code, "remark": remark, "id": inv["id"]}
        return self.write(rec)

    def event(self, type, op, node=None, set=None, args=None, value=None, code=None,  # noqa: A002
              remark=None):
        """A record without an invoke (e.g. role_notify, a push the process received)."""
        return self.write({"type": type, "op": op, "node": node, "set": set, "args": args or {},
                           "value": value or {}, "code": code, "remark": remark})

    def close(self):
        with self.lock:
            try:
                os.close(self.fd)
            except OSError:
                pass


class Nemesis:
    """Writer of nemesis.jsonl events (for the harness, and the tests)."""

    def __init__(self, rundir):
        self.w = Writer(os.path.join(rundir, "history", "nemesis.jsonl"), "nemesis")

    def start(self, fault, **detail):
        return self.w.write({"type": "start", "fault": fault, "detail": detail})

    def stop(self, fault, **detail):
        return self.w.write({"type": "stop", "fault": fault, "detail": detail})


def read_file(path):
    out = []
    with open(path, "rb") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn last line of a SIGKILLed process
            if isinstance(rec, dict) and "t" in rec:
                out.append(rec)
    return out


def load(rundir):
    """Every record of <rundir>/history/*.jsonl (or rundir itself if it holds the files), in
    time order (ties keep file order)."""
    d = os.path.join(rundir, "history")
    if not os.path.isdir(d):
        d = rundir
    recs = []
    for i, path in enumerate(sorted(glob.glob(os.path.join(d, "*.jsonl")))):
        for j, rec in enumerate(read_file(path)):
            recs.append((rec["t"], i, j, rec))
    recs.sort(key=lambda x: x[:3])
    return [r[3] for r in recs]


class Op:
    """One operation: invoke and completion merged."""

    __slots__ = ("proc", "op", "node", "set", "args", "value", "code", "remark", "type",
                 "start", "end", "id", "index", "inv", "comp")

    def __init__(self, inv, comp, index):
        self.inv, self.comp, self.index = inv, comp, index
        self.proc = inv.get("proc")
        self.op = inv.get("op")
        self.node = inv.get("node")
        self.set = inv.get("set")
        self.args = inv.get("args") or {}
        self.id = inv.get("id")
        self.start = inv["t"]
        if comp is None:
            self.type, self.value, self.code, self.remark, self.end = "info", {}, None, None, INF
        else:
            self.type = comp.get("type")
            self.value = comp.get("value") or {}
            self.code = comp.get("code")
            self.remark = comp.get("remark")
            self.end = comp["t"] if self.type != "info" else INF
            if not self.node:
                self.node = comp.get("node")

    def lines(self):
        return [r for r in (self.inv, self.comp) if r is not None]

    def __repr__(self):
        return "Op(%s %s %s@%s %s code=%s %s)" % (self.proc, self.op, self.type, self.node,
                                                  self.args, self.code, self.value)


def ops(records):
    """Pairs invokes with completions: by (proc, id) when present, else the next completion
    of the same (proc, op). Completion-only records (role_notify pushes) become ops whose
    start = end = their time."""
    out, open_by_id, open_by_op = [], {}, {}
    for rec in records:
        if rec.get("proc") == "nemesis":
            continue
        typ = rec.get("type")
        if typ == "invoke":
            op = [rec, None]
            out.append(op)
            if rec.get("id") is not None:
                open_by_id[(rec.get("proc"), rec["id"])] = op
            else:
                open_by_op.setdefault((rec.get("proc"), rec.get("op")), []).append(op)
        elif typ in ("ok", "fail", "info"):
            op = None
            if rec.get("id") is not None:
                op = open_by_id.pop((rec.get("proc"), rec["id"]), None)
            else:
                q = open_by_op.get((rec.get("proc"), rec.get("op")))
                if q:
                    op = q.pop(0)
            if op is None:
                out.append([dict(rec, type="invoke"), rec])  # an event without invoke
            else:
                op[1] = rec
    return [Op(inv, comp, i) for i, (inv, comp) in enumerate(out)]


def nemesis_events(records):
    return [r for r in records if r.get("proc") == "nemesis"]
