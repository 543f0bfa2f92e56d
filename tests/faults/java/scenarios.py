"""The three Java-broker scenarios of issue 24 and what each asserts.

Every scenario boots its own three name servers (embedded controller group) and three Java 5.3.3
brokers of one set, waits for one master with all three in sync, starts SendConsume in c, and
then faults:

  java-master-paused       SIGSTOP of the broker master's JVM past the broker heartbeat timeout
                           (timeout + 3 s, and at least until a new master shows), then SIGCONT;
  java-leader-partitioned  the controller leader's namespace cut off from every other namespace
                           (the other nodes, the brokers, the client) for timeout + 4 s, then healed;
  java-double-kill         kill -9 of the controller leader's name server and of the broker master
                           at the same instant (apache/rocketmq#7689), both restarted afterwards;
  java-leader-master-partitioned
                           the controller leader's and the broker master's namespaces cut off
                           together from the rest (a datacenter cut, apache/rocketmq#7017) for
                           timeout + 8 s: the majority must elect a new master, the cut-off master
                           rejoin as a slave after the heal.

Asserted (each failure is one violation):
  - at most one master per epoch in the controller (1006 history), among the brokers (1007:
    brokers reporting brokerId 0 at the same last epoch) and no flip back to a replaced master in
    any name server's route (105) once it showed the new one; epochs never go back;
  - a master within the heartbeat timeout + 2 s of the fault being detectable: SIGSTOP + timeout
    (paused), the kill (double kill: the master's connections close at once) or the partition (the
    majority must serve the set with a live master: its own, still reachable, or with the master
    cut off too, a new one);
  - the old master rejoins as a slave at the new epoch (controller, its own 1007, our 106); after
    the partition the old leader follows the new one;
  - SendConsume PASS: no acknowledged message lost.
Measured (ms after the fault): the new master in the controller, in every live name server's
route, the new master's own role change, the client's first successful send after its outage.
"""

import time

from java import nsthread
from java import rig as rg
from java.rig import remoting, watch, wait_until


def log(line):
    print(line, flush=True)


class Run:
    """One scenario's verdicts, timings and message counts."""

    def __init__(self, name, profile):
        self.name, self.profile = name, profile
        self.violations = []
        self.timings = {}
        self.messages = None
        self.notes = []
        self.t_begin = time.monotonic()

    def ok(self, what, detail=""):
        log("PASS %s: %s%s" % (self.name, what, ": " + detail if detail else ""))

    def violation(self, what, detail=""):
        self.violations.append("%s: %s" % (what, detail) if detail else what)
        log("FAIL %s: %s%s" % (self.name, what, ": " + detail if detail else ""))

    def expect(self, cond, what, detail=""):
        (self.ok if cond else self.violation)(what, detail)
        return cond

    def note(self, text):
        self.notes.append(text)
        log("NOTE %s: %s" % (self.name, text))

    def since(self):
        return "%.1f s" % (time.monotonic() - self.t_begin)


class Abort(Exception):
    pass


def must(run, cond, what, detail=""):
    if not run.expect(cond, what, detail):
        raise Abort(what)


def ms(t, t0):
    return None if t is None else round((t - t0) * 1000)


# ---------------------------------------------------------------------------------------------
# History checks
# ---------------------------------------------------------------------------------------------

def is_state(v):
    return isinstance(v, watch.SetState)


def is_role(v):
    return isinstance(v, tuple) and len(v) == 2 and v[0] != "error"


def check_epochs(run, obs, t0):
    """At most one master per epoch and no epoch going back in the controller's history; at most
    one broker reporting itself master (brokerId 0) at one epoch."""
    masters, top, back = {}, None, []
    for t, v in obs.ctl.history():
        if not is_state(v) or v.master_epoch is None:
            continue
        if v.master_id is not None:
            masters.setdefault(v.master_epoch, set()).add((v.master_id, v.master_addr))
        if top is not None and v.master_epoch < top:
            back.append("epoch %s after %s at %+d ms" % (v.master_epoch, top, ms(t, t0)))
        top = v.master_epoch if top is None else max(top, v.master_epoch)
    two = {e: sorted(m) for e, m in masters.items() if len(m) > 1}
    run.expect(not two, "one master per epoch in the controller (1006)",
               "two masters at one epoch: %s" % two if two else "epochs %s" % sorted(masters))
    run.expect(not back, "controller epochs never go back", "; ".join(back))
    claims = {}
    for addr, p in obs.roles.items():
        for t, v in p.history():
            if is_role(v) and v[0] == 0 and v[1] is not None:
                claims.setdefault(v[1], {}).setdefault(addr, ms(t, t0))
    two = {e: c for e, c in claims.items() if len(c) > 1}
    run.expect(not two, "one broker calls itself master per epoch (1007)",
               "epoch -> {broker: first seen ms}: %s" % two if two else
               "claims %s" % {e: sorted(c) for e, c in claims.items()})


