"""Named fault schedules (issue 24): the --quick set (CI) and the --long set.

A schedule is a list of steps (a nemesis with its parameters, how long the fault lasts, how long
to wait after healing) plus expectations checked on the observer's timeline besides the
checker's invariants:

  failover_within=S    after the first fault starts, the leader reports a master at a higher
                       epoch on a live replica within S seconds (the fault still on)
  recover_within=S     after the last heal, a leader and a live master within S seconds
  epoch_stable=S       after the last heal + S seconds, the master epoch no longer changes
                       (an alive master is not replaced, #10875)
  min_uptime=S         (not checked) the first fault waits until the nodes are up S seconds

Each Java bug of the issue has its own schedule (silent-master-9717, silent-master-10416,
reelect-10875, partitions-7017, partition-6662, sss-race-7219, double-kill-7689,
asym-master-4800). Timings assume the test controller settings of nodes.py / topology.py:
brokers heartbeat every 500 ms with a 3 s timeout, scans every 1 s, raft election 0.5-0.9 s.
"""

HB_TIMEOUT = 3.0


class Step:
    def __init__(self, fault, dur, gap=3.0, **params):
        self.fault, self.dur, self.gap, self.params = fault, float(dur), float(gap), params

    def to_dict(self):
        return {"fault": self.fault, "dur": self.dur, "gap": self.gap, "params": self.params}


class Schedule:
    def __init__(self, name, steps, seed=1, doc="", **expect):
        self.name, self.steps, self.seed, self.doc = name, steps, seed, doc
        self.expect = {"recover_within": 30.0}
        self.expect.update(expect)

    def faults(self):
        return [(s.fault, s.params) for s in self.steps]

    def length(self):
        return sum(s.dur + s.gap for s in self.steps)

    def to_dict(self):
        return {"name": self.name, "seed": self.seed, "doc": self.doc, "expect": self.expect,
                "steps": [s.to_dict() for s in self.steps]}

    def with_seed(self, seed, suffix=None):
        s = Schedule(self.name if suffix is None else "%s%s" % (self.name, suffix),
                     self.steps, seed, self.doc)
        s.expect = dict(self.expect)
        return s

    def min_uptime(self):
        return self.expect.get("min_uptime", 0.0)


# failover budget for a dead/silent master: heartbeat timeout + scan interval + 2 s
MASTER_BUDGET = HB_TIMEOUT + 1.0 + 2.0


def _quick():
    S = Schedule
    return [
        S("partition-leader-minority-peers", [Step("partition-leader-minority", 6, scope="peers")],
          doc="the controller leader cut from its peers; brokers still reach every node"),
        S("partition-leader-minority-all", [Step("partition-leader-minority", 6, scope="all")],
          seed=2, doc="the leader cut from everyone"),
        S("partition-leader-majority", [Step("partition-leader-majority", 6, brokers=True)],
          seed=3, doc="a follower (and the broker master) in the minority"),
        S("partition-bridge", [Step("partition-bridge", 6, leader_at="end")], seed=4),
        S("cut-oneway-out", [Step("cut-oneway", 6, direction="out")], seed=5),
        S("cut-oneway-in", [Step("cut-oneway", 6, direction="in")], seed=6),
        S("asym-master-4800", [Step("asym-master-4800", 8)], seed=7,
          doc="#4800: only the controller leader loses the broker master"),
        S("loss-leader", [Step("loss", 8, target="leader", percent=35)], seed=8),
        S("delay-leader", [Step("delay", 8, target="leader", ms=300)], seed=9),
        S("kill-leader", [Step("kill", 4, which="leader")], seed=10),
        S("kill-follower", [Step("kill", 4, which="follower")], seed=11),
        S("pause-leader", [Step("pause", 5, which="leader")], seed=12,
          doc="SIGSTOP longer than the election timeout"),
        S("pause-follower", [Step("pause", 5, which="follower")], seed=13),
        S("clock-jump-leader", [Step("clock-jump", 6, which="leader", seconds=600)], seed=14),
        S("clock-jump-back", [Step("clock-jump", 6, which="any", seconds=-3600)], seed=15),
        S("disk-full-leader", [Step("disk-full", 10, which="leader")], seed=16),
        S("fsync-fail-follower", [Step("fsync-fail", 6, which="follower")], seed=17),
        S("fsync-fail-leader", [Step("fsync-fail", 6, which="leader")], seed=24),
        S("silent-master-9717", [Step("pause-broker-master", MASTER_BUDGET + 2)], seed=18,
          failover_within=MASTER_BUDGET,
          doc="#9717/#10416: a silent master is replaced by the inactive-master scan"),
        S("reelect-10875", [Step("kill-broker-master", MASTER_BUDGET + 2)], seed=19,
          failover_within=MASTER_BUDGET, epoch_stable=4.0,
          doc="#10875: a dead master is replaced, the live new one is kept when the old returns"),
        S("partitions-7017", [Step("partition-random", 4, gap=2), Step("partition-random", 4, gap=2),
                              Step("partition-random", 4)], seed=20,
          doc="#7017/#6662: random halves over controllers and brokers, never two masters "
              "at one epoch"),
        S("sss-race-7219", [Step("kill-broker-slave", 5, with_leader_kill=True)], seed=21,
          doc="#7219: a slave dies while the controller leader changes"),
        # the new controller leader first needs an election (~2 s) on top of the master budget;
        # min_uptime: a node that started less than Java's default heartbeat timeout (10 s) ago
        # waits that long from its start before it declares a master dead (it cannot know the
        # brokers yet), so the fault comes after that (double-kill-fresh-nodes: without it)
        S("double-kill-7689", [Step("double-kill-7689", 10)], seed=22, min_uptime=11.0,
          failover_within=MASTER_BUDGET + 2.0,
          doc="#7689: controller leader and broker master die together"),
        S("kill-any-loss", [Step("loss", 5, target="any", percent=20, gap=1),
                            Step("kill", 4, which="any")], seed=23),
    ]


