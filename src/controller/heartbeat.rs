//! The controller's background work around liveness (CONTROLLER.md §5.1–§5.2), each a
//! [`Service`] on the server's tracker:
//!
//! - the expiry scan, on every node, every `scanNotActiveBrokerInterval` (first after 2 s,
//!   as Java): expired heartbeats are removed and reported inactive;
//! - the elector, which turns an inactive master (expired, or its connection closed) into a
//!   controller-triggered election on the leader, retried up to `electMasterMaxRetryCount`
//!   times while the commit fails;
//! - the leader's inactive-master scan, every `scanInactiveMasterInterval`, which covers a
//!   leader change (no expiry fires for a master that died before): it runs at once when the
//!   node becomes `leader_ready`, but never before the node has been up one heartbeat timeout,
//!   because a young node's table holds only the heartbeats received so far and would see
//!   live masters as dead;
//! - the consensus layer's shutdown when the server stops.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior, interval_at};
use tokio_util::sync::CancellationToken;

use super::background::Background;
use super::elections::ElectionReason;
use super::leader::{LeadError, Purpose};
use super::machine::decide::{ElectMaster, LiveView, Trigger};
use super::machine::{BrokerId, Machine};
use super::{Controller, Inactive};
use crate::protocol::code::response::SUCCESS;

/// Java's delay of the first expiry scan.
const FIRST_EXPIRY_SCAN: Duration = Duration::from_millis(2000);

/// The services of `controller`, the elector reading `inactive`.
pub(super) fn services(
    controller: &Controller,
    inactive: mpsc::UnboundedReceiver<Inactive>,
) -> Vec<Background> {
    let c = controller.clone();
    let expiry = Background::new("controller-expiry-scan", move |cancel| {
        expiry_scan(c, cancel)
    });
    let c = controller.clone();
    let elector = Background::new("controller-elector", move |cancel| {
        elector(c, inactive, cancel)
    });
    let c = controller.clone();
    let scan = Background::new("controller-inactive-master-scan", move |cancel| {
        inactive_master_scan(c, cancel)
    });
    let c = controller.clone();
    let stop = Background::new("controller-consensus", move |cancel| async move {
        cancel.cancelled().await;
        c.inner.consensus.shutdown().await;
    });
    vec![expiry, elector, scan, stop]
}

/// Removes expired heartbeats on every node: every `scanNotActiveBrokerInterval` as Java
/// does, and also the moment the earliest entry would expire, so that a silent master is
/// replaced when its heartbeat timeout runs out, not up to one interval later.
async fn expiry_scan(controller: Controller, cancel: CancellationToken) {
    let every = controller
        .inner
        .settings
        .read()
        .scan_not_active_broker_interval
        .max(MIN_PERIOD);
    let mut next_scan = Instant::now() + FIRST_EXPIRY_SCAN;
    loop {
        let wake = controller
            .next_heartbeat_expiry()
            .map_or(next_scan, |expiry| expiry.min(next_scan));
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep_until(wake) => {
                let now = Instant::now();
                controller.expire_heartbeats(now);
                if now >= next_scan {
                    next_scan = now + every;
                }
            }
        }
    }
}

/// The shortest scan period accepted (a zero interval would spin).
const MIN_PERIOD: Duration = Duration::from_millis(10);

impl Controller {
    /// When the earliest live entry's heartbeat will have expired.
    fn next_heartbeat_expiry(&self) -> Option<Instant> {
        self.inner.liveness.lock().next_expiry()
    }

    /// One expiry scan at `now`.
    pub(crate) fn expire_heartbeats(&self, now: Instant) {
        let gone = self.inner.liveness.lock().expire(now);
        self.inactive(gone, ElectionReason::HeartbeatExpired, now);
    }

