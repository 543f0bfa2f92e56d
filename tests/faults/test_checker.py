"""Unit tests of the fault-test checker: each invariant with a history that violates it and one
that passes; WGL on known linearizable / non-linearizable histories.

  python3 -m unittest tests/faults/test_checker.py      (from the repository root)
"""

import json
import os
import random
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checker  # noqa: E402
import checkmodel  # noqa: E402
import history  # noqa: E402
import wgl  # noqa: E402

S = "setA"


class Run:
    """A synthetic rundir: ops written with explicit times."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="faults-test-")
        self.writers = {}
        self.n = 0

    def w(self, proc):
        if proc not in self.writers:
            self.writers[proc] = history.Writer(
                os.path.join(self.dir, "history", "%s.jsonl" % proc), proc)
        return self.writers[proc]

    def op(self, proc, op, t0, t1, typ="ok", node="n0", set_=S, args=None, value=None, code=0):
        w = self.w(proc)
        self.n += 1
        w.write({"t": t0, "type": "invoke", "op": op, "node": node, "set": set_,
                 "args": args or {}, "id": self.n})
        if t1 is not None:
            w.write({"t": t1, "type": typ, "op": op, "node": node, "set": set_,
                     "args": args or {}, "value": value or {}, "code": code, "id": self.n})

    def read(self, proc, t0, t1, mid, me, sss, se, node="n0", code=0, typ="ok"):
        self.op(proc, "replica_info", t0, t1, typ, node,
                value={"masterId": mid, "masterEpoch": me, "sss": sss, "sssEpoch": se},
                code=code)

    def elect(self, proc, t0, t1, mid, me, se, node="n0", code=0):
        self.op(proc, "elect", t0, t1, "ok" if code == 0 else "fail", node,
                args={"brokerId": mid},
                value={"masterId": mid, "masterEpoch": me, "sss": [mid], "sssEpoch": se},
                code=code)

    def alter(self, proc, t0, t1, mid, me, se0, new, se1=None, typ="ok", node="n0", code=0):
        self.op(proc, "alter_sync", t0, t1, typ, node,
                args={"masterBrokerId": mid, "masterEpoch": me, "sss": new, "sssEpoch": se0},
                value={"sssEpoch": se1, "sss": new} if typ == "ok" else {}, code=code)

    def notify(self, proc, t, mid, me, se):
        self.w(proc).write({"t": t, "type": "ok", "op": "role_notify", "node": "n0", "set": S,
                            "value": {"masterId": mid, "masterEpoch": me, "sss": [mid],
                                      "sssEpoch": se}, "code": 0})

    def nemesis(self, t, typ, fault, **detail):
        self.w("nemesis").write({"t": t, "type": typ, "fault": fault, "detail": detail})

    def truth(self, t, mid, me, sss, se, ids=(1, 2, 3), leader="n0"):
        st = {"masterId": mid, "masterEpoch": me, "sss": list(sss), "sssEpoch": se,
              "ids": list(ids), "alive": list(ids)}
        nodes = {n: {"metadata": {}, "replica_info": {S: (
            {"code": 0, "value": st} if n == leader else {"code": 2007, "value": {}})},
            "sync_state": None} for n in ("n0", "n1", "n2")}
        with open(os.path.join(self.dir, "truth.json"), "w") as f:
            json.dump({"t": t, "t_end": t + 0.1, "leader": leader, "sets": {S: st},
                       "nodes": nodes}, f)

    def check(self, **kw):
        for w in self.writers.values():
            w.close()
        self.writers = {}
        return checker.check(self.dir, **kw)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def base(r):
    """A clean history: ids 1..3 applied, 1 elected, set grown to {1,2}, reads in between."""
    r.op("b0", "apply_id", 1.0, 1.1, args={"appliedBrokerId": 1})
    r.op("b1", "apply_id", 1.2, 1.3, args={"appliedBrokerId": 2})
    r.op("b2", "apply_id", 1.4, 1.5, args={"appliedBrokerId": 3})
    r.read("r0", 1.6, 1.7, None, 0, [], 0)
    r.elect("b0", 2.0, 2.1, 1, 1, 1)
    r.read("r0", 2.2, 2.3, 1, 1, [1], 1)
    r.alter("b0", 3.0, 3.1, 1, 1, 1, [1, 2], 2)
    r.read("r0", 3.2, 3.3, 1, 1, [1, 2], 2)
    r.read("b1", 3.4, 3.5, 1, 1, [1, 2], 2, node="n0")
    r.read("r0", 3.6, 3.7, None, 0, [], 0, node="n1", code=2007, typ="fail")


def kinds(vs):
    return sorted({v.invariant for v in vs})


class Invariants(unittest.TestCase):
    def setUp(self):
        self.r = Run()

    def tearDown(self):
        self.r.close()

    def test_clean_history_passes(self):
        base(self.r)
        self.r.notify("b1", 2.15, 1, 1, 1)
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        vs = self.r.check()
        self.assertEqual(vs, [], "\n".join(map(str, vs)))

    def test_two_masters_one_epoch(self):
        base(self.r)
        self.r.notify("b2", 2.5, 2, 1, 1)   # someone was told 2 is master at epoch 1
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        self.assertIn("one-master-per-epoch", kinds(self.r.check()))

    def test_two_sync_state_sets_one_epoch(self):
        base(self.r)
        self.r.read("r1", 3.8, 3.9, 1, 1, [1, 3], 2, node="n2")
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        self.assertIn("one-master-per-epoch", kinds(self.r.check()))

    def test_epoch_decreases_for_one_observer(self):
        base(self.r)
        self.r.read("r0", 4.0, 4.1, 1, 1, [1], 1, node="n2")  # stale, after seeing epoch 2
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        vs = self.r.check()
        self.assertIn("epochs-monotonic", kinds(vs))
        self.assertIn("linearizable", kinds(vs))

    def test_truth_behind_acknowledged(self):
        base(self.r)
        self.r.truth(5.0, 1, 1, [1], 1)   # the acknowledged alter to epoch 2 is gone
        vs = self.r.check()
        self.assertIn("epochs-monotonic", kinds(vs))
        self.assertIn("acknowledged-survives", kinds(vs))

    def test_unclean_election(self):
        base(self.r)
        # SSS {1,2} at epoch 2; then 3 (not in it) becomes master at epoch 2 / sss epoch 3
        self.r.read("r0", 5.0, 5.1, 3, 2, [3], 3)
        self.r.truth(6.0, 3, 2, [3], 3)
        self.assertEqual(kinds(self.r.check()), ["clean-election"])
        self.assertEqual(kinds(self.r.check(unclean=True)), [])

    def test_clean_reelection_passes(self):
        base(self.r)
        self.r.read("r0", 5.0, 5.1, 2, 2, [2], 3)
        self.r.truth(6.0, 2, 2, [2], 3)
        self.assertEqual(self.r.check(), [])

    def test_lost_broker_id(self):
        base(self.r)
        self.r.truth(5.0, 1, 1, [1, 2], 2, ids=(1, 2))
        self.assertEqual(kinds(self.r.check()), ["acknowledged-survives"])

    def test_lost_election_same_epoch_other_master(self):
        base(self.r)
        self.r.elect("b2", 4.0, 4.1, 3, 2, 3)
        self.r.truth(5.0, 2, 2, [2], 3)
        self.assertIn("acknowledged-survives", kinds(self.r.check()))

    def test_minority_commit(self):
        base(self.r)
        self.r.nemesis(2.9, "start", "partition", groups=[["n0", "b0"], ["n1", "n2", "b1", "c"]])
        self.r.nemesis(3.5, "stop", "partition")
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        vs = self.r.check()
        self.assertEqual(kinds(vs), ["minority-no-commit"])
        self.assertIn("schedule:", str(vs[0]))

    def test_bridge_node_is_not_minority(self):
        base(self.r)
        self.r.nemesis(2.9, "start", "partition-bridge", groups=[["n1", "n0"], ["n0", "n2"]])
        self.r.nemesis(3.5, "stop", "partition-bridge")
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        self.assertEqual(self.r.check(), [])

    def test_cut_off_leader_claiming_leadership_is_a_note(self):
        base(self.r)
        self.r.nemesis(4.0, "start", "partition", groups=[["n0"], ["n1", "n2"]])
        self.r.op("r0", "metadata", 7.0, 7.1, value={"isLeader": "true"})
        self.r.nemesis(9.0, "stop", "partition")
        self.r.truth(10.0, 1, 1, [1, 2], 2)
        self.assertEqual(self.r.check(), [])
        self.assertTrue(any("n0 claimed leadership" in n for n in checker.NOTES), checker.NOTES)

    def test_majority_commit_passes(self):
        base(self.r)
        self.r.nemesis(2.9, "start", "partition", groups=[["n2"], ["n0", "n1", "b0"]])
        self.r.nemesis(3.15, "stop", "partition")
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        self.assertEqual(self.r.check(), [])

    def test_read_ahead_of_truth(self):
        base(self.r)
        self.r.read("r1", 4.0, 4.1, 1, 1, [1, 3], 3, node="n2")  # a state never committed
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        vs = self.r.check()
        self.assertIn("leader-read-committed", kinds(vs))

    def test_read_other_state_at_truth_epochs(self):
        base(self.r)
        self.r.truth(5.0, 1, 1, [1, 3], 2)
        self.r.read("r1", 4.0, 4.1, 1, 1, [1, 2], 2, node="n0")
        self.assertIn("leader-read-committed", kinds(self.r.check()))

    def test_stale_read_is_not_linearizable(self):
        base(self.r)
        # r1 reads the old state after r0's read of the new one completed (different procs,
        # so only the linearizability check sees it)
        self.r.read("r1", 3.8, 3.9, 1, 1, [1], 1, node="n2")
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        self.assertEqual(kinds(self.r.check()), ["linearizable"])

    def test_concurrent_stale_read_is_linearizable(self):
        base(self.r)
        # overlapping the alter: may be ordered before it
        self.r.read("r1", 3.05, 3.25, 1, 1, [1], 1, node="n2")
        self.r.truth(5.0, 1, 1, [1, 2], 2)
        self.assertEqual(self.r.check(), [])

    def test_info_write_may_have_happened(self):
        base(self.r)
        self.r.alter("b0", 4.0, None, 1, 1, 2, [1, 2, 3])   # no answer, ever
        self.r.read("r0", 6.0, 6.1, 1, 1, [1, 2, 3], 3)
        self.r.truth(7.0, 1, 1, [1, 2, 3], 3)
        self.assertEqual(self.r.check(), [])

    def test_read_before_write_started_sees_its_result(self):
        base(self.r)
        self.r.read("r1", 3.5, 3.55, 1, 1, [1, 2, 3], 3, node="n0")
        self.r.alter("b0", 3.8, 3.9, 1, 1, 2, [1, 2, 3], 3)
        self.r.truth(5.0, 1, 1, [1, 2, 3], 3)
        self.assertEqual(kinds(self.r.check()), ["linearizable"])


class WGL(unittest.TestCase):
    def ops(self, spec):
        return [wgl.SimpleOp(s, e, f, v, proc=p) for (p, s, e, f, v) in spec]

    def test_sequential(self):
        h = self.ops([("a", 0, 1, "write", 1), ("b", 2, 3, "read", 1), ("a", 4, 5, "write", 2),
                      ("b", 6, 7, "read", 2)])
        self.assertTrue(wgl.check(h, wgl.RegisterModel(0)))

    def test_concurrent_read_either_value(self):
        h = self.ops([("a", 0, 10, "write", 1), ("b", 1, 2, "read", 1), ("c", 3, 4, "read", 0)])
        # b saw 1 then c (after b) saw 0: not linearizable
        self.assertFalse(wgl.check(h, wgl.RegisterModel(0)))
        h = self.ops([("a", 0, 10, "write", 1), ("b", 1, 2, "read", 0), ("c", 3, 4, "read", 1)])
        self.assertTrue(wgl.check(h, wgl.RegisterModel(0)))

    def test_stale_read(self):
        h = self.ops([("a", 0, 1, "write", 1), ("b", 2, 3, "read", 0)])
        r = wgl.check(h, wgl.RegisterModel(0))
        self.assertFalse(r)
        self.assertEqual(r.stuck.f, "read")

    def test_cas(self):
        h = self.ops([("a", 0, 5, "cas", (1, 2)), ("b", 0, 5, "cas", (0, 1)),
                      ("c", 6, 7, "read", 2)])
        self.assertTrue(wgl.check(h, wgl.RegisterModel(0)))
        h = self.ops([("a", 0, 1, "cas", (0, 1)), ("b", 2, 3, "cas", (0, 2)),
                      ("c", 4, 5, "read", 2)])
        self.assertFalse(wgl.check(h, wgl.RegisterModel(0)))

    def test_info_op_may_or_may_not_happen(self):
        inf = float("inf")
        h = self.ops([("a", 0, inf, "write", 1), ("b", 2, 3, "read", 1), ("b", 4, 5, "read", 1)])
        self.assertTrue(wgl.check(h, wgl.RegisterModel(0)))
        h = self.ops([("a", 0, inf, "write", 1), ("b", 2, 3, "read", 0), ("b", 4, 5, "read", 0)])
        self.assertTrue(wgl.check(h, wgl.RegisterModel(0)))
        h = self.ops([("a", 0, inf, "write", 1), ("b", 2, 3, "read", 1), ("b", 4, 5, "read", 0)])
        self.assertFalse(wgl.check(h, wgl.RegisterModel(0)))

    def test_big_random_linearizable_history_is_fast(self):
        # a real register run by 5 clients with overlapping ops: linearizable by construction
        rng = random.Random(7)
        ops, value, t = [], 0, 0.0
        pending = []
        for i in range(3000):
            t += rng.uniform(0.001, 0.01)
            f = "write" if rng.random() < 0.3 else "read"
            point = t + rng.uniform(0, 0.02)
            pending.append((point, f, i))
            start = t
            end = point + rng.uniform(0, 0.02)
            ops.append([start, end, f, None])
        for point, f, i in sorted(pending):
            if f == "write":
                value = i
            ops[i][3] = value
        h = [wgl.SimpleOp(s, e, f, v) for s, e, f, v in ops]
        t0 = time.time()
        r = wgl.check(h, wgl.RegisterModel(0))
        self.assertTrue(r, r.stuck)
        self.assertLess(time.time() - t0, 20)

    def test_replica_model(self):
        M = checkmodel.MOp
        v = checkmodel.value
        h = [M(0, 1, "elect", (1, 1), v(1, [1]), pred=(0, 0)),
             M(2, 3, "read", (1, 1), v(1, [1])),
             M(4, 5, "alter", (1, 2), v(1, [1, 2]), pred=(1, 1), pred_master=1),
             M(6, 7, "read", (2, 3), v(2, [2])),     # a hidden controller election
             M(8, 9, "read", (2, 3), v(2, [2]))]
        self.assertTrue(wgl.check(h, checkmodel.ReplicaModel()))
        h.append(M(10, 11, "read", (2, 3), v(3, [3])))  # same epochs, other state
        self.assertFalse(wgl.check(h, checkmodel.ReplicaModel()))
        h = [M(0, 1, "read", (1, 2), v(1, [1, 2])),
             M(2, 3, "alter", (1, 2), v(1, [1, 2]), pred=(1, 1), pred_master=1)]
        self.assertFalse(wgl.check(h, checkmodel.ReplicaModel()))  # read before the write


class RealHistory(unittest.TestCase):
    """A real run (partition-leader-minority-peers, seed 1, before the read lease of 266a05c):
    the cut-off leader n0 kept answering GET_REPLICA_INFO from its stale state while n1
    committed new sync-state sets (heartbeats stripped)."""

    def test_stale_reads_of_a_cut_off_leader(self):
        d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                         "stale-read-bug3")
        vs = checker.check(d)
        self.assertEqual(kinds(vs), ["epochs-monotonic", "linearizable"])
        lin = [v for v in vs if v.invariant == "linearizable"][0]
        self.assertIn("answered by n0", lin.message)
        self.assertTrue(any("n0 claimed leadership" in n for n in checker.NOTES))


if __name__ == "__main__":
    unittest.main()
