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
    pub clusters: Vec<(Name, Vec<Name>)>,
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

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use tokio::time::Instant;

    fn route(t: &RouteTable, q: &RouteQuery<'_>) -> Option<String> {
        t.route(q).map(|b| String::from_utf8(b.to_vec()).unwrap())
    }

    #[test]
    fn routes_match_the_java_capture_and_are_cached() {
        let mut t = RouteTable::new();
        let now = Instant::now();
        register(
            &mut t,
            &reg("broker-a", "127.0.0.1:10911", 0, 1),
            &body(1, &["TopicA", "TopicB"]),
            now,
        );
        register(
            &mut t,
            &reg("broker-a", "127.0.0.1:10921", 1, 2),
            &body(1, &["TopicA", "TopicB"]),
            now,
        );
        let expected = r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#;
        assert_eq!(route(&t, &query("TopicA")).as_deref(), Some(expected));
        let first = t.route(&query("TopicA")).unwrap();
        let second = t.route(&query("TopicA")).unwrap();
        assert_eq!(first.as_ptr(), second.as_ptr(), "served from the cache");
        assert!(route(&t, &query("Nope")).is_none());
        let counts = t.counts();
        assert_eq!((counts.cache_hits, counts.cache_misses), (2, 1));
    }

    #[test]
    fn a_write_permission_change_is_visible_at_once() {
        let mut t = RouteTable::new();
        register_broker_a(&mut t, &body(1, &["A", "B"]), Instant::now());
        assert!(route(&t, &query("A")).unwrap().contains(r#""perm":6"#));
        t.wipe_write_perm("broker-a");
        assert!(route(&t, &query("A")).unwrap().contains(r#""perm":4"#));
        t.add_write_perm("broker-a");
        assert!(route(&t, &query("A")).unwrap().contains(r#""perm":6"#));
    }

    #[test]
    fn a_new_member_is_visible_in_cached_routes() {
        let mut t = RouteTable::new();
        register_broker_a(&mut t, &body(1, &["A", "B"]), Instant::now());
        assert!(!route(&t, &query("A")).unwrap().contains("a:2"));
        register(
            &mut t,
            &reg("broker-a", "a:2", 1, 2),
            &body(1, &["A", "B"]),
            Instant::now(),
        );
        assert!(route(&t, &query("A")).unwrap().contains("a:2"));
    }

    #[test]
    fn order_conf_and_external_epoch() {
        let mut t = RouteTable::new();
        register_broker_a(&mut t, &body(1, &["A", "B"]), Instant::now());
        let conf = || Some("broker-a:4".to_owned());
        let mut q = query("A");
        q.order_topic_conf = &conf;
        q.external_epoch = 1;
        assert!(
            route(&t, &q)
                .unwrap()
                .contains(r#""orderTopicConf":"broker-a:4""#)
        );
        let mut q = query("A");
        q.external_epoch = 2;
        assert!(!route(&t, &q).unwrap().contains("orderTopicConf"));
    }

    #[test]
    fn legacy_style_quotes_nothing() {
        let mut t = RouteTable::new();
        register_broker_a(&mut t, &body(1, &["A", "B"]), Instant::now());
        let mut q = query("A");
        q.style = JsonStyle::Legacy;
        assert!(
            route(&t, &q)
                .unwrap()
                .contains(r#""brokerAddrs":{0:"a:1"}"#)
        );
        assert!(
            route(&t, &query("A"))
                .unwrap()
                .contains(r#""brokerAddrs":{"0":"a:1"}"#)
        );
    }

    #[test]
    fn acting_master_is_presented_for_read_only_groups_without_master() {
        let mut t = RouteTable::new();
        let mut s = reg("broker-a", "a:2", 1, 2);
        s.enable_acting_master = Some(true);
        register(&mut t, &s, &body(1, &["A", "B"]), Instant::now());
        let mut q = query("A");
        assert!(
            route(&t, &q)
                .unwrap()
                .contains(r#""brokerAddrs":{"1":"a:2"}"#)
        );
        q.support_acting_master = true;
        q.external_epoch = 1;
        assert!(
            route(&t, &q)
                .unwrap()
                .contains(r#""brokerAddrs":{"0":"a:2"}"#)
        );
        let mut sync = query("rmq_sys_SYNC_BROKER_MEMBER_broker-a");
        sync.support_acting_master = true;
        register(
            &mut t,
            &s,
            &body(2, &["rmq_sys_SYNC_BROKER_MEMBER_broker-a", "B"]),
            Instant::now(),
        );
        assert!(
            route(&t, &sync)
                .unwrap()
                .contains(r#""brokerAddrs":{"1":"a:2"}"#)
        );
    }

    #[test]
    fn zone_filter_keeps_masterless_and_same_zone_groups() {
        let mut t = RouteTable::new();
        let mut a = reg("broker-a", "a:1", 0, 1);
        a.zone_name = Some("zone1");
        let mut b = reg("broker-b", "b:1", 0, 2);
        b.zone_name = Some("zone2");
        let c = reg("broker-c", "c:2", 1, 3);
        register(&mut t, &a, &body(1, &["T", "X"]), Instant::now());
        register(&mut t, &b, &body(1, &["T", "X"]), Instant::now());
        register(&mut t, &c, &body(1, &["T", "X"]), Instant::now());
        let mut q = query("T");
        q.zone = Some("ZONE1");
        let json = route(&t, &q).unwrap();
        assert!(
            json.contains("broker-a") && json.contains("broker-c"),
            "{json}"
        );
        assert!(!json.contains("broker-b"), "{json}");
        // The filtered body is not cached.
        assert!(route(&t, &query("T")).unwrap().contains("broker-b"));
    }

    #[test]
    fn a_zone_change_is_visible_in_cached_routes() {
        let mut t = RouteTable::new();
        let mut a = reg("broker-a", "a:1", 0, 1);
        a.zone_name = Some("z1");
        register(&mut t, &a, &body(1, &["A", "B"]), Instant::now());
        assert!(
            route(&t, &query("A"))
                .unwrap()
                .contains(r#""zoneName":"z1""#)
        );
        a.zone_name = Some("z2");
        register(&mut t, &a, &body(1, &["A", "B"]), Instant::now());
        assert!(
            route(&t, &query("A"))
                .unwrap()
                .contains(r#""zoneName":"z2""#)
        );
    }

    #[test]
    fn lists() {
        let mut t = RouteTable::new();
        let now = Instant::now();
        register_broker_a(
            &mut t,
            &body_with(
                1,
                0,
                &[("A", 1, 1, 6, 1), ("B", 1, 1, 6, 2), ("C", 1, 1, 6, 3)],
            ),
            now,
        );
        let mut other = reg("broker-b", "b:1", 0, 2);
        other.cluster = "Other";
        register(&mut t, &other, &body(1, &["D", "E"]), now);
        let sorted = |mut v: Vec<Name>| {
            v.sort();
            v.iter().map(|n| n.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(sorted(t.all_topics()), vec!["A", "B", "C", "D", "E"]);
        assert_eq!(
            sorted(t.topics_by_cluster("DefaultCluster")),
            vec!["A", "B", "C"]
        );
        assert!(t.topics_by_cluster("Nope").is_empty());
        assert_eq!(sorted(t.unit_topics(UnitFilter::Unit)), vec!["A", "C"]);
        assert_eq!(sorted(t.unit_topics(UnitFilter::UnitSub)), vec!["B", "C"]);
        assert_eq!(sorted(t.unit_topics(UnitFilter::UnitSubNotUnit)), vec!["B"]);
        let (sys, addr) = t.system_topics();
        assert_eq!(
            sorted(sys),
            vec!["DefaultCluster", "Other", "broker-a", "broker-b"]
        );
        assert!(addr.is_some());
        assert_eq!(t.member_group("broker-a").len(), 1);
        assert!(t.member_group("nope").is_empty());
        let snap = t.cluster_snapshot();
        assert_eq!((snap.brokers.len(), snap.clusters.len()), (2, 2));
    }

    #[test]
    fn same_bucket_entries_list_in_the_order_they_entered_javas_tables() {
        let now = Instant::now();
        let names = |v: Vec<Name>| v.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        for (first, second) in [("BB", "Aa"), ("Aa", "BB")] {
            // "Aa" and "BB" have the same Java hash; so do broker names "broker-5" and
            // "broker-30" in a 256-bucket table.
            let (b1, b2) = match first {
                "BB" => ("broker-30", "broker-5"),
                _ => ("broker-5", "broker-30"),
            };
            let mut t = RouteTable::new();
            register(&mut t, &reg(b1, "a:1", 0, 1), &body(1, &[first, "X"]), now);
            register(&mut t, &reg(b2, "b:1", 0, 2), &body(1, &[second, "X"]), now);
            let topics = names(t.all_topics());
            let pos = |n: &str| topics.iter().position(|t| t == n).unwrap();
            assert!(pos(first) < pos(second), "{topics:?}");
            let brokers: Vec<_> = t
                .cluster_snapshot()
                .brokers
                .iter()
                .map(|b| b.broker_name.to_string())
                .collect();
            assert_eq!(brokers, [b1, b2]);
        }
    }

    #[test]
    fn the_system_topic_list_address_is_the_first_id_in_java_hash_order() {
        let now = Instant::now();
        let mut t = RouteTable::new();
        register(
            &mut t,
            &reg("broker-a", "a:1", 1, 1),
            &body(1, &["A", "B"]),
            now,
        );
        register(
            &mut t,
            &reg("broker-a", "a:16", 16, 2),
            &body(1, &["A", "B"]),
            now,
        );
        // Id 16 is in bucket 0 of Java's HashMap<Long, String>, ahead of id 1.
        assert_eq!(t.system_topics().1.as_deref(), Some("a:16"));
    }
}