def check_routes(run, obs, t0, old_addr, new_addr):
    """Once a name server's route shows the new master, it never shows the old one again."""
    flips = []
    for ns, p in obs.routes.items():
        seen_new = None
        for t, v in p.history():
            if t < t0:
                continue
            if v == new_addr and seen_new is None:
                seen_new = t
            elif v == old_addr and seen_new is not None:
                flips.append("%s at %+d ms" % (ns, ms(t, t0)))
    run.expect(not flips, "routes (105) never give brokerId 0 back to the replaced master %s" % old_addr,
               "; ".join(flips))


def failover_times(run, obs, sender, t0, old, label="", route_nodes=None):
    """The first new master (other id, higher epoch) in the controller after t0 and the
    timings; returns the new SetState or None."""
    def moved(v):
        return is_state(v) and v.master_id not in (None, old.master_id) and (v.master_epoch or 0) > (old.master_epoch or 0)

    t_el = obs.ctl.first(moved, t0)
    if t_el is None:
        return None
    new = next(v for t, v in obs.ctl.history() if t >= t_el and moved(v))
    run.timings["controller" + label] = ms(t_el, t0)
    # routes: every name server that was up and reachable from the client during the fault
    rt = [p.first(lambda a: a == new.master_addr, t0) for ns, p in obs.routes.items()
          if (ns in route_nodes if route_nodes is not None else run_node_alive(obs, ns))]
    run.timings["routes" + label] = None if (not rt or None in rt) else ms(max(rt), t0)
    nb = obs.roles.get(new.master_addr)
    if nb:
        run.timings["role" + label] = ms(nb.first(lambda v: is_role(v) and v[0] == 0 and v[1] == new.master_epoch, t0), t0)
    run.t_fault = t0  # first_send is read when the sender is done (an OUTAGE line comes at its end)
    return new


def run_node_alive(obs, ns):
    n = next(n for n in obs.rig.nodes if n.ns == ns)
    return n.running()


def first_send(sender, t0):
    for start, end, _ in sender.outages():
        if end > t0:
            return ms(end, t0)
    return 0  # no failed send after the fault: the next send after it went through


def rejoin_as_slave(run, rig, victim, old_epoch, timeout=90):
    """The old master is a slave at the current (higher) master epoch: alive in the controller,
    its own 1007, and registered under its id in every live name server (106)."""
    last = ["nothing yet"]
    t0 = time.monotonic()

    def slave_again():
        state, info = rig.state()
        ids = {a: i for i, a in watch.replica_addrs(info or {}).items()}
        rid = ids.get(victim.addr)
        role = rig.role(victim)
        last[0] = "controller: %s; %s reports (brokerId, last epoch) %s" % (state, victim.addr, role)
        if state is None or rid is None or rid not in state.alive_ids or rid == state.master_id:
            return None
        if role[0] != rid or role[1] != state.master_epoch or state.master_epoch <= old_epoch:
            return None
        for n in rig.live_nodes():
            if rig.cluster(n).get(str(rid)) != victim.addr:
                last[0] += "; %s's 106 has not brokerId %d" % (n.ns, rid)
                return None
        return state

    state = wait_until(slave_again, timeout, 0.5)
    run.expect(state is not None, "the old master %s rejoins as a slave at the new epoch (1006, its 1007, 106)" % victim.addr,
               "after %.1f s: %s" % (time.monotonic() - t0, last[0]))
    if state:
        run.timings["rejoin_slave_s"] = round(time.monotonic() - t0, 1)
    return state


def finish_sender(run, sender, window):
    rc = sender.wait(window + 120)
    if getattr(run, "t_fault", None):
        run.timings["first_send"] = first_send(sender, run.t_fault)
    acked, received, missing = sender.counts()
    run.messages = {"acked": acked, "received": received, "missing": missing,
                    "outages_ms": [o[2] for o in sender.outages()]}
    run.expect(rc == 0 and sender.passed(), "no acknowledged message lost (SendConsume PASS)",
               sender.summary() or sender.output()[-600:])


