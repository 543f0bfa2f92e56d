//! The controller on the side door: its section of the status page (`page`), its JSON at
//! `/api/controller` (`api`), its `namesrv_controller_*` metrics (`metrics`) and its part of
//! readiness (here). All of them read one [`Controller::status`] snapshot per request or
//! scrape; none of them can change anything.
//!
//! A process runs a controller embedded (`enableControllerInNamesrv=true`) or standalone
//! (`--controller`); in the standalone shape the name server's routes are empty by
//! construction, so the page leaves their sections out (`Side`).

pub(super) mod api;
pub(super) mod metrics;
pub(super) mod page;

use tokio::time::Instant;

use crate::controller::{Controller, ControllerStatus};
use crate::protocol::body::data_version::wall_clock_millis;
use crate::state::readiness::NotReady;

/// What the side door serves beside the name server's views.
#[derive(Debug, Clone, Default)]
pub(crate) struct Side {
    /// The controller this process runs, if any.
    pub(crate) controller: Option<Controller>,
    /// Only the controller runs (`--controller`): there is no name-server data to show.
    pub(crate) standalone: bool,
}

/// The controller's reason not to be ready: a controller node is ready only once it knows
/// a leader of its group, since every leader-only request fails until then.
pub(super) fn not_ready(controller: &Controller) -> Option<NotReady> {
    let group = controller.consensus().status();
    match group.leader_id {
        Some(_) => None,
        None => Some(NotReady::NoControllerLeader {
            group: controller.settings().group,
        }),
    }
}

/// The applied index behind the committed one (0 when either is unknown or applied leads:
/// a snapshot install can set both at once).
pub(super) fn apply_lag(status: &ControllerStatus) -> u64 {
    let g = &status.group;
    match (g.committed, g.applied) {
        (Some(c), Some(a)) => c.saturating_sub(a),
        (Some(c), None) => c + 1,
        _ => 0,
    }
}

/// Milliseconds since the Unix epoch of the tokio instant `at`: the wall clock now, less how
/// long ago `at` was (the election history keeps tokio instants, so that its timings follow
/// the paused clock in tests).
pub(super) fn wall_millis(at: Instant, now: Instant) -> i64 {
    let ago = now.saturating_duration_since(at);
    let ago = i64::try_from(ago.as_millis()).unwrap_or(i64::MAX);
    wall_clock_millis().saturating_sub(ago)
}

/// The address of the recorded master of a set, when it has one with an address.
pub(super) fn master_address(set: &crate::controller::BrokerSetStatus) -> Option<&str> {
    let master = set.master?;
    set.replicas
        .iter()
        .find(|r| r.broker_id == master)
        .map(|r| r.address.as_str())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::controller::GroupStatus;

    fn status(committed: Option<u64>, applied: Option<u64>) -> ControllerStatus {
        ControllerStatus {
            group: GroupStatus {
                committed,
                applied,
                ..GroupStatus::default()
            },
            broker_sets: Vec::new(),
            elections: Vec::new(),
            elections_by_reason: Vec::new(),
            heartbeats: 0,
            live_entries: 0,
            last_failover: None,
        }
    }

    #[test]
    fn apply_lag_counts_committed_entries_not_yet_applied() {
        assert_eq!(apply_lag(&status(Some(10), Some(7))), 3);
        assert_eq!(apply_lag(&status(Some(7), Some(10))), 0);
        assert_eq!(apply_lag(&status(Some(0), None)), 1);
        assert_eq!(apply_lag(&status(None, None)), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_instant_in_the_past_is_that_far_back_on_the_wall_clock() {
        let at = Instant::now();
        tokio::time::advance(Duration::from_secs(5)).await;
        let now_ms = wall_clock_millis();
        let then = wall_millis(at, Instant::now());
        assert!((now_ms - 5000 - then).abs() < 1000, "{now_ms} {then}");
    }
}