    /// Elects a new master for `inactive`'s set if the inactive replica is its recorded
    /// master (or, from the scan, whatever the master is); retried while the commit fails.
    pub(crate) async fn elect_for_inactive(&self, inactive: &Inactive) {
        if !self.inner.consensus.status().leader_ready {
            return;
        }
        let is_master = {
            let machine = self.inner.machine.read();
            let master = machine
                .broker_set(&inactive.broker_name)
                .and_then(|set| set.sync.master_broker_id);
            master.is_some() && (inactive.broker_id.is_none() || inactive.broker_id == master)
        };
        if !is_master {
            return;
        }
        let request = ElectMaster {
            broker_name: inactive.broker_name.clone(),
            trigger: Trigger::Controller,
        };
        let purpose = Purpose::election(inactive.reason, Some(inactive.detected));
        let attempts = self
            .inner
            .settings
            .read()
            .elect_master_max_retry_count
            .max(1);
        for attempt in 1..=attempts {
            match self
                .lead(purpose, |m, live, flags| request.decide(m, live, flags))
                .await
            {
                // Committed; or decided without a new master (2004 committed its not-elected
                // event, 2011 found the master alive): deciding again at once decides the
                // same, and Java's retry of those only bumps the epoch again.
                Ok(verdict) => {
                    if verdict.code != SUCCESS {
                        tracing::info!(broker = %inactive.broker_name, code = verdict.code, remark = ?verdict.remark, "controller-triggered election elected nobody");
                    }
                    return;
                }
                Err(LeadError::NotLeader) => return,
                Err(LeadError::Failed(e)) => {
                    tracing::warn!(broker = %inactive.broker_name, attempt, error = %e, "controller-triggered election failed");
                }
            }
        }
    }

    /// The sets whose recorded master is not alive while some replica is (Java's
    /// `scanNeedReelectBrokerSets`).
    pub(crate) fn sets_needing_election(&self, now: Instant) -> Vec<String> {
        let machine = self.inner.machine.read();
        let liveness = self.inner.liveness.lock();
        needing_election(&machine, &liveness.at(now))
    }
}

/// The sets of `machine` whose recorded master is dead in `live` but with a live replica.
pub(crate) fn needing_election(machine: &Machine, live: &dyn LiveView) -> Vec<String> {
    machine
        .broker_sets()
        .filter(|set| {
            let (cluster, name) = (&set.replicas.cluster_name, &set.replicas.broker_name);
            let alive = |id: BrokerId| live.is_alive(cluster, name, id);
            set.sync.master_broker_id.is_some_and(|m| !alive(m))
                && set.replicas.broker_ids.keys().any(|id| alive(*id))
        })
        .map(|set| set.replicas.broker_name.clone())
        .collect()
}

/// Turns inactive masters into elections, one at a time.
async fn elector(
    controller: Controller,
    mut inactive: mpsc::UnboundedReceiver<Inactive>,
    cancel: CancellationToken,
) {
    loop {
        let inactive = tokio::select! {
            _ = cancel.cancelled() => return,
            next = inactive.recv() => match next {
                Some(inactive) => inactive,
                None => return,
            },
        };
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = controller.elect_for_inactive(&inactive) => {}
        }
    }
}

/// The leader's scan for sets without a live master. Liveness is learnt by every node (brokers
/// heartbeat each of them), so the wait for it counts from this node's start, not from its
/// leadership: a follower that has heard the brokers for a heartbeat timeout scans the moment
/// it becomes leader — after the double kill of apache/rocketmq#7689 (controller leader and
/// broker master together) the set is not left without a master for a further timeout.
async fn inactive_master_scan(controller: Controller, cancel: CancellationToken) {
    let mut status = controller.inner.consensus.watch();
    let every = controller
        .inner
        .settings
        .read()
        .scan_inactive_master_interval;
    let mut tick = interval_at(Instant::now() + every, every.max(MIN_PERIOD));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let started = Instant::now();
    let mut ready = status.borrow().leader_ready;
    let mut watching = true;
    loop {
        let scan_now = tokio::select! {
            _ = cancel.cancelled() => return,
            changed = status.changed(), if watching => {
                watching = changed.is_ok();
                let was = ready;
                ready = status.borrow().leader_ready;
                ready && !was
            }
            _ = tick.tick() => ready,
        };
        if !scan_now {
            continue;
        }
        let now = Instant::now();
        let settle = controller.inner.liveness.lock().settle_time();
        if now < started + settle {
            continue;
        }
        for broker_name in controller.sets_needing_election(now) {
            let inactive = Inactive {
                broker_name,
                broker_id: None,
                reason: ElectionReason::InactiveMasterScan,
                detected: now,
            };
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = controller.elect_for_inactive(&inactive) => {}
            }
        }
    }
}