def history_check(run, rig):
    """CHECKER's invariants over what the readers recorded (and the nemesis events)."""
    vs = rig.check_history()
    if not vs:
        run.ok("the recorded history passes checker.py (one master per epoch, monotonic epochs, "
               "committed leader reads, linearizable replica-info reads)",
               "%s" % rg.checker.summary(rig.workdir) if hasattr(rg.checker, "summary") else "")
    for v in vs:
        run.violation("checker %s" % v.invariant, v.message)
        for line in str(v).splitlines()[:40]:
            log("    " + line)


def in_sync_again(run, rig, timeout=60):
    t0 = time.monotonic()
    state, info = rig.wait_master(timeout, in_sync=3)
    if state:
        run.ok("all three back in sync", "after %.1f s: %s" % (time.monotonic() - t0, state))
    else:
        run.note("not all three in sync %d s after the rejoin: %s" % (timeout, info))


# ---------------------------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------------------------

def boot(run, rig):
    must(run, rig.start_nodes(), "three name servers boot, each embedding one controller node")
    leader = wait_until(rig.agreed_leader, 30)
    must(run, leader is not None, "the nodes agree on one controller leader (1005)", "%s after %s" % (leader, run.since()))
    must(run, rig.start_brokers(fresh=True) is not None, "three Java 5.3.3 brokers boot in controller mode",
         "after %s" % run.since())
    state, info = rig.wait_master(150, in_sync=3)
    must(run, state is not None, "one master, all three in sync, shown in every route", "after %s: %s" % (run.since(), state if state else info))
    return state, info


def start_sender(run, rig, window):
    topic = "TopicFault%d" % int(time.time() * 1000 % 1000000)
    sender = rig.send_consume(topic, window)
    routed = wait_until(lambda: rig.route(rig.nodes[0], topic), 40, 0.25)
    must(run, bool(routed), "SendConsume's topic %s is routed" % topic)
    time.sleep(2)
    return topic, sender


def bound(run):
    return run.profile.hb_timeout + 2.0


def master_paused(run, rig):
    prof = run.profile
    state, info = boot(run, rig)
    hold = prof.hb_timeout + 3.0
    window = int(hold + 14)
    topic, sender = start_sender(run, rig, window)
    obs = rig.observers(topic).start()
    victim = rig.broker_of(state.master_addr)
    rig.start_readers([rg.CLIENT])
    time.sleep(1)
    t0 = time.time()
    victim.pause()
    rig.nemesis().start("pause", node=victim.ns, addr=victim.addr)
    log("fault: SIGSTOP of the master %s (%s, id %s, epoch %s)" % (victim.ns, victim.addr, state.master_id, state.master_epoch))

    def moved():
        v = obs.ctl.last_value()
        return is_state(v) and v.master_id not in (None, state.master_id) and v.master_epoch > state.master_epoch

    wait_until(moved, hold + 20, 0.05)
    time.sleep(max(0.0, t0 + hold - time.time()))
    victim.resume()
    t_cont = time.time()
    rig.nemesis().stop("pause", node=victim.ns)
    log("heal: SIGCONT of %s after %.1f s" % (victim.ns, t_cont - t0))
    new = failover_times(run, obs, sender, t0, state)
    # detectable at SIGSTOP + timeout: the deadline is timeout + 2 s from the SIGSTOP
    within = new is not None and run.timings["controller"] <= bound(run) * 1000
    run.expect(within, "a new master within the heartbeat timeout + 2 s (%.0f ms) of the SIGSTOP" % (bound(run) * 1000),
               "new master %s after %s ms (routes %s ms)" % (new, run.timings.get("controller"), run.timings.get("routes"))
               if new else "none (last controller view: %s)" % obs.ctl.last_value())
    if new is None:
        obs.stop()
        finish_sender(run, sender, window)
        return
    rejoin_as_slave(run, rig, victim, state.master_epoch)
    time.sleep(max(0.0, t_cont + 3 - time.time()))
    obs.stop()
    check_epochs(run, obs, t0)
    check_routes(run, obs, t0, state.master_addr, new.master_addr)
    finish_sender(run, sender, window)
    in_sync_again(run, rig)
    history_check(run, rig)


def leader_partitioned(run, rig):
    partitioned(run, rig, with_master=False)


