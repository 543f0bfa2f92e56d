//! What the controller needs from its replicated log, as a trait: the handlers, scans and
//! status page speak to [`Consensus`], and `super::raft` implements it on openraft. Proposals
//! carry events decided on the leader; every node applies them to its [`SharedMachine`] in log
//! order.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::watch;

use super::machine::{Event, Machine};

/// The applied state every node keeps: written only by the consensus layer's apply, read by
/// the handlers.
pub type SharedMachine = Arc<parking_lot::RwLock<Machine>>;

/// A boxed future of the consensus layer.
pub type ConsensusFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Why a proposal or a read barrier did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsensusError {
    /// This node is not (or no longer) the leader.
    #[error("The controller is not in leader state")]
    NotLeader,
    /// The log could not take the entry (storage failed, the node is shutting down, …).
    #[error("{0}")]
    Failed(String),
}

/// One peer of the group as this node sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerStatus {
    /// Its `controllerDLegerPeers` id (`n1`).
    pub id: String,
    /// Its address.
    pub addr: String,
    /// Accepted the leader's appends within the read lease (`None` when this node is not
    /// the raft leader).
    pub reachable: Option<bool>,
    /// The last log index the leader knows it holds.
    pub matched: Option<u64>,
}

/// The group as this node sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupStatus {
    /// This node's id.
    pub self_id: String,
    /// The leader's id, when one is known.
    pub leader_id: Option<String>,
    /// This node leads and a quorum accepted its appends within the read lease (may be true
    /// slightly before `leader_ready`); a leader cut off from its quorum does not lead.
    pub is_leader: bool,
    /// This node leads and has applied an entry of its own term, so its state is current:
    /// only then does it answer leader-only requests (DLedger's role handler reaching LEADER).
    pub leader_ready: bool,
    /// The current term.
    pub term: u64,
    /// The last log index known committed.
    pub committed: Option<u64>,
    /// The last log index applied to the machine.
    pub applied: Option<u64>,
    /// The last log index held.
    pub last_log: Option<u64>,
    /// The last index covered by the newest snapshot.
    pub snapshot: Option<u64>,
    /// Every peer, this node included, in `controllerDLegerPeers` order.
    pub peers: Vec<PeerStatus>,
}

/// The replicated log the controller proposes to.
pub trait Consensus: Send + Sync + 'static {
    /// Appends `events` as one entry; resolves once it is committed and applied to this
    /// node's machine. Refused with [`ConsensusError::NotLeader`] on a follower.
    fn propose(&self, events: Vec<Event>) -> ConsensusFuture<Result<(), ConsensusError>>;

    /// Resolves once this node has confirmed it still leads and has applied everything
    /// committed before the call (a read index): reads after it are not stale.
    fn barrier(&self) -> ConsensusFuture<Result<(), ConsensusError>>;

    /// The group now.
    fn status(&self) -> GroupStatus;

    /// Every change of [`GroupStatus`] (leadership, term, indexes).
    fn watch(&self) -> watch::Receiver<GroupStatus>;

    /// Serves one peer RPC that arrived on the controller port (a request code of the
    /// consensus layer's own range, its body); resolves to the answer's body.
    fn serve_peer(&self, code: i32, body: Bytes) -> ConsensusFuture<Result<Bytes, ConsensusError>>;

    /// Stops taking part in the group (on shutdown).
    fn shutdown(&self) -> ConsensusFuture<()>;
}
