//! Making the changes a [`Plan`] decided, in the order of `RouteInfoManager#registerBroker`:
//! the cluster-addr entry, the broker group and its address, a stale or refused registration
//! stopping there, then the topic queues, the broker-live entry, the filter servers, and for a
//! slave its master's address.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::plan::{MODE_NONE, Plan, TopicWork};
use super::{BodyInput, RegisterOutcome, Registration};
use crate::protocol::body::{BrokerData, DataVersion, MappingInfo, Name, QueueData, RegisterBody};
use crate::state::route_table::{
    AppliedRegistration, BrokerAddr, BrokerGroup, BrokerLive, DEFAULT_BROKER_TIMEOUT,
    MAX_BROKER_TIMEOUT, QueueEntry, RouteTable,
};

impl RouteTable {
    /// Applies a registration's plan; the plan was made on this table, unchanged since.
    pub(super) fn apply(
        &mut self,
        reg: &Registration<'_>,
        key: BrokerAddr,
        input: BodyInput<'_>,
        mut plan: Plan,
        now: Instant,
    ) -> RegisterOutcome {
        let cluster_name = self.apply_cluster_entry(reg, &key);
        let (mut broker_changed, old_addr) = self.apply_broker_group(reg, cluster_name);
        if self.newer_broker_holds_id(reg, &key, old_addr.as_ref(), &plan.data_version) {
            self.live.remove(&key);
            self.end_broker_change(broker_changed);
            return RegisterOutcome::without_master();
        }
        if plan.rejected {
            tracing::warn!(
                broker = reg.broker_name,
                addr = reg.broker_addr,
                "single-topic registration before a full one: rejected"
            );
            self.end_broker_change(broker_changed);
            return RegisterOutcome::Rejected;
        }
        broker_changed |= self.apply_broker_addr(reg, old_addr.as_deref());
        self.end_broker_change(broker_changed);
        if let BodyInput::Decoded { body, .. } = input
            && plan.mode != MODE_NONE
        {
            let with_mappings = plan.data_version_changed || plan.register_first;
            self.apply_topic_queues(reg, body, std::mem::take(&mut plan.topics), with_mappings);
        }
        self.apply_live_entry(reg, &key, input, &plan, now);
        self.apply_filter_servers(&key, input);
        self.master_of_slave(reg, &key)
    }

