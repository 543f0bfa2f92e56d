//! Deciding a REGISTER_BROKER without changing anything, in the order of
//! `RouteInfoManager#registerBroker`: where the broker stands in its group (first
//! registration, which role its topic configs play), whether the body must be decoded, whether
//! Java would refuse the registration, and which topic configs must be (re)applied or dropped.

use std::collections::{BTreeMap, HashSet};

use super::{BodyInput, RegisterError, RegisterSettings, Registration};
use crate::protocol::body::route::PERM_WRITE;
use crate::protocol::body::{
    DataVersion, Name, QueueData, RegisterBody, RegisterBodyError, TopicSource,
};
use crate::state::route_table::{
    AppliedRegistration, BrokerAddr, BrokerGroup, BrokerLive, RouteTable,
};

/// How a broker's topic configs feed the route table.
pub(super) const MODE_NONE: u64 = 0;
pub(super) const MODE_MASTER: u64 = 1;
pub(super) const MODE_ACTING_READ_ONLY: u64 = 2;

/// What a registration will change, decided before anything is changed.
pub(super) struct Plan {
    pub(super) data_version: DataVersion,
    pub(super) register_first: bool,
    pub(super) mode: u64,
    pub(super) data_version_changed: bool,
    /// Java's null result: a first registration with exactly one topic.
    pub(super) rejected: bool,
    /// Whether, after this registration, the routes reflect every config of the body's
    /// topic table.
    pub(super) table_applied: bool,
    /// `deleteTopicWithBrokerRegistration` was on.
    pub(super) prunes: bool,
    pub(super) topics: TopicWork,
}

/// The topic-table changes of a registration.
#[derive(Default)]
pub(super) struct TopicWork {
    /// Topic configs to (re)apply: topic, queue data, digest of the config.
    pub(super) updates: Vec<(String, QueueData, u64)>,
    /// Topics to drop this group from (`deleteTopicWithBrokerRegistration`).
    pub(super) deletions: Vec<Name>,
}

/// Where the registering broker stands in its group before anything changes.
struct Standing<'t> {
    group: Option<&'t BrokerGroup>,
    /// Java's `registerFirst`: the group is new, or this id has no address in it yet.
    register_first: bool,
    /// The group already holds this id (after the slave-to-master switch).
    id_known: bool,
    mode: u64,
}

impl Standing<'_> {
    /// Whether `applied` was built in the same role and pruning setting, with nothing
    /// touching the group's queue entries since: applying the same configs again would
    /// change nothing.
    fn still_holds(&self, applied: &AppliedRegistration, prunes: bool) -> bool {
        !self.register_first
            && applied.mode == self.mode
            && applied.prunes == prunes
            && self
                .group
                .is_some_and(|g| g.feed_generation == applied.feed_generation)
    }
}

impl RouteTable {
    /// Decides what the registration changes, without changing anything.
    pub(super) fn plan(
        &self,
        reg: &Registration<'_>,
        key: &BrokerAddr,
        input: BodyInput<'_>,
        settings: &RegisterSettings,
    ) -> Result<Plan, RegisterError> {
        let standing = self.plan_broker_entry(reg);
        let previous = self.live.get(key);
        let prunes = settings.delete_topic_with_broker_registration;
        let (data_version, body) = plan_body(input, &standing, previous, prunes)?;
        let data_version_changed = previous.is_none_or(|p| !p.data_version.same_as(&data_version));
        let rejected = match body {
            Some(b) if !standing.id_known => is_single_topic(b)?,
            _ => false,
        };
        // The very table this address applied last, with nothing touched since: applying it
        // again (as Java does when the data version changed) would change nothing.
        let table_unchanged = body.is_some_and(|b| {
            previous.and_then(|p| p.applied).is_some_and(|a| {
                a.table.map(|t| t.digest) == Some(b.table_digest())
                    && standing.still_holds(&a, prunes)
            })
        });
        let mut topics = TopicWork::default();
        if let (Some(body), true, false, false) =
            (body, standing.mode != MODE_NONE, table_unchanged, rejected)
        {
            let every_config = standing.register_first || data_version_changed;
            topics.updates = self.plan_topic_queues(reg, &standing, body, every_config)?;
            if prunes && body.mappings.is_empty() {
                topics.deletions = self.plan_topic_deletions(reg.broker_name, body)?;
            }
        }
        let table_applied = standing.mode != MODE_NONE
            && !rejected
            && (standing.register_first || data_version_changed || table_unchanged);
        Ok(Plan {
            data_version,
            register_first: standing.register_first,
            mode: standing.mode,
            data_version_changed,
            rejected,
            table_applied,
            prunes,
            topics,
        })
    }

