//! Applying an event: Java's `ReplicasInfoManager#applyEvent` and its per-kind handlers
//! (§4.2 of the controller spec). Never fails and never panics: an event that no longer fits
//! the state is logged and ignored, exactly as Java ignores it.

use std::collections::BTreeMap;

use super::{BrokerIdEntry, Event, Machine, ReplicaInfo, SyncStateInfo};

impl Machine {
    /// Applies `event`: the one way the tables change.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::AlterSyncStateSetEvent {
                broker_name,
                new_sync_state_set,
            } => match self.existing_mut(broker_name) {
                Some(sync) => {
                    sync.sync_state_set = new_sync_state_set.clone();
                    sync.sync_state_set_epoch = sync.sync_state_set_epoch.saturating_add(1);
                }
                None => ignored(event),
            },
            Event::ApplyBrokerIdEvent {
                cluster_name,
                broker_name,
                broker_address,
                new_broker_id,
                register_check_code,
            } => {
                let entry = BrokerIdEntry {
                    address: broker_address.clone(),
                    register_check_code: register_check_code.clone(),
                };
                match self.broker_set(broker_name).is_some() {
                    true => {
                        let replicas = self.replicas.get_mut(broker_name).expect("exists");
                        if let std::collections::btree_map::Entry::Vacant(slot) =
                            replicas.broker_ids.entry(*new_broker_id)
                        {
                            slot.insert(entry);
                            replicas.next_assign_broker_id =
                                replicas.next_assign_broker_id.saturating_add(1);
                        }
                    }
                    false => {
                        // Absent, or present in only one table: both are created afresh.
                        let replicas = ReplicaInfo {
                            cluster_name: cluster_name.clone(),
                            broker_name: broker_name.clone(),
                            next_assign_broker_id: 2,
                            broker_ids: BTreeMap::from([(*new_broker_id, entry)]),
                        };
                        self.replicas.insert(broker_name.clone(), replicas);
                        let sync = SyncStateInfo::new(cluster_name, broker_name);
                        self.sync_states.insert(broker_name.clone(), sync);
                    }
                }
            }
            Event::ElectMasterEvent {
                broker_name,
                new_master_broker_id,
                new_master_elected,
            } => match (self.existing_mut(broker_name), new_master_broker_id) {
                (None, _) => ignored(event),
                (Some(sync), Some(id)) if *new_master_elected => {
                    sync.master_broker_id = Some(*id);
                    sync.master_epoch = sync.master_epoch.saturating_add(1);
                    sync.sync_state_set = [*id].into();
                    sync.sync_state_set_epoch = sync.sync_state_set_epoch.saturating_add(1);
                }
                (Some(sync), _) => {
                    sync.master_broker_id = None;
                    sync.master_epoch = sync.master_epoch.saturating_add(1);
                }
            },
            Event::CleanBrokerDataEvent {
                broker_name,
                broker_id_set_to_clean,
            } => match broker_id_set_to_clean {
                // As Java: an empty id set means the whole set too.
                None => self.remove_set(broker_name),
                Some(ids) if ids.is_empty() => self.remove_set(broker_name),
                Some(ids) if self.broker_set(broker_name).is_some() => {
                    let replicas = self.replicas.get_mut(broker_name).expect("exists");
                    let sync = self.sync_states.get_mut(broker_name).expect("exists");
                    for id in ids {
                        replicas.broker_ids.remove(id);
                        sync.sync_state_set.remove(id);
                    }
                    // As Java: the recorded master is kept even if its id was removed.
                    if replicas.broker_ids.is_empty() {
                        self.replicas.remove(broker_name);
                    }
                    if sync.sync_state_set.is_empty() {
                        self.sync_states.remove(broker_name);
                    }
                }
                Some(_) => ignored(event),
            },
            Event::UpdateBrokerAddressEvent {
                broker_name,
                broker_address,
                broker_id,
                ..
            } => {
                let exists = self.broker_set(broker_name).is_some();
                let entry = self
                    .replicas
                    .get_mut(broker_name)
                    .and_then(|r| r.broker_ids.get_mut(broker_id));
                match entry {
                    Some(entry) if exists => entry.address = broker_address.clone(),
                    _ => ignored(event),
                }
            }
        }
    }

    /// Removes `broker_name` from both tables.
    fn remove_set(&mut self, broker_name: &str) {
        self.replicas.remove(broker_name);
        self.sync_states.remove(broker_name);
    }

    /// The sync-state entry of a set that exists in both tables.
    fn existing_mut(&mut self, broker_name: &str) -> Option<&mut SyncStateInfo> {
        if !self.replicas.contains_key(broker_name) {
            return None;
        }
        self.sync_states.get_mut(broker_name)
    }
}

fn ignored(event: &Event) {
    tracing::warn!(
        ?event,
        "controller event for a broker set that does not exist: ignored"
    );
}
