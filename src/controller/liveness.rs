//! The node's broker liveness: Java's `DefaultBrokerHeartbeatManager` table (CONTROLLER.md
//! §5.1), fed by BROKER_HEARTBEAT and emptied by expiry and closed connections. Pure: every
//! time comes in as a tokio [`Instant`]. Not replicated — brokers heartbeat every controller
//! node, so each node's table is populated — and the inactive-master scan waits one heartbeat
//! timeout after a node becomes leader before trusting it (`super::heartbeat`).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

use super::machine::BrokerId;
use super::machine::decide::{LiveReplica, LiveView};
use crate::state::ConnId;

/// A replica's identity: Java's `BrokerIdentityInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BrokerKey {
    /// `clusterName`.
    pub cluster: String,
    /// `brokerName`.
    pub broker_name: String,
    /// The controller id.
    pub broker_id: BrokerId,
}

/// One BROKER_HEARTBEAT's content, defaults filled in as Java fills them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heartbeat {
    /// `brokerAddr`.
    pub broker_addr: String,
    /// `epoch` (−1 when absent).
    pub epoch: i32,
    /// `maxOffset` (−1 when absent).
    pub max_offset: i64,
    /// `confirmOffset` (−1 when absent).
    pub confirm_offset: i64,
    /// `heartbeatTimeoutMills` (10 s when absent).
    pub timeout: Duration,
    /// `electionPriority` (`i32::MAX` when absent).
    pub election_priority: i32,
}

/// Java's default heartbeat timeout, when a broker sends none.
pub const DEFAULT_HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(10_000);

/// The longest heartbeat timeout taken: a larger one a broker sends is cut to this, so that
/// no deadline overflows the clock and a new leader's settle time stays bounded.
pub const MAX_HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(3600);

/// One replica's entry: Java's `BrokerLiveInfo`, its address the first heartbeat's (as
/// Java), its connection the latest one's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveInfo {
    /// The address of its first heartbeat (never updated while the entry lives).
    pub broker_addr: String,
    /// The connection of its latest heartbeat. Java keeps the first one; but the close of a
    /// connection a broker has already replaced is no sign of death, and would otherwise
    /// demote a live master.
    pub conn: ConnId,
    /// When its last heartbeat arrived.
    pub last: Instant,
    /// How long a heartbeat stays valid.
    pub timeout: Duration,
    /// Its epoch; with `max_offset` only ever moves forward.
    pub epoch: i32,
    /// Its max commit-log offset.
    pub max_offset: i64,
    /// Its confirm offset, taken with `epoch` and `max_offset`.
    pub confirm_offset: i64,
    /// Its election priority (lower is preferred).
    pub election_priority: i32,
}

impl LiveInfo {
    /// Alive ⇔ `last + timeout >= now`.
    pub fn is_alive(&self, now: Instant) -> bool {
        self.last
            .checked_add(self.timeout)
            .is_none_or(|deadline| deadline >= now)
    }
}

/// Most departed replicas remembered (far more than a cluster's replicas).
const MAX_DEPARTED: usize = 4096;

/// How far past `last + timeout` an entry is looked at: `expire` wants strictly more than
/// the timeout, and tokio's timers have millisecond resolution.
const EXPIRY_MARGIN: Duration = Duration::from_millis(1);

/// Every replica that heartbeats this node.
#[derive(Debug, Default)]
pub struct Liveness {
    entries: HashMap<BrokerKey, LiveInfo>,
    /// Replicas taken for dead here that have not heartbeated since.
    departed: HashSet<BrokerKey>,
    /// The largest heartbeat timeout any broker has sent: how long a new leader waits
    /// before its table is trusted.
    largest_timeout: Duration,
}

impl Liveness {
    /// Records `beat` from `key` on `conn` at `now`: a new entry, or a refresh of timestamp,
    /// timeout and priority, taking epoch and offsets only if `(epoch, maxOffset)` grew.
    /// True when the replica returns: it was taken for dead here (expired, or its connection
    /// closed) and heartbeats again.
    pub fn heartbeat(
        &mut self,
        key: BrokerKey,
        mut beat: Heartbeat,
        conn: ConnId,
        now: Instant,
    ) -> bool {
        beat.timeout = beat.timeout.min(MAX_HEARTBEAT_TIMEOUT);
        self.largest_timeout = self.largest_timeout.max(beat.timeout);
        match self.entries.get_mut(&key) {
            Some(prev) => {
                prev.last = now;
                prev.conn = conn;
                prev.timeout = beat.timeout;
                prev.election_priority = beat.election_priority;
                if (beat.epoch, beat.max_offset) > (prev.epoch, prev.max_offset) {
                    prev.epoch = beat.epoch;
                    prev.max_offset = beat.max_offset;
                    prev.confirm_offset = beat.confirm_offset;
                }
                false
            }
            None => {
                let info = LiveInfo {
                    broker_addr: beat.broker_addr,
                    conn,
                    last: now,
                    timeout: beat.timeout,
                    epoch: beat.epoch,
                    max_offset: beat.max_offset,
                    confirm_offset: beat.confirm_offset,
                    election_priority: beat.election_priority,
                };
                let returned = self.departed.remove(&key);
                self.entries.insert(key, info);
                returned
            }
        }
    }

    /// The entry of `key`, alive or not.
    #[cfg(test)]
    pub fn get(&self, key: &BrokerKey) -> Option<&LiveInfo> {
        self.entries.get(key)
    }

    /// Removes and returns the entries whose heartbeat expired (`now − last > timeout`).
    pub fn expire(&mut self, now: Instant) -> Vec<BrokerKey> {
        self.remove_where(|info| now.saturating_duration_since(info.last) > info.timeout)
    }

