//! Peer checks: every `peerCheckIntervalMillis`, this node asks each name server of
//! `namesrvPeers` — on the remoting port, with ordinary requests — which brokers it knows
//! (GET_BROKER_CLUSTER_INFO) and, if it is a server of this implementation, at which data
//! version (QUERY_DATA_VERSION, marked so that it does not count as the broker's heartbeat:
//! see [`crate::state::peering`]). A broker registered here that a peer lacks, or holds at an
//! older data version, for longer than `peerDivergenceAfterMillis` (one broker heartbeat
//! period by default) is logged once and counted in the report GET_NAMESRV_CONFIG shows;
//! its end is logged too. A peer that cannot be asked (refused, hanging, answering garbage)
//! is logged when it starts and stops failing.
//!
//! A peer is listed by whoever may set `namesrvPeers`, so it is treated as a stranger: each
//! is checked on its own schedule ([`checks`]) and a slow one never delays the others; each
//! answer has one deadline however its bytes trickle in, and each check one deadline for all
//! its requests; an answer over `peerMaxAnswerBytes` is refused from its length prefix; a
//! failing peer is asked again after a growing back-off rather than every interval, so a
//! long list of bad addresses opens few connections; and a peer's connection (with its
//! buffers) is dropped as soon as it leaves the list.
//!
//! Java name servers never talk to each other (apache/rocketmq#4807): a registration that
//! reached one node and not another goes unnoticed there. The requests go through the crate's
//! remoting client ([`crate::remoting_client`]), the one `nsadmin` uses.

mod ask;
mod checks;
mod compare;
#[cfg(test)]
mod tests;

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::remoting_client::ClientOptions;
use crate::state::Namesrv;
pub(crate) use ask::PeerView;
use checks::Checks;
pub(crate) use compare::{LiveBroker, Tracker, differences};

/// Longest a peer gets to answer one request.
const MAX_REQUEST_TIME: Duration = Duration::from_secs(3);
/// Requests of one check: the connection, the probe, the cluster info, the data versions.
const STEPS_PER_CHECK: u32 = 4;

/// The peer-check settings in force now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PeerSettings {
    /// The cluster's name servers (this one may be among them), each once.
    pub(crate) peers: Vec<String>,
    /// Time between rounds.
    pub(crate) interval: Duration,
    /// How long a difference must last to be reported.
    pub(crate) divergence_after: Duration,
    /// Largest answer accepted from a peer.
    pub(crate) max_answer_bytes: usize,
}

impl PeerSettings {
    /// The settings `s` hold.
    pub(crate) fn from_settings(s: &Settings) -> PeerSettings {
        let mut peers: Vec<String> = Vec::new();
        for peer in s.namesrv_peers.value().entries() {
            if !peers.iter().any(|p| p == peer) {
                peers.push(peer.to_owned());
            }
        }
        PeerSettings {
            peers,
            // Never zero, which a tokio interval refuses (validation asks for 100 at least).
            interval: s
                .peer_check_interval_millis
                .duration()
                .max(Duration::from_millis(1)),
            divergence_after: s.peer_divergence_after_millis.duration(),
            max_answer_bytes: s.peer_max_answer_bytes.max(0) as usize,
        }
    }

    /// How long one answer (or the connection) may take.
    pub(crate) fn request_wait(&self) -> Duration {
        self.interval.min(MAX_REQUEST_TIME)
    }

    /// How long one check of one peer may take, all its requests together.
    pub(crate) fn check_wait(&self) -> Duration {
        self.request_wait() * STEPS_PER_CHECK
    }

    /// How the client asks a peer.
    fn client_options(&self) -> ClientOptions {
        ClientOptions {
            timeout: self.request_wait(),
            connect_timeout: self.request_wait(),
            max_answer_bytes: self.max_answer_bytes,
            ..ClientOptions::default()
        }
    }

    /// Whether a client with `opts` is one [`Self::client_options`] would make now: only
    /// the settings it takes from are compared, the rest being the defaults every peer
    /// client has.
    fn would_make(&self, opts: &ClientOptions) -> bool {
        let now = self.client_options();
        opts.timeout == now.timeout
            && opts.connect_timeout == now.connect_timeout
            && opts.max_answer_bytes == now.max_answer_bytes
    }
}

/// Runs the peer checks until `cancel` fires. Settings are read at least once an interval
/// and after every check, so an UPDATE_NAMESRV_CONFIG or a reload changes the peers from
/// then on. The checks in flight are owned here and end with it.
pub(crate) async fn run(state: Namesrv, cancel: CancellationToken) {
    let mut checks = Checks::new(state.node_id());
    loop {
        let settings = PeerSettings::from_settings(&state.config().settings);
        let now = Instant::now();
        if checks.configure(&settings, now) {
            state.set_peer_report(checks.report(now, settings.divergence_after));
        }
        checks.start_due(&state, &settings, now);
        let wake = checks.next_due().map_or(now + settings.interval, |due| {
            due.min(now + settings.interval)
        });
        tokio::select! {
            _ = cancel.cancelled() => return,
            Some(done) = checks.join_next(), if checks.in_flight() => {
                let now = Instant::now();
                checks.finish(done, &settings, now);
                state.set_peer_report(checks.report(now, settings.divergence_after));
            }
            () = tokio::time::sleep_until(wake) => {}
        }
    }
}
