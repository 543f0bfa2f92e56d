//! The leader-only flow, in one place for every leader-only request and every
//! controller-triggered election (DLedger's event scheduler, CONTROLLER.md §1.5, §4.3): a node
//! that is not `leader_ready` refuses; otherwise the work waits its turn, decides against the
//! applied machine and this node's liveness, proposes the decision's events and waits at most
//! 5 s for their commit, then answers what it decided. A read (no events) confirms leadership
//! through the log first when `processReadEvent` is set. After a committed election the new
//! master's replicas are notified and the election is recorded.

use std::time::Duration;

use tokio::time::{Instant, timeout};

use super::Controller;
use super::consensus::ConsensusError;
use super::elections::{ElectionReason, ElectionRecord};
use super::liveness::BrokerKey;
use super::machine::Machine;
use super::machine::decide::{Elected, Flags, LiveView, Verdict};
use super::notify::Notice;

/// How long a leader-only request waits for its commit (Java's 5 s).
pub(crate) const COMMIT_WAIT: Duration = Duration::from_secs(5);

/// Why leader work gave no verdict.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeadError {
    /// This node is not (or stopped being) a leader with current state: `2007`.
    #[error("The controller is not in leader state")]
    NotLeader,
    /// The commit (or the read barrier) failed or timed out: `1`, this text as remark.
    #[error("{0}")]
    Failed(String),
}

/// What the leader's work is for, beyond its answer: an election's reason, and for
/// controller-triggered ones when the dead master was noticed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Purpose {
    pub(crate) reason: Option<ElectionReason>,
    pub(crate) detected: Option<Instant>,
}

impl Purpose {
    /// A request that elects nobody.
    pub(crate) const PLAIN: Purpose = Purpose {
        reason: None,
        detected: None,
    };

    /// An election for `reason`.
    pub(crate) fn election(reason: ElectionReason, detected: Option<Instant>) -> Purpose {
        Purpose {
            reason: Some(reason),
            detected,
        }
    }
}

impl Controller {
    /// Runs `decide` as leader work and returns its verdict once its events are committed.
    pub(crate) async fn lead(
        &self,
        purpose: Purpose,
        decide: impl FnOnce(&Machine, &dyn LiveView, Flags) -> Verdict,
    ) -> Result<Verdict, LeadError> {
        if !self.inner.consensus.status().leader_ready {
            return Err(LeadError::NotLeader);
        }
        let _turn = self.inner.scheduler.lock().await;
        // Leadership may have ended while waiting for the turn.
        if !self.inner.consensus.status().leader_ready {
            return Err(LeadError::NotLeader);
        }
        let verdict = self.decide(decide);
        if verdict.events.is_empty() {
            if self.inner.settings.read().process_read_event {
                wait("read barrier", self.inner.consensus.barrier()).await?;
            }
            return Ok(verdict);
        }
        let events = verdict.events.clone();
        wait("proposal", self.inner.consensus.propose(events)).await?;
        if let (Some(elected), Some(reason)) = (&verdict.elected, purpose.reason) {
            self.after_election(elected, reason, purpose.detected);
        }
        Ok(verdict)
    }

    /// The decision against the machine and the liveness table now; both locks are held
    /// only for the (synchronous) decision.
    fn decide(&self, decide: impl FnOnce(&Machine, &dyn LiveView, Flags) -> Verdict) -> Verdict {
        let flags = self.flags();
        let machine = self.inner.machine.read();
        let liveness = self.inner.liveness.lock();
        decide(&machine, &liveness.at(Instant::now()), flags)
    }

    /// Records the committed election and queues the notifications to the set's live
    /// replicas (every node of the set, the new master included, as Java sends them).
    fn after_election(&self, elected: &Elected, reason: ElectionReason, detected: Option<Instant>) {
        let now = Instant::now();
        let failover = detected.map(|d| now.saturating_duration_since(d));
        tracing::info!(
            broker = %elected.broker_name,
            old = ?elected.old_master,
            new = elected.new_master,
            epoch = elected.master_epoch,
            reason = reason.label(),
            ?failover,
            "master elected"
        );
        self.inner.elections.lock().record(ElectionRecord {
            at: now,
            broker_name: elected.broker_name.clone(),
            old_master: elected.old_master,
            new_master: elected.new_master,
            master_epoch: elected.master_epoch,
            reason,
            failover,
        });
        if !self.inner.settings.read().notify_broker_role_changed {
            return;
        }
        let targets: Vec<&str> = {
            let liveness = self.inner.liveness.lock();
            let live = liveness.at(now);
            elected
                .members
                .iter()
                .filter(|(id, _)| live.is_alive(&elected.cluster, &elected.broker_name, *id))
                .map(|(_, addr)| addr.as_str())
                .collect()
        };
        for addr in targets {
            // The receiver lives as long as the services; without them nobody is told.
            let _ = self.inner.notices.send(Notice::new(elected, addr));
        }
    }
}

impl Controller {
    /// A replica heartbeats again after it was taken for dead (a paused old master that
    /// resumes): on the leader, it is told the current master at once, as after an election,
    /// rather than learning it at its next replica-info poll (up to 5 s) while it may still
    /// take writes as master. A replica that already knows this epoch ignores the notice.
    pub(crate) fn tell_returning_replica(&self, key: &BrokerKey, addr: &str) {
        if !self.inner.settings.read().notify_broker_role_changed
            || !self.inner.consensus.status().leader_ready
        {
            return;
        }
        let current = {
            let machine = self.inner.machine.read();
            machine.broker_set(&key.broker_name).and_then(|set| {
                let master = set.sync.master_broker_id?;
                let master_address = set.replicas.broker_ids.get(&master)?.address.clone();
                (master != key.broker_id).then(|| Elected {
                    cluster: set.replicas.cluster_name.clone(),
                    broker_name: key.broker_name.clone(),
                    old_master: Some(master),
                    new_master: master,
                    master_address,
                    master_epoch: set.sync.master_epoch,
                    sync_state_set_epoch: set.sync.sync_state_set_epoch,
                    members: Vec::new(),
                })
            })
        };
        if let Some(current) = current {
            tracing::info!(broker = %key.broker_name, id = key.broker_id, master = current.new_master, epoch = current.master_epoch, "a replica taken for dead heartbeats again: telling it the master");
            // The receiver lives as long as the services; without them nobody is told.
            let _ = self.inner.notices.send(Notice::new(&current, addr));
        }
    }
}

/// Waits at most [`COMMIT_WAIT`] for the consensus layer's `what`.
async fn wait(
    what: &str,
    work: impl std::future::Future<Output = Result<(), ConsensusError>>,
) -> Result<(), LeadError> {
    match timeout(COMMIT_WAIT, work).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(ConsensusError::NotLeader)) => Err(LeadError::NotLeader),
        Ok(Err(ConsensusError::Failed(e))) => Err(LeadError::Failed(format!(
            "the controller's {what} failed: {e}"
        ))),
        Err(_) => Err(LeadError::Failed(format!(
            "java.util.concurrent.TimeoutException: the controller's {what} did not commit within {} ms",
            COMMIT_WAIT.as_millis()
        ))),
    }
}
