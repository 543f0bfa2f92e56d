//! Masters and in-sync replicas: CONTROLLER_GET_REPLICA_INFO (1004),
//! CONTROLLER_ALTER_SYNC_STATE_SET (1001) and CONTROLLER_GET_SYNC_STATE_DATA (1006), as
//! `ReplicasInfoManager#getReplicaInfo`, `#alterSyncStateSet` and `#getSyncStateData` decide
//! them.

use std::collections::BTreeSet;

use super::{LiveView, Verdict, field};
use crate::controller::code::response as rc;
use crate::controller::machine::{BrokerId, BrokerSet, Event, Machine};
use crate::protocol::body::controller::{
    ReplicaIdentity, ReplicasInfo, SyncStateSetBody, broker_replicas_info,
};

/// The `SyncStateSet` body of `ids` at `epoch`.
pub(super) fn sync_state_set_json(ids: &BTreeSet<BrokerId>, epoch: i32) -> Vec<u8> {
    SyncStateSetBody {
        sync_state_set: ids.clone(),
        sync_state_set_epoch: epoch,
    }
    .to_json()
}

/// CONTROLLER_GET_REPLICA_INFO's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaInfoQuery {
    /// `brokerName`.
    pub broker_name: String,
}

impl ReplicaInfoQuery {
    /// The recorded master (no liveness filter), its epoch and the sync-state set.
    pub fn decide(&self, machine: &Machine) -> Verdict {
        let Some(set) = machine.broker_set(&self.broker_name) else {
            return Verdict::refused(
                rc::CONTROLLER_BROKER_METADATA_NOT_EXIST,
                "Broker metadata is not existed",
                Vec::new(),
            );
        };
        let sync = set.sync;
        let mut ext = Vec::with_capacity(3);
        if let Some(master) = sync.master_broker_id {
            ext.push(field("masterBrokerId", master));
            if let Some(entry) = set.replicas.broker_ids.get(&master) {
                ext.push(field("masterAddress", &entry.address));
            }
        }
        ext.push(field("masterEpoch", sync.master_epoch));
        let body = sync_state_set_json(&sync.sync_state_set, sync.sync_state_set_epoch);
        Verdict::ok(ext).with_body(body)
    }
}

/// CONTROLLER_ALTER_SYNC_STATE_SET's request: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterSyncStateSet {
    /// `brokerName`.
    pub broker_name: String,
    /// `masterBrokerId`: the sender, which must be the recorded master.
    pub master_broker_id: BrokerId,
    /// `masterEpoch`: the epoch the sender is master in.
    pub master_epoch: i32,
    /// The body: the proposed set and the sync-state-set epoch the sender holds.
    pub proposed: SyncStateSetBody,
}

impl AlterSyncStateSet {
    /// Java's seven checks in order; success proposes the new set at epoch + 1.
    pub fn decide(&self, machine: &Machine, live: &dyn LiveView) -> Verdict {
        let refused = |code, remark: String| {
            Verdict::refused(code, remark, vec![field("newSyncStateSetEpoch", 0)])
        };
        let Some(set) = machine.broker_set(&self.broker_name) else {
            return refused(
                rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                "Broker metadata is not existed".to_owned(),
            );
        };
        if let Err((code, remark)) = self.check(set, live) {
            return refused(code, remark);
        }
        let epoch = set.sync.sync_state_set_epoch.saturating_add(1);
        let new_set = &self.proposed.sync_state_set;
        Verdict::ok(vec![field("newSyncStateSetEpoch", epoch)])
            .with_body(sync_state_set_json(new_set, epoch))
            .with_event(Event::AlterSyncStateSetEvent {
                broker_name: self.broker_name.clone(),
                new_sync_state_set: new_set.clone(),
            })
    }

