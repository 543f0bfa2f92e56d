//! The three controller nodes of a run: each the real [`Controller`] over a real openraft
//! node on its real file store, its peer calls on the [`SimNet`]. A crash takes the node off
//! the network, stops its services and its raft core, and drops both; a restart builds them
//! again from the store, as a `kill -9` and a new process would. Client requests reach a node
//! through the controller's request table, exactly as the controller port dispatches them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::net::SimNet;
use crate::controller::raft::{self, Tuning, node_id};
use crate::controller::{Controller, ControllerSettings, Peer, SharedMachine};
use crate::state::Namesrv;

mod port_tests;

/// How many controller nodes a run has.
pub(super) const NODES: usize = 3;

/// The controller timings of the simulation (brokers send a 3 s heartbeat timeout).
pub(super) fn settings(dir: &std::path::Path, i: usize) -> ControllerSettings {
    let peers = (0..NODES)
        .map(|j| Peer {
            id: format!("n{j}"),
            addr: format!("10.0.0.{j}:9878"),
        })
        .collect();
    ControllerSettings {
        peers,
        self_id: format!("n{i}"),
        store_path: dir.join(format!("n{i}")),
        config_store_path: dir.join(format!("n{i}/controller.properties")),
        scan_not_active_broker_interval: Duration::from_secs(1),
        scan_inactive_master_interval: Duration::from_secs(2),
        // No sockets in the simulation: brokers learn roles by GET_REPLICA_INFO.
        notify_broker_role_changed: false,
        ..ControllerSettings::default()
    }
}

/// The raft timings of the simulation: production's, and no snapshots, so the whole log
/// stays readable for the checker.
pub(super) fn tuning() -> Tuning {
    Tuning {
        snapshot_every: 1_000_000,
        ..Tuning::default()
    }
}

/// One running node.
struct Running {
    controller: Controller,
    machine: SharedMachine,
    state: Namesrv,
    cancel: CancellationToken,
}

/// The group.
pub(super) struct Cluster {
    pub(super) dir: PathBuf,
    pub(super) net: Arc<SimNet>,
    /// `processReadEvent` on every node.
    read_barrier: bool,
    nodes: Mutex<Vec<Option<Arc<Running>>>>,
}

impl Cluster {
    /// A new group storing under `dir`; no node runs yet.
    pub(super) fn new(dir: PathBuf, seed: u64, read_barrier: bool) -> Arc<Cluster> {
        let ids = (0..NODES).map(|i| node_id(&format!("n{i}"))).collect();
        Arc::new(Cluster {
            dir,
            net: SimNet::new(seed, ids),
            read_barrier,
            nodes: Mutex::new(vec![None; NODES]),
        })
    }

    /// Starts node `i` from its store.
    pub(super) async fn start(&self, i: usize) {
        let settings = ControllerSettings {
            process_read_event: self.read_barrier,
            ..settings(&self.dir, i)
        };
        let machine = SharedMachine::default();
        let transport = self.net.transport(i);
        let consensus = raft::start_over(&settings, machine.clone(), transport, &tuning())
            .await
            .expect("a simulated node starts");
        let controller =
            Controller::with_consensus(settings, machine.clone(), consensus.clone(), None);
        let cancel = CancellationToken::new();
        for service in controller.services() {
            tokio::spawn(service.run(cancel.child_token()));
        }
        let state = Namesrv::in_dir(&self.dir.join(format!("ns{i}")));
        self.net.set_consensus(i, Some(consensus));
        self.net.update(|f| {
            f.down.remove(&i);
        });
        self.nodes.lock()[i] = Some(Arc::new(Running {
            controller,
            machine,
            state,
            cancel,
        }));
    }

    /// Crashes node `i`: off the network at once, then its services and raft core stop.
    pub(super) async fn crash(&self, i: usize) {
        self.net.update(|f| {
            f.down.insert(i);
        });
        self.net.set_consensus(i, None);
        let Some(node) = self.nodes.lock()[i].take() else {
            return;
        };
        node.cancel.cancel();
        node.controller.consensus().shutdown().await;
    }

    pub(super) fn is_up(&self, i: usize) -> bool {
        self.nodes.lock()[i].is_some()
    }

    /// Node `i`'s controller, when it runs.
    pub(super) fn controller(&self, i: usize) -> Option<Controller> {
        self.nodes.lock()[i].as_ref().map(|n| n.controller.clone())
    }

    /// Node `i`'s applied machine, when it runs.
    pub(super) fn machine(&self, i: usize) -> Option<SharedMachine> {
        self.nodes.lock()[i].as_ref().map(|n| n.machine.clone())
    }

    /// The ready leader of the highest term (a cut-off old leader may still believe it
    /// leads a lower one).
    pub(super) fn leader(&self) -> Option<usize> {
        let ready = (0..NODES).filter_map(|i| {
            let status = self.controller(i)?.consensus().status();
            status.leader_ready.then_some((status.term, i))
        });
        ready.max().map(|(_, i)| i)
    }

    /// Stops every node (the end of a run).
    pub(super) async fn stop_all(&self) {
        for i in 0..NODES {
            self.crash(i).await;
        }
    }
}
