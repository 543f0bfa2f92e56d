//! The controller's consensus on openraft 0.9: log and vote storage (`log_store`, in the
//! record format of `log_file`), the state machine and its raft snapshots (`state_machine`),
//! peer transport over the remoting codec (`network`, bodies as `wire` lays them out), and
//! the [`super::Consensus`] implementation (`node`). The only place that knows openraft.
//!
//! A node keeps everything under `<controllerStorePath>/raft-<selfId>/`. The group is the
//! peers of `controllerDLegerPeers`; on a first start (no vote, no log) each node
//! initialises that membership itself, which openraft allows on every member at once, so one
//! set of keys starts a one-node or a three-node group alike.

mod log_file;
mod log_store;
mod network;
mod node;
mod state_machine;
mod types;
mod wire;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use openraft::{Raft, SnapshotPolicy};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::consensus::{Consensus, SharedMachine};
use super::settings::ControllerSettings;
use log_store::LogStore;
use network::Network;
#[cfg(test)]
pub(crate) use network::PeerTransport;
use node::Node;
use state_machine::MachineStore;
use types::Members;
#[cfg(test)]
pub(crate) use types::{NodeId, node_id};

/// Request codes of peer traffic on the controller port (not Java's: a Rust controller
/// cannot join a DLedger group, and need not).
pub mod code {
    /// openraft AppendEntries.
    pub const RAFT_APPEND_ENTRIES: i32 = 51200;
    /// openraft Vote.
    pub const RAFT_VOTE: i32 = 51201;
    /// openraft InstallSnapshot.
    pub const RAFT_INSTALL_SNAPSHOT: i32 = 51202;
}

/// Why the node could not join its group.
#[derive(Debug, thiserror::Error)]
#[error("controller raft: {0}")]
pub struct StartError(pub String);

/// The group's timings and log policy.
#[derive(Debug, Clone)]
pub(crate) struct Tuning {
    /// How often a leader sends heartbeats; also openraft's deadline for one AppendEntries.
    pub(crate) heartbeat: Duration,
    /// The shortest election timeout.
    pub(crate) election_min: Duration,
    /// The longest election timeout, which is also openraft's leader lease.
    pub(crate) election_max: Duration,
    /// A snapshot is taken after this many entries since the last.
    pub(crate) snapshot_every: u64,
    /// Entries kept in the log behind the snapshot, so a briefly lagging follower catches up
    /// from the log instead of a snapshot.
    pub(crate) keep_behind_snapshot: u64,
}

impl Default for Tuning {
    /// Fast failover: a follower stands for election 1.4–1.8 s after the leader's last
    /// heartbeat (openraft waits the lease, 900 ms, plus a random 500–900 ms timeout), so a
    /// new leader commits within about 2 s of a `kill -9` (DLedger: about 7 s); a leader
    /// is deposed only after 6 heartbeats are lost.
    fn default() -> Self {
        Tuning {
            heartbeat: Duration::from_millis(150),
            election_min: Duration::from_millis(500),
            election_max: Duration::from_millis(900),
            snapshot_every: 2000,
            keep_behind_snapshot: 500,
        }
    }
}

impl Tuning {
    fn config(&self, group: &str) -> Result<openraft::Config, StartError> {
        let millis = |d: Duration| d.as_millis() as u64;
        let config = openraft::Config {
            cluster_name: group.to_owned(),
            heartbeat_interval: millis(self.heartbeat),
            election_timeout_min: millis(self.election_min),
            election_timeout_max: millis(self.election_max),
            // A snapshot chunk (up to the default 3 MiB) may take longer than a heartbeat.
            install_snapshot_timeout: 5_000,
            snapshot_policy: SnapshotPolicy::LogsSinceLast(self.snapshot_every),
            max_in_snapshot_log_to_keep: self.keep_behind_snapshot,
            replication_lag_threshold: self.snapshot_every + self.keep_behind_snapshot,
            ..openraft::Config::default()
        };
        config
            .validate()
            .map_err(|e| StartError(format!("raft timings: {e}")))
    }
}

