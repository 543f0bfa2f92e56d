//! Removing brokers (`RouteInfoManager#unRegisterBroker`, `#onChannelDestroy`): UNREGISTER_BROKER, a broker's connection closing, and
//! the common path of the expiry scan (`super::expiry`).
//!
//! Java queues all three to a batch thread; here they are applied at once under the table's
//! lock, and the two implicit ones re-check their reason at that moment. A close removes only
//! brokers whose *latest* registration came on the closed connection, and expiry removes only
//! brokers still silent: an unregistration decided before a newer registration can never
//! delete that registration (apache/rocketmq#11043).

use std::collections::HashSet;

use super::{BrokerAddr, ConnId, RouteTable};
use crate::protocol::body::Name;
use crate::protocol::body::route::PERM_WRITE;

/// One broker to unregister (Java's `UnRegisterBrokerRequestHeader`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unregistration {
    /// `clusterName`.
    pub cluster: String,
    /// `brokerAddr`.
    pub broker_addr: String,
    /// `brokerName`.
    pub broker_name: String,
    /// `brokerId`.
    pub broker_id: i64,
}

impl RouteTable {
    /// UNREGISTER_BROKER, and the common path of the other two: Java's
    /// `unRegisterBroker(Set)`, applied to a batch. Returns how many brokers left the live
    /// table.
    pub fn unregister(&mut self, requests: &[Unregistration]) -> usize {
        let mut left = 0;
        let mut removed: Vec<Name> = Vec::new();
        let mut reduced: Vec<Name> = Vec::new();
        for req in requests {
            let key = BrokerAddr {
                cluster: req.cluster.as_str().into(),
                addr: req.broker_addr.as_str().into(),
            };
            if self.live.remove(&key).is_some() {
                left += 1;
                tracing::info!(cluster = %req.cluster, addr = %req.broker_addr, "broker unregistered");
            }
            if self.filter_servers.remove(&key).is_some() {
                self.broker_epoch += 1;
            }
            let mut remove_name = false;
            if let Some(group) = self.brokers.get_mut(req.broker_name.as_str()) {
                let before = group.data.addrs.len();
                group.data.addrs.retain(|_, a| **a != *req.broker_addr);
                if group.data.addrs.len() != before {
                    self.broker_epoch += 1;
                }
                if group.data.addrs.is_empty() {
                    self.brokers.remove(req.broker_name.as_str());
                    self.broker_epoch += 1;
                    remove_name = true;
                }
            }
            let name = Name::from(req.broker_name.as_str());
            if remove_name {
                if let Some(names) = self.clusters.get_mut(req.cluster.as_str()) {
                    names.retain(|n| **n != *req.broker_name);
                    if names.is_empty() {
                        self.clusters.remove(req.cluster.as_str());
                        self.cluster_created.remove(req.cluster.as_str());
                    }
                }
                removed.push(name);
            } else {
                reduced.push(name);
            }
        }
        self.clean_topics(&removed, &reduced);
        left
    }

    /// Java's `cleanTopicByUnRegisterRequests`: drop removed groups from every topic, and
    /// make acting-master groups left without a master read-only.
    fn clean_topics(&mut self, removed: &[Name], reduced: &[Name]) {
        if removed.is_empty() && reduced.is_empty() {
            return;
        }
        let read_only: HashSet<&Name> = reduced
            .iter()
            .filter(|name| {
                // Java would throw on a name without a group; such names are skipped.
                self.brokers.get(&***name).is_some_and(|g| {
                    g.data.enable_acting_master
                        && g.data.addrs.keys().next().is_none_or(|&min| min > 0)
                })
            })
            .collect();
        let mut emptied = Vec::new();
        let mut touched = Vec::new();
        let mut fed = HashSet::new();
        for (topic, entry) in self.topics.iter_mut() {
            let mut changed = false;
            for name in removed {
                if entry.remove_queue(name) {
                    changed = true;
                    fed.insert(name.clone());
                }
            }
            if entry.queues.is_empty() {
                emptied.push(topic.clone());
                continue;
            }
            for q in entry.queues.iter_mut() {
                if read_only.contains(&q.data.broker_name) && q.data.is_writeable() {
                    q.data.perm &= !PERM_WRITE;
                    q.source = 0;
                    changed = true;
                    fed.insert(q.data.broker_name.clone());
                }
            }
            if changed {
                touched.push(topic.clone());
            }
        }
        for topic in emptied {
            self.topics.remove(&topic);
        }
        for topic in touched {
            self.touch_topic(&topic);
        }
        for name in fed {
            self.bump_feed(&name);
        }
    }

