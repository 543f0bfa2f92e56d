#!/usr/bin/env python3
"""The history checker of the fault tests (issue 24; stdlib only).

  python3 tests/faults/checker.py RUNDIR [--unclean] [--max-report N]
  checker.check(rundir, unclean=None) -> [Violation]

Reads <rundir>/history/*.jsonl (history.py), <rundir>/truth.json (truth.py) and, if present,
<rundir>/config.json ({"enableElectUncleanMaster": bool}). Invariants:

  one-master-per-epoch      at most one master per broker set per master epoch, over every
                            answer, every notification and the truth; and one sync-state set
                            per sync-state-set epoch
  epochs-monotonic          per observer, an answer never shows a lower master or sync-state
                            epoch than an answer that completed before it was asked; the truth
                            is not behind any acknowledged answer
  clean-election            without enableElectUncleanMaster a new master was in the sync-state
                            set it replaced
  acknowledged-survives     every acknowledged change (applied broker id, sync-state set,
                            election) is in the truth: its id kept, epochs >=, same state at
                            the same epoch
  minority-no-commit        no ok for a write answered by a node that was on a minority side of
                            a partition for the whole op
  leader-read-committed     a leader-only read answers a state of the committed chain (not
                            ahead of the truth, equal to it at its epochs) or 2007
  linearizable              replica-info reads with the acknowledged writes are linearizable
                            (wgl.py over checkmodel.ReplicaModel; info ops may have happened)

Exit status 1 when there is any violation; each is printed with the schedule (nemesis.jsonl)
and the minimal history excerpt.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checkmodel  # noqa: E402
import history  # noqa: E402
import wgl  # noqa: E402

INF = float("inf")
WRITE_OPS = ("apply_id", "alter_sync", "elect")
LEADER_READS = ("replica_info", "sync_state")
HEAL_MARGIN = 0.25  # s


class Violation:
    def __init__(self, invariant, message, ops=(), extra=None):
        self.invariant = invariant
        self.message = message
        self.ops = [o for o in ops if o is not None]
        self.extra = extra or []
        self.schedule = []
        self.t0 = 0.0

    def excerpt(self):
        lines = []
        seen = set()
        for o in sorted(self.ops, key=lambda o: o.start):
            if id(o) in seen:
                continue
            seen.add(id(o))
            if isinstance(o, TruthOp):
                lines.append("  truth %s" % json.dumps(o.value, sort_keys=True))
                continue
            for rec in o.lines():
                r = dict(rec)
                r["t"] = round(r["t"] - self.t0, 3)
                lines.append("  " + json.dumps(r, sort_keys=True, default=str))
        return lines + ["  " + x for x in self.extra]

    def __str__(self):
        out = ["VIOLATION %s: %s" % (self.invariant, self.message)]
        if self.schedule:
            out.append(" schedule:")
            for ev in self.schedule:
                out.append("  %+.3f %s %s %s" % (ev["t"] - self.t0, ev.get("type"),
                                                  ev.get("fault"),
                                                  json.dumps(ev.get("detail") or {},
                                                             sort_keys=True)))
        out.append(" history (t relative to the first record):")
        out.extend(self.excerpt())
        return "\n".join(out)

    def __repr__(self):
        return "Violation(%s: %s)" % (self.invariant, self.message)


class TruthOp:
    """A truth.json view as an op (a read at the end of the run)."""

    def __init__(self, t0, t1, node, set_, value):
        self.start, self.end, self.node, self.set, self.value = t0, t1, node, set_, value
        self.proc, self.op, self.type, self.code, self.args = "truth", "truth", "ok", 0, {}

    def lines(self):
        return []


# ---------------------------------------------------------------------------------------------
# Observations: every (set, masterEpoch, masterId, sssEpoch, sss) some answer showed
# ---------------------------------------------------------------------------------------------

MISSING = object()  # master not stated (register answers without a live master)


class Obs:
    __slots__ = ("set", "me", "mid", "se", "sss", "op", "kind", "full")

    def __init__(self, set_, me, mid, se, sss, op, kind, full):
        self.set, self.me, self.mid, self.se, self.op, self.kind = set_, me, mid, se, op, kind
        self.sss = tuple(sorted(sss)) if sss is not None else None
        self.full = full  # a complete state: usable as a read of the register

    def ver(self):
        return (self.me, self.se)


def observations(ops, truth):
    out = []
    for o in ops:
        v = o.value or {}
        if o.op == "replica_info" and o.type == "ok" and o.code == 0:
            out.append(Obs(o.set, v.get("masterEpoch"), v.get("masterId"), v.get("sssEpoch"),
                           v.get("sss"), o, "read", True))
        elif o.op == "sync_state" and o.type == "ok" and o.code == 0:
            for s, st in v.items():
                if isinstance(st, dict):
                    out.append(Obs(s, st.get("masterEpoch"), st.get("masterId"),
                                   st.get("sssEpoch"), st.get("sss"), o, "read", True))
        elif o.op == "elect" and o.code in (0, 2011) and v.get("masterEpoch") is not None:
            out.append(Obs(o.set, v["masterEpoch"], v.get("masterId"), v.get("sssEpoch"),
                           v.get("sss"), o, "elect" if o.code == 0 else "read",
                           v.get("sssEpoch") is not None))
        elif o.op == "register" and o.type == "ok" and o.code == 0:
            mid = v.get("masterId", None)
            if mid is not None and v.get("masterEpoch") is not None:
                out.append(Obs(o.set, v["masterEpoch"], mid, v.get("sssEpoch"), v.get("sss"), o,
                               "register", False))
        elif o.op == "alter_sync" and o.type == "ok" and o.code == 0 and \
                v.get("sssEpoch") is not None:
            out.append(Obs(o.set, o.args.get("masterEpoch"), o.args.get("masterBrokerId"),
                           v["sssEpoch"], v.get("sss") or o.args.get("sss"), o, "alter", False))
        elif o.op == "role_notify" and v.get("masterEpoch") is not None:
            out.append(Obs(o.set, v["masterEpoch"], v.get("masterId"), v.get("sssEpoch"),
                           v.get("sss"), o, "notify", False))
    if truth:
        t0, t1 = truth.get("t", INF), truth.get("t_end", truth.get("t", INF))
        for s, st in (truth.get("sets") or {}).items():
            if st:
                out.append(Obs(s, st.get("masterEpoch"), st.get("masterId"), st.get("sssEpoch"),
                               st.get("sss"), TruthOp(t0, t1, truth.get("leader"), s, st),
                               "truth", True))
        for n, nv in (truth.get("nodes") or {}).items():
            for s, ri in ((nv or {}).get("replica_info") or {}).items():
                if ri and ri.get("code") == 0:
                    st = ri.get("value") or {}
                    out.append(Obs(s, st.get("masterEpoch"), st.get("masterId"),
                                   st.get("sssEpoch"), st.get("sss"),
                                   TruthOp(t0, t1, n, s, dict(st, node=n)), "read", True))
    return [x for x in out if x.me is not None and x.set is not None]


# ---------------------------------------------------------------------------------------------
# Invariants
# ---------------------------------------------------------------------------------------------

def inv_one_master(obs):
    out = []
    by_epoch, by_sss = {}, {}
    for x in obs:
        # a master id is meaningful from full states (None = no master) and from any answer
        # that names one; a register answer without master says nothing
        if x.mid is not None or x.full:
            by_epoch.setdefault((x.set, x.me), {}).setdefault(x.mid, x)
        if x.se is not None and x.sss is not None and x.kind != "notify":
            by_sss.setdefault((x.set, x.se), {}).setdefault(x.sss, x)
    for (s, e), m in sorted(by_epoch.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if len(m) > 1:
            named = {k: v for k, v in m.items() if k is not None}
            if len(named) > 1:
                msg = "broker set %s has masters %s at master epoch %d" % (
                    s, sorted(named), e)
            else:
                msg = "broker set %s at master epoch %d shows master %s and no master" % (
                    s, e, sorted(named))
            out.append(Violation("one-master-per-epoch", msg, [x.op for x in m.values()]))
    for (s, e), m in sorted(by_sss.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        if len(m) > 1:
            out.append(Violation(
                "one-master-per-epoch",
                "broker set %s has sync-state sets %s at sync-state-set epoch %d" % (
                    s, [list(k) for k in m], e), [x.op for x in m.values()]))
    return out


def inv_monotonic(obs, truth, limit=5):
    out = []
    per = {}
    for x in obs:
        if x.kind in ("notify", "truth") or isinstance(x.op, TruthOp):
            continue
        per.setdefault((x.op.proc, x.set), []).append(x)
    for (proc, s), xs in sorted(per.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
        by_end = sorted(xs, key=lambda x: x.op.end)
        by_start = sorted(xs, key=lambda x: x.op.start)
        j = 0
        best_me = best_se = None
        found = 0
        for x in by_start:
            while j < len(by_end) and by_end[j].op.end < x.op.start:
                y = by_end[j]
                if best_me is None or y.me > best_me.me:
                    best_me = y
                if y.se is not None and (best_se is None or y.se > best_se.se):
                    best_se = y
                j += 1
            if best_me is not None and x.me < best_me.me:
                out.append(Violation("epochs-monotonic", "%s saw master epoch %d of %s after %d" % (
                    proc, x.me, s, best_me.me), [best_me.op, x.op]))
                found += 1
            elif best_se is not None and x.se is not None and x.se < best_se.se:
                out.append(Violation("epochs-monotonic",
                                     "%s saw sync-state-set epoch %d of %s after %d" % (
                                         proc, x.se, s, best_se.se), [best_se.op, x.op]))
                found += 1
            if found >= limit:
                break
    if truth:
        tt = truth.get("t", INF)
        for s, st in (truth.get("sets") or {}).items():
            if not st:
                continue
            tme, tse = st.get("masterEpoch", 0), st.get("sssEpoch", 0)
            worst = None
            for x in obs:
                if x.set != s or isinstance(x.op, TruthOp) or x.op.end >= tt:
                    continue
                if x.kind not in ("read", "elect", "alter", "register", "notify"):
                    continue
                if x.me > tme or (x.se is not None and x.se > tse):
                    if worst is None or (x.me, x.se or 0) > (worst.me, worst.se or 0):
                        worst = x
            if worst is not None:
                out.append(Violation(
                    "epochs-monotonic",
                    "the truth of %s (master epoch %d, sync-state-set epoch %d) is behind an "
                    "acknowledged answer (%d, %s)" % (s, tme, tse, worst.me, worst.se),
                    [worst.op, TruthOp(tt, tt, truth.get("leader"), s, st)]))
    return out


def inv_clean_election(obs, unclean):
    if unclean:
        return []
    out = []
    sss_at = {}   # (set, sssEpoch) -> (sss, obs) with the master epoch it was seen at
    first_at = {}  # (set, masterEpoch) -> obs with the smallest sssEpoch
    for x in obs:
        if x.se is None or x.sss is None:
            continue
        k = (x.set, x.se)
        if k not in sss_at or x.me < sss_at[k].me:
            sss_at[k] = x
        if x.mid is not None:
            k2 = (x.set, x.me)
            if k2 not in first_at or x.se < first_at[k2].se:
                first_at[k2] = x
    for (s, e), x in sorted(first_at.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        prior = sss_at.get((s, x.se - 1))
        if prior is None or prior.me >= e:
            continue  # the state the election replaced was not observed
        if prior.me == 0:
            continue  # first election: the requester wins (CONTROLLER.md §5.3 step 2)
        if x.mid not in prior.sss:
            out.append(Violation(
                "clean-election",
                "broker set %s: master %s elected at epoch %d was not in the sync-state set %s "
                "(sync-state-set epoch %d)" % (s, x.mid, e, list(prior.sss), prior.se),
                [prior.op, x.op]))
    return out


def inv_survives(ops, truth):
    out = []
    if not truth or not truth.get("leader"):
        return out
    tt = truth.get("t", INF)
    sets = truth.get("sets") or {}
    for o in ops:
        if o.type != "ok" or o.code != 0 or o.op not in WRITE_OPS or o.end >= tt:
            continue
        st = sets.get(o.set)
        tv = TruthOp(tt, tt, truth.get("leader"), o.set, st)
        if o.set not in sets:
            continue  # the set was not asked for in the truth
        if not st:
            out.append(Violation("acknowledged-survives",
                                 "broker set %s is gone after an acknowledged %s" % (o.set, o.op),
                                 [o, tv]))
            continue
        if o.op == "apply_id":
            bid = o.args.get("appliedBrokerId")
            ids = st.get("ids")
            if ids is not None and bid is not None and int(bid) not in ids:
                out.append(Violation("acknowledged-survives",
                                     "broker id %s of %s was acknowledged and is gone (ids %s)" % (
                                         bid, o.set, ids), [o, tv]))
        elif o.op == "alter_sync":
            se, sss = o.value.get("sssEpoch"), sorted(o.value.get("sss") or o.args.get("sss") or [])
            if se is None:
                continue
            if st["sssEpoch"] < se or (st["masterEpoch"] < (o.args.get("masterEpoch") or 0)):
                out.append(Violation("acknowledged-survives",
                                     "acknowledged sync-state set %s at epoch %d of %s is lost "
                                     "(truth epoch %d)" % (sss, se, o.set, st["sssEpoch"]), [o, tv]))
            elif st["sssEpoch"] == se and sorted(st.get("sss") or []) != sss:
                out.append(Violation("acknowledged-survives",
                                     "sync-state set of %s at epoch %d is %s in the truth, %s "
                                     "acknowledged" % (o.set, se, st.get("sss"), sss), [o, tv]))
        elif o.op == "elect":
            me, mid = o.value.get("masterEpoch"), o.value.get("masterId")
            if me is None:
                continue
            if st["masterEpoch"] < me:
                out.append(Violation("acknowledged-survives",
                                     "acknowledged election of %s at epoch %d of %s is lost "
                                     "(truth epoch %d)" % (mid, me, o.set, st["masterEpoch"]),
                                     [o, tv]))
            elif st["masterEpoch"] == me and st.get("masterId") != mid:
                out.append(Violation("acknowledged-survives",
                                     "master of %s at epoch %d is %s in the truth, %s acknowledged"
                                     % (o.set, me, st.get("masterId"), mid), [o, tv]))
    return out


def partitions(nemesis, ctl_nodes):
    """[(t_start, t_end, {node: is_minority})] of every partition in nemesis.jsonl."""
    out, open_ = [], {}
    n = len(ctl_nodes)
    for ev in nemesis:
        d = ev.get("detail") or {}
        fault = ev.get("fault") or ""
        key = d.get("id", fault)
        if ev.get("type") == "start":
            groups = d.get("groups")
            minority = set(d.get("minority") or [])
            side = {}
            if groups:
                for g in groups:
                    cs = [x for x in g if x in ctl_nodes]
                    for x in cs:  # minority only if minority in every group it is in
                        side[x] = side.get(x, True) and len(cs) * 2 <= n
            for x in minority:
                side[x] = True
            if side and any(side.values()):
                open_[key] = (ev["t"], side, ev)
        elif ev.get("type") == "stop":
            if key in open_:
                t0, side, sev = open_.pop(key)
                out.append((t0, ev["t"], side, sev, ev))
            elif fault in ("heal", "all") or d.get("all"):
                for k, (t0, side, sev) in list(open_.items()):
                    out.append((t0, ev["t"], side, sev, ev))
                open_.clear()
    for t0, side, sev in open_.values():
        out.append((t0, INF, side, sev, None))
    return out


def inv_minority(ops, nemesis, ctl_nodes):
    out = []
    parts = partitions(nemesis, ctl_nodes)
    if not parts:
        return out
    for o in ops:
        if o.type != "ok" or o.code != 0 or o.op not in WRITE_OPS:
            continue
        for t0, t1, side, sev, eev in parts:
            # the harness logs start after the rules are in and stop after they are gone:
            # leave a margin at the end for an answer that came right after the heal
            if side.get(o.node) and t0 <= o.start and o.end <= t1 - HEAL_MARGIN:
                out.append(Violation(
                    "minority-no-commit",
                    "%s answered ok to %s of %s while on the minority side of a partition" % (
                        o.node, o.op, o.set), [o], extra=["partition: " + json.dumps(
                            sev.get("detail"), sort_keys=True)]))
                break
    return out


def note_cut_off_leader(ops, nemesis, ctl_nodes, grace=2.0):
    """Not an invariant of issue 24 (1005 is not leader-only), a note: answers of
    CONTROLLER_GET_METADATA_INFO claiming isLeader=true from a node that had been on a minority
    side for more than `grace` s (known bug 2 of the plan)."""
    parts = partitions(nemesis, ctl_nodes)
    hits = {}
    for o in ops:
        if o.op != "metadata" or o.type != "ok" or str((o.value or {}).get("isLeader")).lower() \
                != "true":
            continue
        for t0, t1, side, _sev, _eev in parts:
            if side.get(o.node) and t0 + grace <= o.start and o.end <= t1 - HEAL_MARGIN:
                hits.setdefault(o.node, []).append(o.start - t0)
                break
    return ["%s claimed leadership in 1005 while cut off from a majority (%d answers, up to "
            "%.1f s into the partition)" % (n, len(v), max(v)) for n, v in sorted(hits.items())]


def inv_leader_reads(obs, ops, truth):
    out = []
    for o in ops:
        if o.op in LEADER_READS and o.type in ("ok", "fail") and o.code not in (
                None, 0, 1, 2, 2007, 2008):
            out.append(Violation("leader-read-committed",
                                 "%s answered %s with code %s" % (o.node, o.op, o.code), [o]))
    if not truth or not truth.get("leader"):
        return out
    tt = truth.get("t", INF)
    for s, st in (truth.get("sets") or {}).items():
        if not st:
            continue
        tv = TruthOp(tt, tt, truth.get("leader"), s, st)
        tver = (st["masterEpoch"], st["sssEpoch"])
        tval = checkmodel.value(st.get("masterId"), st.get("sss"))
        bad = 0
        for x in obs:
            if x.set != s or x.kind != "read" or not x.full:
                continue
            o = x.op
            if isinstance(o, TruthOp):
                pass
            elif o.end >= tt:
                continue
            ver, val = (x.me, x.se), checkmodel.value(x.mid, x.sss)
            if ver[0] > tver[0] or ver[1] > tver[1]:
                msg = "%s answered %s of %s at epochs %s, ahead of the committed truth %s" % (
                    o.node, "replica info", s, ver, tver)
            elif ver == tver and val != tval:
                msg = "%s answered %s for %s at the truth's epochs %s, truth is %s" % (
                    o.node, val, s, ver, tval)
            else:
                continue
            out.append(Violation("leader-read-committed", msg, [o, tv]))
            bad += 1
            if bad >= 5:
                break
    return out


def model_ops(obs, ops):
    """Per set: the MOps of reads (full states), acknowledged and indeterminate writes."""
    per = {}
    for x in obs:
        if x.kind == "read" and x.full and x.se is not None:
            o = x.op
            per.setdefault(x.set, []).append(checkmodel.MOp(
                o.start, o.end, "read", (x.me, x.se), checkmodel.value(x.mid, x.sss), src=o))
    for o in ops:
        if o.op == "elect" and o.type in ("ok", "info") and (o.code == 0 or o.type == "info"):
            v = o.value or {}
            if o.type == "ok":
                if v.get("masterEpoch") is None or v.get("sssEpoch") is None:
                    continue
                me, se, mid = v["masterEpoch"], v["sssEpoch"], v.get("masterId")
                per.setdefault(o.set, []).append(checkmodel.MOp(
                    o.start, o.end, "elect", (me, se), checkmodel.value(mid, [mid]),
                    pred=(me - 1, se - 1), src=o))
            # an indeterminate election's epochs are unknown: a hidden write covers it
        elif o.op == "alter_sync" and (o.type == "info" or (o.type == "ok" and o.code == 0)):
            a, v = o.args, o.value or {}
            if a.get("masterEpoch") is None or a.get("sssEpoch") is None:
                continue
            me, se0 = a["masterEpoch"], a["sssEpoch"]
            se1 = v.get("sssEpoch") if o.type == "ok" else se0 + 1
            if se1 is None:
                continue
            per.setdefault(o.set, []).append(checkmodel.MOp(
                o.start, o.end if o.type == "ok" else INF, "alter", (me, se1),
                checkmodel.value(a.get("masterBrokerId"), a.get("sss")),
                pred=(me, se0), pred_master=a.get("masterBrokerId"), src=o))
    return per


def inv_linearizable(obs, ops, max_steps=2_000_000):
    out, notes = [], []
    for s, mops in sorted(model_ops(obs, ops).items(), key=lambda kv: str(kv[0])):
        r = wgl.check(mops, checkmodel.ReplicaModel(), max_steps=max_steps)
        if r.unknown:
            notes.append("linearizability of %s: no verdict in %d steps" % (s, r.steps))
            continue
        if r.ok:
            continue
        stuck = r.stuck
        lin = r.linearized
        # which reads break it: all of them, or also those behind processReadEvent's barrier
        barrier = [m for m in mops if m.f != "read" or (
            not isinstance(m.src, TruthOp) and (m.src.args or {}).get("readEvent") is True)]
        barrier_note = ""
        if any(m.f == "read" for m in barrier):
            rb = wgl.check(barrier, checkmodel.ReplicaModel(), max_steps=max_steps)
            barrier_note = "; the reads with processReadEvent=true alone: %s" % (
                "no verdict" if rb.unknown else "linearizable" if rb.ok else "NOT linearizable")
        # excerpt: the stuck op, the last linearized ops and the ops overlapping it
        near = [m for m in mops if m.start <= stuck.end and m.end >= stuck.start and m is not stuck]
        near.sort(key=lambda m: m.start)
        pick = [stuck] + lin[-4:] + near[:6]
        extra = ["state after the longest linearizable prefix: %s" % (r.state,),
                 "cannot linearize: %r" % (stuck,)]
        who = ""
        if stuck.src is not None and not isinstance(stuck.src, TruthOp):
            who = " at %s's %s answered by %s" % (stuck.src.proc, stuck.src.op, stuck.src.node)
        out.append(Violation("linearizable",
                             "replica-info history of %s is not linearizable (%d ops)%s%s" % (
                                 s, len(mops), who, barrier_note),
                             [m.src for m in pick], extra=extra))
    return out, notes


# ---------------------------------------------------------------------------------------------

def load_truth(rundir):
    p = os.path.join(rundir, "truth.json")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def load_config(rundir):
    p = os.path.join(rundir, "config.json")
    if not os.path.exists(p):
        return {}
    with open(p) as f:
        return json.load(f)


def ctl_nodes_of(ops, truth, nemesis):
    names = set()
    if truth:
        names.update((truth.get("nodes") or {}).keys())
    for o in ops:
        if o.op in ("metadata", "replica_info", "heartbeat", "register", "elect", "alter_sync",
                    "next_id", "apply_id", "sync_state") and o.node:
            names.add(o.node)
    return sorted(names)


NOTES = []


def check(rundir, unclean=None, max_steps=2_000_000):
    records = history.load(rundir)
    all_ops = history.ops(records)
    nem = history.nemesis_events(records)
    truth = load_truth(rundir)
    cfg = load_config(rundir)
    if unclean is None:
        unclean = bool(cfg.get("enableElectUncleanMaster", False))
    obs = observations(all_ops, truth)
    ctl = cfg.get("controllers") or ctl_nodes_of(all_ops, truth, nem)
    vs = []
    vs += inv_one_master(obs)
    vs += inv_monotonic(obs, truth)
    vs += inv_clean_election(obs, unclean)
    vs += inv_survives(all_ops, truth)
    vs += inv_minority(all_ops, nem, ctl)
    vs += inv_leader_reads(obs, all_ops, truth)
    lv, notes = inv_linearizable(obs, all_ops, max_steps=max_steps)
    vs += lv
    NOTES[:] = notes + note_cut_off_leader(all_ops, nem, ctl)
    t0 = records[0]["t"] if records else 0.0
    for v in vs:
        v.schedule = nem
        v.t0 = t0
    return vs


def summary(rundir):
    records = history.load(rundir)
    all_ops = history.ops(records)
    counts = {}
    for o in all_ops:
        counts.setdefault(o.op, {}).setdefault(o.type, 0)
        counts[o.op][o.type] += 1
    return counts


def main(argv=None):
    p = argparse.ArgumentParser(description="check a fault-test history")
    p.add_argument("rundir")
    p.add_argument("--unclean", action="store_true", help="enableElectUncleanMaster was on")
    p.add_argument("--max-report", type=int, default=20)
    p.add_argument("--summary", action="store_true")
    a = p.parse_args(argv)
    vs = check(a.rundir, unclean=True if a.unclean else None)
    if a.summary:
        for op, c in sorted(summary(a.rundir).items()):
            print("  %-14s %s" % (op, " ".join("%s=%d" % kv for kv in sorted(c.items()))))
    for n in NOTES:
        print("note: " + n)
    for v in vs[:a.max_report]:
        print(v)
        print()
    if len(vs) > a.max_report:
        print("... %d more violations" % (len(vs) - a.max_report))
    print("checker: %s: %d violations" % (a.rundir, len(vs)))
    return 1 if vs else 0


if __name__ == "__main__":
    sys.exit(main())
