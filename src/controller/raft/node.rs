//! One running member of the group: the [`Consensus`] the controller proposes to, over an
//! openraft `Raft`, its stores and its network. Also the one policy this layer adds to
//! openraft: a leader that a quorum acknowledged within the leader lease refuses votes, so a
//! node that cannot hear it (the asymmetric partition of apache/rocketmq#4800) cannot depose
//! it — openraft 0.9's own lease only protects followers that still hear the leader, not the
//! leader itself.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openraft::error::{CheckIsLeaderError, ClientWriteError, RaftError};
use openraft::raft::VoteRequest;
use openraft::raft::VoteResponse;
use openraft::{Raft, RaftMetrics, ServerState};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::consensus::{
    Consensus, ConsensusError, ConsensusFuture, GroupStatus, PeerStatus,
};
use super::super::machine::Event;
use super::code;
use super::log_store::LogStore;
use super::network::Network;
use super::types::{Members, NodeId, TypeConfig};
use super::wire;

/// How often the published [`GroupStatus`] is refreshed even without a raft change (peers'
/// reachability ages with time alone).
const STATUS_REFRESH: Duration = Duration::from_millis(500);

/// A member of the group; cheap to clone.
#[derive(Clone)]
pub(crate) struct Node {
    pub(crate) raft: Raft<TypeConfig>,
    pub(crate) members: Arc<Members>,
    pub(crate) network: Network,
    pub(crate) log: LogStore,
    /// openraft's leader lease (its maximal election timeout).
    pub(crate) lease: Duration,
    /// How recently a quorum must have accepted this leader's appends for it to answer as
    /// leader: the shortest election timeout, within which no follower that accepted an
    /// append votes for anyone else, so no other leader can exist yet.
    pub(crate) read_lease: Duration,
    pub(crate) status: Arc<watch::Sender<GroupStatus>>,
    pub(crate) stop: CancellationToken,
}

/// One line per change of who leads (openraft's own narration is filtered to warnings).
fn log_leadership(before: &GroupStatus, now: &GroupStatus) {
    if (before.leader_id.as_ref(), before.leader_ready)
        == (now.leader_id.as_ref(), now.leader_ready)
    {
        return;
    }
    match &now.leader_id {
        Some(leader) => tracing::info!(
            leader = %leader,
            term = now.term,
            this_node_leads = now.leader_ready,
            "controller leader known"
        ),
        None => tracing::warn!(term = now.term, "controller group has no leader"),
    }
}

impl Node {
    /// Publishes the group's status on every raft change, and every [`STATUS_REFRESH`],
    /// until the node stops. The task ends with the raft core (its metrics close) or with
    /// [`Consensus::shutdown`].
    pub(crate) fn publish_status(&self) {
        let node = self.clone();
        tokio::spawn(async move {
            let mut metrics = node.raft.metrics();
            let mut refresh = tokio::time::interval(STATUS_REFRESH);
            refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let core_quit = tokio::select! {
                    _ = node.stop.cancelled() => break,
                    changed = metrics.changed() => changed.is_err(),
                    _ = refresh.tick() => false,
                };
                if core_quit {
                    tracing::error!(
                        "controller raft: the consensus core stopped (a failed log write?); this node takes no part in the group until it is restarted"
                    );
                }
                node.status.send_if_modified(|status| {
                    let now = node.current_status();
                    let changed = *status != now;
                    log_leadership(status, &now);
                    *status = now;
                    changed
                });
                if core_quit {
                    break;
                }
            }
        });
    }

    /// The group now, from openraft's metrics. A node whose raft core quit (its metrics
    /// closed) leads nothing, whatever its last metrics said.
    pub(crate) fn current_status(&self) -> GroupStatus {
        let metrics = self.raft.metrics();
        let core_alive = metrics.has_changed().is_ok();
        let metrics = metrics.borrow();
        group_status(&metrics, self, core_alive, Instant::now())
    }

    fn heard_lately(&self, peer: NodeId, now: Instant) -> bool {
        self.network
            .appended(peer)
            .is_some_and(|sent| now.saturating_duration_since(sent) < self.read_lease)
    }

    /// The answer to a vote request this leader refuses without asking openraft: it leads
    /// and a quorum acknowledged it within the lease, so the candidate is one that cannot
    /// hear it, not a replacement the group needs.
    fn refusal(&self, req: &VoteRequest<NodeId>) -> Option<VoteResponse<NodeId>> {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        let lease_ms = self.lease.as_millis() as u64;
        let leads_a_quorum = metrics.state == ServerState::Leader
            && metrics
                .millis_since_quorum_ack
                .is_some_and(|ms| ms < lease_ms);
        if !leads_a_quorum || req.vote.leader_id.node_id == self.members.self_node {
            return None;
        }
        tracing::info!(
            candidate = req.vote.leader_id.node_id,
            term = req.vote.leader_id.term,
            "controller raft: vote refused, this leader still reaches a quorum"
        );
        Some(VoteResponse::new(
            metrics.vote,
            self.log.last_log_id(),
            false,
        ))
    }

    async fn serve(self, code: i32, body: Bytes) -> Result<Bytes, ConsensusError> {
        let bad = |why: String| ConsensusError::Failed(format!("bad raft request: {why}"));
        let answer = match code {
            code::RAFT_APPEND_ENTRIES => {
                let req = wire::from_json(&body).map_err(bad)?;
                wire::to_json(&self.raft.append_entries(req).await)
            }
            code::RAFT_VOTE => {
                let req: VoteRequest<NodeId> = wire::from_json(&body).map_err(bad)?;
                match self.refusal(&req) {
                    Some(refused) => wire::to_json(&Ok::<_, RaftError<NodeId>>(refused)),
                    None => wire::to_json(&self.raft.vote(req).await),
                }
            }
            code::RAFT_INSTALL_SNAPSHOT => {
                let req = wire::parse_snapshot_chunk(&body).map_err(bad)?;
                wire::to_json(&self.raft.install_snapshot(req).await)
            }
            other => return Err(bad(format!("unknown code {other}"))),
        };
        Ok(Bytes::from(answer))
    }
}