def leader_master_partitioned(run, rig):
    partitioned(run, rig, with_master=True)


def partitioned(run, rig, with_master):
    """The controller leader's namespace (with_master: and the broker master's, the datacenter
    cut of apache/rocketmq#7017) cut off from all the others; healed after timeout + 4 s."""
    prof = run.profile
    state, info = boot(run, rig)
    hold = prof.hb_timeout + (8.0 if with_master else 4.0)
    window = int(hold + 14)
    topic, sender = start_sender(run, rig, window)
    leader = rig.agreed_leader()
    must(run, leader is not None, "a controller leader before the partition")
    lnode = rig.node_of(leader)
    rest = [n for n in rig.nodes if n is not lnode]
    victim = rig.broker_of(state.master_addr)
    cut = [lnode.ns] + ([victim.ns] if with_master else [])
    obs = rig.observers(topic)
    # what the cut-off node says of itself, from inside its own namespace
    self_view = rg.NsPoller(nsthread.ns_path(rig.net, lnode.ns), "self-" + lnode.ns, lnode.ctl_addr,
                            lambda c: remoting.metadata(c).get("controllerLeaderAddress"), 0.05)
    obs.extra.append(self_view)
    if with_master:
        # and what the cut-off master says of itself (1007), from its own namespace
        obs.extra.append(rg.NsPoller(nsthread.ns_path(rig.net, victim.ns), "self-" + victim.ns, victim.addr,
                                     watch.broker_role, 0.05))
    obs.start()
    # readers: one in c (every node it can reach), one inside the cut-off leader's namespace (it
    # reaches only that node while cut off: a stale leader-only answer is recorded there)
    rig.start_readers([rg.CLIENT, lnode.ns])
    time.sleep(1)
    t0 = time.time()
    others = [n for n in rg.NAMES if n not in cut]
    rig.net.partition([cut, others])
    rig.nemesis().start("partition", id="p1", groups=[cut, others])
    log("fault: %s (%s%s) partitioned from %s" % (" + ".join(cut), leader, " and the master %s" % victim.addr
                                                  if with_master else "", " ".join(others)))
    served = [None]

    def majority_serves():
        nl = rig.agreed_leader(rest)
        if not nl or nl == leader:
            return None
        st, _ = rig.state(rest)
        if st is None or st.master_id is None or st.master_id not in st.alive_ids:
            return None
        if with_master:
            if st.master_id == state.master_id or st.master_epoch <= state.master_epoch:
                return None
        elif len(st.alive_ids) < 3:
            return None
        served[0] = (time.time(), nl, st)
        return True

    wait_until(majority_serves, hold + 10, 0.05)
    what = ("a new master among the majority within the heartbeat timeout + 2 s" if with_master else
            "the majority serves the set with its live master within the heartbeat timeout + 2 s")
    if served[0]:
        t_s, nl, st = served[0]
        run.timings["majority_serves"] = ms(t_s, t0)
        run.expect(t_s - t0 <= bound(run), what, "new leader %s, %s after %d ms" % (nl, st, ms(t_s, t0)))
    else:
        run.violation(what, "not within %.0f s; the majority says %s" % (hold + 10, _safe(lambda: rig.state(rest))))
    time.sleep(max(0.0, t0 + hold - time.time()))
    t_heal = time.time()
    rig.net.heal()
    rig.nemesis().stop("partition", id="p1")
    log("heal: partition removed after %.1f s" % (t_heal - t0))
    seen = [(ms(t, t0), v) for t, v in self_view.history() if t < t_heal]
    log("the cut-off node %s named as leader (1005; ms after the fault, leader): %s" % (lnode.ns, seen[-6:]))
    last_self = [v for t, v in self_view.history() if t < t_heal][-1:]
    if last_self == [leader] and served[0]:
        run.note("the cut-off leader %s still named itself leader (1005) %d ms into the partition, after the "
                 "majority had elected %s (known bug 2 of the plan)" % (leader, ms(t_heal, t0), served[0][1]))

    def follows():
        m = rig.metadata(lnode)
        nl = rig.agreed_leader()
        return m if nl and m.get("isLeader") == "false" and m.get("controllerLeaderAddress") == nl else None

    m = wait_until(follows, 30, 0.2)
    run.expect(m is not None, "after the heal the old leader %s follows the current leader (1005)" % leader,
               "after %.1f s: %s" % (time.time() - t_heal, m or _safe(lambda: rig.metadata(lnode))))
    if m:
        run.timings["old_leader_follows_after_heal"] = ms(time.time(), t_heal)
    # did the master change? (without the master cut off it need not: it kept its heartbeats)
    new = failover_times(run, obs, sender, t0, state, route_nodes=[n.ns for n in rest])
    if new is not None:
        if not with_master:
            run.note("the master changed across the partition: %s -> %s" % (state, new))
        rejoin_as_slave(run, rig, victim, state.master_epoch)
    else:
        run.t_fault = t0
    time.sleep(2)
    obs.stop()
    if with_master:
        log("the cut-off master %s reported (1007; ms after the fault, (brokerId, last epoch)): %s"
            % (victim.ns, [(ms(t, t0), v) for t, v in obs.extra[1].history()][:10]))
    if new is not None:
        lroute = obs.routes[lnode.ns].first(lambda a: a == new.master_addr, t_heal)
        run.timings["route_on_healed_node"] = ms(lroute, t0)
        check_routes(run, obs, t0, state.master_addr, new.master_addr)
    check_epochs(run, obs, t0)
    finish_sender(run, sender, window)
    in_sync_again(run, rig)
    history_check(run, rig)