    fn check(&self, set: BrokerSet<'_>, live: &dyn LiveView) -> Result<(), (i32, String)> {
        let (sync, replicas) = (set.sync, set.replicas);
        let proposed = &self.proposed.sync_state_set;
        if *proposed == sync.sync_state_set {
            return Err((
                rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet".to_owned(),
            ));
        }
        if sync.master_broker_id != Some(self.master_broker_id) {
            let current = sync
                .master_broker_id
                .map_or("null".to_owned(), |m| m.to_string());
            return Err((
                rc::CONTROLLER_INVALID_MASTER,
                format!(
                    "Rejecting alter syncStateSet request because the current leader is:{{{current}}}, not {{{}}}",
                    self.master_broker_id
                ),
            ));
        }
        if self.master_epoch != sync.master_epoch {
            return Err((
                rc::CONTROLLER_FENCED_MASTER_EPOCH,
                format!(
                    "Rejecting alter syncStateSet request because the current master epoch is:{{{}}}, not {{{}}}",
                    sync.master_epoch, self.master_epoch
                ),
            ));
        }
        if self.proposed.sync_state_set_epoch != sync.sync_state_set_epoch {
            return Err((
                rc::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
                format!(
                    "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{{{}}}, not {{{}}}",
                    sync.sync_state_set_epoch, self.proposed.sync_state_set_epoch
                ),
            ));
        }
        for &id in proposed {
            if !replicas.broker_ids.contains_key(&id) {
                return Err((
                    rc::CONTROLLER_INVALID_REPLICAS,
                    format!(
                        "Rejecting alter syncStateSet request because the replicas {{{id}}} don't exist"
                    ),
                ));
            }
            if !live.is_alive(&replicas.cluster_name, &replicas.broker_name, id) {
                return Err((
                    rc::CONTROLLER_BROKER_NOT_ALIVE,
                    format!(
                        "Rejecting alter syncStateSet request because the replicas {{{id}}} don't alive"
                    ),
                ));
            }
        }
        if !proposed.contains(&self.master_broker_id) {
            return Err((
                rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                format!(
                    "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {{{}}}",
                    self.master_broker_id
                ),
            ));
        }
        Ok(())
    }
}

/// CONTROLLER_GET_SYNC_STATE_DATA's request: the broker names of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncStateData {
    /// The sets asked for; unknown ones are skipped.
    pub broker_names: Vec<String>,
}

impl SyncStateData {
    /// `BrokerReplicasInfo` of every known set asked for, each replica with its liveness.
    pub fn decide(&self, machine: &Machine, live: &dyn LiveView) -> Verdict {
        let mut seen = BTreeSet::new();
        let sets = self
            .broker_names
            .iter()
            .filter(|name| seen.insert(name.as_str()))
            .filter_map(|name| machine.broker_set(name))
            .map(|set| replicas_info(set, live))
            .collect();
        Verdict::ok(Vec::new())
            .with_body(broker_replicas_info(sets))
            .without_ext()
    }
}

fn replicas_info<'a>(set: BrokerSet<'a>, live: &dyn LiveView) -> ReplicasInfo<'a> {
    let (sync, replicas) = (set.sync, set.replicas);
    let (mut in_sync, mut not_in_sync) = (Vec::new(), Vec::new());
    for (&id, entry) in &replicas.broker_ids {
        let replica = ReplicaIdentity {
            broker_id: id,
            broker_address: &entry.address,
            alive: live.is_alive(&replicas.cluster_name, &replicas.broker_name, id),
        };
        match sync.sync_state_set.contains(&id) {
            true => in_sync.push(replica),
            false => not_in_sync.push(replica),
        }
    }
    let master_address = sync
        .master_broker_id
        .and_then(|m| replicas.broker_ids.get(&m))
        .map(|entry| entry.address.as_str());
    ReplicasInfo {
        broker_name: &replicas.broker_name,
        master_broker_id: sync.master_broker_id,
        master_address,
        master_epoch: sync.master_epoch,
        sync_state_set_epoch: sync.sync_state_set_epoch,
        in_sync,
        not_in_sync,
    }
}
