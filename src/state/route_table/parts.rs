//! The route table taken apart into plain lists and put back together: what a warm restart
//! keeps ([`crate::state::snapshot`] stores it).
//!
//! Each table is listed in the order its entries entered it, so that a rebuilt table lists
//! topics, groups and clusters in the same Java hash-table order as the one it came from.
//! Liveness is kept as each broker's *age* (how long ago it was last heard from) rather than
//! an instant, because instants mean nothing to another process. Bookkeeping that only
//! speeds up the next registration (applied-body digests, feed generations, route caches)
//! and eviction protection's record of holds are not kept: a rebuilt table treats the next
//! registration of each broker as a full one, and protection starts with no hold.

use std::time::Duration;

use tokio::time::Instant;

use super::{BrokerAddr, BrokerGroup, BrokerLive, ConnId, QueueEntry, RouteTable};
use crate::protocol::body::{BrokerData, DataVersion, MappingInfo, Name, QueueData};

/// A broker's liveness record without its connection.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LivePart {
    /// How long ago the broker was last heard from.
    pub(crate) age: Duration,
    /// How long it may stay silent.
    pub(crate) timeout: Duration,
    /// The data version of its last registration.
    pub(crate) data_version: DataVersion,
    /// Its HA address.
    pub(crate) ha_server_addr: Option<String>,
    /// The RocketMQ version its last registration request carried.
    pub(crate) version: i32,
}

/// Everything a route table serves, as plain lists in the order entries entered it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parts {
    /// Cluster → broker names.
    pub(crate) clusters: Vec<(Name, Vec<Name>)>,
    /// Broker groups.
    pub(crate) groups: Vec<BrokerData>,
    /// Topic → one queue entry per broker group.
    pub(crate) topics: Vec<(Name, Vec<QueueData>)>,
    /// Live brokers.
    pub(crate) live: Vec<(BrokerAddr, LivePart)>,
    /// Filter servers by broker.
    pub(crate) filter_servers: Vec<(BrokerAddr, Vec<String>)>,
    /// Topic → broker name → static-topic mapping.
    pub(crate) mappings: Vec<(Name, Vec<(Name, MappingInfo)>)>,
}

/// A broker registered on this node, as the peer checks compare it ([`crate::peers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LiveBroker {
    pub(crate) cluster: String,
    /// Its group.
    pub(crate) name: String,
    /// Its id in the group.
    pub(crate) id: i64,
    /// Its address.
    pub(crate) addr: String,
    /// The data version of its last registration.
    pub(crate) data_version: DataVersion,
}

impl LiveBroker {
    /// The key peers list it under: group name and address.
    pub(crate) fn key(&self) -> (String, String) {
        (self.name.clone(), self.addr.clone())
    }
}

/// The connection id of a broker restored from parts: no connection has it, so only the
/// broker's next registration, its timeout or UNREGISTER_BROKER removes it.
pub(crate) const NO_CONNECTION: ConnId = ConnId(0);

