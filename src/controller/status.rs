//! What the status page, `/api` and the metrics show of the controller: the group as the
//! consensus layer sees it, every broker set (master, epochs, in-sync replicas, each replica's
//! address and liveness on this node), the recent elections and the counters. A snapshot,
//! taken under each lock in turn and never across an await.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::Controller;
use super::consensus::GroupStatus;
use super::elections::{ElectionReason, ElectionRecord};
use super::machine::decide::LiveView;
use super::machine::{BrokerId, BrokerSet};

/// One replica of a broker set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaStatus {
    /// Its controller id.
    pub broker_id: BrokerId,
    /// Its stored address.
    pub address: String,
    /// Whether it is in the sync-state set.
    pub in_sync: bool,
    /// Whether its heartbeats to this node are current.
    pub alive: bool,
}

/// One broker set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerSetStatus {
    /// The set's cluster.
    pub cluster: String,
    /// The set's name.
    pub broker_name: String,
    /// The recorded master.
    pub master: Option<BrokerId>,
    /// The master epoch.
    pub master_epoch: i32,
    /// The sync-state-set epoch.
    pub sync_state_set_epoch: i32,
    /// Every assigned replica, ascending.
    pub replicas: Vec<ReplicaStatus>,
}

/// The controller as this node sees it.
#[derive(Debug, Clone)]
pub struct ControllerStatus {
    /// The group: leader, term, indexes, peers.
    pub group: GroupStatus,
    /// Every broker set.
    pub broker_sets: Vec<BrokerSetStatus>,
    /// The recent elections, oldest first.
    pub elections: Vec<ElectionRecord>,
    /// Elections by reason, in [`ElectionReason::ALL`] order.
    pub elections_by_reason: Vec<(ElectionReason, u64)>,
    /// Heartbeats received by this node.
    pub heartbeats: u64,
    /// Replicas with a liveness entry on this node.
    pub live_entries: usize,
    /// The last controller-triggered failover, from detection to the committed election.
    pub last_failover: Option<Duration>,
}

impl Controller {
    /// The controller now.
    pub fn status(&self) -> ControllerStatus {
        let group = self.inner.consensus.status();
        let now = Instant::now();
        let (broker_sets, live_entries) = {
            let machine = self.inner.machine.read();
            let liveness = self.inner.liveness.lock();
            let live = liveness.at(now);
            let sets = machine
                .broker_sets()
                .map(|s| set_status(s, &live))
                .collect();
            (sets, liveness.entries())
        };
        let elections = self.inner.elections.lock();
        ControllerStatus {
            group,
            broker_sets,
            elections: elections.recent().cloned().collect(),
            elections_by_reason: ElectionReason::ALL
                .iter()
                .map(|r| (*r, elections.count(*r)))
                .collect(),
            heartbeats: self.inner.heartbeats.load(Ordering::Relaxed),
            live_entries,
            last_failover: elections.last_failover(),
        }
    }
}

fn set_status(set: BrokerSet<'_>, live: &dyn LiveView) -> BrokerSetStatus {
    let (replicas, sync) = (set.replicas, set.sync);
    BrokerSetStatus {
        cluster: replicas.cluster_name.clone(),
        broker_name: replicas.broker_name.clone(),
        master: sync.master_broker_id,
        master_epoch: sync.master_epoch,
        sync_state_set_epoch: sync.sync_state_set_epoch,
        replicas: replicas
            .broker_ids
            .iter()
            .map(|(id, entry)| ReplicaStatus {
                broker_id: *id,
                address: entry.address.clone(),
                in_sync: sync.sync_state_set.contains(id),
                alive: live.is_alive(&replicas.cluster_name, &replicas.broker_name, *id),
            })
            .collect(),
    }
}
