//! The leader's decisions: for every leader-only request (CONTROLLER.md §2.3–§2.10) a pure
//! function over the applied [`Machine`], the typed request, a [`LiveView`] of the node's
//! broker liveness and the runtime [`Flags`], giving a [`Verdict`]: the answer (code, remark,
//! ext fields, body) and the events to propose. Java's checks, in Java's order, with Java's
//! codes and remarks (`ReplicasInfoManager`, `DefaultElectPolicy`). Nothing here looks at a
//! clock or a socket: liveness comes in through the view, so a decision is a function of its
//! inputs and the tests drive every branch.

mod clean;
mod elect;
mod ids;
mod sync;

pub use clean::CleanBrokerData;
pub use elect::{ElectMaster, Elected, Trigger};
pub use ids::{ApplyBrokerId, NextBrokerId, RegisterBroker};
pub use sync::{AlterSyncStateSet, ReplicaInfoQuery, SyncStateData};

use super::{BrokerId, Event};
use crate::protocol::code::response::SUCCESS;

/// What a replica's heartbeats say about it, for the election's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveReplica {
    /// The broker's last epoch (from its epoch file), −1 when it has none.
    pub epoch: i32,
    /// Its max commit-log offset.
    pub max_offset: i64,
    /// `brokerElectionPriority`: lower is preferred.
    pub election_priority: i32,
}

/// The node's broker liveness as the decisions see it: `Some` only for a replica whose
/// heartbeats are current (Java's "valid-broker predicate").
pub trait LiveView {
    /// The replica `(cluster, broker_name, id)`, if it is alive.
    fn live(&self, cluster: &str, broker_name: &str, id: BrokerId) -> Option<LiveReplica>;

    /// Whether the replica is alive.
    fn is_alive(&self, cluster: &str, broker_name: &str, id: BrokerId) -> bool {
        self.live(cluster, broker_name, id).is_some()
    }
}

/// The runtime settings a decision reads (UPDATE_CONTROLLER_CONFIG may change them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Flags {
    /// `enableElectUncleanMaster`: a replica outside the sync-state set may become master.
    pub enable_elect_unclean_master: bool,
}

/// A decision: the answer to send once its events (if any) are committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The response code.
    pub code: i32,
    /// The remark (Java sets one only on errors).
    pub remark: Option<String>,
    /// The response's ext fields; `None` for Java's `Void` headers (no `extFields` at all).
    pub ext: Option<Vec<(&'static str, String)>>,
    /// The response body.
    pub body: Option<Vec<u8>>,
    /// What to propose before answering; empty for reads and refusals.
    pub events: Vec<Event>,
    /// A new master this verdict elects (for notifications and the election history).
    pub elected: Option<Elected>,
}

impl Verdict {
    /// A success with `ext` fields.
    pub(crate) fn ok(ext: Vec<(&'static str, String)>) -> Verdict {
        Verdict {
            code: SUCCESS,
            remark: None,
            ext: Some(ext),
            body: None,
            events: Vec::new(),
            elected: None,
        }
    }

    /// A refusal with `code` and `remark`, and `ext` fields.
    pub(crate) fn refused(
        code: i32,
        remark: impl Into<String>,
        ext: Vec<(&'static str, String)>,
    ) -> Verdict {
        Verdict {
            code,
            remark: Some(remark.into()),
            ..Verdict::ok(ext)
        }
    }

    /// The verdict, with `body`.
    pub(crate) fn with_body(mut self, body: Vec<u8>) -> Verdict {
        self.body = Some(body);
        self
    }

    /// The verdict, proposing `event`.
    pub(crate) fn with_event(mut self, event: Event) -> Verdict {
        self.events.push(event);
        self
    }

    /// The verdict, without ext fields (a `Void` header).
    pub(crate) fn without_ext(mut self) -> Verdict {
        self.ext = None;
        self
    }
}

/// `"name": value` for an ext field that is always present.
fn field(name: &'static str, value: impl ToString) -> (&'static str, String) {
    (name, value.to_string())
}

/// Ext fields echoing the request's cluster and broker names (absent ones omitted, as Java
/// omits nulls).
fn echo(cluster: Option<&str>, broker_name: &str) -> Vec<(&'static str, String)> {
    let mut ext = Vec::with_capacity(4);
    if let Some(cluster) = cluster {
        ext.push(field("clusterName", cluster));
    }
    ext.push(field("brokerName", broker_name));
    ext
}

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
