//! REGISTER_BROKER (NAMESRV.md §2.5): Java's `RouteInfoManager.registerBroker`, step for step,
//! with one structural difference: registration work is proportional to what changed.
//!
//! The route table decides first, without mutating anything, which of the body's topic
//! configs must be applied; configs byte-identical to the ones an entry was built from are
//! skipped without being parsed, and a body identical to the broker's previous one is not
//! even decoded ([`BodyInput::Unchanged`]). Only then are the changes made, so a config that
//! fails to parse leaves the table untouched, as a Java decode failure does.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

use super::{
    Applied, BrokerAddr, BrokerGroup, BrokerLive, ConnId, DEFAULT_BROKER_TIMEOUT,
    MAX_BROKER_TIMEOUT, QueueEntry, RouteTable,
};
use crate::protocol::body::route::PERM_WRITE;
use crate::protocol::body::{
    BrokerData, DataVersion, Name, QueueData, RegisterBody, RegisterBodyError,
};

/// The header fields of a REGISTER_BROKER request.
#[derive(Debug, Clone)]
pub struct Registration<'a> {
    /// `clusterName`.
    pub cluster: &'a str,
    /// `brokerAddr`.
    pub broker_addr: &'a str,
    /// `brokerName`.
    pub broker_name: &'a str,
    /// `brokerId` (0 = master).
    pub broker_id: i64,
    /// `haServerAddr`.
    pub ha_server_addr: Option<&'a str>,
    /// The raw `__ZONE_NAME` ext field.
    pub zone_name: Option<&'a str>,
    /// `heartbeatTimeoutMillis`, if the broker declared one (applied up to
    /// [`MAX_BROKER_TIMEOUT`]).
    pub heartbeat_timeout_millis: Option<i64>,
    /// `enableActingMaster`; absent means a pre-5.0 broker.
    pub enable_acting_master: Option<bool>,
    /// The connection the request arrived on.
    pub conn: ConnId,
    /// The request's `version` (the broker's `MQVersion` ordinal).
    pub version: i32,
}

/// Configuration that changes how registrations are applied.
#[derive(Debug, Clone, Default)]
pub struct RegisterSettings {
    /// `deleteTopicWithBrokerRegistration`.
    pub delete_topic_with_broker_registration: bool,
}

/// The body of a registration, as far as the caller has decoded it.
#[derive(Debug, Clone, Copy)]
pub enum BodyInput<'a> {
    /// Not decoded: only its digest is known. Succeeds only if the broker re-sends exactly
    /// the body it registered last and nothing has touched its routes since; otherwise the
    /// answer is [`RegisterError::NeedsBody`].
    Unchanged {
        /// Digest of the raw body bytes.
        digest: u64,
    },
    /// Fully decoded.
    Decoded {
        /// The body.
        body: &'a RegisterBody,
        /// Digest of the raw body bytes.
        digest: u64,
    },
}

/// What a registration produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterOutcome {
    /// Registered (or ignored as stale); for a slave, its live master's address and HA
    /// address.
    Registered {
        /// The master's address.
        master_addr: Option<Name>,
        /// The master's HA address.
        ha_server_addr: Option<String>,
    },
    /// Java's null result: a first registration carrying exactly one topic.
    Rejected,
}

/// Why a registration could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// The caller must decode the body and call again with [`BodyInput::Decoded`].
    #[error("the registration body must be decoded")]
    NeedsBody,
    /// The body's topic table or a topic config in it is malformed; nothing was changed.
    #[error(transparent)]
    BadBody(#[from] RegisterBodyError),
}

/// How a broker's topic configs feed the route table.
const MODE_NONE: u64 = 0;
const MODE_MASTER: u64 = 1;
const MODE_ACTING_READ_ONLY: u64 = 2;

