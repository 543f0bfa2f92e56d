//! Read-only queries: topic routes (Java's `pickupTopicRouteData` plus the zone filter of
//! `ZoneRouteRPCHook`), topic lists, cluster info and broker member groups.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;

use super::{BrokerGroup, RouteTable, TopicEntry};
use crate::protocol::body::route::addrs_in_java_order;
use crate::protocol::body::{BrokerData, Name, TopicRouteData};
use crate::protocol::java_hash::{
    Table, bucket, concurrent_order, sort_strings_by_java_order, string_hash,
};
use crate::protocol::json::JsonStyle;
use crate::state::route_cache::Stamp;

/// Topics with this prefix are never rewritten for acting masters.
const SYNC_BROKER_MEMBER_GROUP_PREFIX: &str = "rmq_sys_SYNC_BROKER_MEMBER_";

/// Initial bucket counts of Java's `topicQueueTable` (`ConcurrentHashMap(1024)`),
/// `brokerAddrTable` (`(128)`) and `clusterAddrTable` (`(32)`).
const TOPIC_TABLE_BUCKETS: usize = 2048;
const BROKER_TABLE_BUCKETS: usize = 256;
const CLUSTER_TABLE_BUCKETS: usize = 64;

/// A GET_ROUTEINFO_BY_TOPIC lookup.
pub struct RouteQuery<'a> {
    /// The topic.
    pub topic: &'a str,
    /// Legacy or standard JSON.
    pub style: JsonStyle,
    /// `supportActingMaster`.
    pub support_acting_master: bool,
    /// The client's zone when it asked for zone filtering (`__ZONE_MODE=true` and a
    /// non-blank `__ZONE_NAME`).
    pub zone: Option<&'a str>,
    /// Epoch of the configuration and KV state the body depends on.
    pub external_epoch: u64,
    /// The topic's ORDER_TOPIC_CONFIG value, asked for only when a body must be encoded
    /// (`None` when `orderMessageEnable` is off).
    pub order_topic_conf: &'a dyn Fn() -> Option<String>,
}

/// Which flag bits a unit-topic list selects (GET_UNIT_TOPIC_LIST and its two siblings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitFilter {
    /// `FLAG_UNIT` set.
    Unit,
    /// `FLAG_UNIT_SUB` set.
    UnitSub,
    /// `FLAG_UNIT_SUB` set and `FLAG_UNIT` clear.
    UnitSubNotUnit,
}

impl UnitFilter {
    fn matches(self, flag: i32) -> bool {
        let unit = flag & 1 == 1;
        let sub = flag & 2 == 2;
        match self {
            UnitFilter::Unit => unit,
            UnitFilter::UnitSub => sub,
            UnitFilter::UnitSubNotUnit => sub && !unit,
        }
    }
}

/// A copy of the cluster tables, to be encoded after the lock is released.
pub struct ClusterSnapshot {
    /// Every broker group.
    pub brokers: Vec<BrokerData>,
    /// Cluster → broker names.
    pub(crate) clusters: Vec<(Name, Vec<Name>)>,
}

impl RouteTable {
    /// The route body for a topic, or `None` when it has no route (TOPIC_NOT_EXIST).
    pub fn route(&self, q: &RouteQuery<'_>) -> Option<Bytes> {
        let entry = self.topics.get(q.topic)?;
        let stamp = Stamp {
            revision: entry.revision,
            broker_epoch: self.broker_epoch,
            external_epoch: q.external_epoch,
        };
        if q.zone.is_none()
            && let Some(body) = entry.cache.get(stamp, q.style)
        {
            self.cache_counts.hit();
            return Some(body);
        }
        self.cache_counts.miss();
        let body = self.encode_route(q, entry)?;
        if q.zone.is_none() {
            entry.cache.put(stamp, q.style, body.clone());
        }
        Some(body)
    }

    /// Encodes a route afresh, bypassing the cache.
    fn encode_route(&self, q: &RouteQuery<'_>, entry: &TopicEntry) -> Option<Bytes> {
        let mut route = self.pickup(q.topic, entry, q.support_acting_master)?;
        let conf = (q.order_topic_conf)();
        route.order_topic_conf = conf.as_deref();
        if let Some(zone) = q.zone {
            filter_by_zone(&mut route, zone);
        }
        Some(Bytes::from(route.encode(q.style)))
    }

