//! The controller's replicated state machine: the replica table and the sync-state table of
//! every broker set (Java's `ReplicasInfoManager`), and the events that change them. Pure and
//! synchronous like the route table: events in, state out, no I/O and no clock. [`Machine::apply`]
//! never fails — every decision (validation, election) is taken before an event is written, so
//! an event that no longer fits the state (a set cleaned meanwhile) is a logged no-op.

mod apply;
pub mod decide;
mod event;

pub use event::Event;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A replica's controller id inside its broker set (`brokerControllerId`), from 1.
pub type BrokerId = i64;

/// One assigned id of a broker set: the replica's last known address and the check code it
/// applied for the id with (an identical retry after a crash is accepted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerIdEntry {
    /// `host:port` of the replica's main listener.
    pub address: String,
    /// `<brokerAddr>;<millis>` as the broker sent it with CONTROLLER_APPLY_BROKER_ID.
    pub register_check_code: String,
}

/// Java's `BrokerReplicaInfo`: the ids assigned in one broker set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaInfo {
    /// The set's cluster.
    pub cluster_name: String,
    /// The set's name (its key).
    pub broker_name: String,
    /// The id CONTROLLER_GET_NEXT_BROKER_ID offers: starts at 1, +1 on every id added
    /// (whatever the id), never decremented.
    pub next_assign_broker_id: BrokerId,
    /// Assigned ids, in ascending order (Java's `HashMap<Long, _>` order for small ids).
    pub broker_ids: BTreeMap<BrokerId, BrokerIdEntry>,
}

/// Java's `SyncStateInfo`: the master and in-sync replicas of one broker set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncStateInfo {
    /// The set's cluster.
    pub cluster_name: String,
    /// The set's name (its key).
    pub broker_name: String,
    /// Counts master changes; 0 until the first election.
    pub master_epoch: i32,
    /// Counts sync-state-set changes.
    pub sync_state_set_epoch: i32,
    /// The in-sync replicas, ascending.
    pub sync_state_set: BTreeSet<BrokerId>,
    /// The recorded master, if any.
    pub master_broker_id: Option<BrokerId>,
}

impl SyncStateInfo {
    /// A set that has never had a master.
    pub fn new(cluster_name: &str, broker_name: &str) -> SyncStateInfo {
        SyncStateInfo {
            cluster_name: cluster_name.to_owned(),
            broker_name: broker_name.to_owned(),
            master_epoch: 0,
            sync_state_set_epoch: 0,
            sync_state_set: BTreeSet::new(),
            master_broker_id: None,
        }
    }

    /// Java's "first election": no master was ever elected in this set.
    pub fn is_first_election(&self) -> bool {
        self.master_epoch == 0
    }
}

/// The two tables, keyed by broker name. A broker set "exists" only when it is in both.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Machine {
    replicas: BTreeMap<String, ReplicaInfo>,
    sync_states: BTreeMap<String, SyncStateInfo>,
}

/// A broker set that exists (is in both tables).
#[derive(Debug, Clone, Copy)]
pub struct BrokerSet<'a> {
    /// Its assigned ids.
    pub replicas: &'a ReplicaInfo,
    /// Its master and in-sync replicas.
    pub sync: &'a SyncStateInfo,
}

impl Machine {
    /// The broker set `name`, if it exists in both tables.
    pub fn broker_set(&self, name: &str) -> Option<BrokerSet<'_>> {
        Some(BrokerSet {
            replicas: self.replicas.get(name)?,
            sync: self.sync_states.get(name)?,
        })
    }

    /// The replica table entry of `name`, even if the set is missing from the sync-state
    /// table (CONTROLLER_GET_NEXT_BROKER_ID and CONTROLLER_APPLY_BROKER_ID consult it alone).
    pub fn replica_info(&self, name: &str) -> Option<&ReplicaInfo> {
        self.replicas.get(name)
    }

    /// The sync-state table entry of `name`, even if the set is missing from the replica
    /// table (CLEAN_BROKER_DATA's master check consults it alone).
    pub fn sync_state(&self, name: &str) -> Option<&SyncStateInfo> {
        self.sync_states.get(name)
    }

    /// Every broker set that exists, by name.
    pub fn broker_sets(&self) -> impl Iterator<Item = BrokerSet<'_>> {
        self.replicas.iter().filter_map(|(name, replicas)| {
            Some(BrokerSet {
                replicas,
                sync: self.sync_states.get(name)?,
            })
        })
    }

    /// How many names are in either table (for metrics and the status page).
    pub fn len(&self) -> usize {
        self.replicas
            .keys()
            .chain(self.sync_states.keys())
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// Whether both tables are empty.
    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty() && self.sync_states.is_empty()
    }
}

#[cfg(test)]
mod tests;