struct Plan {
    data_version: DataVersion,
    register_first: bool,
    mode: u64,
    data_version_changed: bool,
    /// Java's null result: a first registration with exactly one topic.
    rejected: bool,
    /// Whether, after this registration, the routes reflect every config of the body's
    /// topic table.
    table_applied: bool,
    /// Topic configs to (re)apply: topic, queue data, digest of the config.
    updates: Vec<(String, QueueData, u64)>,
    /// Topics to drop this group from (`deleteTopicWithBrokerRegistration`).
    deletions: Vec<Name>,
    /// `deleteTopicWithBrokerRegistration` was on.
    prunes: bool,
}

impl RouteTable {
    /// Applies a REGISTER_BROKER.
    pub fn register(
        &mut self,
        reg: &Registration<'_>,
        input: BodyInput<'_>,
        settings: &RegisterSettings,
        now: Instant,
    ) -> Result<RegisterOutcome, RegisterError> {
        let key = BrokerAddr {
            cluster: reg.cluster.into(),
            addr: reg.broker_addr.into(),
        };
        let plan = self.plan(reg, &key, input, settings)?;
        Ok(self.apply(reg, key, input, plan, now))
    }

    /// Decides what the registration changes, without changing anything.
    fn plan(
        &self,
        reg: &Registration<'_>,
        key: &BrokerAddr,
        input: BodyInput<'_>,
        settings: &RegisterSettings,
    ) -> Result<Plan, RegisterError> {
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
        let previous = self.live.get(key);
        let prunes = settings.delete_topic_with_broker_registration;
        let (data_version, body) = match input {
            BodyInput::Decoded { body, .. } => (body.data_version, Some(body)),
            BodyInput::Unchanged { digest } => {
                let unchanged = previous.filter(|p| {
                    !register_first
                        && p.applied.is_some_and(|a| {
                            a.digest == digest
                                && a.feed_generation == group.map_or(0, |g| g.feed_generation)
                                && a.mode == mode
                                && a.prunes == prunes
                        })
                });
                match unchanged {
                    Some(p) => (p.data_version, None),
                    None => return Err(RegisterError::NeedsBody),
                }
            }
        };
        let data_version_changed = previous.is_none_or(|p| !p.data_version.same_as(&data_version));
        let rejected = match body {
            // Java counts its table, where a repeated topic is one entry.
            Some(b) if !addrs.contains_key(&reg.broker_id) => {
                let mut keys = b.topics()?.map(|t| t.key);
                let first = keys.next();
                first.is_some() && keys.all(|k| Some(k) == first)
            }
            _ => false,
        };
        // The very table this address applied last, with nothing touched since: applying it
        // again (as Java does when the data version changed) would change nothing.
        let table_unchanged = body.is_some_and(|b| {
            !register_first
                && previous.and_then(|p| p.applied).is_some_and(|a| {
                    a.table.map(|t| t.digest) == Some(b.table_digest())
                        && a.mode == mode
                        && a.prunes == prunes
                        && Some(a.feed_generation) == group.map(|g| g.feed_generation)
                })
        });
        let mut updates = Vec::new();
        let mut deletions = Vec::new();
        if let (Some(body), true, false, false) =
            (body, mode != MODE_NONE, table_unchanged, rejected)
        {
            let group_name = group.map(|g| &g.data.broker_name);
            for src in body.topics()? {
                let entry = self.topics.get(src.key);
                let existing = match (entry, group_name) {
                    (Some(e), Some(name)) => e.queue_of(name),
                    _ => None,
                };
                if !(register_first || data_version_changed || existing.is_none()) {
                    continue;
                }
                let digest = src.fingerprint(mode);
                if existing.is_some_and(|q| q.source == digest) {
                    continue;
                }
                let config = src.parse().map_err(RegisterBodyError::from)?;
                // Java throws on a config without a name and stops half-way, still answering
                // SUCCESS but leaving the broker without a live entry; skipping the nameless
                // config keeps the registration whole (README, Compatibility).
                let Some(topic) = config.topic_name else {
                    continue;
                };
                let perm = if mode == MODE_ACTING_READ_ONLY {
                    config.perm & !PERM_WRITE
                } else {
                    config.perm
                };
                let data = QueueData {
                    broker_name: group_name
                        .cloned()
                        .unwrap_or_else(|| Name::from(reg.broker_name)),
                    read_queue_nums: config.read_queue_nums,
                    write_queue_nums: config.write_queue_nums,
                    perm,
                    topic_sys_flag: config.topic_sys_flag,
                };
                updates.push((topic, data, digest));
            }
            if settings.delete_topic_with_broker_registration && body.mappings.is_empty() {
                let keep: HashSet<&str> = body.topics()?.map(|t| t.key).collect();
                deletions = self
                    .topics
                    .iter()
                    .filter(|(t, e)| !keep.contains(&***t) && e.queue(reg.broker_name).is_some())
                    .map(|(t, _)| t.clone())
                    .collect();
            }
        }
        let table_applied = mode != MODE_NONE
            && !rejected
            && (register_first || data_version_changed || table_unchanged);
        Ok(Plan {
            data_version,
            register_first,
            mode,
            data_version_changed,
            rejected,
            table_applied,
            updates,
            deletions,
            prunes,
        })
    }

