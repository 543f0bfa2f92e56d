//! Operator edits of routes: WIPE/ADD_WRITE_PERM_OF_BROKER, DELETE_TOPIC_IN_NAMESRV and
//! REGISTER_TOPIC_IN_NAMESRV (`RouteInfoManager#wipeWritePermOfBrokerByLock`,
//! `#addWritePermOfBrokerByLock`, `#deleteTopic`, `#registerTopic`). All are in memory only: a broker's next
//! registration with a new data version overwrites them, as in Java.

use super::{QueueEntry, RouteTable};
use crate::protocol::body::QueueData;
use crate::protocol::body::route::{PERM_READ, PERM_WRITE, QueueDataInput};

impl RouteTable {
    fn set_perm_of_broker(&mut self, broker_name: &str, perm: impl Fn(i32) -> i32) -> i32 {
        let mut count = 0;
        let mut touched = Vec::new();
        for (topic, entry) in self.topics.iter_mut() {
            if let Some(q) = entry.queue_mut(broker_name) {
                count += 1;
                let new = perm(q.data.perm);
                if new != q.data.perm {
                    q.data.perm = new;
                    q.source = 0;
                    touched.push(topic.clone());
                }
            }
        }
        if !touched.is_empty() {
            for topic in touched {
                self.touch_topic(&topic);
            }
            self.bump_feed(broker_name);
        }
        count
    }

    /// Clears the write bit of every queue of `broker_name`; returns how many topics it has.
    pub fn wipe_write_perm(&mut self, broker_name: &str) -> i32 {
        self.set_perm_of_broker(broker_name, |p| p & !PERM_WRITE)
    }

    /// Sets every queue of `broker_name` to read|write (dropping other bits, as Java does);
    /// returns how many topics it has.
    pub fn add_write_perm(&mut self, broker_name: &str) -> i32 {
        self.set_perm_of_broker(broker_name, |_| PERM_READ | PERM_WRITE)
    }

    /// Deletes a topic everywhere, or only from the groups of `cluster` when one is given.
    /// Static-topic mappings are kept, as in Java.
    pub fn delete_topic(&mut self, topic: &str, cluster: Option<&str>) {
        match cluster.filter(|c| !c.is_empty()) {
            None => {
                if let Some(entry) = self.topics.remove(topic) {
                    for q in entry.queues {
                        self.bump_feed(&q.data.broker_name);
                    }
                }
            }
            Some(cluster) => {
                let names = self.clusters.get(cluster).cloned().unwrap_or_default();
                for name in names {
                    self.remove_queue_of(topic, &name);
                }
            }
        }
    }

    /// REGISTER_TOPIC_IN_NAMESRV: put each queue data under the topic. For a known topic,
    /// entries are applied in order until one names an unknown group; a new topic is created
    /// only if every group is known.
    pub fn register_topic(&mut self, topic: &str, queue_datas: &[QueueDataInput]) {
        if queue_datas.is_empty() {
            return;
        }
        let known = |t: &RouteTable, q: &QueueDataInput| {
            q.broker_name
                .as_deref()
                .and_then(|n| t.brokers.get(n))
                .map(|g| g.data.broker_name.clone())
        };
        let exists = self.topics.contains_key(topic);
        if !exists && queue_datas.iter().any(|q| known(self, q).is_none()) {
            return;
        }
        let name = self.topic_name(topic);
        for q in queue_datas {
            let Some(broker_name) = known(self, q) else {
                break;
            };
            let data = QueueData {
                broker_name: broker_name.clone(),
                read_queue_nums: q.read_queue_nums,
                write_queue_nums: q.write_queue_nums,
                perm: q.perm,
                topic_sys_flag: q.topic_sys_flag,
            };
            let entry = self.topic_entry(name.clone());
            match entry.queue_mut(&broker_name) {
                Some(existing) => {
                    existing.data = data;
                    existing.source = 0;
                }
                None => entry.queues.push(QueueEntry { data, source: 0 }),
            }
            self.touch_topic(topic);
            self.bump_feed(&broker_name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use tokio::time::Instant;

    fn qd(name: &str, n: i32) -> QueueDataInput {
        QueueDataInput {
            broker_name: Some(name.into()),
            read_queue_nums: n,
            write_queue_nums: n,
            perm: 6,
            topic_sys_flag: 0,
        }
    }

    #[test]
    fn perm_changes_count_topics_and_overwrite_like_java() {
        let mut t = RouteTable::new();
        register_broker_a(
            &mut t,
            &body_with(1, 0, &[("A", 1, 1, 7, 0), ("B", 1, 1, 4, 0)]),
            Instant::now(),
        );
        assert_eq!(t.wipe_write_perm("broker-a"), 2);
        assert_eq!(t.wipe_write_perm("broker-a"), 2);
        assert_eq!(
            t.topic("A").unwrap().queue("broker-a").unwrap().data.perm,
            5
        );
        assert_eq!(t.add_write_perm("broker-a"), 2);
        assert_eq!(
            t.topic("A").unwrap().queue("broker-a").unwrap().data.perm,
            6
        );
        assert_eq!(
            t.topic("B").unwrap().queue("broker-a").unwrap().data.perm,
            6
        );
        assert_eq!(t.wipe_write_perm("nobody"), 0);
    }

    #[test]
    fn delete_topic_everywhere_or_per_cluster() {
        let mut t = RouteTable::new();
        let now = Instant::now();
        register_broker_a(&mut t, &body(1, &["A", "B"]), now);
        register_topics_in(&mut t, "Other", ("broker-b", "b:1", 0, 2), &["A", "B"], now);
        t.delete_topic("A", Some("Other"));
        assert_eq!(t.topic("A").unwrap().queues.len(), 1);
        t.delete_topic("A", Some("Unknown"));
        assert_eq!(t.topic("A").unwrap().queues.len(), 1);
        t.delete_topic("A", Some("DefaultCluster"));
        assert!(t.topic("A").is_none());
        t.delete_topic("B", Some(""));
        assert!(t.topic("B").is_none());
    }

    #[test]
    fn register_topic_needs_known_groups() {
        let mut t = RouteTable::new();
        register_broker_a(&mut t, &body(1, &["A", "B"]), Instant::now());
        t.register_topic("New", &[qd("broker-a", 8), qd("ghost", 8)]);
        assert!(t.topic("New").is_none());
        t.register_topic("New", &[qd("broker-a", 8)]);
        assert_eq!(
            t.topic("New")
                .unwrap()
                .queue("broker-a")
                .unwrap()
                .data
                .read_queue_nums,
            8
        );
        // Known topic: applied in order up to the first unknown group.
        t.register_topic("A", &[qd("broker-a", 2), qd("ghost", 8)]);
        assert_eq!(
            t.topic("A")
                .unwrap()
                .queue("broker-a")
                .unwrap()
                .data
                .read_queue_nums,
            2
        );
        t.register_topic("A", &[]);
        assert_eq!(t.topic("A").unwrap().queues.len(), 1);
    }
}