/// The [`GroupStatus`] `metrics` describe, at `now`. openraft 0.9 keeps a leader that lost
/// its quorum in the leader state; here such a node does not lead (no leader named, 2007 to
/// leader-only requests), so brokers that follow whichever node names a leader are not led
/// to one that can commit nothing and answers from a state others may have moved past.
fn group_status(
    metrics: &RaftMetrics<NodeId, openraft::BasicNode>,
    node: &Node,
    core_alive: bool,
    now: Instant,
) -> GroupStatus {
    let members = &node.members;
    let name = |id: NodeId| members.peer_id(id).map(str::to_owned);
    let raft_leader = core_alive && metrics.state == ServerState::Leader;
    let term = metrics.current_term;
    let replication = metrics.replication.as_ref();
    let peers: Vec<PeerStatus> = members
        .iter()
        .map(|&(id, ref peer, ref addr)| {
            let reachable =
                raft_leader.then(|| id == members.self_node || node.heard_lately(id, now));
            let matched = replication.and_then(|r| r.get(&id).copied().flatten().map(|l| l.index));
            PeerStatus {
                id: peer.clone(),
                addr: addr.clone(),
                reachable,
                matched,
            }
        })
        .collect();
    // A leader leads while a quorum (itself included) accepted its appends within the lease.
    let heard = peers.iter().filter(|p| p.reachable == Some(true)).count();
    let is_leader = raft_leader && heard * 2 > peers.len();
    // A quit core, or a raft leader without its quorum, names no leader.
    let names_leader = core_alive && (is_leader || !raft_leader);
    GroupStatus {
        self_id: name(members.self_node).unwrap_or_default(),
        leader_id: names_leader
            .then(|| metrics.current_leader.and_then(name))
            .flatten(),
        is_leader,
        // openraft appends a blank entry at the start of each term: once it is applied here,
        // everything committed before this leader is in the machine too.
        leader_ready: is_leader
            && metrics
                .last_applied
                .is_some_and(|id| id.leader_id.term == term),
        term,
        committed: node.log.committed().map(|id| id.index),
        applied: metrics.last_applied.map(|id| id.index),
        last_log: metrics.last_log_index,
        snapshot: metrics.snapshot.map(|id| id.index),
        peers,
    }
}

impl Consensus for Node {
    fn propose(&self, events: Vec<Event>) -> ConsensusFuture<Result<(), ConsensusError>> {
        let raft = self.raft.clone();
        Box::pin(async move {
            match raft.client_write(events).await {
                Ok(_) => Ok(()),
                Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_))) => {
                    Err(ConsensusError::NotLeader)
                }
                Err(e) => Err(ConsensusError::Failed(e.to_string())),
            }
        })
    }

    fn barrier(&self) -> ConsensusFuture<Result<(), ConsensusError>> {
        let raft = self.raft.clone();
        Box::pin(async move {
            match raft.ensure_linearizable().await {
                Ok(_) => Ok(()),
                // Leadership that cannot be confirmed by a quorum is no leadership to answer
                // from: the caller answers as a follower would.
                Err(RaftError::APIError(
                    CheckIsLeaderError::ForwardToLeader(_) | CheckIsLeaderError::QuorumNotEnough(_),
                )) => Err(ConsensusError::NotLeader),
                Err(e) => Err(ConsensusError::Failed(e.to_string())),
            }
        })
    }

    fn status(&self) -> GroupStatus {
        self.current_status()
    }

    fn watch(&self) -> watch::Receiver<GroupStatus> {
        self.status.subscribe()
    }

    fn serve_peer(&self, code: i32, body: Bytes) -> ConsensusFuture<Result<Bytes, ConsensusError>> {
        Box::pin(self.clone().serve(code, body))
    }

    fn shutdown(&self) -> ConsensusFuture<()> {
        let node = self.clone();
        Box::pin(async move {
            node.stop.cancel();
            if let Err(e) = node.raft.shutdown().await {
                tracing::warn!("controller raft: shutdown: {e}");
            }
        })
    }
}
