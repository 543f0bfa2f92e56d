//! What this node knows about its peers: its own identity among them, and the latest report
//! of the peer checks (`crate::peers`), shared so that GET_NAMESRV_CONFIG (and the metrics)
//! can show it.
//!
//! Peers recognise each other through QUERY_DATA_VERSION requests carrying
//! `PEER_CHECK_FIELD`: this server answers them without counting them as the broker's
//! heartbeat (a check must never keep a dead broker alive) and names its node in
//! `NODE_FIELD`. Other name servers ignore the field, and do count the request as a
//! heartbeat, which is why the checks never ask them for data versions.

use std::hash::BuildHasher;

use tokio::time::Instant;

use super::Namesrv;

/// Ext field of a peer's QUERY_DATA_VERSION: the asking node's id.
pub(crate) const PEER_CHECK_FIELD: &str = "namesrvPeerCheck";
/// Ext field of the answer: the answering node's id.
pub(crate) const NODE_FIELD: &str = "namesrvNode";
/// GET_NAMESRV_CONFIG status line: brokers registered here that a peer lacks or holds at an
/// older data version, for longer than `peerDivergenceAfterMillis`.
pub(crate) const DIVERGENT_KEY: &str = "namesrvPeersDivergentBrokers";
/// GET_NAMESRV_CONFIG status line: peers that could not be asked in the last round.
pub(crate) const UNREACHABLE_KEY: &str = "namesrvPeersUnreachable";

/// How a peer's view of a broker differs from this node's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Difference {
    /// The peer does not list the broker.
    Missing,
    /// The peer holds an older data version of it.
    OlderVersion,
}

/// One broker this node has and a peer does not have the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The peer.
    pub peer: String,
    /// The broker group.
    pub broker_name: String,
    /// The broker's address.
    pub(crate) broker_addr: String,
    /// How it differs.
    pub difference: Difference,
    /// When the difference was first seen (it has lasted since).
    pub(crate) since: Instant,
}

/// One peer as the last round saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerState {
    /// The peer's address, as configured.
    pub peer: String,
    /// Why it could not be asked, if it could not.
    pub unreachable: Option<String>,
    /// Whether it is this node itself (it is then not compared).
    pub is_self: bool,
    /// Whether its data versions are compared (only a peer of this implementation's).
    pub compares_versions: bool,
}

/// The latest report of the peer checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerReport {
    /// Every configured peer.
    pub peers: Vec<PeerState>,
    /// Divergences that lasted longer than `peerDivergenceAfterMillis`.
    pub divergent: Vec<Divergence>,
}

impl PeerReport {
    /// The GET_NAMESRV_CONFIG status lines (none while everything agrees).
    pub(crate) fn status_lines(&self) -> Vec<(String, String)> {
        let unreachable = self
            .peers
            .iter()
            .filter(|p| p.unreachable.is_some())
            .count();
        let mut lines = Vec::new();
        if !self.divergent.is_empty() {
            lines.push((DIVERGENT_KEY.to_owned(), self.divergent.len().to_string()));
        }
        if unreachable > 0 {
            lines.push((UNREACHABLE_KEY.to_owned(), unreachable.to_string()));
        }
        lines
    }
}

/// A node id: random per process and per [`Namesrv`], so that servers sharing a process (in
/// tests) still tell each other apart.
pub(super) fn new_node_id() -> u64 {
    std::collections::hash_map::RandomState::new().hash_one(std::process::id())
}

impl Namesrv {
    /// This node's id among its peers.
    pub(crate) fn node_id(&self) -> u64 {
        self.inner.peering.node_id
    }

    /// The latest report of the peer checks.
    pub fn peer_report(&self) -> PeerReport {
        self.inner.peering.report.lock().clone()
    }

    /// Replaces the report of the peer checks.
    pub(crate) fn set_peer_report(&self, report: PeerReport) {
        *self.inner.peering.report.lock() = report;
    }
}

/// The peer-related part of the shared state.
#[derive(Debug)]
pub(super) struct Peering {
    node_id: u64,
    report: parking_lot::Mutex<PeerReport>,
}

impl Peering {
    pub(super) fn new() -> Peering {
        Peering {
            node_id: new_node_id(),
            report: parking_lot::Mutex::new(PeerReport::default()),
        }
    }
}
