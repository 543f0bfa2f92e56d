//! CONTROLLER_ELECT_MASTER (1002) and the election policy: `ReplicasInfoManager#electMaster`
//! and `DefaultElectPolicy` (CONTROLLER.md §5.3), for the three triggers — a broker asking
//! for itself, an operator designating a replica, the controller replacing a dead master.
//!
//! Where Java is wrong we are not: candidates are ordered by a real 64-bit comparison of
//! their offsets (Java casts the difference to `int`), and a first election accepts only an
//! id that is assigned in the set (Java makes any requested id master, even one without an
//! address).

use std::cmp::Ordering;

use super::{Flags, LiveReplica, LiveView, Verdict, field};
use crate::controller::code::response as rc;
use crate::controller::machine::{BrokerId, BrokerSet, Event, Machine};
use crate::protocol::body::controller::{MemberGroup, elect_master_body};

/// Who asked for an election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// A broker, for itself (`designateElect=false`, `brokerId` = its own id).
    Broker(BrokerId),
    /// An operator, for the replica it wants (`designateElect=true`).
    Admin(BrokerId),
    /// The controller, for a set whose master died (`brokerId=-1`): a failure clears the
    /// master with a not-elected event.
    Controller,
}

/// CONTROLLER_ELECT_MASTER's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectMaster {
    /// `brokerName`.
    pub broker_name: String,
    /// Who asks, and for which id.
    pub trigger: Trigger,
}

/// A new master, as a successful election made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elected {
    /// The set's cluster.
    pub cluster: String,
    /// The set.
    pub broker_name: String,
    /// The master before (`None` when there was none).
    pub old_master: Option<BrokerId>,
    /// The new master.
    pub new_master: BrokerId,
    /// Its stored address.
    pub master_address: String,
    /// The new master epoch.
    pub master_epoch: i32,
    /// The new sync-state-set epoch.
    pub sync_state_set_epoch: i32,
    /// Every assigned id of the set with its address (the notification's targets).
    pub members: Vec<(BrokerId, String)>,
}

impl ElectMaster {
    /// Java's election: first election, else the policy; the current master kept is 2011.
    pub fn decide(&self, machine: &Machine, live: &dyn LiveView, flags: Flags) -> Verdict {
        let name = &self.broker_name;
        let Some(set) = machine.broker_set(name) else {
            return Verdict::refused(
                rc::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                "Broker hasn't been registered",
                Vec::new(),
            );
        };
        let old = set.sync.master_broker_id;
        let candidate = self
            .first_election_candidate(set)
            .or_else(|| self.by_policy(set, live, flags));
        match candidate {
            Some(id) if Some(id) == old => master_still_exists(set, id),
            Some(id) => elected(set, id),
            None if self.trigger == Trigger::Controller => Verdict::refused(
                rc::CONTROLLER_MASTER_NOT_AVAILABLE,
                "Old master has down and failed to elect a new broker master",
                Vec::new(),
            )
            .with_event(Event::ElectMasterEvent {
                broker_name: name.clone(),
                new_master_broker_id: None,
                new_master_elected: false,
            }),
            None => Verdict::refused(
                rc::CONTROLLER_ELECT_MASTER_FAILED,
                "Failed to elect a new master",
                Vec::new(),
            ),
        }
    }

    /// The requested id, when the set never had a master and the id is assigned in it.
    fn first_election_candidate(&self, set: BrokerSet<'_>) -> Option<BrokerId> {
        let id = match self.trigger {
            Trigger::Broker(id) | Trigger::Admin(id) => id,
            Trigger::Controller => return None,
        };
        let assigned = set.replicas.broker_ids.contains_key(&id);
        (set.sync.is_first_election() && assigned).then_some(id)
    }

    fn by_policy(&self, set: BrokerSet<'_>, live: &dyn LiveView, flags: Flags) -> Option<BrokerId> {
        let prefer = match self.trigger {
            Trigger::Admin(id) => Some(id),
            _ => None,
        };
        let policy = Policy {
            set,
            live,
            old: set.sync.master_broker_id,
            prefer,
        };
        policy
            .choose(set.sync.sync_state_set.iter().copied())
            .or_else(|| {
                let all = set.replicas.broker_ids.keys().copied();
                flags
                    .enable_elect_unclean_master
                    .then(|| policy.choose(all))
                    .flatten()
            })
    }
}

