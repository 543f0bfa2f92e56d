//! Comparing this node's brokers with a peer's view, and remembering how long each
//! difference has lasted. Pure: no I/O, the time is passed in.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::PeerView;
use crate::protocol::body::DataVersion;
use crate::state::peering::{Difference, Divergence};
pub(crate) use crate::state::route_table::parts::LiveBroker;

/// Whether `there` is an older data version than `here`.
fn older(there: &DataVersion, here: &DataVersion) -> bool {
    let rank = |v: &DataVersion| (v.state_version, v.counter.unwrap_or(i64::MIN), v.timestamp);
    !there.same_as(here) && rank(there) < rank(here)
}

/// How `view` differs from `ours`: each of our brokers the peer lacks or holds older.
pub(crate) fn differences(
    ours: &[LiveBroker],
    view: &PeerView,
) -> Vec<(String, String, Difference)> {
    let mut found = Vec::new();
    for b in ours {
        let key = b.key();
        if !view.brokers.contains(&key) {
            found.push((key.0, key.1, Difference::Missing));
        } else if let Some(there) = view.versions.as_ref().and_then(|v| v.get(&key))
            && older(there, &b.data_version)
        {
            found.push((key.0, key.1, Difference::OlderVersion));
        }
    }
    found
}

type Key = (String, String, String, Difference);

/// When each current difference was first seen, and which were reported.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    since: HashMap<Key, (Instant, bool)>,
}

impl Tracker {
    /// Records a round's differences with `peer`; those no longer seen end (logged if they
    /// had been reported).
    pub(crate) fn observe(
        &mut self,
        peer: &str,
        found: Vec<(String, String, Difference)>,
        now: Instant,
    ) {
        let current: Vec<Key> = found
            .into_iter()
            .map(|(name, addr, d)| (peer.to_owned(), name, addr, d))
            .collect();
        self.since.retain(|key, (_, reported)| {
            let keep = key.0 != peer || current.contains(key);
            if !keep && *reported {
                tracing::info!(peer = %key.0, broker = %key.1, addr = %key.2, "peer check: the peer agrees again ({:?} resolved)", key.3);
            }
            keep
        });
        for key in current {
            self.since.entry(key).or_insert((now, false));
        }
    }

    /// Drops what is known about `peer` (it could not be asked).
    pub(crate) fn forget(&mut self, peer: &str) {
        self.since.retain(|key, _| key.0 != peer);
    }

    /// Drops peers no longer configured.
    pub(crate) fn retain_peers(&mut self, peers: &[String]) {
        self.since.retain(|key, _| peers.contains(&key.0));
    }

    /// The differences that lasted at least `after` at `now`; each is logged once, when it
    /// first qualifies.
    pub(crate) fn report(&mut self, now: Instant, after: Duration) -> Vec<Divergence> {
        let mut out = Vec::new();
        for (key, (since, reported)) in &mut self.since {
            if now.saturating_duration_since(*since) < after {
                continue;
            }
            if !*reported {
                *reported = true;
                let what = match key.3 {
                    Difference::Missing => "is missing there",
                    Difference::OlderVersion => "has an older data version there",
                };
                tracing::warn!(
                    peer = %key.0, broker = %key.1, addr = %key.2,
                    lasted = ?now.saturating_duration_since(*since),
                    "peer check: a broker registered here {what}"
                );
            }
            out.push(Divergence {
                peer: key.0.clone(),
                broker_name: key.1.clone(),
                broker_addr: key.2.clone(),
                difference: key.3.clone(),
                since: *since,
            });
        }
        out.sort_by(|a, b| {
            (&a.peer, &a.broker_name, &a.broker_addr).cmp(&(
                &b.peer,
                &b.broker_name,
                &b.broker_addr,
            ))
        });
        out
    }
}