    fn apply(
        &mut self,
        reg: &Registration<'_>,
        key: BrokerAddr,
        input: BodyInput<'_>,
        plan: Plan,
        now: Instant,
    ) -> RegisterOutcome {
        // (a) the cluster gets the broker name, even if the group belongs to another cluster.
        if !self.clusters.contains_key(&key.cluster) {
            let created = self.next_created();
            self.cluster_created.insert(key.cluster.clone(), created);
        }
        let cluster = self.clusters.entry(key.cluster.clone()).or_default();
        if !cluster.iter().any(|n| &**n == reg.broker_name) {
            cluster.push(Name::from(reg.broker_name));
        }
        let cluster_name = self
            .clusters
            .get_key_value(reg.cluster)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| key.cluster.clone());
        // (b) the group, (c) its acting-master flag and zone, (e) one id per address.
        let mut broker_changed = false;
        let name = Name::from(reg.broker_name);
        let created = self.next_created();
        let group = self.brokers.entry(name.clone()).or_insert_with(|| {
            broker_changed = true;
            BrokerGroup {
                data: BrokerData {
                    cluster: cluster_name,
                    broker_name: name,
                    addrs: BTreeMap::new(),
                    zone_name: None,
                    enable_acting_master: false,
                },
                feed_generation: 0,
                created,
            }
        });
        let acting = reg.enable_acting_master == Some(true);
        if group.data.enable_acting_master != acting {
            group.data.enable_acting_master = acting;
            broker_changed = true;
        }
        if group.data.zone_name.as_deref() != reg.zone_name {
            group.data.zone_name = reg.zone_name.map(Name::from);
            broker_changed = true;
        }
        let before = group.data.addrs.len();
        group
            .data
            .addrs
            .retain(|id, a| !(&**a == reg.broker_addr && *id != reg.broker_id));
        broker_changed |= group.data.addrs.len() != before;
        let old_addr = group.data.addrs.get(&reg.broker_id).cloned();
        // (f) a newer broker already holds this id at another address: ignore this one.
        if let Some(old) = old_addr.as_ref().filter(|a| &***a != reg.broker_addr) {
            let old_key = BrokerAddr {
                cluster: key.cluster.clone(),
                addr: old.clone(),
            };
            if let Some(old_live) = self.live.get(&old_key)
                && old_live.data_version.state_version > plan.data_version.state_version
            {
                tracing::warn!(
                    cluster = reg.cluster,
                    broker = reg.broker_name,
                    id = reg.broker_id,
                    old = %old,
                    new = reg.broker_addr,
                    "registration rejected: the registered broker has a newer state version"
                );
                self.live.remove(&key);
                if broker_changed {
                    self.broker_epoch += 1;
                }
                return RegisterOutcome::Registered {
                    master_addr: None,
                    ha_server_addr: None,
                };
            }
        }
        // (g) a single-topic registration must not come first.
        if plan.rejected {
            tracing::warn!(
                broker = reg.broker_name,
                addr = reg.broker_addr,
                "single-topic registration before a full one: rejected"
            );
            if broker_changed {
                self.broker_epoch += 1;
            }
            return RegisterOutcome::Rejected;
        }
        // (h) the address.
        if old_addr.as_deref() != Some(reg.broker_addr) {
            group
                .data
                .addrs
                .insert(reg.broker_id, Name::from(reg.broker_addr));
            broker_changed = true;
        }
        if broker_changed {
            self.broker_epoch += 1;
        }
        // (j) topics.
        if let BodyInput::Decoded { body, .. } = input
            && plan.mode != MODE_NONE
        {
            let group_name = self
                .brokers
                .get(reg.broker_name)
                .map(|g| g.data.broker_name.clone());
            for topic in plan.deletions {
                self.remove_queue_of(&topic, reg.broker_name);
            }
            for (topic, mut data, source) in plan.updates {
                if let Some(name) = &group_name {
                    // A group created by this registration: share its name.
                    data.broker_name = name.clone();
                }
                self.put_queue(&topic, data, source);
            }
            if plan.data_version_changed || plan.register_first {
                self.put_mappings(&body.mappings);
            }
        }
        // (k) liveness: the latest registering connection owns the broker.
        let timeout = reg
            .heartbeat_timeout_millis
            .map_or(DEFAULT_BROKER_TIMEOUT, |ms| {
                Duration::from_millis(ms.max(0) as u64).min(MAX_BROKER_TIMEOUT)
            });
        let previous = self.live.get(&key);
        let first_heard = previous.map_or(now, |l| l.first_heard);
        let previous_table = previous.and_then(|l| l.applied).and_then(|a| a.table);
        let (digest, table, filters) = match input {
            BodyInput::Decoded { body, digest } => (
                digest,
                plan.table_applied.then(|| body.table_hint()),
                body.filter_server_list.as_ref(),
            ),
            BodyInput::Unchanged { digest } => (digest, previous_table, None),
        };
        let feed_generation = self
            .brokers
            .get(reg.broker_name)
            .map_or(0, |g| g.feed_generation);
        self.live.insert(
            key.clone(),
            BrokerLive {
                first_heard,
                last_update: now,
                timeout,
                data_version: plan.data_version,
                conn: reg.conn,
                ha_server_addr: reg.ha_server_addr.map(str::to_owned),
                applied: Some(Applied {
                    digest,
                    table,
                    feed_generation,
                    mode: plan.mode,
                    prunes: plan.prunes,
                }),
                idled_out: false,
                version: reg.version,
            },
        );
        // (l) filter servers.
        if let Some(list) = filters {
            let changed = if list.is_empty() {
                self.filter_servers.remove(&key).is_some()
            } else {
                self.filter_servers
                    .insert(key.clone(), list.clone())
                    .as_ref()
                    != Some(list)
            };
            if changed {
                self.broker_epoch += 1;
            }
        }
        // (m) a slave learns its master.
        if reg.broker_id != 0 {
            let master = self
                .brokers
                .get(reg.broker_name)
                .and_then(|g| g.data.addrs.get(&0).cloned());
            if let Some(master) = master {
                let master_key = BrokerAddr {
                    cluster: key.cluster,
                    addr: master.clone(),
                };
                if let Some(master_live) = self.live.get(&master_key) {
                    return RegisterOutcome::Registered {
                        master_addr: Some(master),
                        ha_server_addr: master_live.ha_server_addr.clone(),
                    };
                }
            }
        }
        RegisterOutcome::Registered {
            master_addr: None,
            ha_server_addr: None,
        }
    }

    /// Java's `createAndUpdateQueueData`: insert or replace one group's queue data.
    fn put_queue(&mut self, topic: &str, data: QueueData, source: u64) {
        let broker_name = data.broker_name.clone();
        let name = self.topic_name(topic);
        let entry = self.topic_entry(name);
        let changed = match entry.queue_mut(&broker_name) {
            Some(q) => {
                let changed = q.data != data;
                q.data = data;
                q.source = source;
                changed
            }
            None => {
                entry.queues.push(QueueEntry { data, source });
                true
            }
        };
        if changed {
            self.touch_topic(topic);
            self.bump_feed(&broker_name);
        }
    }

    fn put_mappings(&mut self, mappings: &[(String, crate::protocol::body::MappingInfo)]) {
        for (topic, info) in mappings {
            let Some(bname) = info.bname.as_deref() else {
                continue;
            };
            let name = self.topic_name(topic);
            let per_broker = self.mappings.entry(name).or_default();
            match per_broker.iter_mut().find(|(b, _)| &**b == bname) {
                Some(slot) if slot.1 == *info => continue,
                Some(slot) => slot.1 = info.clone(),
                None => per_broker.push((Name::from(bname), info.clone())),
            }
            self.touch_topic(topic);
        }
    }

    /// Removes one group's queue data from a topic, dropping the topic if it empties.
    pub(crate) fn remove_queue_of(&mut self, topic: &str, broker_name: &str) -> bool {
        let Some(entry) = self.topics.get_mut(topic) else {
            return false;
        };
        if !entry.remove_queue(broker_name) {
            return false;
        }
        if entry.queues.is_empty() {
            self.topics.remove(topic);
        } else {
            self.touch_topic(topic);
        }
        self.bump_feed(broker_name);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    fn now() -> Instant {
        Instant::now()
    }

    fn queue(t: &RouteTable, topic: &str, broker: &str) -> Option<QueueData> {
        t.topic(topic)?.queue(broker).map(|q| q.data.clone())
    }

    #[test]
    fn master_registration_creates_every_table_entry() {
        let mut t = RouteTable::new();
        let out = register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(1, &["TopicA", "TopicB"]),
            now(),
        );
        assert_eq!(
            out,
            RegisterOutcome::Registered {
                master_addr: None,
                ha_server_addr: None
            }
        );
        assert_eq!(
            t.cluster("DefaultCluster").unwrap(),
            &[Name::from("broker-a")]
        );
        let group = t.broker("broker-a").unwrap();
        assert_eq!(group.data.addrs.get(&0).map(|a| &**a), Some("a:1"));
        assert_eq!(queue(&t, "TopicA", "broker-a").unwrap().perm, 6);
        assert!(t.live("DefaultCluster", "a:1").is_some());
        assert_eq!(t.filter_servers("DefaultCluster", "a:1"), None);
    }

    #[test]
    fn slave_gets_master_and_does_not_feed_topics() {
        let mut t = RouteTable::new();
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(1, &["TopicA", "TopicB"]),
            now(),
        );
        let slave_body = body_with(1, 0, &[("TopicA", 1, 1, 2, 0), ("TopicC", 1, 1, 6, 0)]);
        let out = register(&mut t, &reg("broker-a", "a:2", 1, 2), &slave_body, now());
        assert_eq!(
            out,
            RegisterOutcome::Registered {
                master_addr: Some("a:1".into()),
                ha_server_addr: Some("ha:1".into())
            }
        );
        assert_eq!(queue(&t, "TopicA", "broker-a").unwrap().perm, 6);
        assert!(t.topic("TopicC").is_none());
        assert_eq!(t.broker("broker-a").unwrap().data.addrs.len(), 2);
    }

    #[test]
    fn prime_slave_feeds_topics_and_wipes_write_perm_when_acting_master() {
        let mut t = RouteTable::new();
        let mut r = reg("broker-a", "a:2", 1, 2);
        r.enable_acting_master = Some(true);
        register(&mut t, &r, &body(1, &["TopicA", "TopicB"]), now());
        assert_eq!(queue(&t, "TopicA", "broker-a").unwrap().perm, 4);
        // A pre-5.0 slave (no enableActingMaster) never feeds topics.
        let mut old = RouteTable::new();
        let mut r = reg("broker-b", "b:2", 1, 2);
        r.enable_acting_master = None;
        register(&mut old, &r, &body(1, &["TopicA", "TopicB"]), now());
        assert!(old.topic("TopicA").is_none());
    }

    #[test]
    fn single_topic_first_registration_is_rejected_with_side_effects() {
        let mut t = RouteTable::new();
        let out = register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(1, &["OnlyOne"]),
            now(),
        );
        assert_eq!(out, RegisterOutcome::Rejected);
        assert!(t.broker("broker-a").unwrap().data.addrs.is_empty());
        assert!(t.cluster("DefaultCluster").is_some());
        assert!(t.topic("OnlyOne").is_none());
        assert!(t.live("DefaultCluster", "a:1").is_none());
        // After a full registration, single-topic registrations are fine.
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(1, &["A", "B"]),
            now(),
        );
        let out = register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(2, &["C"]),
            now(),
        );
        assert!(matches!(out, RegisterOutcome::Registered { .. }));
        assert!(t.topic("C").is_some());
    }

    #[test]
    fn one_address_never_has_two_ids() {
        let mut t = RouteTable::new();
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(1, &["A", "B"]),
            now(),
        );
        register(
            &mut t,
            &reg("broker-a", "a:2", 1, 2),
            &body(1, &["A", "B"]),
            now(),
        );
        // The slave at a:2 is promoted: it re-registers as id 0.
        register(
            &mut t,
            &reg("broker-a", "a:2", 0, 2),
            &body(2, &["A", "B"]),
            now(),
        );
        let addrs: Vec<_> = t
            .broker("broker-a")
            .unwrap()
            .data
            .addrs
            .iter()
            .map(|(k, v)| (*k, v.to_string()))
            .collect();
        assert_eq!(addrs, vec![(0, "a:2".to_owned())]);
    }

    #[test]
    fn older_state_version_at_a_new_address_is_ignored() {
        let mut t = RouteTable::new();
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body_with(1, 5, &[("A", 4, 4, 6, 0), ("B", 4, 4, 6, 0)]),
            now(),
        );
        let out = register(
            &mut t,
            &reg("broker-a", "a:9", 0, 2),
            &body_with(1, 3, &[("A", 8, 8, 6, 0), ("B", 8, 8, 6, 0)]),
            now(),
        );
        assert_eq!(
            out,
            RegisterOutcome::Registered {
                master_addr: None,
                ha_server_addr: None
            }
        );
        assert_eq!(
            t.broker("broker-a")
                .unwrap()
                .data
                .addrs
                .get(&0)
                .map(|a| &**a),
            Some("a:1")
        );
        assert!(t.live("DefaultCluster", "a:9").is_none());
        assert_eq!(queue(&t, "A", "broker-a").unwrap().read_queue_nums, 4);
    }

    #[test]
    fn unchanged_data_version_only_restores_missing_topics() {
        let mut t = RouteTable::new();
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(1, &["A", "B"]),
            now(),
        );
        // Same version, different content: Java does not re-read known topics.
        let same_version = body_with(
            1,
            0,
            &[("A", 9, 9, 6, 0), ("B", 4, 4, 6, 0), ("C", 1, 1, 6, 0)],
        );
        register(&mut t, &reg("broker-a", "a:1", 0, 1), &same_version, now());
        assert_eq!(queue(&t, "A", "broker-a").unwrap().read_queue_nums, 4);
        assert_eq!(queue(&t, "C", "broker-a").unwrap().read_queue_nums, 1);
        // A new version re-reads everything.
        let new_version = body_with(2, 0, &[("A", 9, 9, 6, 0), ("B", 4, 4, 6, 0)]);
        register(&mut t, &reg("broker-a", "a:1", 0, 1), &new_version, now());
        assert_eq!(queue(&t, "A", "broker-a").unwrap().read_queue_nums, 9);
    }

    #[test]
    fn a_table_applied_only_in_part_is_re_read_when_the_version_changes() {
        // Found by the model test: an unchanged version only adds missing topics, so the
        // next new version must re-read the very same table.
        let mut t = RouteTable::new();
        register(
            &mut t,
            &reg("b", "a:1", 0, 1),
            &body_with(2, 0, &[("A", 4, 4, 6, 0), ("T", 4, 4, 7, 0)]),
            now(),
        );
        let same_version = body_with(2, 0, &[("B", 4, 4, 7, 0), ("T", 4, 4, 4, 0)]);
        register(&mut t, &reg("b", "a:1", 0, 1), &same_version, now());
        assert_eq!(queue(&t, "T", "b").unwrap().perm, 7);
        let new_version = body_with(1, 0, &[("B", 4, 4, 7, 0), ("T", 4, 4, 4, 0)]);
        register(&mut t, &reg("b", "a:1", 0, 1), &new_version, now());
        assert_eq!(queue(&t, "T", "b").unwrap().perm, 4);
    }

    #[test]
    fn changed_version_restores_a_wiped_permission() {
        let mut t = RouteTable::new();
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(1, &["A", "B"]),
            now(),
        );
        assert_eq!(t.wipe_write_perm("broker-a"), 2);
        assert_eq!(queue(&t, "A", "broker-a").unwrap().perm, 4);
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(2, &["A", "B"]),
            now(),
        );
        assert_eq!(queue(&t, "A", "broker-a").unwrap().perm, 6);
    }

    #[test]
    fn unchanged_body_skips_decoding_until_something_changes() {
        let mut t = RouteTable::new();
        let b = body(1, &["A", "B"]);
        let r = reg("broker-a", "a:1", 0, 1);
        let settings = RegisterSettings::default();
        let unchanged = BodyInput::Unchanged { digest: b.digest() };
        assert!(matches!(
            t.register(&r, unchanged, &settings, now()),
            Err(RegisterError::NeedsBody)
        ));
        t.register(
            &r,
            BodyInput::Decoded {
                body: &b,
                digest: b.digest(),
            },
            &settings,
            now(),
        )
        .unwrap();
        let before = t.live("DefaultCluster", "a:1").unwrap().last_update;
        let later = before + Duration::from_secs(5);
        assert!(t.register(&r, unchanged, &settings, later).is_ok());
        assert_eq!(t.live("DefaultCluster", "a:1").unwrap().last_update, later);
        // A permission change means the next registration must be read in full.
        t.wipe_write_perm("broker-a");
        assert!(matches!(
            t.register(&r, unchanged, &settings, now()),
            Err(RegisterError::NeedsBody)
        ));
    }

    #[test]
    fn a_bad_topic_config_changes_nothing() {
        let mut t = RouteTable::new();
        let json = r#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"A":{"topicName":"A"},"B":{"topicName":"B","perm":"bad"}}}}"#;
        let b = crate::protocol::body::RegisterBody::decode(
            bytes::Bytes::from(json),
            crate::protocol::body::DecodeOptions {
                compressed: false,
                version: 479,
                max_inflated: 1 << 20,
            },
        )
        .unwrap();
        let r = reg("broker-a", "a:1", 0, 1);
        let res = t.register(
            &r,
            BodyInput::Decoded {
                body: &b,
                digest: 1,
            },
            &RegisterSettings::default(),
            now(),
        );
        assert!(matches!(res, Err(RegisterError::BadBody(_))));
        assert!(t.broker("broker-a").is_none());
        assert_eq!(t.topic_count(), 0);
    }

    #[test]
    fn delete_topic_with_broker_registration_drops_missing_topics() {
        let mut t = RouteTable::new();
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(1, &["A", "B", "C"]),
            now(),
        );
        let settings = RegisterSettings {
            delete_topic_with_broker_registration: true,
        };
        let b = body(2, &["A", "B"]);
        t.register(
            &reg("broker-a", "a:1", 0, 1),
            BodyInput::Decoded {
                body: &b,
                digest: 2,
            },
            &settings,
            now(),
        )
        .unwrap();
        assert!(t.topic("C").is_none());
        assert!(t.topic("A").is_some());
    }

    #[test]
    fn a_first_registration_repeating_one_topic_is_refused_like_a_single_topic() {
        let mut t = RouteTable::new();
        let b = body(1, &["A", "A"]);
        let outcome = register(&mut t, &reg("broker-a", "a:1", 0, 1), &b, now());
        assert!(matches!(outcome, RegisterOutcome::Rejected));
        let b = body(1, &["A", "B"]);
        let outcome = register(&mut t, &reg("broker-a", "a:1", 0, 1), &b, now());
        assert!(matches!(outcome, RegisterOutcome::Registered { .. }));
    }

    #[test]
    fn switching_delete_topic_with_broker_registration_on_prunes_at_the_next_heartbeat() {
        let mut t = RouteTable::new();
        let r = reg("broker-a", "a:1", 0, 1);
        register(&mut t, &r, &body(1, &["A", "B", "C"]), now());
        let b = body(2, &["A", "B"]);
        register(&mut t, &r, &b, now());
        assert!(t.topic("C").is_some(), "kept while the flag is off");
        // The broker re-sends the very same body after the operator switched the flag on:
        // Java drops C then, so the unchanged-body shortcuts must not apply.
        let settings = RegisterSettings {
            delete_topic_with_broker_registration: true,
        };
        let unchanged = BodyInput::Unchanged { digest: b.digest() };
        assert!(matches!(
            t.register(&r, unchanged, &settings, now()),
            Err(RegisterError::NeedsBody)
        ));
        let decoded = BodyInput::Decoded {
            body: &b,
            digest: b.digest(),
        };
        t.register(&r, decoded, &settings, now()).unwrap();
        assert!(t.topic("C").is_none());
        assert!(t.topic("A").is_some());
        // Pruned once, the same body is again recognised without being read.
        assert!(t.register(&r, unchanged, &settings, now()).is_ok());
    }

    #[test]
    fn zone_flag_and_filter_servers_follow_the_latest_registration() {
        let mut t = RouteTable::new();
        let mut r = reg("broker-a", "a:1", 0, 1);
        r.zone_name = Some("z1");
        r.heartbeat_timeout_millis = Some(10_000);
        let json = r#"{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"A":{"topicName":"A"},"B":{"topicName":"B"}}}}"#;
        let b = crate::protocol::body::RegisterBody::decode(
            bytes::Bytes::from(json),
            crate::protocol::body::DecodeOptions {
                compressed: false,
                version: 479,
                max_inflated: 1 << 20,
            },
        )
        .unwrap();
        register(&mut t, &r, &b, now());
        assert_eq!(
            t.broker("broker-a").unwrap().data.zone_name.as_deref(),
            Some("z1")
        );
        assert_eq!(
            t.filter_servers("DefaultCluster", "a:1"),
            Some(&["f:1".to_owned()][..])
        );
        assert_eq!(
            t.live("DefaultCluster", "a:1").unwrap().timeout,
            Duration::from_secs(10)
        );
        r.zone_name = None;
        register(&mut t, &r, &body(2, &["A", "B"]), now());
        assert_eq!(t.broker("broker-a").unwrap().data.zone_name, None);
        assert_eq!(t.filter_servers("DefaultCluster", "a:1"), None);
    }

    #[test]
    fn revisions_change_only_for_changed_topics() {
        let mut t = RouteTable::new();
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body(1, &["A", "B"]),
            now(),
        );
        let (ra, rb) = (
            t.topic("A").unwrap().revision,
            t.topic("B").unwrap().revision,
        );
        let epoch = t.broker_epoch;
        register(
            &mut t,
            &reg("broker-a", "a:1", 0, 1),
            &body_with(2, 0, &[("A", 8, 8, 6, 0), ("B", 4, 4, 6, 0)]),
            now(),
        );
        assert_ne!(t.topic("A").unwrap().revision, ra);
        assert_eq!(t.topic("B").unwrap().revision, rb);
        assert_eq!(t.broker_epoch, epoch);
    }
}
