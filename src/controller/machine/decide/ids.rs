//! Replica ids and addresses: CONTROLLER_GET_NEXT_BROKER_ID (1012), CONTROLLER_APPLY_BROKER_ID
//! (1013) and CONTROLLER_REGISTER_BROKER (1003), as `ReplicasInfoManager#getNextBrokerId`,
//! `#applyBrokerId` and `#registerSuccess` decide them.

use super::{LiveView, Verdict, echo, field};
use crate::controller::code::response as rc;
use crate::controller::machine::{BrokerId, Event, Machine};

/// CONTROLLER_GET_NEXT_BROKER_ID's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextBrokerId {
    /// `clusterName`, echoed.
    pub cluster_name: Option<String>,
    /// `brokerName`.
    pub broker_name: String,
}

impl NextBrokerId {
    /// 1 for an unknown set, else its `nextAssignBrokerId`. Never refused.
    pub fn decide(&self, machine: &Machine) -> Verdict {
        let next = machine
            .replica_info(&self.broker_name)
            .map_or(1, |r| r.next_assign_broker_id);
        let mut ext = echo(self.cluster_name.as_deref(), &self.broker_name);
        ext.push(field("nextBrokerId", next));
        Verdict::ok(ext)
    }
}

/// CONTROLLER_APPLY_BROKER_ID's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyBrokerId {
    /// `clusterName`.
    pub cluster_name: String,
    /// `brokerName`.
    pub broker_name: String,
    /// `appliedBrokerId`.
    pub applied_broker_id: BrokerId,
    /// `registerCheckCode`: `<brokerAddr>;<millis>`.
    pub register_check_code: String,
}

impl ApplyBrokerId {
    /// The broker's address: the check code's part before its first `;`.
    fn broker_address(&self) -> &str {
        self.register_check_code
            .split(';')
            .next()
            .unwrap_or_default()
    }

    /// Accepts id 1 for a new set, an unassigned id or an identical retry for a known one.
    pub fn decide(&self, machine: &Machine) -> Verdict {
        let (name, id) = (&self.broker_name, self.applied_broker_id);
        let ext = echo(Some(&self.cluster_name), name);
        let accepted = match machine.replica_info(name) {
            None if id == 1 => true,
            None => {
                let remark = format!(
                    "Broker-set: {name} hasn't been registered in controller, but broker try to apply brokerId: {id}"
                );
                return Verdict::refused(rc::CONTROLLER_BROKER_ID_INVALID, remark, ext);
            }
            Some(replicas) => replicas
                .broker_ids
                .get(&id)
                .is_none_or(|entry| entry.register_check_code == self.register_check_code),
        };
        if !accepted {
            let remark = format!("Fail to apply brokerId: {id} in broker-set: {name}");
            return Verdict::refused(rc::CONTROLLER_BROKER_ID_INVALID, remark, ext);
        }
        Verdict::ok(ext).with_event(Event::ApplyBrokerIdEvent {
            cluster_name: self.cluster_name.clone(),
            broker_name: name.clone(),
            broker_address: self.broker_address().to_owned(),
            new_broker_id: id,
            register_check_code: self.register_check_code.clone(),
        })
    }
}

/// CONTROLLER_REGISTER_BROKER's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBroker {
    /// `clusterName` (also the liveness key of the master check).
    pub cluster_name: String,
    /// `brokerName`.
    pub broker_name: String,
    /// `brokerId`: the replica's controller id.
    pub broker_id: BrokerId,
    /// `brokerAddress`: where it listens now.
    pub broker_address: String,
}

impl RegisterBroker {
    /// The current master (only if it is alive) and sync-state set; an address change is
    /// proposed as an event.
    pub fn decide(&self, machine: &Machine, live: &dyn LiveView) -> Verdict {
        let (cluster, name, id) = (&self.cluster_name, &self.broker_name, self.broker_id);
        let mut ext = echo(Some(cluster), name);
        let Some(set) = machine.broker_set(name) else {
            let remark = format!("Broker-set: {name} hasn't been registered in controller");
            return Verdict::refused(rc::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, remark, ext);
        };
        let Some(entry) = set.replicas.broker_ids.get(&id) else {
            let remark = format!("BrokerId: {id} hasn't been registered in broker-set: {name}");
            return Verdict::refused(rc::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, remark, ext);
        };
        let sync = set.sync;
        if let Some(master) = sync
            .master_broker_id
            .filter(|m| live.is_alive(cluster, name, *m))
        {
            ext.push(field("masterBrokerId", master));
            if let Some(addr) = set.replicas.broker_ids.get(&master) {
                ext.push(field("masterAddress", &addr.address));
            }
            ext.push(field("masterEpoch", sync.master_epoch));
            ext.push(field("syncStateSetEpoch", sync.sync_state_set_epoch));
        }
        let body =
            super::sync::sync_state_set_json(&sync.sync_state_set, sync.sync_state_set_epoch);
        let verdict = Verdict::ok(ext).with_body(body);
        if entry.address == self.broker_address {
            return verdict;
        }
        verdict.with_event(Event::UpdateBrokerAddressEvent {
            cluster_name: cluster.clone(),
            broker_name: name.clone(),
            broker_address: self.broker_address.clone(),
            broker_id: id,
        })
    }
}