def double_kill(run, rig):
    prof = run.profile
    state, info = boot(run, rig)
    window = int(prof.hb_timeout + 18)
    topic, sender = start_sender(run, rig, window)
    leader = rig.agreed_leader()
    must(run, leader is not None, "a controller leader before the kill")
    lnode = rig.node_of(leader)
    victim = rig.broker_of(state.master_addr)
    obs = rig.observers(topic).start()
    rig.start_readers([rg.CLIENT])
    time.sleep(1)
    t0 = time.time()
    lnode.signal(9)
    victim.signal(9)
    lnode.kill9()
    victim.kill9()
    rig.nemesis().start("kill", nodes=[lnode.ns, victim.ns])
    log("fault: kill -9 of the controller leader %s (%s) and the broker master %s (%s) together (+%d ms)"
        % (lnode.ns, leader, victim.ns, victim.addr, ms(time.time(), t0)))

    def moved():
        v = obs.ctl.last_value()
        return is_state(v) and v.master_id not in (None, state.master_id) and v.master_epoch > state.master_epoch

    wait_until(moved, prof.hb_timeout + 25, 0.05)
    time.sleep(0.5)
    new = failover_times(run, obs, sender, t0, state)
    run.expect(new is not None and run.timings["controller"] <= bound(run) * 1000,
               "a new master within the heartbeat timeout + 2 s (%.0f ms) of the double kill" % (bound(run) * 1000),
               "new master %s after %s ms (routes %s ms)" % (new, run.timings.get("controller"), run.timings.get("routes"))
               if new else "none within %.0f s (last controller view: %s)" % (prof.hb_timeout + 25, obs.ctl.last_value()))
    # both come back: the node on its store, the broker with its identity
    must(run, lnode.start(), "the killed name server %s restarts on its store" % lnode.ns)
    rig.nemesis().stop("kill", nodes=[lnode.ns, victim.ns])
    victim.start(fresh=False)
    booted = wait_until(victim.booted, 90, 0.2)
    must(run, booted is not None, "the killed broker %s restarts with its identity" % victim.ns)

    def follows():
        m = rig.metadata(lnode)
        nl = rig.agreed_leader()
        return m if nl and m.get("isLeader") == "false" and m.get("controllerLeaderAddress") == nl else None

    m = wait_until(follows, 30, 0.2)
    run.expect(m is not None, "the restarted node %s follows the current leader (1005)" % lnode.ns,
               str(m or _safe(lambda: rig.metadata(lnode))))
    if new is not None:
        rejoin_as_slave(run, rig, victim, state.master_epoch)
    obs.stop()
    check_epochs(run, obs, t0)
    if new is not None:
        check_routes(run, obs, t0, state.master_addr, new.master_addr)
    finish_sender(run, sender, window)
    in_sync_again(run, rig)
    history_check(run, rig)


def _safe(fn):
    try:
        return fn()
    except Exception as e:
        return "error: %s" % e


SCENARIOS = {
    "java-master-paused": master_paused,
    "java-leader-partitioned": leader_partitioned,
    "java-double-kill": double_kill,
    "java-leader-master-partitioned": leader_master_partitioned,
}