    /// Java's `setupUnRegisterRequest`: the group and id under which `key` is registered (the
    /// first group of the same cluster listing the address).
    fn unregistration_for(&self, key: &BrokerAddr) -> Option<Unregistration> {
        // When two groups list the address, the first in Java's table order wins, as in Java
        // (and deterministically, unlike Rust's hash order).
        self.groups_in_java_order().into_iter().find_map(|g| {
            if g.data.cluster != key.cluster {
                return None;
            }
            g.data
                .addrs
                .iter()
                .find(|(_, a)| **a == key.addr)
                .map(|(id, _)| Unregistration {
                    cluster: key.cluster.to_string(),
                    broker_addr: key.addr.to_string(),
                    broker_name: g.data.broker_name.to_string(),
                    broker_id: *id,
                })
        })
    }

    /// Unregisters the brokers in `keys`. A key that no group lists (Java would leave its
    /// live entry behind for ever) just loses its live and filter-server entries.
    pub(super) fn unregister_keys(&mut self, keys: &[BrokerAddr]) {
        let mut requests = Vec::new();
        for key in keys {
            match self.unregistration_for(key) {
                Some(req) => requests.push(req),
                None => {
                    self.live.remove(key);
                    if self.filter_servers.remove(key).is_some() {
                        self.broker_epoch += 1;
                    }
                }
            }
        }
        self.unregister(&requests);
    }

