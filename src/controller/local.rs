//! A test-only, single-node [`Consensus`]: a proposal is applied to the machine at once, a
//! barrier always passes, and the test decides whether the node leads (`set_leader`) or
//! whether the log is broken (`set_failing`) or never commits (`set_hanging`). Lets the handle, the handlers and the scans be
//! tested without openraft.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use tokio::sync::watch;

use super::consensus::{Consensus, ConsensusError, ConsensusFuture, GroupStatus, SharedMachine};
use super::machine::Event;

/// The in-memory log.
pub(crate) struct LocalConsensus {
    machine: SharedMachine,
    status: watch::Sender<GroupStatus>,
    failing: AtomicBool,
    hanging: AtomicBool,
    /// How many proposals were applied.
    pub(crate) proposals: AtomicUsize,
    /// Every event applied, in order.
    pub(crate) log: parking_lot::Mutex<Vec<Event>>,
}

impl LocalConsensus {
    /// A leading, ready node over `machine`.
    pub(crate) fn leader(machine: SharedMachine) -> Arc<LocalConsensus> {
        let status = GroupStatus {
            self_id: "n0".into(),
            leader_id: Some("n0".into()),
            is_leader: true,
            leader_ready: true,
            term: 1,
            ..GroupStatus::default()
        };
        Arc::new(LocalConsensus {
            machine,
            status: watch::channel(status).0,
            failing: AtomicBool::new(false),
            hanging: AtomicBool::new(false),
            proposals: AtomicUsize::new(0),
            log: parking_lot::Mutex::new(Vec::new()),
        })
    }

    /// Makes the node lead (ready) or follow.
    pub(crate) fn set_leader(&self, leading: bool) {
        self.status.send_modify(|s| {
            s.is_leader = leading;
            s.leader_ready = leading;
            s.leader_id = leading.then(|| "n0".to_owned());
            s.term += 1;
        });
    }

    /// Makes every proposal and barrier fail.
    pub(crate) fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }

    /// Makes every proposal wait forever (a commit that never comes).
    pub(crate) fn set_hanging(&self, hanging: bool) {
        self.hanging.store(hanging, Ordering::SeqCst);
    }

    fn refusal(&self) -> Option<ConsensusError> {
        if !self.status.borrow().leader_ready {
            return Some(ConsensusError::NotLeader);
        }
        self.failing
            .load(Ordering::SeqCst)
            .then(|| ConsensusError::Failed("the test log is broken".into()))
    }
}

impl Consensus for LocalConsensus {
    fn propose(&self, events: Vec<Event>) -> ConsensusFuture<Result<(), ConsensusError>> {
        if self.hanging.load(Ordering::SeqCst) {
            return Box::pin(std::future::pending());
        }
        let result = match self.refusal() {
            Some(e) => Err(e),
            None => {
                let mut machine = self.machine.write();
                for event in &events {
                    machine.apply(event);
                }
                self.log.lock().extend(events);
                self.proposals.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        };
        Box::pin(async move { result })
    }

    fn barrier(&self) -> ConsensusFuture<Result<(), ConsensusError>> {
        let result = self.refusal().map_or(Ok(()), Err);
        Box::pin(async move { result })
    }

    fn status(&self) -> GroupStatus {
        self.status.borrow().clone()
    }

    fn watch(&self) -> watch::Receiver<GroupStatus> {
        self.status.subscribe()
    }

    fn serve_peer(&self, code: i32, body: Bytes) -> ConsensusFuture<Result<Bytes, ConsensusError>> {
        // Echoes the body, so the peer rows can be tested.
        let result = match code {
            0 => Err(ConsensusError::Failed("no such peer call".into())),
            _ => Ok(body),
        };
        Box::pin(async move { result })
    }

    fn shutdown(&self) -> ConsensusFuture<()> {
        Box::pin(async {})
    }
}
