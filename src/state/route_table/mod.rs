//! The route table: the Java `RouteInfoManager`'s five tables (plus static-topic mappings)
//! as one plain, synchronous struct. The lock that guards it lives one level up, in
//! [`crate::state::Namesrv`], so every rule here can be tested without a runtime.
//!
//! Submodules hold the operations: [`register`] (REGISTER_BROKER), [`unregister`]
//! (UNREGISTER_BROKER, closed connections), `expiry` (the expiry scan and idle timeouts,
//! under eviction protection), [`query`] (routes and listings), `operator_edits` (permissions,
//! topic registration and deletion) and `parts` (the table as plain lists, for warm
//! restarts).
//!
//! Two bookkeeping fields make routes cheap to serve and registrations cheap to repeat:
//! every topic carries a revision number that changes whenever its route could change, and
//! every queue entry remembers the digest of the broker config it was built from (see
//! `QueueEntry::source`).

pub(crate) mod expiry;
pub(crate) mod operator_edits;
pub(crate) mod overview;
pub(crate) mod parts;
pub mod query;
pub mod register;
#[cfg(test)]
mod tests;
pub mod unregister;

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use crate::protocol::body::{BrokerData, DataVersion, MappingInfo, Name, QueueData, TableHint};
pub(crate) use crate::state::liveness::{BrokerAddr, DEFAULT_BROKER_TIMEOUT};
use crate::state::protection::{Heard, Holds};
use crate::state::route_cache::RouteCache;

/// Identifies one client connection; the "channel" of Java's broker-live table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u64);

/// One broker group's queues of a topic, plus where they came from.
#[derive(Debug, Clone)]
pub(crate) struct QueueEntry {
    /// What clients see.
    pub(crate) data: QueueData,
    /// Digest of the registered topic config this entry was built from, or 0 when something
    /// else (a permission change, REGISTER_TOPIC_IN_NAMESRV) last wrote it. A registration
    /// whose config has the same digest would build the same entry, so it can skip it.
    pub(crate) source: u64,
}

/// A topic's route state.
#[derive(Debug, Default)]
pub(crate) struct TopicEntry {
    /// One entry per broker group, in insertion order (Java order is applied on output).
    pub(crate) queues: Vec<QueueEntry>,
    /// Changes whenever the queue data or the static-topic mapping of this topic changes.
    pub(crate) revision: u64,
    /// Encoded route bodies, valid while the revision and the broker epoch are unchanged.
    pub(crate) cache: RouteCache,
    /// When the topic entered the table (Java lists same-bucket entries in that order).
    pub(crate) created: u64,
}

impl TopicEntry {
    /// The queue entry of `broker_name`, if any.
    pub(crate) fn queue(&self, broker_name: &str) -> Option<&QueueEntry> {
        self.queues
            .iter()
            .find(|q| &*q.data.broker_name == broker_name)
    }

    /// The queue entry of a group by its interned name: entries share their group's `Name`,
    /// so a pointer comparison usually decides without reading the strings.
    fn queue_of(&self, group: &Name) -> Option<&QueueEntry> {
        self.queues
            .iter()
            .find(|q| std::sync::Arc::ptr_eq(&q.data.broker_name, group))
            .or_else(|| self.queue(group))
    }

    fn queue_mut(&mut self, broker_name: &str) -> Option<&mut QueueEntry> {
        self.queues
            .iter_mut()
            .find(|q| &*q.data.broker_name == broker_name)
    }

    fn remove_queue(&mut self, broker_name: &str) -> bool {
        let before = self.queues.len();
        self.queues.retain(|q| &*q.data.broker_name != broker_name);
        self.queues.len() != before
    }
}

/// A broker group and a counter of changes to its queue data.
#[derive(Debug, Clone)]
pub(crate) struct BrokerGroup {
    /// What clients see.
    pub(crate) data: BrokerData,
    /// Bumped on every change to this group's queue entries in any topic; a
    /// re-registration may skip all topic work only if nothing touched them since.
    pub(crate) feed_generation: u64,
    /// When the group entered the table (Java lists same-bucket entries in that order).
    pub(crate) created: u64,
}

