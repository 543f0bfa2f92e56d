//! The peers being checked: each on its own schedule, its check a task of its own with one
//! deadline, its connection kept between checks and dropped when the peer leaves the list,
//! and a back-off for a peer that keeps failing. The loop in [`super::run`] drives it; the
//! comparison itself is [`super::compare`]'s.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::{AbortHandle, Id, JoinError, JoinSet};
use tokio::time::Instant;

use super::{LiveBroker, PeerSettings, PeerView, Tracker, ask, differences};
use crate::remoting_client::Client;
use crate::state::Namesrv;
use crate::state::peering::{PeerReport, PeerState};

/// A failing peer is asked again after at least this long, doubling with each failure…
const FIRST_RETRY: Duration = Duration::from_secs(1);
/// …up to this (or the interval, if longer).
const LAST_RETRY: Duration = Duration::from_secs(30);

/// How long to wait before asking a peer that failed `failures` times in a row (at least 1).
pub(super) fn retry_after(interval: Duration, failures: u32) -> Duration {
    let first = interval.max(FIRST_RETRY);
    let last = interval.max(LAST_RETRY);
    first
        .saturating_mul(1 << failures.saturating_sub(1).min(16))
        .min(last)
}

/// A finished check.
pub(super) struct Done {
    /// The client back, unless the check was cut short (its connection is then in an
    /// unknown state and is dropped).
    client: Option<Client>,
    /// This node's brokers when the check began.
    ours: Arc<Vec<LiveBroker>>,
    view: Result<PeerView, String>,
}

/// Checks `peer` once, all its requests within `wait`.
async fn check(
    mut client: Client,
    peer: String,
    me: u64,
    ours: Arc<Vec<LiveBroker>>,
    wait: Duration,
) -> Done {
    match tokio::time::timeout(wait, ask::ask(&mut client, &peer, me, &ours)).await {
        Ok(view) => Done {
            client: Some(client),
            ours,
            view: view.map_err(|e| e.to_string()),
        },
        Err(_) => Done {
            client: None,
            ours,
            view: Err(format!("the check took more than {} ms", wait.as_millis())),
        },
    }
}

struct Peer {
    /// The client the peer was asked with, between checks; `None` while a check has it.
    /// Reused only while its own options are what the settings would make.
    kept: Option<Client>,
    /// The check in flight (its task's id tells its result from a stale one).
    asking: Option<AbortHandle>,
    due: Instant,
    failures: u32,
    /// What the last check found; `None` before the first one ended.
    last: Option<PeerState>,
}

/// Every configured peer and the checks in flight.
pub(super) struct Checks {
    me: u64,
    peers: HashMap<String, Peer>,
    asking: JoinSet<Done>,
    tracker: Tracker,
}

impl Checks {
    /// No peers yet; `me` is this node's id.
    pub(super) fn new(me: u64) -> Checks {
        Checks {
            me,
            peers: HashMap::new(),
            asking: JoinSet::new(),
            tracker: Tracker::default(),
        }
    }

    /// Follows the list: new peers are due at once; peers no longer listed are dropped with
    /// their connection, and their check in flight is aborted. Whether any was dropped.
    pub(super) fn configure(&mut self, settings: &PeerSettings, now: Instant) -> bool {
        let before = self.peers.len();
        self.peers.retain(|name, peer| {
            let keep = settings.peers.contains(name);
            if !keep && let Some(check) = &peer.asking {
                check.abort();
            }
            keep
        });
        let dropped = self.peers.len() != before;
        self.tracker.retain_peers(&settings.peers);
        for name in &settings.peers {
            self.peers.entry(name.clone()).or_insert(Peer {
                kept: None,
                asking: None,
                due: now,
                failures: 0,
                last: None,
            });
        }
        dropped
    }

    /// Starts a check of every peer that is due and not being checked.
    pub(super) fn start_due(&mut self, state: &Namesrv, settings: &PeerSettings, now: Instant) {
        let mut ours: Option<Arc<Vec<LiveBroker>>> = None;
        for (name, peer) in &mut self.peers {
            if peer.asking.is_some() || peer.due > now {
                continue;
            }
            let ours = ours
                .get_or_insert_with(|| Arc::new(state.routes().live_brokers()))
                .clone();
            let client = match peer.kept.take() {
                Some(kept) if settings.would_make(kept.options()) => kept,
                _ => Client::new(settings.client_options()),
            };
            let peer_name = name.clone();
            let check = self.asking.spawn(check(
                client,
                peer_name,
                self.me,
                ours,
                settings.check_wait(),
            ));
            peer.asking = Some(check);
        }
    }

    /// Whether a check is in flight.
    pub(super) fn in_flight(&self) -> bool {
        !self.asking.is_empty()
    }

    /// The next check to end (`None` once none is in flight).
    pub(super) async fn join_next(&mut self) -> Option<Result<(Id, Done), JoinError>> {
        self.asking.join_next_with_id().await
    }

    /// When the next peer not being checked is due.
    pub(super) fn next_due(&self) -> Option<Instant> {
        (self.peers.values())
            .filter(|p| p.asking.is_none())
            .map(|p| p.due)
            .min()
    }

    /// Takes in what a check found (an aborted one, for a peer since removed, is ignored;
    /// one that panicked counts as a failure) and schedules the peer's next check.
    pub(super) fn finish(
        &mut self,
        done: Result<(Id, Done), JoinError>,
        settings: &PeerSettings,
        now: Instant,
    ) {
        let (task, outcome) = match done {
            Ok((task, done)) => (task, Some(done)),
            Err(e) if e.is_panic() => (e.id(), None),
            Err(_) => return,
        };
        let Some((name, peer)) = (self.peers.iter_mut())
            .find(|(_, p)| p.asking.as_ref().is_some_and(|h| h.id() == task))
        else {
            return;
        };
        peer.asking = None;
        let (client, ours, view) = match outcome {
            Some(done) => (done.client, done.ours, done.view),
            None => (None, Arc::default(), Err("the check failed".to_owned())),
        };
        peer.kept = client;
        let was_failing = peer.last.as_ref().and_then(|s| s.unreachable.clone());
        let mut state = PeerState {
            peer: name.clone(),
            unreachable: None,
            is_self: false,
            compares_versions: false,
        };
        match view {
            Ok(view) => {
                if let Some(why) = was_failing {
                    tracing::info!(peer = %name, "peer check: the peer answers again (it failed: {why})");
                }
                peer.failures = 0;
                peer.due = now + settings.interval;
                state.is_self = view.is_self;
                state.compares_versions = view.versions.is_some();
                let found = if view.is_self {
                    Vec::new()
                } else {
                    differences(&ours, &view)
                };
                self.tracker.observe(name, found, now);
            }
            Err(why) => {
                if was_failing.is_none() {
                    tracing::warn!(peer = %name, "peer check: cannot ask the peer: {why}");
                }
                peer.failures += 1;
                peer.due = now + retry_after(settings.interval, peer.failures);
                state.unreachable = Some(why);
                self.tracker.forget(name);
            }
        }
        peer.last = Some(state);
    }

    /// The report: every peer checked at least once, and the lasting differences.
    pub(super) fn report(&mut self, now: Instant, after: Duration) -> PeerReport {
        let mut peers: Vec<PeerState> =
            self.peers.values().filter_map(|p| p.last.clone()).collect();
        peers.sort_by(|a, b| a.peer.cmp(&b.peer));
        PeerReport {
            peers,
            divergent: self.tracker.report(now, after),
        }
    }
}