    /// The route as [`RouteTable::route`] would compute it with an empty cache (for tests
    /// proving the cache coherent).
    #[cfg(test)]
    pub(crate) fn route_uncached(&self, q: &RouteQuery<'_>) -> Option<Bytes> {
        self.encode_route(q, self.topics.get(q.topic)?)
    }

    /// Java's `pickupTopicRouteData`, borrowing from the table.
    fn pickup<'a>(
        &'a self,
        topic: &str,
        entry: &'a TopicEntry,
        support_acting_master: bool,
    ) -> Option<TopicRouteData<'a>> {
        let mut queue_datas: Vec<_> = entry.queues.iter().map(|q| &q.data).collect();
        // `new ArrayList<>(queueDataMap.values())` of a default HashMap.
        sort_strings_by_java_order(&mut queue_datas, Table::DEFAULT, |q| &q.broker_name);
        // Groups are visited through `new HashSet<>(queueDataMap.keySet())`.
        let mut names: Vec<&Name> = entry.queues.iter().map(|q| &q.data.broker_name).collect();
        let set_capacity = ((names.len() as f32 / 0.75) as usize + 1).max(16);
        sort_strings_by_java_order(&mut names, Table::HashMap(set_capacity), |n| n);
        let mut route = TopicRouteData {
            queue_datas,
            ..Default::default()
        };
        for name in names {
            let Some(group) = self.brokers.get(&**name) else {
                continue;
            };
            if !self.filter_servers.is_empty() {
                for addr in group.data.addrs.values() {
                    let key = super::BrokerAddr {
                        cluster: group.data.cluster.clone(),
                        addr: addr.clone(),
                    };
                    let list = self.filter_servers.get(&key).map(Vec::as_slice);
                    route.filter_server_table.push((addr.clone(), list));
                }
            }
            route.broker_datas.push(Cow::Borrowed(&group.data));
        }
        if route.broker_datas.is_empty() {
            return None;
        }
        route.mappings = self
            .mappings
            .get(topic)
            .map(|m| m.iter().map(|(b, info)| (&**b, info)).collect());
        if support_acting_master && !topic.starts_with(SYNC_BROKER_MEMBER_GROUP_PREFIX) {
            present_acting_masters(&mut route);
        }
        Some(route)
    }

    /// Topics in the iteration order of Java's `topicQueueTable`.
    fn topics_in_java_order(&self) -> Vec<(&Name, &TopicEntry)> {
        let mut all: Vec<_> = self.topics.iter().collect();
        all.sort_unstable_by_key(|(_, e)| e.created);
        concurrent_order(all, TOPIC_TABLE_BUCKETS, |(t, _)| string_hash(t))
    }

    /// Broker groups in the iteration order of Java's `brokerAddrTable`.
    pub(super) fn groups_in_java_order(&self) -> Vec<&BrokerGroup> {
        let mut all: Vec<_> = self.brokers.values().collect();
        all.sort_unstable_by_key(|g| g.created);
        concurrent_order(all, BROKER_TABLE_BUCKETS, |g| {
            string_hash(&g.data.broker_name)
        })
    }

    /// Clusters in the iteration order of Java's `clusterAddrTable`, each with its group
    /// names in the order of Java's `HashSet`.
    fn clusters_in_java_order(&self) -> Vec<(&Name, Vec<&Name>)> {
        let mut all: Vec<_> = self.clusters.iter().collect();
        all.sort_unstable_by_key(|(c, _)| self.cluster_created.get(*c).copied().unwrap_or(0));
        concurrent_order(all, CLUSTER_TABLE_BUCKETS, |(c, _)| string_hash(c))
            .into_iter()
            .map(|(c, names)| (c, names_in_java_order(names)))
            .collect()
    }

    /// Every topic (GET_ALL_TOPIC_LIST_FROM_NAMESERVER), in the order Java adds them to its
    /// `TopicList`.
    pub fn all_topics(&self) -> Vec<Name> {
        self.topics_in_java_order()
            .into_iter()
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// Topics served by any group of `cluster` (GET_TOPICS_BY_CLUSTER): group by group, in
    /// the order Java adds them.
    pub fn topics_by_cluster(&self, cluster: &str) -> Vec<Name> {
        let Some(names) = self.clusters.get(cluster) else {
            return Vec::new();
        };
        let topics = self.topics_in_java_order();
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for name in names_in_java_order(names) {
            for (t, e) in &topics {
                if e.queue(name).is_some() && seen.insert(*t) {
                    out.push((*t).clone());
                }
            }
        }
        out
    }

    /// Cluster and group names, and one broker address (GET_SYSTEM_TOPIC_LIST_FROM_NS).
    pub fn system_topics(&self) -> (Vec<Name>, Option<Name>) {
        let mut topics: Vec<Name> = Vec::new();
        let mut seen = HashSet::new();
        for (cluster, names) in self.clusters_in_java_order() {
            for n in std::iter::once(cluster).chain(names) {
                if seen.insert(n.clone()) {
                    topics.push(n.clone());
                }
            }
        }
        // The first group in the Java table's order with an address, and the first id of
        // its `HashMap<Long, String>`.
        let addr = self.groups_in_java_order().into_iter().find_map(|g| {
            let first = addrs_in_java_order(&g.data.addrs).into_iter().next();
            first.map(|(_, addr)| addr.clone())
        });
        (topics, addr)
    }

    /// Topics whose first group (in Java order) carries the unit flags `filter` selects.
    pub fn unit_topics(&self, filter: UnitFilter) -> Vec<Name> {
        self.topics_in_java_order()
            .into_iter()
            .filter(|(_, e)| {
                e.queues
                    .iter()
                    .min_by_key(|q| {
                        let h = string_hash(&q.data.broker_name);
                        bucket(h, Table::DEFAULT.capacity(e.queues.len()))
                    })
                    .is_some_and(|q| filter.matches(q.data.topic_sys_flag))
            })
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// A copy of the cluster tables (GET_BROKER_CLUSTER_INFO), in Java's order.
    pub fn cluster_snapshot(&self) -> ClusterSnapshot {
        ClusterSnapshot {
            brokers: self
                .groups_in_java_order()
                .into_iter()
                .map(|g| g.data.clone())
                .collect(),
            clusters: self
                .clusters_in_java_order()
                .into_iter()
                .map(|(c, names)| (c.clone(), names.into_iter().cloned().collect()))
                .collect(),
        }
    }

    /// A group's members (GET_BROKER_MEMBER_GROUP); empty for an unknown group.
    pub fn member_group(&self, broker_name: &str) -> BTreeMap<i64, Name> {
        self.brokers
            .get(broker_name)
            .map(|g| g.data.addrs.clone())
            .unwrap_or_default()
    }
}

/// A cluster's group names in the order of Java's `HashSet` holding them.
fn names_in_java_order(names: &[Name]) -> Vec<&Name> {
    let mut names: Vec<&Name> = names.iter().collect();
    sort_strings_by_java_order(&mut names, Table::DEFAULT, |n| n);
    names
}

/// In slave-acting-master mode, a group without a master whose queues are read-only shows
/// its smallest-id member as the master (on the copies only).
fn present_acting_masters(route: &mut TopicRouteData<'_>) {
    let needed = route
        .broker_datas
        .iter()
        .any(|bd| !bd.addrs.is_empty() && !bd.addrs.contains_key(&0));
    if !needed || route.queue_datas.is_empty() {
        return;
    }
    let queue_datas = &route.queue_datas;
    for bd in route.broker_datas.iter_mut() {
        if bd.addrs.is_empty() || bd.addrs.contains_key(&0) || !bd.enable_acting_master {
            continue;
        }
        let read_only = queue_datas
            .iter()
            .find(|q| q.broker_name == bd.broker_name)
            .is_some_and(|q| !q.is_writeable());
        if read_only {
            let addrs = &mut bd.to_mut().addrs;
            if let Some((_, addr)) = addrs.pop_first() {
                addrs.insert(0, addr);
            }
        }
    }
}

/// `ZoneRouteRPCHook`: keep groups without a master or in the client's zone.
fn filter_by_zone(route: &mut TopicRouteData<'_>, zone: &str) {
    let mut removed: Vec<Cow<'_, BrokerData>> = Vec::new();
    let mut kept = Vec::new();
    for bd in route.broker_datas.drain(..) {
        let keep = !bd.addrs.contains_key(&0)
            || bd
                .zone_name
                .as_deref()
                .is_some_and(|z| crate::java_str::equals_ignore_case(z, zone));
        if keep {
            kept.push(bd);
        } else {
            removed.push(bd);
        }
    }
    route.broker_datas = kept;
    route
        .queue_datas
        .retain(|q| !removed.iter().any(|bd| bd.broker_name == q.broker_name));
    let gone: HashSet<&Name> = removed.iter().flat_map(|bd| bd.addrs.values()).collect();
    route
        .filter_server_table
        .retain(|(addr, _)| !gone.contains(addr));
}