/// What the last full registration from one broker address applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AppliedRegistration {
    /// Digest of the raw body.
    pub(crate) digest: u64,
    /// The body's topic table (its length and digest), if the routes reflect *every* config
    /// in it (a first registration or a new data version applies them all; an unchanged
    /// version only adds missing topics, after which the table is not known to be applied).
    pub(crate) table: Option<TableHint>,
    /// The group's feed generation right after applying it.
    pub(crate) feed_generation: u64,
    /// How the body's topics were applied (master / prime slave / acting master).
    pub(crate) mode: u64,
    /// Whether `deleteTopicWithBrokerRegistration` was on, so topics missing from the table
    /// were dropped; switching it on makes the next registration do that work.
    pub(crate) prunes: bool,
}

/// Java's `BrokerLiveInfo`: when a broker was last heard from, and on which connection.
#[derive(Debug, Clone)]
pub struct BrokerLive {
    /// The registration that put it in the live set (kept by its later registrations):
    /// eviction protection counts only brokers heard from over a while.
    pub(crate) first_heard: Instant,
    /// Last REGISTER_BROKER, QUERY_DATA_VERSION or BROKER_HEARTBEAT.
    pub last_update: Instant,
    /// How long the broker may stay silent (120 s unless it declared its own, at most
    /// [`MAX_BROKER_TIMEOUT`]).
    pub timeout: Duration,
    /// The data version of its last registration.
    pub(crate) data_version: DataVersion,
    /// The connection of its last registration: the one whose loss unregisters it.
    pub(crate) conn: ConnId,
    /// Its HA address.
    pub(crate) ha_server_addr: Option<String>,
    /// Set when its last registration body is known to be fully applied.
    pub(crate) applied: Option<AppliedRegistration>,
    /// Its connection idled out since it was last heard from, and eviction protection kept
    /// it (see [`crate::state::protection`]): it is due for eviction like an expired broker.
    pub(crate) idled_out: bool,
    /// The `version` of its last registration request: its RocketMQ release as an
    /// `MQVersion` ordinal.
    pub(crate) version: i32,
}

impl BrokerLive {
    /// What the expiry rules judge it by (its silence: see [`Heard::due`]).
    pub(crate) fn heard(&self) -> Heard {
        Heard {
            first: self.first_heard,
            last: self.last_update,
            timeout: self.timeout,
            idled_out: self.idled_out,
        }
    }
}

/// The longest timeout a registration may declare (`heartbeatTimeoutMillis`); longer ones are
/// cut to it. Java takes any value, so any client could keep a broker it registered in the
/// routes for ever, and in the route snapshot across restarts; ten minutes is five times the
/// default and far above what a real broker declares.
pub const MAX_BROKER_TIMEOUT: Duration = Duration::from_secs(600);

/// All route state of the name server.
#[derive(Debug, Default)]
pub struct RouteTable {
    pub(crate) topics: HashMap<Name, TopicEntry>,
    pub(crate) brokers: HashMap<Name, BrokerGroup>,
    /// Cluster → broker names (a set, kept in insertion order).
    pub(crate) clusters: HashMap<Name, Vec<Name>>,
    /// When each cluster entered `clusters`.
    pub(crate) cluster_created: HashMap<Name, u64>,
    pub(crate) live: HashMap<BrokerAddr, BrokerLive>,
    pub(crate) filter_servers: HashMap<BrokerAddr, Vec<String>>,
    /// Topic → broker name → static-topic mapping. Never shrinks, as in Java.
    pub(crate) mappings: HashMap<Name, Vec<(Name, MappingInfo)>>,
    /// Source of topic revisions.
    revision_counter: u64,
    /// Source of `created` stamps.
    created_counter: u64,
    /// Bumped whenever broker data, filter servers or mappings change: everything a route
    /// shows besides the topic's own queue data.
    pub(crate) broker_epoch: u64,
    /// Brokers eviction protection keeps, and the record of its holds.
    pub(crate) holds: Holds,
    /// Route lookups served from, and missing, the route cache (read by `/metrics`; atomics
    /// because lookups hold only the read lock).
    pub(crate) cache_counts: overview::CacheCounts,
}

