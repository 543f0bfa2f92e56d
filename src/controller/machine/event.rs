//! The events written to the controller's log, one per decision (Java's `EventMessage`
//! kinds of `EventType`, with Java's JSON property names). An event is a pure state
//! transition: what to change, never what to check.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::BrokerId;

/// A change to the controller's tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "eventType", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Event {
    /// `AlterSyncStateSetEvent`: the set's in-sync replicas become `new_sync_state_set`,
    /// and the sync-state-set epoch rises by one.
    #[serde(rename_all = "camelCase")]
    AlterSyncStateSetEvent {
        /// The broker set.
        broker_name: String,
        /// The new in-sync replicas.
        new_sync_state_set: BTreeSet<BrokerId>,
    },
    /// `ApplyBrokerIdEvent`: `new_broker_id` is assigned to a replica (creating the set if
    /// it does not exist in both tables).
    #[serde(rename_all = "camelCase")]
    ApplyBrokerIdEvent {
        /// The set's cluster.
        cluster_name: String,
        /// The broker set.
        broker_name: String,
        /// The replica's address.
        broker_address: String,
        /// The id assigned.
        new_broker_id: BrokerId,
        /// The check code the replica applied with.
        register_check_code: String,
    },
    /// `ElectMasterEvent`: `new_master_broker_id` became master (`new_master_elected`), or
    /// the set has no master any more; either way the master epoch rises by one.
    #[serde(rename_all = "camelCase")]
    ElectMasterEvent {
        /// The broker set.
        broker_name: String,
        /// The new master, when one was elected.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        new_master_broker_id: Option<BrokerId>,
        /// Whether a master was elected.
        new_master_elected: bool,
    },
    /// `CleanBrokerDataEvent`: the listed ids, or the whole set when `None`, are removed.
    #[serde(rename_all = "camelCase")]
    CleanBrokerDataEvent {
        /// The broker set.
        broker_name: String,
        /// The ids to remove; `None` removes the whole set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        broker_id_set_to_clean: Option<BTreeSet<BrokerId>>,
    },
    /// `UpdateBrokerAddressEvent`: the replica `broker_id` now listens at `broker_address`.
    #[serde(rename_all = "camelCase")]
    UpdateBrokerAddressEvent {
        /// The set's cluster.
        cluster_name: String,
        /// The broker set.
        broker_name: String,
        /// The new address.
        broker_address: String,
        /// The replica.
        broker_id: BrokerId,
    },
}

impl Event {
    /// The broker set the event is about.
    pub fn broker_name(&self) -> &str {
        match self {
            Event::AlterSyncStateSetEvent { broker_name, .. }
            | Event::ApplyBrokerIdEvent { broker_name, .. }
            | Event::ElectMasterEvent { broker_name, .. }
            | Event::CleanBrokerDataEvent { broker_name, .. }
            | Event::UpdateBrokerAddressEvent { broker_name, .. } => broker_name,
        }
    }
}