    /// The cluster-addr table lists the broker name, even if the group belongs to another
    /// cluster. Returns the cluster's interned name.
    fn apply_cluster_entry(&mut self, reg: &Registration<'_>, key: &BrokerAddr) -> Name {
        if !self.clusters.contains_key(&key.cluster) {
            let created = self.next_created();
            self.cluster_created.insert(key.cluster.clone(), created);
        }
        let cluster = self.clusters.entry(key.cluster.clone()).or_default();
        if !cluster.iter().any(|n| &**n == reg.broker_name) {
            cluster.push(Name::from(reg.broker_name));
        }
        self.clusters
            .get_key_value(reg.cluster)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| key.cluster.clone())
    }

    /// The broker-addr table: the group (created on first sight), its acting-master flag and
    /// zone, and one id per address (Java's slave-to-master switch). Returns whether the
    /// group changed and the address this id held before.
    fn apply_broker_group(
        &mut self,
        reg: &Registration<'_>,
        cluster_name: Name,
    ) -> (bool, Option<Name>) {
        let mut changed = false;
        let name = Name::from(reg.broker_name);
        let created = self.next_created();
        let group = self.brokers.entry(name.clone()).or_insert_with(|| {
            changed = true;
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
            changed = true;
        }
        if group.data.zone_name.as_deref() != reg.zone_name {
            group.data.zone_name = reg.zone_name.map(Name::from);
            changed = true;
        }
        let before = group.data.addrs.len();
        group
            .data
            .addrs
            .retain(|id, a| !(&**a == reg.broker_addr && *id != reg.broker_id));
        changed |= group.data.addrs.len() != before;
        (changed, group.data.addrs.get(&reg.broker_id).cloned())
    }

    /// Java ignores a registration when the broker holding this id at another address has a
    /// newer state version.
    fn newer_broker_holds_id(
        &self,
        reg: &Registration<'_>,
        key: &BrokerAddr,
        old_addr: Option<&Name>,
        data_version: &DataVersion,
    ) -> bool {
        let Some(old) = old_addr.filter(|a| &***a != reg.broker_addr) else {
            return false;
        };
        let old_key = BrokerAddr {
            cluster: key.cluster.clone(),
            addr: old.clone(),
        };
        let newer = self
            .live
            .get(&old_key)
            .is_some_and(|l| l.data_version.state_version > data_version.state_version);
        if newer {
            tracing::warn!(
                cluster = reg.cluster,
                broker = reg.broker_name,
                id = reg.broker_id,
                old = %old,
                new = reg.broker_addr,
                "registration rejected: the registered broker has a newer state version"
            );
        }
        newer
    }

    /// Puts this id's address into the group. Returns whether it changed.
    fn apply_broker_addr(&mut self, reg: &Registration<'_>, old_addr: Option<&str>) -> bool {
        if old_addr == Some(reg.broker_addr) {
            return false;
        }
        if let Some(group) = self.brokers.get_mut(reg.broker_name) {
            group
                .data
                .addrs
                .insert(reg.broker_id, Name::from(reg.broker_addr));
        }
        true
    }

    /// A change to a group's brokers changes every route that lists the group.
    fn end_broker_change(&mut self, changed: bool) {
        if changed {
            self.broker_epoch += 1;
        }
    }

    /// The topic-queue table (and, with a new data version or a first registration, the
    /// static-topic mappings).
    fn apply_topic_queues(
        &mut self,
        reg: &Registration<'_>,
        body: &RegisterBody,
        work: TopicWork,
        with_mappings: bool,
    ) {
        let group_name = self
            .brokers
            .get(reg.broker_name)
            .map(|g| g.data.broker_name.clone());
        for topic in work.deletions {
            self.remove_queue_of(&topic, reg.broker_name);
        }
        for (topic, mut data, source) in work.updates {
            if let Some(name) = &group_name {
                // A group created by this registration: share its name.
                data.broker_name = name.clone();
            }
            self.put_queue(&topic, data, source);
        }
        if with_mappings {
            self.put_mappings(&body.mappings);
        }
    }

    /// The broker-live table: the latest registering connection owns the broker.
    fn apply_live_entry(
        &mut self,
        reg: &Registration<'_>,
        key: &BrokerAddr,
        input: BodyInput<'_>,
        plan: &Plan,
        now: Instant,
    ) {
        let timeout = reg
            .heartbeat_timeout_millis
            .map_or(DEFAULT_BROKER_TIMEOUT, |ms| {
                Duration::from_millis(ms.max(0) as u64).min(MAX_BROKER_TIMEOUT)
            });
        let previous = self.live.get(key);
        let first_heard = previous.map_or(now, |l| l.first_heard);
        let (digest, table) = match input {
            BodyInput::Decoded { body, digest } => {
                (digest, plan.table_applied.then(|| body.table_hint()))
            }
            BodyInput::Unchanged { digest } => (
                digest,
                previous.and_then(|l| l.applied).and_then(|a| a.table),
            ),
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
                applied: Some(AppliedRegistration {
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
    }

    /// The filter-server table, when the body carries a list: an empty one removes it.
    fn apply_filter_servers(&mut self, key: &BrokerAddr, input: BodyInput<'_>) {
        let BodyInput::Decoded { body, .. } = input else {
            return;
        };
        let Some(list) = body.filter_server_list.as_ref() else {
            return;
        };
        let changed = if list.is_empty() {
            self.filter_servers.remove(key).is_some()
        } else {
            self.filter_servers
                .insert(key.clone(), list.clone())
                .as_ref()
                != Some(list)
        };
        self.end_broker_change(changed);
    }

    /// A slave learns its master's address and HA address, if the master is live.
    fn master_of_slave(&self, reg: &Registration<'_>, key: &BrokerAddr) -> RegisterOutcome {
        if reg.broker_id == 0 {
            return RegisterOutcome::without_master();
        }
        let master = self
            .brokers
            .get(reg.broker_name)
            .and_then(|g| g.data.addrs.get(&0).cloned());
        let Some(master) = master else {
            return RegisterOutcome::without_master();
        };
        let master_key = BrokerAddr {
            cluster: key.cluster.clone(),
            addr: master.clone(),
        };
        let own_state = self.live.get(key).map(|l| l.data_version.state_version);
        match self.live.get(&master_key) {
            // In controller mode the state version is the master epoch: a master registered
            // at an older epoch than this slave's is a deposed one whose successor has not
            // registered yet. Pointing the slave's replication at it would strand the slave
            // (its HA client does not reconnect when a later answer names the new master).
            Some(live) if own_state.is_some_and(|own| live.data_version.state_version < own) => {
                RegisterOutcome::without_master()
            }
            Some(live) => RegisterOutcome::Registered {
                master_addr: Some(master),
                ha_server_addr: live.ha_server_addr.clone(),
            },
            None => RegisterOutcome::without_master(),
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

    /// Java's `topicQueueMappingInfoTable` update: one mapping per topic and broker name.
    fn put_mappings(&mut self, mappings: &[(String, MappingInfo)]) {
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
