"""Wing & Gong linearizability check with Lowe's cache (stdlib only).

  check(ops, model, max_steps=2_000_000) -> Result

ops: objects with .start, .end (float; end = inf for an indeterminate op, which may or may
not have taken effect) and whatever the model reads. model: init() -> state, step(state, op)
-> (ok: bool, new_state); states must be hashable. A history is linearizable when every
determinate op can be given a point inside [start, end] such that the ops in point order are
legal for the model; indeterminate ops may be placed anywhere after their start, or left out.

The search (Lowe, "Testing for linearizability", 2017; as in Porcupine / Knossos' WGL) walks a
linked list of call and return entries in time order; it linearizes a call when the model
allows it and (linearized set, state) was not seen before, and backtracks when it meets the
return of an op it has not linearized. The cache keeps the search polynomial on the
histories the fault tests produce.
"""

INF = float("inf")


class _Entry:
    __slots__ = ("op", "idx", "is_call", "match", "prev", "next", "t")

    def __init__(self, op, idx, is_call, t):
        self.op, self.idx, self.is_call, self.t = op, idx, is_call, t
        self.match = self.prev = self.next = None


class Result:
    def __init__(self, ok, steps, unknown=False, stuck=None, linearized=None, state=None):
        self.ok = ok
        self.unknown = unknown        # search limit hit: no verdict
        self.steps = steps
        self.stuck = stuck            # the op whose return could not be reached (deepest point)
        self.linearized = linearized or []  # op order of the deepest partial linearization
        self.state = state            # model state there

    def __bool__(self):
        return self.ok


def check(ops, model, max_steps=2_000_000):
    ops = list(ops)
    entries = []
    for i, op in enumerate(ops):
        c = _Entry(op, i, True, op.start)
        entries.append(c)
        if op.end != INF:
            r = _Entry(op, i, False, op.end)
            c.match = r
            entries.append(r)
    # time order; at equal times calls first (ops touching at an instant are concurrent)
    entries.sort(key=lambda e: (e.t, 0 if e.is_call else 1))
    head = _Entry(None, -1, True, -INF)
    prev = head
    for e in entries:
        prev.next, e.prev = e, prev
        prev = e

    def lift(e):
        e.prev.next = e.next
        if e.next is not None:
            e.next.prev = e.prev
        m = e.match
        if m is not None:
            m.prev.next = m.next
            if m.next is not None:
                m.next.prev = m.prev

    def unlift(e):
        m = e.match
        if m is not None:
            m.prev.next = m
            if m.next is not None:
                m.next.prev = m
        e.prev.next = e
        if e.next is not None:
            e.next.prev = e

    state = model.init()
    linearized = 0
    cache = {(0, state)}
    stack = []
    entry = head.next
    steps = 0
    best_depth, best = -1, None
    while True:
        steps += 1
        if steps > max_steps:
            return Result(False, steps, unknown=True)
        if entry is None:
            # only indeterminate calls left (or nothing): every determinate op linearized
            return Result(True, steps)
        if entry.is_call:
            ok, new_state = model.step(state, entry.op)
            if ok:
                nl = linearized | (1 << entry.idx)
                key = (nl, new_state)
                if key not in cache:
                    cache.add(key)
                    stack.append((entry, state))
                    state, linearized = new_state, nl
                    lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            if len(stack) > best_depth:
                best_depth = len(stack)
                best = (entry.op, [e.op for e, _s in stack], state)
            if not stack:
                return Result(False, steps, stuck=best[0], linearized=best[1], state=best[2])
            e, state = stack.pop()
            linearized &= ~(1 << e.idx)
            unlift(e)
            entry = e.next


# ---------------------------------------------------------------------------------------------
# Simple models (used by the tests)
# ---------------------------------------------------------------------------------------------

class RegisterModel:
    """A read/write/cas register; op.f in {"read","write","cas"}, op.v (value or (old,new))."""

    def __init__(self, initial=None):
        self.initial = initial

    def init(self):
        return self.initial

    def step(self, state, op):
        if op.f == "write":
            return True, op.v
        if op.f == "read":
            return (op.v is None and op.end == INF) or op.v == state, state
        if op.f == "cas":
            old, new = op.v
            return (state == old), (new if state == old else state)
        raise ValueError(op.f)


class SimpleOp:
    __slots__ = ("start", "end", "f", "v", "proc", "note")

    def __init__(self, start, end, f, v, proc=None, note=None):
        self.start, self.end, self.f, self.v, self.proc, self.note = start, end, f, v, proc, note

    def __repr__(self):
        return "%s(%s %s [%s,%s])" % (self.proc or "", self.f, self.v, self.start, self.end)
