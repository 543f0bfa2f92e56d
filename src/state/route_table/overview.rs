//! Read-only summaries of the route table for operators: the counts `/metrics` exports and
//! the cluster → group → broker view of the status page and its JSON API.
//!
//! Everything here copies what it needs out of the table, so the caller can format it after
//! releasing the read lock. The views walk every topic, so the HTTP side door builds them off
//! the runtime workers and at most once a second (`http::views`), and searches topic names in
//! its own sorted copy ([`find_topics`]) rather than under the lock.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::{BrokerAddr, RouteTable};
use crate::protocol::body::{DataVersion, Name};

/// Route lookups served from the route cache, and those that had to encode the body.
#[derive(Debug, Default)]
pub(crate) struct CacheCounts {
    hits: AtomicU64,
    misses: AtomicU64,
}

impl CacheCounts {
    pub(crate) fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn miss(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }
}

/// The route table's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TableCounts {
    /// Topics with a route.
    pub(crate) topics: usize,
    /// Live brokers (live-table entries) by the cluster they registered under.
    pub(crate) live_brokers: BTreeMap<Name, usize>,
    /// Broker groups by cluster.
    pub(crate) broker_groups: BTreeMap<Name, usize>,
    /// Route lookups answered from the cache.
    pub(crate) cache_hits: u64,
    /// Route lookups that encoded the body (first lookups, changed routes, zone filters).
    pub(crate) cache_misses: u64,
}

/// One cluster, as the status page shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClusterView {
    /// The cluster's name.
    pub(crate) name: Name,
    /// Its broker groups, by name.
    pub(crate) groups: Vec<GroupView>,
}

/// One broker group.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GroupView {
    /// The group's name (`brokerName`).
    pub(crate) name: Name,
    /// Its zone, if its brokers declared one.
    pub(crate) zone: Option<Name>,
    /// Whether it runs in slave-acting-master mode.
    pub(crate) enable_acting_master: bool,
    /// Topics it serves.
    pub(crate) topics: usize,
    /// Of those, the ones whose queues are writable (WIPE_WRITE_PERM_OF_BROKER clears them).
    pub(crate) writable_topics: usize,
    /// Its members, by broker id.
    pub(crate) brokers: Vec<BrokerView>,
}

/// One member of a broker group.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BrokerView {
    /// Broker id (0 = master).
    pub(crate) id: i64,
    /// `ip:port`.
    pub(crate) addr: Name,
    /// Its liveness record; `None` if the live table has no entry for it.
    pub(crate) live: Option<LiveView>,
}

/// What the live table knows about a broker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LiveView {
    /// The `MQVersion` ordinal of its last registration.
    pub(crate) version: i32,
    /// The data version of its last registration.
    pub(crate) data_version: DataVersion,
    /// Time since it was last heard from.
    pub(crate) last_heartbeat_age: Duration,
    /// Time left before the expiry scan evicts it, if it stays silent.
    pub(crate) expires_in: Duration,
    /// Its declared (or the default) silence timeout.
    pub(crate) timeout: Duration,
    /// Its HA address.
    pub(crate) ha_server_addr: Option<String>,
}

impl RouteTable {
    /// The counts `/metrics` exports.
    pub(crate) fn counts(&self) -> TableCounts {
        let mut live_brokers = BTreeMap::new();
        for key in self.live.keys() {
            *live_brokers.entry(key.cluster.clone()).or_insert(0) += 1;
        }
        let broker_groups = self
            .clusters
            .iter()
            .map(|(cluster, names)| (cluster.clone(), names.len()))
            .collect();
        TableCounts {
            topics: self.topics.len(),
            live_brokers,
            broker_groups,
            cache_hits: self.cache_counts.hits.load(Ordering::Relaxed),
            cache_misses: self.cache_counts.misses.load(Ordering::Relaxed),
        }
    }