def _long():
    out = []
    for base in _quick():
        for k, seed in enumerate((101, 202)):
            out.append(base.with_seed(base.seed * 1000 + seed, "-L%d" % (k + 1)))
    S = Schedule
    out += [
        S("partition-6662-master-side", [Step("partition-leader-minority", 8, scope="all"),
                                         Step("partition-random", 6)], seed=301,
          doc="#6662: a partition found with a chaos tool; the master on the leader's side"),
        S("silent-master-10416", [Step("pause-broker-master", 10)], seed=302,
          failover_within=MASTER_BUDGET),
        S("pause-leader-long", [Step("pause", 12, which="leader")], seed=303),
        S("clock-jump-mono", [Step("clock-jump", 6, which="leader", seconds=30, clock="mono")], seed=304),
        S("delay-any-600", [Step("delay", 10, target="any", ms=600)], seed=305),
        S("loss-50-any", [Step("loss", 10, target="any", percent=50)], seed=306),
        S("kill-leader-twice", [Step("kill", 3, which="leader", gap=2),
                                Step("kill", 3, which="leader")], seed=307),
        S("disk-full-follower", [Step("disk-full", 10, which="follower")], seed=309),
        S("cut-oneway-in-long", [Step("cut-oneway", 12, direction="in")], seed=311,
          doc="a deposed leader that still hears nothing back must not answer stale reads"),
        S("partition-leader-minority-long", [Step("partition-leader-minority", 12,
                                                  scope="peers")], seed=312),
        S("delay-any-40", [Step("delay", 10, target="any", ms=40)], seed=310,
          doc="a slow but working link (below the raft RPC timeout)"),
        S("double-kill-no-restart", [Step("double-kill-7689", 8, restart_broker=False)],
          seed=308, min_uptime=11.0, failover_within=MASTER_BUDGET + 2.0),
        S("double-kill-fresh-nodes", [Step("double-kill-7689", 12)], seed=313,
          doc="#7689 within 10 s of the controller nodes' start: the new leader waits out the "
              "default heartbeat timeout from its start (invariants only)"),
    ]
    return out


def quick():
    return _quick()


def long():
    return _long()


def all_schedules():
    seen, out = set(), []
    for s in _quick() + _long():
        if s.name not in seen:
            seen.add(s.name)
            out.append(s)
    return out


def by_name(name):
    for s in all_schedules():
        if s.name == name:
            return s
    raise KeyError("no schedule %r (see --list)" % name)