    /// The first moment an entry counts as expired for [`Liveness::expire`] (just past its
    /// `last + timeout`), if there is an entry.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.entries
            .values()
            .filter_map(|info| info.last.checked_add(info.timeout + EXPIRY_MARGIN))
            .min()
    }

    /// Removes and returns the entries whose heartbeats came on `conn`.
    pub fn connection_closed(&mut self, conn: ConnId) -> Vec<BrokerKey> {
        self.remove_where(|info| info.conn == conn)
    }

    fn remove_where(&mut self, mut gone: impl FnMut(&LiveInfo) -> bool) -> Vec<BrokerKey> {
        let keys: Vec<BrokerKey> = self
            .entries
            .iter()
            .filter(|(_, info)| gone(info))
            .map(|(key, _)| key.clone())
            .collect();
        if self.departed.len() + keys.len() > MAX_DEPARTED {
            // Replicas that never come back (cleaned sets, retired hosts) must not pile up.
            self.departed.clear();
        }
        for key in &keys {
            self.entries.remove(key);
            self.departed.insert(key.clone());
        }
        keys
    }

    /// How long a new leader waits before trusting the table: the largest timeout seen, at
    /// least Java's default.
    pub fn settle_time(&self) -> Duration {
        self.largest_timeout.max(DEFAULT_HEARTBEAT_TIMEOUT)
    }

    /// How many replicas have an entry.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    /// The table as the decisions see it at `now`.
    pub fn at(&self, now: Instant) -> LiveAt<'_> {
        LiveAt { table: self, now }
    }
}

/// [`Liveness`] at one instant: a [`LiveView`].
#[derive(Debug, Clone, Copy)]
pub struct LiveAt<'a> {
    table: &'a Liveness,
    now: Instant,
}

impl LiveView for LiveAt<'_> {
    fn live(&self, cluster: &str, broker_name: &str, id: BrokerId) -> Option<LiveReplica> {
        let key = BrokerKey {
            cluster: cluster.to_owned(),
            broker_name: broker_name.to_owned(),
            broker_id: id,
        };
        let info = self.table.entries.get(&key)?;
        info.is_alive(self.now).then_some(LiveReplica {
            epoch: info.epoch,
            max_offset: info.max_offset,
            election_priority: info.election_priority,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: BrokerId) -> BrokerKey {
        BrokerKey {
            cluster: "c".into(),
            broker_name: "b".into(),
            broker_id: id,
        }
    }

    fn beat(epoch: i32, max_offset: i64) -> Heartbeat {
        Heartbeat {
            broker_addr: "127.0.0.1:30911".into(),
            epoch,
            max_offset,
            confirm_offset: max_offset,
            timeout: Duration::from_secs(10),
            election_priority: 3,
        }
    }

    #[test]
    fn epoch_and_offset_only_move_forward() {
        let (mut t, now) = (Liveness::default(), Instant::now());
        t.heartbeat(key(1), beat(2, 100), ConnId(1), now);
        t.heartbeat(key(1), beat(1, 500), ConnId(2), now);
        let info = t.get(&key(1)).unwrap();
        assert_eq!(
            (info.epoch, info.max_offset, info.conn),
            (2, 100, ConnId(2))
        );
        t.heartbeat(key(1), beat(2, 150), ConnId(1), now);
        assert_eq!(t.get(&key(1)).unwrap().max_offset, 150);
    }

    #[test]
    fn alive_until_the_timeout_then_expired_and_removed() {
        let (mut t, start) = (Liveness::default(), Instant::now());
        t.heartbeat(key(1), beat(0, 0), ConnId(1), start);
        let edge = start + Duration::from_secs(10);
        assert!(t.at(edge).is_alive("c", "b", 1));
        assert!(t.expire(edge).is_empty());
        let after = edge + Duration::from_millis(1);
        assert!(!t.at(after).is_alive("c", "b", 1));
        assert_eq!(t.expire(after), vec![key(1)]);
        assert_eq!(t.entries(), 0);
    }

    #[test]
    fn the_close_of_a_replaced_connection_keeps_the_entry() {
        let (mut t, now) = (Liveness::default(), Instant::now());
        t.heartbeat(key(1), beat(0, 0), ConnId(1), now);
        t.heartbeat(key(1), beat(0, 0), ConnId(2), now);
        assert!(t.connection_closed(ConnId(1)).is_empty());
        assert_eq!(t.connection_closed(ConnId(2)), vec![key(1)]);
    }

    #[test]
    fn a_closed_connection_removes_only_its_replicas() {
        let (mut t, now) = (Liveness::default(), Instant::now());
        t.heartbeat(key(1), beat(0, 0), ConnId(1), now);
        t.heartbeat(key(2), beat(0, 0), ConnId(2), now);
        assert_eq!(t.connection_closed(ConnId(1)), vec![key(1)]);
        assert_eq!(t.entries(), 1);
    }

    #[test]
    fn settle_time_is_the_largest_timeout_seen_at_least_ten_seconds() {
        let (mut t, now) = (Liveness::default(), Instant::now());
        assert_eq!(t.settle_time(), DEFAULT_HEARTBEAT_TIMEOUT);
        let mut long = beat(0, 0);
        long.timeout = Duration::from_secs(30);
        t.heartbeat(key(1), long.clone(), ConnId(1), now);
        assert_eq!(t.settle_time(), Duration::from_secs(30));
        long.timeout = Duration::from_millis(u64::MAX);
        t.heartbeat(key(2), long, ConnId(1), now);
        assert_eq!(t.settle_time(), MAX_HEARTBEAT_TIMEOUT);
        assert!(t.at(now + Duration::from_secs(60)).is_alive("c", "b", 2));
    }
}
