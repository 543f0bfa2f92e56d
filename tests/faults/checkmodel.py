"""The register the replica-info reads are checked against (stdlib only).

One register per broker set, state = (version, value) with version = (masterEpoch,
syncStateSetEpoch) and value = (masterId, syncStateSet). The controller changes it by writes
the clients see (acknowledged ELECT_MASTER / ALTER_SYNC_STATE_SET) and by writes they do not
(controller-triggered elections, writes whose answer was lost); both epochs only grow and
every change grows at least one, so the hidden writes are modelled as "the state may move
forward at any time":

- read (v, x): legal if v == state.version and x == state.value, or v > state.version
  (component-wise, a hidden write got there first); the state becomes (v, x).
- elect ok (master M, epochs E, sE): the state just before was at version (E-1, sE-1)
  (an election bumps both by one): legal if state.version <= (E-1, sE-1); -> ((E, sE), (M, {M})).
- alter ok (master M at E, body epoch sE, proposed S, answer epoch sE'): the state before was
  at (E, sE) with master M: legal if state.version < (E, sE), or == with master M;
  -> ((E, sE'), (M, S)).
- indeterminate writes (info): the same, with end = inf (they may or may not have happened).
"""

INF = float("inf")
START = ((-1, -1), None)


def le(a, b):
    return a[0] <= b[0] and a[1] <= b[1]


class MOp:
    __slots__ = ("start", "end", "f", "ver", "val", "pred", "pred_master", "src")

    def __init__(self, start, end, f, ver, val, pred=None, pred_master=None, src=None):
        self.start, self.end, self.f = start, end, f
        self.ver, self.val = ver, val
        self.pred, self.pred_master = pred, pred_master
        self.src = src  # the history Op (or a truth marker)

    def __repr__(self):
        return "MOp(%s ver=%s val=%s pred=%s [%.3f,%s])" % (self.f, self.ver, self.val,
                                                           self.pred, self.start, self.end)


class ReplicaModel:
    def init(self):
        return START

    def step(self, state, op):
        ver, val = state
        if op.f == "read":
            if op.ver == ver:
                return op.val == val, state
            if le(ver, op.ver):
                return True, (op.ver, op.val)
            return False, state
        if op.f in ("elect", "alter"):
            p = op.pred
            if ver == p:
                if op.pred_master is not None and (val is None or val[0] != op.pred_master):
                    return False, state
                return True, (op.ver, op.val)
            if le(ver, p):
                return True, (op.ver, op.val)
            return False, state
        raise ValueError(op.f)


def value(masterId, sss):
    return (masterId, tuple(sorted(sss or ())))