    /// The broker-addr table as Java sees it once this address's other ids are gone (its
    /// slave-to-master switch): whether this is a first registration, and whether the
    /// broker's topic configs feed the routes as a master, as a prime slave, or not at all.
    fn plan_broker_entry(&self, reg: &Registration<'_>) -> Standing<'_> {
        let group = self.brokers.get(reg.broker_name);
        let old_version_broker = reg.enable_acting_master.is_none();
        let acting_master = reg.enable_acting_master == Some(true);
        let mut addrs: BTreeMap<i64, &str> = group
            .map(|g| g.data.addrs.iter().map(|(id, a)| (*id, &**a)).collect())
            .unwrap_or_default();
        addrs.retain(|id, a| !(*a == reg.broker_addr && *id != reg.broker_id));
        let register_first =
            group.is_none() || addrs.get(&reg.broker_id).is_none_or(|a| a.is_empty());
        let is_master = reg.broker_id == 0;
        let min_id = addrs
            .keys()
            .next()
            .copied()
            .map_or(reg.broker_id, |m| m.min(reg.broker_id));
        let is_prime_slave = !old_version_broker && !is_master && reg.broker_id == min_id;
        let mode = match (is_master, is_prime_slave) {
            (true, _) => MODE_MASTER,
            (false, true) if acting_master => MODE_ACTING_READ_ONLY,
            (false, true) => MODE_MASTER,
            _ => MODE_NONE,
        };
        Standing {
            group,
            register_first,
            id_known: addrs.contains_key(&reg.broker_id),
            mode,
        }
    }

    /// Java's loop over the topic table, calling `createAndUpdateQueueData` where
    /// `registerFirst || isTopicConfigChanged`: here a config is skipped, unparsed, when its
    /// group's entry was built from the same bytes in the same role.
    fn plan_topic_queues(
        &self,
        reg: &Registration<'_>,
        standing: &Standing<'_>,
        body: &RegisterBody,
        every_config: bool,
    ) -> Result<Vec<(String, QueueData, u64)>, RegisterError> {
        let group_name = standing.group.map(|g| &g.data.broker_name);
        let mut updates = Vec::new();
        for src in body.topics()? {
            let existing = match (self.topics.get(src.key), group_name) {
                (Some(e), Some(name)) => e.queue_of(name),
                _ => None,
            };
            if !(every_config || existing.is_none()) {
                continue;
            }
            let digest = src.fingerprint(standing.mode);
            if existing.is_some_and(|q| q.source == digest) {
                continue;
            }
            let group_name = group_name
                .cloned()
                .unwrap_or_else(|| Name::from(reg.broker_name));
            if let Some((topic, data)) = queue_data_of(&src, standing.mode, group_name)? {
                updates.push((topic, data, digest));
            }
        }
        Ok(updates)
    }

    /// `deleteTopicWithBrokerRegistration`: the topics this group serves that the body's
    /// table no longer lists.
    fn plan_topic_deletions(
        &self,
        broker_name: &str,
        body: &RegisterBody,
    ) -> Result<Vec<Name>, RegisterError> {
        let keep: HashSet<&str> = body.topics()?.map(|t| t.key).collect();
        Ok(self
            .topics
            .iter()
            .filter(|(t, e)| !keep.contains(&***t) && e.queue(broker_name).is_some())
            .map(|(t, _)| t.clone())
            .collect())
    }
}

/// The registration's data version and decoded body; an undecoded body stands only for the
/// very body this address applied last, in the same standing (else the caller must decode).
fn plan_body<'b>(
    input: BodyInput<'b>,
    standing: &Standing<'_>,
    previous: Option<&BrokerLive>,
    prunes: bool,
) -> Result<(DataVersion, Option<&'b RegisterBody>), RegisterError> {
    match input {
        BodyInput::Decoded { body, .. } => Ok((body.data_version, Some(body))),
        BodyInput::Unchanged { digest } => previous
            .filter(|p| {
                p.applied
                    .is_some_and(|a| a.digest == digest && standing.still_holds(&a, prunes))
            })
            .map(|p| (p.data_version, None))
            .ok_or(RegisterError::NeedsBody),
    }
}

/// Java refuses a first registration whose table holds exactly one topic; it counts its
/// table, where a repeated topic is one entry.
fn is_single_topic(body: &RegisterBody) -> Result<bool, RegisterError> {
    let mut keys = body.topics()?.map(|t| t.key);
    let first = keys.next();
    Ok(first.is_some() && keys.all(|k| Some(k) == first))
}

/// One topic config as the queue data `createAndUpdateQueueData` stores for `group_name`,
/// with write permission wiped for an acting master.
fn queue_data_of(
    src: &TopicSource<'_>,
    mode: u64,
    group_name: Name,
) -> Result<Option<(String, QueueData)>, RegisterError> {
    let config = src.parse().map_err(RegisterBodyError::from)?;
    // Java throws on a config without a name and stops half-way, still answering SUCCESS
    // but leaving the broker without a live entry; skipping the nameless config keeps the
    // registration whole (README, Compatibility).
    let Some(topic) = config.topic_name else {
        return Ok(None);
    };
    let perm = if mode == MODE_ACTING_READ_ONLY {
        config.perm & !PERM_WRITE
    } else {
        config.perm
    };
    let data = QueueData {
        broker_name: group_name,
        read_queue_nums: config.read_queue_nums,
        write_queue_nums: config.write_queue_nums,
        perm,
        topic_sys_flag: config.topic_sys_flag,
    };
    Ok(Some((topic, data)))
}
