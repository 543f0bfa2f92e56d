//! Test builders for the decisions: a machine with sets, and a liveness view by hand.

use std::collections::BTreeMap;

use super::{LiveReplica, LiveView};
use crate::controller::machine::{BrokerId, Event, Machine};

/// Alive replicas, by `(cluster, brokerName, id)`.
#[derive(Debug, Default)]
pub(crate) struct Lives(pub(crate) BTreeMap<(String, String, BrokerId), LiveReplica>);

impl Lives {
    /// Replica `id` of `DefaultCluster`/`name` is alive with `epoch`, `max_offset`, `priority`.
    pub(crate) fn alive(
        mut self,
        name: &str,
        id: BrokerId,
        epoch: i32,
        max_offset: i64,
        priority: i32,
    ) -> Lives {
        let replica = LiveReplica {
            epoch,
            max_offset,
            election_priority: priority,
        };
        self.0
            .insert((CLUSTER.to_owned(), name.to_owned(), id), replica);
        self
    }

    /// Replicas `ids` of `name` are alive with equal liveness data.
    pub(crate) fn all(self, name: &str, ids: &[BrokerId]) -> Lives {
        ids.iter()
            .fold(self, |l, id| l.alive(name, *id, 0, 0, i32::MAX))
    }
}

impl LiveView for Lives {
    fn live(&self, cluster: &str, broker_name: &str, id: BrokerId) -> Option<LiveReplica> {
        self.0
            .get(&(cluster.to_owned(), broker_name.to_owned(), id))
            .copied()
    }
}

/// The cluster of every test set.
pub(crate) const CLUSTER: &str = "DefaultCluster";

/// The address of replica `id`.
pub(crate) fn addr(id: BrokerId) -> String {
    format!("127.0.0.1:{}", 30901 + id * 10)
}

/// The check code replica `id` applied with.
pub(crate) fn check_code(id: BrokerId) -> String {
    format!("{};1", addr(id))
}

/// A machine where `name` has replicas `ids` assigned and, if `master`, that master elected.
pub(crate) fn machine_with(name: &str, ids: &[BrokerId], master: Option<BrokerId>) -> Machine {
    let mut m = Machine::default();
    for &id in ids {
        m.apply(&Event::ApplyBrokerIdEvent {
            cluster_name: CLUSTER.into(),
            broker_name: name.into(),
            broker_address: addr(id),
            new_broker_id: id,
            register_check_code: check_code(id),
        });
    }
    if let Some(id) = master {
        m.apply(&Event::ElectMasterEvent {
            broker_name: name.into(),
            new_master_broker_id: Some(id),
            new_master_elected: true,
        });
    }
    m
}
