//! The RocketMQ 5 controller (RIP-44 automatic master election), a second service beside the
//! name server. It owns the broker sets' replica ids, sync-state sets, master epochs and the
//! election policy (`machine`, pure and synchronous), their replication on openraft (`raft`,
//! the only place that knows openraft), the per-node broker liveness table fed by heartbeats
//! and closed channels (`liveness`), the scans that turn a dead master into an election
//! (`heartbeat`), the role-change notifications to brokers (`notify`) and the election
//! history (`elections`). Handlers (`crate::handlers::controller`) hand their decision to the
//! handle's leader-only flow (`leader`), which decides on the leader and proposes the
//! decision as events; every node applies the same events in log order. The controller never
//! reads the route table and the name server never reads the controller's state: the binary
//! composes the two.

mod background;
pub use crate::protocol::controller_code as code;
pub mod consensus;
pub mod elections;
mod heartbeat;
pub(crate) mod leader;
pub(crate) mod liveness;
#[cfg(test)]
pub(crate) mod local;
pub mod machine;
pub(crate) mod notify;
pub mod raft;
pub mod settings;
#[cfg(test)]
mod sim;
mod status;
#[cfg(test)]
mod tests;

pub use background::{Background, BackgroundFuture};
pub use consensus::{Consensus, ConsensusError, GroupStatus, SharedMachine};
pub use leader::LeadError;
pub use raft::StartError;
pub use settings::{ControllerSettings, Peer};
pub use status::{BrokerSetStatus, ControllerStatus, ReplicaStatus};

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use tokio::sync::mpsc;
use tokio::time::Instant;

use self::elections::{ElectionReason, Elections};
use self::liveness::{BrokerKey, Heartbeat, Liveness};
use self::machine::decide::Flags;
use crate::state::ConnId;

/// The controller's one handle: cheap to clone, shared by its listener's connections, its
/// background services and the status page.
#[derive(Clone)]
pub struct Controller {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("self_id", &self.inner.settings.read().self_id)
            .finish_non_exhaustive()
    }
}

/// A replica that stopped being alive on this node: the input of a controller-triggered
/// election (Java's `onBrokerInactive`).
#[derive(Debug, Clone)]
pub(crate) struct Inactive {
    /// The set.
    pub(crate) broker_name: String,
    /// The replica, or `None` for "the set's recorded master" (the inactive-master scan).
    pub(crate) broker_id: Option<machine::BrokerId>,
    /// Why it is considered dead.
    pub(crate) reason: ElectionReason,
    /// When it was noticed (a failover is timed from here).
    pub(crate) detected: Instant,
}

struct Inner {
    /// Read by every decision (runtime keys), replaced by UPDATE_CONTROLLER_CONFIG; a
    /// `RwLock` because reads vastly outnumber the rare update and none is held across an
    /// await.
    settings: RwLock<ControllerSettings>,
    /// The applied state; written only by the consensus layer's apply.
    machine: SharedMachine,
    consensus: Arc<dyn Consensus>,
    /// This node's broker liveness: a `Mutex` because every heartbeat writes it; held for
    /// one table operation only.
    liveness: Mutex<Liveness>,
    /// Leader work runs one at a time, as DLedger's single event thread: each decision sees
    /// the state the previous one committed. A tokio mutex, held across the commit wait.
    scheduler: tokio::sync::Mutex<()>,
    /// The election history; held for one record or one read.
    elections: Mutex<Elections>,
    heartbeats: AtomicU64,
    inactive: mpsc::UnboundedSender<Inactive>,
    notices: notify::NoticeSender,
    /// The receiving ends, taken by [`Controller::services`].
    receivers: Mutex<Option<Receivers>>,
    /// TLS of the notification dials.
    tls: Option<Arc<rustls::ClientConfig>>,
}

struct Receivers {
    inactive: mpsc::UnboundedReceiver<Inactive>,
    notices: mpsc::UnboundedReceiver<notify::Notice>,
}