impl RouteTable {
    /// The table's content at `now`.
    pub fn to_parts(&self, now: Instant) -> Parts {
        let mut clusters: Vec<_> = self.clusters.iter().collect();
        clusters.sort_by_key(|(name, _)| self.cluster_created.get(*name).copied());
        let mut groups: Vec<&BrokerGroup> = self.brokers.values().collect();
        groups.sort_by_key(|g| g.created);
        let mut topics: Vec<_> = self.topics.iter().collect();
        topics.sort_by_key(|(_, e)| e.created);
        // The other tables are never listed; sorted so that equal tables give equal parts.
        let by_key =
            |a: &BrokerAddr, b: &BrokerAddr| (&a.cluster, &a.addr).cmp(&(&b.cluster, &b.addr));
        let mut live: Vec<_> = self.live.iter().collect();
        live.sort_by(|a, b| by_key(a.0, b.0));
        let mut filter_servers: Vec<_> = self.filter_servers.iter().collect();
        filter_servers.sort_by(|a, b| by_key(a.0, b.0));
        let mut mappings: Vec<_> = self.mappings.iter().collect();
        mappings.sort_by(|a, b| a.0.cmp(b.0));
        Parts {
            clusters: clusters
                .into_iter()
                .map(|(n, members)| (n.clone(), members.clone()))
                .collect(),
            groups: groups.into_iter().map(|g| g.data.clone()).collect(),
            topics: topics
                .into_iter()
                .map(|(n, e)| (n.clone(), e.queues.iter().map(|q| q.data.clone()).collect()))
                .collect(),
            live: live
                .into_iter()
                .map(|(key, live)| {
                    let part = LivePart {
                        age: now.saturating_duration_since(live.last_update),
                        timeout: live.timeout,
                        data_version: live.data_version,
                        ha_server_addr: live.ha_server_addr.clone(),
                        version: live.version,
                    };
                    (key.clone(), part)
                })
                .collect(),
            filter_servers: filter_servers
                .into_iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            mappings: mappings
                .into_iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// A table holding `parts`, with every broker last heard from `age` before `now`. A
    /// broker whose age reaches back before the clock's origin is left out (it is then far
    /// older than any timeout on this machine's clock).
    pub(crate) fn from_parts(parts: Parts, now: Instant) -> RouteTable {
        let mut t = RouteTable::new();
        for (name, members) in parts.clusters {
            let created = t.next_created();
            t.cluster_created.insert(name.clone(), created);
            t.clusters.insert(name, members);
        }
        for data in parts.groups {
            let created = t.next_created();
            let group = BrokerGroup {
                data,
                feed_generation: 0,
                created,
            };
            t.brokers.insert(group.data.broker_name.clone(), group);
        }
        for (name, queues) in parts.topics {
            let revision = t.next_revision();
            let entry = t.topic_entry(name);
            entry.revision = revision;
            entry.queues = queues
                .into_iter()
                .map(|data| QueueEntry { data, source: 0 })
                .collect();
        }
        for (key, part) in parts.live {
            let Some(last_update) = now.checked_sub(part.age) else {
                tracing::warn!(cluster = %key.cluster, addr = %key.addr, age = ?part.age, "restored broker older than the clock: left out");
                continue;
            };
            let live = BrokerLive {
                // Its history before the snapshot is not kept: it starts again here.
                first_heard: last_update,
                last_update,
                // A snapshot written before the cap may hold any timeout.
                timeout: part.timeout.min(super::MAX_BROKER_TIMEOUT),
                data_version: part.data_version,
                conn: NO_CONNECTION,
                ha_server_addr: part.ha_server_addr,
                version: part.version,
                applied: None,
                idled_out: false,
            };
            t.live.insert(key, live);
        }
        t.filter_servers.extend(parts.filter_servers);
        t.mappings.extend(parts.mappings);
        t
    }

    /// Every live broker with the group and id it is listed under (brokers no group lists
    /// are left out: no peer could list them either).
    pub(crate) fn live_brokers(&self) -> Vec<LiveBroker> {
        let mut out = Vec::new();
        for group in self.brokers.values() {
            for (id, addr) in &group.data.addrs {
                let key = BrokerAddr {
                    cluster: group.data.cluster.clone(),
                    addr: addr.clone(),
                };
                let live = self.live.get(&key).or_else(|| {
                    // Registered under another cluster than the group's first one.
                    self.live
                        .iter()
                        .find(|(k, _)| k.addr == *addr)
                        .map(|(_, l)| l)
                });
                if let Some(live) = live {
                    out.push(LiveBroker {
                        cluster: group.data.cluster.to_string(),
                        name: group.data.broker_name.to_string(),
                        id: *id,
                        addr: addr.to_string(),
                        data_version: live.data_version,
                    });
                }
            }
        }
        out.sort_by_key(LiveBroker::key);
        out
    }

    /// A number that changes whenever anything a snapshot holds changes, heartbeats
    /// included (equal stamps mean there is nothing new to write).
    pub(crate) fn change_stamp(&self) -> u64 {
        use std::collections::hash_map::DefaultHasher;
        use std::hash::{Hash, Hasher};
        // Live entries are combined without regard to order, as the map iterates in any.
        let live = self.live.iter().fold(0u64, |acc, (key, l)| {
            let mut h = DefaultHasher::new();
            (&key.cluster, &key.addr, l.last_update, l.timeout).hash(&mut h);
            let v = &l.data_version;
            (v.counter, v.state_version, v.timestamp).hash(&mut h);
            acc.wrapping_add(h.finish())
        });
        let mut h = DefaultHasher::new();
        (
            self.revision_counter,
            self.created_counter,
            self.broker_epoch,
        )
            .hash(&mut h);
        (self.topics.len(), self.brokers.len(), self.clusters.len()).hash(&mut h);
        (self.filter_servers.len(), self.mappings.len(), live).hash(&mut h);
        h.finish()
    }

    /// Binds a restored broker (one with no connection yet) to the connection it was just
    /// heard from, so that closing that connection unregisters it as it would have before
    /// the restart. Returns whether a broker was bound.
    pub(crate) fn adopt_connection(&mut self, cluster: &str, addr: &str, conn: ConnId) -> bool {
        let key = BrokerAddr {
            cluster: cluster.into(),
            addr: addr.into(),
        };
        match self.live.get_mut(&key) {
            Some(live) if live.conn == NO_CONNECTION => {
                live.conn = conn;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn parts_round_trip_and_keep_java_order() {
        let now = Instant::now();
        let mut t = RouteTable::new();
        for (i, name) in ["b-c", "b-a", "b-b"].iter().enumerate() {
            let addr = format!("10.0.0.{i}:10911");
            let topics: Vec<String> = (0..20).map(|n| format!("T{n}-{name}")).collect();
            let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
            register(
                &mut t,
                &reg(name, &addr, 0, i as u64 + 1),
                &body(1, &topics),
                now,
            );
        }
        t.wipe_write_perm("b-a");
        let later = now + Duration::from_secs(7);
        let parts = t.to_parts(later);
        assert_eq!(parts.live.len(), 3);
        assert!(
            parts
                .live
                .iter()
                .all(|(_, l)| l.age == Duration::from_secs(7))
        );
        let back = RouteTable::from_parts(parts.clone(), later);
        assert_eq!(back.to_parts(later), parts);
        assert_eq!(back.all_topics(), t.all_topics());
        let (a, b) = (back.cluster_snapshot(), t.cluster_snapshot());
        assert_eq!((a.brokers, a.clusters), (b.brokers, b.clusters));
        let live = back.live("DefaultCluster", "10.0.0.1:10911").unwrap();
        assert_eq!(live.last_update, now);
        assert_eq!(live.conn, NO_CONNECTION);
        assert!(!live.idled_out);
    }

    #[test]
    fn a_restored_broker_adopts_its_next_connection_once() {
        let now = Instant::now();
        let mut t = RouteTable::new();
        register(&mut t, &reg("b", "a:1", 0, 5), &body(1, &["T1", "T2"]), now);
        let mut back = RouteTable::from_parts(t.to_parts(now), now);
        // A connection that carries no broker closes: nothing happens.
        assert!(back.connection_closed(ConnId(9)).is_empty());
        assert!(back.adopt_connection("DefaultCluster", "a:1", ConnId(9)));
        assert!(!back.adopt_connection("DefaultCluster", "a:1", ConnId(10)));
        assert_eq!(back.connection_closed(ConnId(9)).len(), 1);
        assert!(back.topic("T1").is_none());
    }
}
