//! A controller on a log of one node that applies each proposal at once, whose group status
//! the test sets: the controller's handlers, scans and views over real sockets without a
//! raft group.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::watch;

use namesrv::controller::consensus::ConsensusFuture;
use namesrv::controller::machine::Event;
use namesrv::controller::{
    Consensus, ConsensusError, Controller, ControllerSettings, GroupStatus, SharedMachine,
};

/// The log: proposals are applied to the machine when proposed.
struct InstantLog {
    machine: SharedMachine,
    status: watch::Sender<GroupStatus>,
}

impl Consensus for InstantLog {
    fn propose(&self, events: Vec<Event>) -> ConsensusFuture<Result<(), ConsensusError>> {
        let mut machine = self.machine.write();
        for event in &events {
            machine.apply(event);
        }
        Box::pin(async { Ok(()) })
    }

    fn barrier(&self) -> ConsensusFuture<Result<(), ConsensusError>> {
        Box::pin(async { Ok(()) })
    }

    fn status(&self) -> GroupStatus {
        self.status.borrow().clone()
    }

    fn watch(&self) -> watch::Receiver<GroupStatus> {
        self.status.subscribe()
    }

    fn serve_peer(&self, _: i32, _: Bytes) -> ConsensusFuture<Result<Bytes, ConsensusError>> {
        Box::pin(async { Err(ConsensusError::Failed("not a peer".into())) })
    }

    fn shutdown(&self) -> ConsensusFuture<()> {
        Box::pin(async {})
    }
}

/// A controller with Java's default settings over an instant log reporting `status`, and the
/// sender that changes what it reports.
pub fn instant_controller(status: GroupStatus) -> (Controller, watch::Sender<GroupStatus>) {
    let machine = SharedMachine::default();
    let (tx, _) = watch::channel(status);
    let log = Arc::new(InstantLog {
        machine: machine.clone(),
        status: tx.clone(),
    });
    let settings = ControllerSettings::default();
    (Controller::with_consensus(settings, machine, log, None), tx)
}