impl RouteTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn next_created(&mut self) -> u64 {
        self.created_counter += 1;
        self.created_counter
    }

    /// The entry of `name`, created (stamped with its creation order) if absent.
    fn topic_entry(&mut self, name: Name) -> &mut TopicEntry {
        let created = self.next_created();
        self.topics.entry(name).or_insert_with(|| TopicEntry {
            created,
            ..TopicEntry::default()
        })
    }

    fn next_revision(&mut self) -> u64 {
        self.revision_counter += 1;
        self.revision_counter
    }

    /// Marks `topic`'s route as changed.
    fn touch_topic(&mut self, topic: &str) {
        let rev = self.next_revision();
        if let Some(entry) = self.topics.get_mut(topic) {
            entry.revision = rev;
        }
    }

    fn bump_feed(&mut self, broker_name: &str) {
        if let Some(group) = self.brokers.get_mut(broker_name) {
            group.feed_generation += 1;
        }
    }

    /// The canonical `Name` for a topic: the existing key if the topic is known.
    fn topic_name(&self, topic: &str) -> Name {
        self.topics
            .get_key_value(topic)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| Name::from(topic))
    }

    /// Number of topics.
    pub fn topic_count(&self) -> usize {
        self.topics.len()
    }

    /// Whether any listing of this table is built in well under a millisecond, so that it
    /// may be served on a runtime worker: up to 2 048 topics (the whole-topic list takes
    /// ~160 µs at 1 000, ~1 ms at 4 096: `cargo bench --bench route_table -- all_topic_list`)
    /// and 64 broker groups (per-cluster listings walk groups × topics).
    pub(crate) fn lists_quickly(&self) -> bool {
        self.topics.len() <= 2_048 && self.brokers.len() <= 64
    }

    /// A topic's entry.
    #[cfg(test)]
    pub(crate) fn topic(&self, topic: &str) -> Option<&TopicEntry> {
        self.topics.get(topic)
    }

    /// A broker group.
    #[cfg(test)]
    pub(crate) fn broker(&self, broker_name: &str) -> Option<&BrokerGroup> {
        self.brokers.get(broker_name)
    }

    /// The broker names of a cluster.
    pub fn cluster(&self, cluster: &str) -> Option<&[Name]> {
        self.clusters.get(cluster).map(Vec::as_slice)
    }

    /// A broker's liveness record.
    pub fn live(&self, cluster: &str, addr: &str) -> Option<&BrokerLive> {
        self.live.get(&BrokerAddr {
            cluster: cluster.into(),
            addr: addr.into(),
        })
    }

    /// Number of live-table entries.
    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// The filter servers registered by a broker.
    pub fn filter_servers(&self, cluster: &str, addr: &str) -> Option<&[String]> {
        self.filter_servers
            .get(&BrokerAddr {
                cluster: cluster.into(),
                addr: addr.into(),
            })
            .map(Vec::as_slice)
    }

    /// Refreshes a broker's heartbeat time (QUERY_DATA_VERSION, BROKER_HEARTBEAT); returns
    /// whether the broker is known.
    pub fn touch_broker(&mut self, cluster: &str, addr: &str, now: Instant) -> bool {
        let key = BrokerAddr {
            cluster: cluster.into(),
            addr: addr.into(),
        };
        match self.live.get_mut(&key) {
            Some(live) => {
                live.last_update = now;
                live.idled_out = false;
                true
            }
            None => false,
        }
    }

    /// The topic table a broker's last registration applied in full, if any: lets the next
    /// registration recognise an identical table by its digest.
    pub fn table_hint(&self, cluster: &str, addr: &str) -> Option<TableHint> {
        self.live(cluster, addr)?.applied?.table
    }

    /// The data version a broker last registered, if it is live.
    pub fn data_version(&self, cluster: &str, addr: &str) -> Option<DataVersion> {
        self.live(cluster, addr).map(|l| l.data_version)
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Builders shared by the route-table tests.
    use super::*;
    use crate::protocol::body::{DecodeOptions, RegisterBody};
    use bytes::Bytes;

    pub(crate) use super::register::{RegisterOutcome, RegisterSettings, Registration};

    /// A JSON registration body with the given `(topic, read, write, perm, sysflag)` rows.
    pub(crate) fn body_with(
        counter: i64,
        state_version: i64,
        topics: &[(&str, i32, i32, i32, i32)],
    ) -> RegisterBody {
        let table: Vec<String> = topics
            .iter()
            .map(|(t, r, w, p, f)| {
                format!(
                    r#""{t}":{{"attributes":{{}},"order":false,"perm":{p},"readQueueNums":{r},"topicFilterType":"SINGLE_TAG","topicName":"{t}","topicSysFlag":{f},"writeQueueNums":{w}}}"#
                )
            })
            .collect();
        let json = format!(
            r#"{{"filterServerList":[],"topicConfigSerializeWrapper":{{"dataVersion":{{"counter":{counter},"stateVersion":{state_version},"timestamp":1700000000000}},"topicConfigTable":{{{}}}}}}}"#,
            table.join(",")
        );
        RegisterBody::decode(
            Bytes::from(json),
            DecodeOptions {
                compressed: false,
                version: 479,
                max_inflated: 1 << 20,
            },
        )
        .unwrap()
    }

    /// A body with topics `names`, each 4/4 queues, perm 6.
    pub(crate) fn body(counter: i64, names: &[&str]) -> RegisterBody {
        let rows: Vec<_> = names.iter().map(|n| (*n, 4, 4, 6, 0)).collect();
        body_with(counter, 0, &rows)
    }

    /// A 5.x master registration of `name` at `addr` in `DefaultCluster`.
    pub(crate) fn reg<'a>(name: &'a str, addr: &'a str, id: i64, conn: u64) -> Registration<'a> {
        Registration {
            cluster: "DefaultCluster",
            broker_addr: addr,
            broker_name: name,
            broker_id: id,
            ha_server_addr: Some("ha:1"),
            zone_name: None,
            heartbeat_timeout_millis: None,
            enable_acting_master: Some(false),
            conn: ConnId(conn),
            version: 479,
        }
    }

    /// Registers `name` at `addr` (broker id `id`, connection `conn`) with `topics` in a
    /// body of data version 1: the registration most tests start from.
    pub fn register_topics(
        t: &mut RouteTable,
        (name, addr, id, conn): (&str, &str, i64, u64),
        topics: &[&str],
        now: Instant,
    ) -> RegisterOutcome {
        register(t, &reg(name, addr, id, conn), &body(1, topics), now)
    }

    /// [`register_topics`] in `cluster` instead of `DefaultCluster`.
    pub fn register_topics_in(
        t: &mut RouteTable,
        cluster: &str,
        (name, addr, id, conn): (&str, &str, i64, u64),
        topics: &[&str],
        now: Instant,
    ) -> RegisterOutcome {
        let mut r = reg(name, addr, id, conn);
        r.cluster = cluster;
        register(t, &r, &body(1, topics), now)
    }

    /// Registers the tests' usual broker: `broker-a`, master at `a:1` on connection 1.
    pub(crate) fn register_broker_a(
        t: &mut RouteTable,
        body: &RegisterBody,
        now: Instant,
    ) -> RegisterOutcome {
        register(t, &reg("broker-a", "a:1", 0, 1), body, now)
    }

    /// A plain route query for `topic`: standard JSON, no zone, no acting-master support.
    pub(crate) fn query(topic: &str) -> super::query::RouteQuery<'_> {
        super::query::RouteQuery {
            topic,
            style: crate::protocol::json::JsonStyle::Standard,
            support_acting_master: false,
            zone: None,
            external_epoch: 0,
            order_topic_conf: &|| None,
        }
    }

    /// Registers with a decoded body and default settings.
    pub(crate) fn register(
        t: &mut RouteTable,
        r: &Registration<'_>,
        body: &RegisterBody,
        now: Instant,
    ) -> RegisterOutcome {
        let input = register::BodyInput::Decoded {
            body,
            digest: body.digest(),
        };
        t.register(r, input, &RegisterSettings::default(), now)
            .expect("a valid, decoded body")
    }
}