/// Opens this node's raft storage under `settings.store_path`, restores `machine` from its
/// snapshot and log, and joins the group of `settings.peers` (peer connections use TLS with
/// `tls` when it is set).
pub async fn start(
    settings: &ControllerSettings,
    machine: SharedMachine,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<Arc<dyn Consensus>, StartError> {
    let node = start_node(settings, machine, tls, &Tuning::default()).await?;
    Ok(Arc::new(node))
}

/// [`start`] with explicit timings (tests use short ones).
pub(crate) async fn start_node(
    settings: &ControllerSettings,
    machine: SharedMachine,
    tls: Option<Arc<rustls::ClientConfig>>,
    tuning: &Tuning,
) -> Result<Node, StartError> {
    start_node_on(settings, machine, Network::new(tls), tuning).await
}

/// A node whose peer calls go through `transport` (the simulation's network), with `tuning`.
#[cfg(test)]
pub(crate) async fn start_over(
    settings: &ControllerSettings,
    machine: SharedMachine,
    transport: Arc<dyn PeerTransport>,
    tuning: &Tuning,
) -> Result<Arc<dyn Consensus>, StartError> {
    let node = start_node_on(settings, machine, Network::over(transport), tuning).await?;
    Ok(Arc::new(node))
}

/// The events of every committed entry in the store of `settings`' node, in log order, with
/// the entry's index (the simulation's checker reads them after the nodes stopped). Fails if
/// the log was compacted, since the events before the snapshot are gone.
#[cfg(test)]
pub(crate) async fn committed_events(
    settings: &ControllerSettings,
) -> std::io::Result<Vec<(u64, Vec<super::machine::Event>)>> {
    use openraft::RaftLogReader;
    let dir = settings
        .store_path
        .join(format!("raft-{}", settings.self_id));
    let mut log = LogStore::open(&dir)?;
    if log.indexes().0.is_some() {
        return Err(std::io::Error::other("the log was compacted"));
    }
    let Some(committed) = log.committed() else {
        return Ok(Vec::new());
    };
    let entries = log
        .try_get_log_entries(..=committed.index)
        .await
        .map_err(std::io::Error::other)?;
    let events = entries.into_iter().filter_map(|e| match e.payload {
        openraft::EntryPayload::Normal(events) => Some((e.log_id.index, events)),
        _ => None,
    });
    Ok(events.collect())
}

/// [`start_node`] on `network`.
async fn start_node_on(
    settings: &ControllerSettings,
    machine: SharedMachine,
    network: Network,
    tuning: &Tuning,
) -> Result<Node, StartError> {
    let members = Members::new(settings).map_err(StartError)?;
    let dir = settings
        .store_path
        .join(format!("raft-{}", settings.self_id));
    let opened =
        |what: &str, e: std::io::Error| StartError(format!("{what} in {}: {e}", dir.display()));
    let log = LogStore::open(&dir).map_err(|e| opened("log", e))?;
    let sm = MachineStore::open(&dir, machine).map_err(|e| opened("snapshot", e))?;
    let config = Arc::new(tuning.config(&settings.group)?);
    let raft = Raft::new(members.self_node, config, network.clone(), log.clone(), sm)
        .await
        .map_err(|e| StartError(format!("raft did not start: {e}")))?;
    let initialized = raft
        .is_initialized()
        .await
        .map_err(|e| StartError(e.to_string()))?;
    if !initialized {
        // Every member does this on its first start; openraft settles the identical
        // memberships, and a node that already heard a leader refuses with NotAllowed.
        if let Err(e) = raft.initialize(members.initial()).await {
            tracing::info!("controller raft: membership not initialised here: {e}");
        }
    }
    let node = Node {
        raft,
        members: Arc::new(members),
        network,
        log,
        lease: tuning.election_max,
        read_lease: tuning.election_min,
        status: Arc::new(watch::channel(Default::default()).0),
        stop: CancellationToken::new(),
    };
    node.status.send_replace(node.current_status());
    node.publish_status();
    Ok(node)
}