impl Controller {
    /// Starts this node: an empty machine, restored and replicated by the raft layer, which
    /// joins the group of `settings.peers` (TLS with `tls` on peer and notification dials).
    pub async fn start(
        settings: ControllerSettings,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Controller, StartError> {
        let machine = SharedMachine::default();
        let consensus = raft::start(&settings, machine.clone(), tls.clone()).await?;
        Ok(Controller::with_consensus(
            settings, machine, consensus, tls,
        ))
    }

    /// A node over `consensus`, which applies to `machine` (the raft layer's, from
    /// [`Controller::start`]; a test's in-memory log).
    pub fn with_consensus(
        settings: ControllerSettings,
        machine: SharedMachine,
        consensus: Arc<dyn Consensus>,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Controller {
        let (inactive, inactive_rx) = mpsc::unbounded_channel();
        let (notices, notices_rx) = mpsc::unbounded_channel();
        let inner = Inner {
            settings: RwLock::new(settings),
            machine,
            consensus,
            liveness: Mutex::new(Liveness::default()),
            scheduler: tokio::sync::Mutex::new(()),
            elections: Mutex::new(Elections::default()),
            heartbeats: AtomicU64::new(0),
            inactive,
            notices,
            receivers: Mutex::new(Some(Receivers {
                inactive: inactive_rx,
                notices: notices_rx,
            })),
            tls,
        };
        Controller {
            inner: Arc::new(inner),
        }
    }

    /// The settings now (UPDATE_CONTROLLER_CONFIG may have changed the runtime keys).
    pub fn settings(&self) -> ControllerSettings {
        self.inner.settings.read().clone()
    }

    /// Replaces the settings (UPDATE_CONTROLLER_CONFIG). The runtime keys —
    /// `enableElectUncleanMaster`, `processReadEvent`, `notifyBrokerRoleChanged`,
    /// `electMasterMaxRetryCount` — take effect with the next request; the scan intervals
    /// with the next start of the scans; group, peers and storage only after a restart.
    pub fn update_settings(&self, settings: ControllerSettings) {
        *self.inner.settings.write() = settings;
    }

    /// The consensus layer (for the status page and the peer rows).
    pub fn consensus(&self) -> &Arc<dyn Consensus> {
        &self.inner.consensus
    }

    /// The background services of this node: the heartbeat expiry scan, the elections it
    /// and closed connections trigger, the leader's inactive-master scan, the notifications,
    /// and the consensus shutdown on cancel. Empty when already taken (they run once).
    pub fn services(&self) -> Vec<Background> {
        let Some(receivers) = self.inner.receivers.lock().take() else {
            tracing::warn!("controller services asked for twice: they run once");
            return Vec::new();
        };
        let mut services = heartbeat::services(self, receivers.inactive);
        let (notices, tls) = (receivers.notices, self.inner.tls.clone());
        services.push(Background::new("controller-notify", move |cancel| {
            notify::send_notices(notices, tls, cancel)
        }));
        services
    }

    /// Records a BROKER_HEARTBEAT of `key` on `conn` at `now`.
    pub(crate) fn heartbeat(&self, key: BrokerKey, beat: Heartbeat, conn: ConnId, now: Instant) {
        let addr = beat.broker_addr.clone();
        let returned = self
            .inner
            .liveness
            .lock()
            .heartbeat(key.clone(), beat, conn, now);
        self.inner.heartbeats.fetch_add(1, Ordering::Relaxed);
        if returned {
            self.tell_returning_replica(&key, &addr);
        }
    }

    /// The connection `conn` closed at `now`: a broker whose heartbeats came on it is no
    /// longer alive (Java's `onChannelClose` on the controller port); a master among them is
    /// replaced at once on the leader.
    pub fn connection_closed(&self, conn: ConnId, now: Instant) {
        let gone = self.inner.liveness.lock().connection_closed(conn);
        self.inactive(gone, ElectionReason::MasterConnectionClosed, now);
    }

    /// Queues controller-triggered elections for the replicas `gone` (only masters lead to
    /// one, and only on the leader).
    fn inactive(&self, gone: Vec<BrokerKey>, reason: ElectionReason, detected: Instant) {
        for key in gone {
            tracing::info!(broker = %key.broker_name, id = key.broker_id, reason = reason.label(), "broker replica inactive");
            let inactive = Inactive {
                broker_name: key.broker_name,
                broker_id: Some(key.broker_id),
                reason,
                detected,
            };
            // The receiver lives as long as the services; without them nobody elects.
            let _ = self.inner.inactive.send(inactive);
        }
    }

    /// The runtime flags the decisions read.
    fn flags(&self) -> Flags {
        Flags {
            enable_elect_unclean_master: self.inner.settings.read().enable_elect_unclean_master,
        }
    }
}
