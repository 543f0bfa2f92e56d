"""Time-stamped observation of a failover: pollers that ask every few tens of milliseconds and
keep each change of what they see, with the wall-clock time (time.time(), the clock the Java
client's OUTAGE lines use).

Views of one broker-set:
  ControllerView  CONTROLLER_GET_SYNC_STATE_DATA (1006) on the controller leader, re-found with
                  1005 when the leader does not answer or answers 2007: (master id, master
                  address, master epoch, alive ids, in-sync ids);
  route_view      the name server's route of a topic (105): the address shown as brokerId 0;
  broker_id_view  a broker's own GET_BROKER_EPOCH_CACHE (1007): its brokerId (0 once it has taken
                  the master role) and its last epoch.
"""

import dataclasses
import threading
import time

from controller import remoting


class Poller(threading.Thread):
    """Calls probe(client) every interval on a kept connection to one address and records
    (time, value) whenever the value differs from the previous one; a failed request is the
    value ("error", text) and the connection is made again next time."""

    def __init__(self, name, addr, probe, interval=0.025):
        super().__init__(name=name, daemon=True)
        self.addr, self.probe, self.interval = addr, probe, interval
        self.changes = []
        self._halt = threading.Event()
        self._client = None
        self._lock = threading.Lock()

    def value_now(self):
        try:
            if self._client is None:
                self._client = remoting.Client(self.addr, timeout=1.0)
            return self.probe(self._client)
        except remoting.RemotingError as e:
            if self._client is not None:
                self._client.close()
                self._client = None
            return ("error", str(e).split(":")[-1].strip())

    def run(self):
        last = object()
        while not self._halt.is_set():
            t0 = time.time()
            v = self.value_now()
            if v != last:
                with self._lock:
                    self.changes.append((t0, v))
                last = v
            self._halt.wait(max(0.0, self.interval - (time.time() - t0)))
        if self._client is not None:
            self._client.close()

    def stop(self):
        self._halt.set()
        self.join(5)

    def history(self):
        with self._lock:
            return list(self.changes)

    def first(self, pred, after=0.0):
        """The earliest time at or after `after` at which the value in effect satisfies pred
        (`after` itself when the value already in effect then does), or None."""
        hist = self.history()
        before = [v for t, v in hist if t <= after]
        if before and pred(before[-1]):
            return after
        for t, v in hist:
            if t > after and pred(v):
                return t
        return None

    def last_value(self):
        hist = self.history()
        return hist[-1][1] if hist else None


@dataclasses.dataclass(frozen=True)
class SetState:
    """What the controller leader reports for one broker-set (compared whole between polls)."""

    master_id: object
    master_addr: object
    master_epoch: object
    alive_ids: frozenset
    in_sync_ids: frozenset

    def __str__(self):
        return "master %s (%s) epoch %s, alive %s, in sync %s" % (
            self.master_id, self.master_addr, self.master_epoch, sorted(self.alive_ids), sorted(self.in_sync_ids))


def set_state(info):
    """SetState from one ReplicasInfo of 1006 (CONTROLLER.md §3.3)."""
    replicas = (info.get("inSyncReplicas") or []) + (info.get("notInSyncReplicas") or [])
    return SetState(info.get("masterBrokerId"), info.get("masterAddress"), info.get("masterEpoch"),
                    frozenset(r.get("brokerId") for r in replicas if r.get("alive")),
                    frozenset(r.get("brokerId") for r in info.get("inSyncReplicas") or []))


def replica_addrs(info):
    """{controller id: address} of every replica in one ReplicasInfo."""
    replicas = (info.get("inSyncReplicas") or []) + (info.get("notInSyncReplicas") or [])
    return {r.get("brokerId"): r.get("brokerAddress") for r in replicas}


class ControllerView:
    """The leader's view of one broker-set, following leader changes among `addrs`."""

    def __init__(self, addrs, broker_name):
        self.addrs, self.broker_name = list(addrs), broker_name
        self.leader = None
        self._client = None

    def info(self):
        """The set's ReplicasInfo from the current leader (None when the set is unknown);
        raises RemotingError when no leader answers."""
        for attempt in range(2):
            if self.leader is None:
                self.leader = remoting.leader_of(self.addrs, timeout=0.5)
                if self.leader is None:
                    raise remoting.RemotingError("no controller node names a leader")
            try:
                if self._client is None:
                    self._client = remoting.Client(self.leader, timeout=1.0)
                table = remoting.sync_state_data(self._client, [self.broker_name])
                return table.get(self.broker_name)
            except remoting.RemotingError:
                self.close()
                self.leader = None
                if attempt:
                    raise
        return None

    def state(self):
        info = self.info()
        return set_state(info) if info else None

    def close(self):
        if self._client is not None:
            self._client.close()
            self._client = None


class ControllerPoller(Poller):
    """A Poller over a ControllerView (its own connection handling)."""

    def __init__(self, addrs, broker_name, interval=0.025):
        super().__init__("controller", None, None, interval)
        self.view = ControllerView(addrs, broker_name)

    def value_now(self):
        try:
            return self.view.state()
        except remoting.RemotingError as e:
            return ("error", str(e).split(":")[-1].strip())

    def run(self):
        try:
            super().run()
        finally:
            self.view.close()


def route_master(topic, broker_name):
    """A probe: the address the route of topic shows as brokerId 0 (None when none)."""
    return lambda c: remoting.route_addrs(c, topic, broker_name).get("0")


def broker_role(c):
    """A probe: (brokerId, last epoch) from the broker's own epoch cache (1007)."""
    cache = remoting.broker_epoch_cache(c)
    epochs = cache.get("epochList") or []
    return (cache.get("brokerId"), epochs[-1].get("epoch") if epochs else None)
