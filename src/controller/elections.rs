//! The controller's election history: a bounded ring of recent elections (when, which set,
//! old → new master, epoch, why) and counters by reason, for the status page, `/api` and
//! the metrics. Written by the leader after an election is committed; never replicated (a new
//! leader starts a new history).

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

use super::machine::BrokerId;

/// How many elections the ring keeps.
pub const KEPT_ELECTIONS: usize = 64;

/// Why an election happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElectionReason {
    /// The master's connection to this node closed.
    MasterConnectionClosed,
    /// The master's heartbeats expired.
    HeartbeatExpired,
    /// The leader's inactive-master scan found the master dead (after a leader change).
    InactiveMasterScan,
    /// A broker asked (CONTROLLER_ELECT_MASTER for itself).
    BrokerTrigger,
    /// An operator asked (`electMaster`, `designateElect=true`).
    AdminTrigger,
}

impl ElectionReason {
    /// Every reason, in a fixed order (the counters' order).
    pub const ALL: [ElectionReason; 5] = [
        ElectionReason::MasterConnectionClosed,
        ElectionReason::HeartbeatExpired,
        ElectionReason::InactiveMasterScan,
        ElectionReason::BrokerTrigger,
        ElectionReason::AdminTrigger,
    ];

    /// A label for metrics and the API.
    pub fn label(self) -> &'static str {
        match self {
            ElectionReason::MasterConnectionClosed => "master_connection_closed",
            ElectionReason::HeartbeatExpired => "heartbeat_expired",
            ElectionReason::InactiveMasterScan => "inactive_master_scan",
            ElectionReason::BrokerTrigger => "broker_trigger",
            ElectionReason::AdminTrigger => "admin_trigger",
        }
    }

    fn index(self) -> usize {
        ElectionReason::ALL
            .iter()
            .position(|r| *r == self)
            .unwrap_or_default()
    }
}

/// One committed election that changed the master.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionRecord {
    /// When it was committed.
    pub at: Instant,
    /// The broker set.
    pub broker_name: String,
    /// The master before, if any.
    pub old_master: Option<BrokerId>,
    /// The new master.
    pub new_master: BrokerId,
    /// The new master epoch.
    pub master_epoch: i32,
    /// Why.
    pub reason: ElectionReason,
    /// From the detection of the dead master to the commit (controller-triggered only).
    pub failover: Option<Duration>,
}

/// The ring and the counters.
#[derive(Debug, Default)]
pub struct Elections {
    recent: VecDeque<ElectionRecord>,
    by_reason: [u64; ElectionReason::ALL.len()],
    last_failover: Option<Duration>,
}

impl Elections {
    /// Records `record`, dropping the oldest beyond [`KEPT_ELECTIONS`].
    pub fn record(&mut self, record: ElectionRecord) {
        self.by_reason[record.reason.index()] += 1;
        if record.failover.is_some() {
            self.last_failover = record.failover;
        }
        if self.recent.len() == KEPT_ELECTIONS {
            self.recent.pop_front();
        }
        self.recent.push_back(record);
    }

    /// The recent elections, oldest first.
    pub fn recent(&self) -> impl Iterator<Item = &ElectionRecord> {
        self.recent.iter()
    }

    /// How many elections `reason` caused.
    pub fn count(&self, reason: ElectionReason) -> u64 {
        self.by_reason[reason.index()]
    }

    /// The last controller-triggered failover's duration, detection to commit.
    pub fn last_failover(&self) -> Option<Duration> {
        self.last_failover
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_and_counts_every_reason() {
        let mut e = Elections::default();
        let now = Instant::now();
        for i in 0..(KEPT_ELECTIONS + 3) {
            e.record(ElectionRecord {
                at: now,
                broker_name: "b".into(),
                old_master: None,
                new_master: i as BrokerId,
                master_epoch: i as i32,
                reason: ElectionReason::HeartbeatExpired,
                failover: Some(Duration::from_millis(i as u64)),
            });
        }
        assert_eq!(e.recent().count(), KEPT_ELECTIONS);
        assert_eq!(e.recent().next().unwrap().new_master, 3);
        assert_eq!(
            e.count(ElectionReason::HeartbeatExpired),
            KEPT_ELECTIONS as u64 + 3
        );
        assert_eq!(e.count(ElectionReason::AdminTrigger), 0);
        assert_eq!(
            e.last_failover(),
            Some(Duration::from_millis(KEPT_ELECTIONS as u64 + 2))
        );
    }
}