    /// Every cluster with its groups and brokers, sorted by name and id, as seen at `now`.
    pub(crate) fn clusters_view(&self, now: Instant) -> Vec<ClusterView> {
        let mut per_group: HashMap<&str, (usize, usize)> = HashMap::new();
        for entry in self.topics.values() {
            for q in &entry.queues {
                let counts = per_group.entry(&q.data.broker_name).or_default();
                counts.0 += 1;
                counts.1 += q.data.is_writeable() as usize;
            }
        }
        let mut clusters: Vec<ClusterView> = self
            .clusters
            .iter()
            .map(|(cluster, names)| {
                let mut groups: Vec<GroupView> = names
                    .iter()
                    .filter_map(|name| self.brokers.get(name))
                    .map(|g| {
                        let (topics, writable_topics) = per_group
                            .get(&*g.data.broker_name)
                            .copied()
                            .unwrap_or_default();
                        GroupView {
                            name: g.data.broker_name.clone(),
                            zone: g.data.zone_name.clone(),
                            enable_acting_master: g.data.enable_acting_master,
                            topics,
                            writable_topics,
                            brokers: g
                                .data
                                .addrs
                                .iter()
                                .map(|(&id, addr)| BrokerView {
                                    id,
                                    addr: addr.clone(),
                                    live: self.live_view(&g.data.cluster, addr, now),
                                })
                                .collect(),
                        }
                    })
                    .collect();
                groups.sort_by(|a, b| a.name.cmp(&b.name));
                ClusterView {
                    name: cluster.clone(),
                    groups,
                }
            })
            .collect();
        clusters.sort_by(|a, b| a.name.cmp(&b.name));
        clusters
    }

    fn live_view(&self, cluster: &Name, addr: &Name, now: Instant) -> Option<LiveView> {
        let live = self.live.get(&BrokerAddr {
            cluster: cluster.clone(),
            addr: addr.clone(),
        })?;
        let deadline = live.last_update.checked_add(live.timeout);
        Some(LiveView {
            version: live.version,
            data_version: live.data_version,
            last_heartbeat_age: now.saturating_duration_since(live.last_update),
            expires_in: deadline.map_or(Duration::MAX, |d| d.saturating_duration_since(now)),
            timeout: live.timeout,
            ha_server_addr: live.ha_server_addr.clone(),
        })
    }

    /// Every topic name, in no particular order (sort them after releasing the lock).
    pub(crate) fn topic_names(&self) -> Vec<Name> {
        self.topics.keys().cloned().collect()
    }
}

/// Up to `limit` of the `sorted` topic names that contain `needle` (ignoring ASCII case), and
/// how many matched in all.
pub(crate) fn find_topics(sorted: &[Name], needle: &str, limit: usize) -> (Vec<Name>, usize) {
    let needle = needle.to_ascii_lowercase();
    let mut found = Vec::new();
    let mut total = 0;
    for name in sorted {
        if name.to_ascii_lowercase().contains(&needle) {
            total += 1;
            if found.len() < limit {
                found.push(name.clone());
            }
        }
    }
    (found, total)
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::protocol::body::route::PERM_WRITE;

    #[test]
    fn counts_and_the_cluster_view_follow_registrations() {
        let mut t = RouteTable::new();
        let start = Instant::now();
        register_topics(&mut t, ("broker-b", "b:1", 0, 1), &["A", "B"], start);
        register_topics(&mut t, ("broker-a", "a:1", 0, 2), &["A", "C"], start);
        register_topics(&mut t, ("broker-a", "a:2", 1, 3), &["A", "C"], start);
        t.wipe_write_perm("broker-b");
        let counts = t.counts();
        assert_eq!(counts.topics, 3);
        assert_eq!(counts.live_brokers[&Name::from("DefaultCluster")], 3);
        assert_eq!(counts.broker_groups[&Name::from("DefaultCluster")], 2);

        let now = start + Duration::from_secs(30);
        let view = t.clusters_view(now);
        assert_eq!(view.len(), 1);
        let groups = &view[0].groups;
        assert_eq!(groups[0].name.as_ref(), "broker-a");
        assert_eq!((groups[0].topics, groups[0].writable_topics), (2, 2));
        assert_eq!((groups[1].topics, groups[1].writable_topics), (2, 0));
        let ids: Vec<i64> = groups[0].brokers.iter().map(|b| b.id).collect();
        assert_eq!(ids, [0, 1]);
        let live = groups[0].brokers[0].live.as_ref().unwrap();
        assert_eq!(live.version, 479);
        assert_eq!(live.last_heartbeat_age, Duration::from_secs(30));
        assert_eq!(live.expires_in, Duration::from_secs(90));
        assert!(t.topic("B").unwrap().queues[0].data.perm & PERM_WRITE == 0);
    }

    #[test]
    fn topic_search_is_case_insensitive_sorted_and_bounded() {
        let mut t = RouteTable::new();
        let names = ["OrderTopic", "orders-eu", "Payments", "ORDER_X"];
        register_broker_a(&mut t, &body(1, &names), Instant::now());
        let mut sorted = t.topic_names();
        sorted.sort_unstable();
        let (found, total) = find_topics(&sorted, "order", 2);
        assert_eq!(total, 3);
        let found: Vec<&str> = found.iter().map(|n| &**n).collect();
        assert_eq!(found, ["ORDER_X", "OrderTopic"]);
        assert_eq!(find_topics(&sorted, "", 10).1, 4);
    }
}
