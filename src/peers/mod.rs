//! Peer checks: every `peerCheckIntervalMillis`, this node asks each name server of
//! `namesrvPeers` — on the remoting port, with ordinary requests — which brokers it knows
//! (GET_BROKER_CLUSTER_INFO) and, if it is a server of this implementation, at which data
//! version (QUERY_DATA_VERSION, marked so that it does not count as the broker's heartbeat:
//! see [`crate::state::peering`]). A broker registered here that a peer lacks, or holds at an
//! older data version, for longer than `peerDivergenceAfterMillis` (one broker heartbeat
//! period by default) is logged once and counted in the report GET_NAMESRV_CONFIG shows;
//! its end is logged too. A peer that cannot be asked (refused, hanging, answering garbage)
//! is logged when it starts and stops failing and never stops the checks of the others.
//!
//! Java name servers never talk to each other (apache/rocketmq#4807): a registration that
//! reached one node and not another goes unnoticed there. The requests go through the admin
//! tool's client ([`crate::admin::client`]).

mod ask;
mod compare;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::admin::client::{Client, ClientOptions};
use crate::config::Settings;
use crate::config::settings::parse_addr_list;
use crate::state::Namesrv;
use crate::state::peering::{PeerReport, PeerState};
pub use ask::PeerView;
pub use compare::{LiveBroker, Tracker, differences};

/// Longest a peer gets to answer one request.
const MAX_REQUEST_TIME: Duration = Duration::from_secs(3);

/// The peer-check settings in force now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSettings {
    /// The cluster's name servers (this one may be among them).
    pub peers: Vec<String>,
    /// Time between rounds.
    pub interval: Duration,
    /// How long a difference must last to be reported.
    pub divergence_after: Duration,
}

impl PeerSettings {
    /// The settings `s` hold.
    pub fn from_settings(s: &Settings) -> PeerSettings {
        PeerSettings {
            peers: parse_addr_list(&s.namesrv_peers)
                .unwrap_or_default()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            interval: Duration::from_millis(s.peer_check_interval_millis.max(1) as u64),
            divergence_after: Duration::from_millis(s.peer_divergence_after_millis.max(0) as u64),
        }
    }
}

/// Runs the peer checks until `cancel` fires. Settings are read at every round, so an
/// UPDATE_NAMESRV_CONFIG or a reload changes the peers from the next one.
pub async fn run(state: Namesrv, cancel: CancellationToken) {
    let mut clients: HashMap<String, Client> = HashMap::new();
    let mut tracker = Tracker::default();
    let mut failing: HashMap<String, String> = HashMap::new();
    loop {
        let settings = PeerSettings::from_settings(&state.config().settings);
        if !settings.peers.is_empty() {
            let round = check_round(&state, &settings, &mut clients, &mut tracker, &mut failing);
            tokio::select! {
                _ = cancel.cancelled() => return,
                () = round => {}
            }
        } else if !state.peer_report().peers.is_empty() {
            state.set_peer_report(PeerReport::default());
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(settings.interval) => {}
        }
    }
}

/// Asks every peer once (concurrently), updates the divergence tracker and the report.
async fn check_round(
    state: &Namesrv,
    settings: &PeerSettings,
    clients: &mut HashMap<String, Client>,
    tracker: &mut Tracker,
    failing: &mut HashMap<String, String>,
) {
    let ours = state.routes().live_brokers();
    let wait = settings.interval.min(MAX_REQUEST_TIME);
    let opts = ClientOptions {
        timeout: wait,
        connect_timeout: wait,
        ..ClientOptions::default()
    };
    clients.retain(|peer, _| settings.peers.contains(peer));
    let mut asking = JoinSet::new();
    for peer in &settings.peers {
        let mut client = clients
            .remove(peer)
            .unwrap_or_else(|| Client::new(opts.clone()));
        let (peer, ours, me) = (peer.clone(), ours.clone(), state.node_id());
        asking.spawn(async move {
            let view = ask::ask(&mut client, &peer, me, &ours).await;
            (peer, client, view)
        });
    }
    let now = Instant::now();
    let mut peers = Vec::new();
    while let Some(done) = asking.join_next().await {
        let Ok((peer, client, view)) = done else {
            continue;
        };
        clients.insert(peer.clone(), client);
        let mut peer_state = PeerState {
            peer: peer.clone(),
            unreachable: None,
            is_self: false,
            compares_versions: false,
        };
        match view {
            Ok(view) => {
                if let Some(why) = failing.remove(&peer) {
                    tracing::info!(%peer, "peer check: the peer answers again (it failed: {why})");
                }
                peer_state.is_self = view.is_self;
                peer_state.compares_versions = view.versions.is_some();
                let found = if view.is_self {
                    Vec::new()
                } else {
                    differences(&ours, &view)
                };
                tracker.observe(&peer, found, now);
            }
            Err(e) => {
                let why = e.to_string();
                if !failing.contains_key(&peer) {
                    tracing::warn!(%peer, "peer check: cannot ask the peer: {why}");
                }
                failing.insert(peer.clone(), why.clone());
                peer_state.unreachable = Some(why);
                tracker.forget(&peer);
            }
        }
        peers.push(peer_state);
    }
    peers.sort_by(|a, b| a.peer.cmp(&b.peer));
    tracker.retain_peers(&settings.peers);
    let divergent = tracker.report(now, settings.divergence_after);
    state.set_peer_report(PeerReport { peers, divergent });
}