/// `DefaultElectPolicy#tryElect` over one list of candidates.
struct Policy<'a> {
    set: BrokerSet<'a>,
    live: &'a dyn LiveView,
    old: Option<BrokerId>,
    prefer: Option<BrokerId>,
}

impl Policy<'_> {
    fn choose(&self, ids: impl Iterator<Item = BrokerId>) -> Option<BrokerId> {
        let (cluster, name) = (
            &self.set.replicas.cluster_name,
            &self.set.replicas.broker_name,
        );
        let alive: Vec<(BrokerId, LiveReplica)> = ids
            .filter_map(|id| Some((id, self.live.live(cluster, name, id)?)))
            .collect();
        if alive.is_empty() {
            return None;
        }
        let is_alive = |id: BrokerId| alive.iter().any(|(a, _)| *a == id);
        if let Some(old) = self
            .old
            .filter(|o| is_alive(*o) && self.prefer.is_none_or(|p| p == *o))
        {
            return Some(old);
        }
        // A designated replica that is not suitable is no fallback to anyone else.
        if let Some(prefer) = self.prefer {
            return is_alive(prefer).then_some(prefer);
        }
        alive
            .iter()
            .min_by(|a, b| better_candidate(a, b))
            .map(|(id, _)| *id)
    }
}

/// The election order: higher epoch, then higher max offset (a real 64-bit comparison), then
/// lower election priority, then the smaller id.
pub(crate) fn better_candidate(
    a: &(BrokerId, LiveReplica),
    b: &(BrokerId, LiveReplica),
) -> Ordering {
    let ((a_id, a), (b_id, b)) = (a, b);
    b.epoch
        .cmp(&a.epoch)
        .then(b.max_offset.cmp(&a.max_offset))
        .then(a.election_priority.cmp(&b.election_priority))
        .then(a_id.cmp(b_id))
}

fn master_ext(
    set: BrokerSet<'_>,
    id: BrokerId,
    master_epoch: i32,
    sss_epoch: i32,
) -> Vec<(&'static str, String)> {
    let mut ext = vec![field("masterBrokerId", id)];
    if let Some(entry) = set.replicas.broker_ids.get(&id) {
        ext.push(field("masterAddress", &entry.address));
    }
    ext.push(field("masterEpoch", master_epoch));
    ext.push(field("syncStateSetEpoch", sss_epoch));
    ext
}

fn master_still_exists(set: BrokerSet<'_>, id: BrokerId) -> Verdict {
    let sync = set.sync;
    let remark = format!(
        "The old master {id} is still alive, not need to elect new master for broker {}",
        set.replicas.broker_name
    );
    let ext = master_ext(set, id, sync.master_epoch, sync.sync_state_set_epoch);
    Verdict::refused(rc::CONTROLLER_MASTER_STILL_EXIST, remark, ext)
        .with_body(elect_master_body(None, &sync.sync_state_set))
}

fn elected(set: BrokerSet<'_>, id: BrokerId) -> Verdict {
    let (sync, replicas) = (set.sync, set.replicas);
    let master_epoch = sync.master_epoch.saturating_add(1);
    let sss_epoch = sync.sync_state_set_epoch.saturating_add(1);
    let members: Vec<(BrokerId, String)> = replicas
        .broker_ids
        .iter()
        .map(|(id, entry)| (*id, entry.address.clone()))
        .collect();
    let group = MemberGroup {
        cluster: &replicas.cluster_name,
        broker_name: &replicas.broker_name,
        addrs: members
            .iter()
            .map(|(id, addr)| (*id, addr.as_str()))
            .collect(),
    };
    let body = elect_master_body(Some(&group), &[id].into());
    let master_address = replicas.broker_ids.get(&id).map(|e| e.address.clone());
    let mut verdict = Verdict::ok(master_ext(set, id, master_epoch, sss_epoch))
        .with_body(body)
        .with_event(Event::ElectMasterEvent {
            broker_name: replicas.broker_name.clone(),
            new_master_broker_id: Some(id),
            new_master_elected: true,
        });
    verdict.elected = Some(Elected {
        cluster: replicas.cluster_name.clone(),
        broker_name: replicas.broker_name.clone(),
        old_master: sync.master_broker_id,
        new_master: id,
        master_address: master_address.unwrap_or_default(),
        master_epoch,
        sync_state_set_epoch: sss_epoch,
        members,
    });
    verdict
}
