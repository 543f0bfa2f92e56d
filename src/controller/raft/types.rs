//! The openraft type configuration of the controller's group, and the mapping between
//! Java's peer ids (`n0`, `n1`, …) and openraft's numeric node ids.

use std::collections::BTreeMap;
use std::io::Cursor;

use openraft::BasicNode;

use super::super::machine::Event;
use super::super::settings::ControllerSettings;

openraft::declare_raft_types!(
    /// The controller group's types: a log entry carries one proposal, the events a leader
    /// decided together (an empty one is a no-op barrier); applying it answers nothing.
    pub(crate) TypeConfig:
        D = Vec<Event>,
        R = (),
        NodeId = u64,
        Node = BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);

/// openraft's numeric id of a node.
pub(crate) type NodeId = u64;
/// One log entry.
pub(crate) type Entry = openraft::Entry<TypeConfig>;
/// A log position.
pub(crate) type LogId = openraft::LogId<NodeId>;
/// A vote.
pub(crate) type Vote = openraft::Vote<NodeId>;
/// The membership stored with a log position.
pub(crate) type StoredMembership = openraft::StoredMembership<NodeId, BasicNode>;
/// A snapshot's metadata.
pub(crate) type SnapshotMeta = openraft::SnapshotMeta<NodeId, BasicNode>;
/// A storage failure as openraft takes it.
pub(crate) type StorageError = openraft::StorageError<NodeId>;

/// The numeric id of the peer named `id`: the first 64 bits of its XXH3 hash. A hash of the
/// name alone, not its position in the list, so adding, removing or reordering peers in
/// `controllerDLegerPeers` never renumbers a node whose vote and log are already on disk.
/// Two names colliding is refused at start ([`Members::new`]).
pub(crate) fn node_id(peer_id: &str) -> NodeId {
    xxhash_rust::xxh3::xxh3_64(peer_id.as_bytes())
}

/// The group's members: each peer's numeric id, Java id and address.
#[derive(Debug, Clone)]
pub(crate) struct Members {
    /// `(node id, peer id, address)` in `controllerDLegerPeers` order.
    peers: Vec<(NodeId, String, String)>,
    /// This node's numeric id.
    pub(crate) self_node: NodeId,
}

impl Members {
    /// The members of `settings`, or why they cannot form a group (no peers, an unknown
    /// self id, a repeated id or two ids of one hash).
    pub(crate) fn new(settings: &ControllerSettings) -> Result<Members, String> {
        if settings.peers.is_empty() {
            return Err("controllerDLegerPeers is empty".to_owned());
        }
        let mut seen = BTreeMap::new();
        let mut peers = Vec::with_capacity(settings.peers.len());
        for peer in &settings.peers {
            let id = node_id(&peer.id);
            if let Some(other) = seen.insert(id, peer.id.clone()) {
                return Err(format!(
                    "peers {other:?} and {:?} cannot both be in one group",
                    peer.id
                ));
            }
            peers.push((id, peer.id.clone(), peer.addr.clone()));
        }
        let self_peer = settings.self_peer().ok_or_else(|| {
            format!(
                "controllerDLegerSelfId {:?} is not among controllerDLegerPeers",
                settings.self_id
            )
        })?;
        Ok(Members {
            peers,
            self_node: node_id(&self_peer.id),
        })
    }

    /// The membership to initialise a new group with: every peer a voter.
    pub(crate) fn initial(&self) -> BTreeMap<NodeId, BasicNode> {
        self.peers
            .iter()
            .map(|(id, _, addr)| (*id, BasicNode::new(addr)))
            .collect()
    }

    /// The Java id of node `id`, if it is a member.
    pub(crate) fn peer_id(&self, id: NodeId) -> Option<&str> {
        self.peers
            .iter()
            .find(|(n, _, _)| *n == id)
            .map(|(_, p, _)| p.as_str())
    }

    /// Every member as `(node id, peer id, address)`, in configuration order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &(NodeId, String, String)> {
        self.peers.iter()
    }
}