    /// A connection closed or failed: unregister every broker whose latest registration came
    /// on it, at once (never held: see `super::expiry` for idle timeouts). Returns the
    /// brokers removed.
    pub fn connection_closed(&mut self, conn: ConnId) -> Vec<BrokerAddr> {
        let keys: Vec<BrokerAddr> = self
            .live
            .iter()
            .filter(|(_, live)| live.conn == conn)
            .map(|(k, _)| k.clone())
            .collect();
        if !keys.is_empty() {
            tracing::info!(brokers = ?keys, "broker connection closed: unregistering at once");
            self.unregister_keys(&keys);
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::time::Instant;

    use super::super::testing::*;
    use super::*;

    fn unreg(name: &str, addr: &str, id: i64) -> Unregistration {
        Unregistration {
            cluster: "DefaultCluster".into(),
            broker_addr: addr.into(),
            broker_name: name.into(),
            broker_id: id,
        }
    }

    #[test]
    fn unregistering_the_last_member_removes_the_broker_everywhere() {
        let mut t = RouteTable::new();
        let now = Instant::now();
        register_broker_a(&mut t, &body(1, &["A", "B"]), now);
        register_topics(&mut t, ("broker-b", "b:1", 0, 2), &["B", "C"], now);
        t.unregister(&[unreg("broker-a", "a:1", 0)]);
        assert!(t.broker("broker-a").is_none());
        assert!(t.topic("A").is_none());
        assert_eq!(t.topic("B").unwrap().queues.len(), 1);
        assert_eq!(
            t.cluster("DefaultCluster").unwrap(),
            &[Name::from("broker-b")]
        );
        assert!(t.live("DefaultCluster", "a:1").is_none());
        t.unregister(&[unreg("broker-b", "b:1", 0)]);
        assert!(t.cluster("DefaultCluster").is_none());
        assert_eq!(t.topic_count(), 0);
    }

    #[test]
    fn losing_the_master_of_an_acting_master_group_makes_it_read_only() {
        let mut t = RouteTable::new();
        let now = Instant::now();
        let mut m = reg("broker-a", "a:1", 0, 1);
        m.enable_acting_master = Some(true);
        let mut s = reg("broker-a", "a:2", 1, 2);
        s.enable_acting_master = Some(true);
        register(&mut t, &m, &body(1, &["A", "B"]), now);
        register(&mut t, &s, &body(1, &["A", "B"]), now);
        t.unregister(&[unreg("broker-a", "a:1", 0)]);
        let q = &t.topic("A").unwrap().queue("broker-a").unwrap().data;
        assert_eq!(q.perm, 4);
        // Without acting master, the slave's topics keep their permission.
        let mut plain = RouteTable::new();
        register_broker_a(&mut plain, &body(1, &["A", "B"]), now);
        register_topics(&mut plain, ("broker-a", "a:2", 1, 2), &["A", "B"], now);
        plain.unregister(&[unreg("broker-a", "a:1", 0)]);
        assert_eq!(
            plain
                .topic("A")
                .unwrap()
                .queue("broker-a")
                .unwrap()
                .data
                .perm,
            6
        );
    }

    #[test]
    fn a_closed_connection_unregisters_only_brokers_it_still_owns() {
        let mut t = RouteTable::new();
        let now = Instant::now();
        register_broker_a(&mut t, &body(1, &["A", "B"]), now);
        // The broker reconnects and re-registers on connection 2 before 1's close is seen.
        register_topics(&mut t, ("broker-a", "a:1", 0, 2), &["A", "B"], now);
        assert!(t.connection_closed(ConnId(1)).is_empty());
        assert!(t.topic("A").is_some());
        assert_eq!(t.connection_closed(ConnId(2)).len(), 1);
        assert!(t.topic("A").is_none());
        assert!(t.broker("broker-a").is_none());
    }

    #[test]
    fn expiry_removes_silent_brokers_only() {
        let mut t = RouteTable::new();
        let start = Instant::now();
        register_broker_a(&mut t, &body(1, &["A", "B"]), start);
        let mut quick = reg("broker-b", "b:1", 0, 2);
        quick.heartbeat_timeout_millis = Some(10_000);
        register(&mut t, &quick, &body(1, &["C", "D"]), start);
        assert!(t.expire(start + Duration::from_secs(10)).is_empty());
        let gone = t.expire(start + Duration::from_millis(10_001));
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].1, ConnId(2));
        assert!(t.topic("C").is_none());
        t.touch_broker("DefaultCluster", "a:1", start + Duration::from_secs(100));
        assert!(t.expire(start + Duration::from_secs(200)).is_empty());
        assert_eq!(t.expire(start + Duration::from_secs(221)).len(), 1);
        assert_eq!(t.topic_count(), 0);
    }

    #[test]
    fn a_live_entry_no_group_lists_is_still_removed_on_expiry() {
        let mut t = RouteTable::new();
        let start = Instant::now();
        register_broker_a(&mut t, &body(1, &["A", "B"]), start);
        // The same group re-registers under another cluster: its live key is (Other, a:1)
        // but the group still says DefaultCluster.
        register_topics_in(
            &mut t,
            "Other",
            ("broker-a", "a:1", 0, 1),
            &["A", "B"],
            start,
        );
        t.unregister(&[unreg("broker-a", "a:1", 0)]);
        assert!(t.live("Other", "a:1").is_some());
        assert_eq!(t.expire(start + Duration::from_secs(121)).len(), 1);
        assert_eq!(t.live_count(), 0);
    }

    #[test]
    fn huge_timeouts_are_cut_to_the_maximum() {
        let start = Instant::now();
        for declared in [600_001, 1_000_000_000_000_000, i64::MAX] {
            let mut t = RouteTable::new();
            let mut r = reg("broker-a", "a:1", 0, 1);
            r.heartbeat_timeout_millis = Some(declared);
            register(&mut t, &r, &body(1, &["A", "B"]), start);
            let live = t.live("DefaultCluster", "a:1").unwrap();
            assert_eq!(live.timeout, super::super::MAX_BROKER_TIMEOUT, "{declared}");
            assert!(t.expire(start + Duration::from_secs(600)).is_empty());
            assert_eq!(t.expire(start + Duration::from_secs(601)).len(), 1);
        }
    }
}
