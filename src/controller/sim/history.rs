//! What the simulated clients did: every request as one [`Op`] — who, to which node, what,
//! when it was invoked and when it completed (simulated milliseconds), and how it ended: ok
//! with the value the answer carried, failed with its code, or unknown (no answer before the
//! client's deadline). Faults are recorded beside them, so a violation prints the schedule
//! and the operations around it.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::controller::machine::BrokerId;

/// The replicated register of one broker set as the checker compares it: the master, its
/// epoch, the sync-state set and its epoch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Reg {
    pub(super) master: Option<BrokerId>,
    pub(super) epoch: i32,
    pub(super) sss: BTreeSet<BrokerId>,
    pub(super) sss_epoch: i32,
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let master = self.master.map_or("-".to_owned(), |m| m.to_string());
        write!(
            f,
            "master {master} epoch {} sss {:?}@{}",
            self.epoch, self.sss, self.sss_epoch
        )
    }
}

/// One sample of a node's applied state: `(node | incarnation << 8, time, set, register)`.
pub(super) type Sample = (usize, u64, String, Reg);

/// What an ok answer said, as far as the checker needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Value {
    /// Nothing the checker reads.
    None,
    /// GET_REPLICA_INFO: the register.
    Read(Reg),
    /// ELECT_MASTER: the master and its epoch.
    Elected { master: BrokerId, epoch: i32 },
    /// ALTER_SYNC_STATE_SET: the new set at its new epoch (in master epoch `epoch`).
    Altered {
        epoch: i32,
        sss: BTreeSet<BrokerId>,
        sss_epoch: i32,
    },
    /// APPLY_BROKER_ID: the id now belongs to this address.
    Applied { id: BrokerId, addr: String },
}

/// How an operation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Outcome {
    Ok(Value),
    Fail(i32),
    Unknown,
}

/// One client operation.
#[derive(Debug, Clone)]
pub(super) struct Op {
    pub(super) proc: String,
    pub(super) node: usize,
    pub(super) op: &'static str,
    pub(super) set: String,
    pub(super) invoke: u64,
    pub(super) complete: u64,
    pub(super) outcome: Outcome,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{:>6}..{:>6}] {} -> n{} {} {}: {:?}",
            self.invoke, self.complete, self.proc, self.node, self.op, self.set, self.outcome
        )
    }
}

/// The history of one run; cheap to clone.
#[derive(Clone)]
pub(super) struct History {
    start: Instant,
    ops: Arc<Mutex<Vec<Op>>>,
    faults: Arc<Mutex<Vec<(u64, String)>>>,
}

impl History {
    pub(super) fn new() -> History {
        History {
            start: Instant::now(),
            ops: Arc::default(),
            faults: Arc::default(),
        }
    }

    /// Simulated milliseconds since the run began.
    pub(super) fn now(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    pub(super) fn record(&self, op: Op) {
        self.ops.lock().push(op);
    }

    pub(super) fn fault(&self, what: String) {
        let at = self.now();
        self.faults.lock().push((at, what));
    }

    pub(super) fn ops(&self) -> Vec<Op> {
        self.ops.lock().clone()
    }

    pub(super) fn faults(&self) -> Vec<(u64, String)> {
        self.faults.lock().clone()
    }

    /// The operations of `set` that overlap `[from, to]` (a violation's neighbourhood).
    pub(super) fn around(&self, set: &str, from: u64, to: u64) -> Vec<Op> {
        let ops = self.ops.lock();
        let near = ops
            .iter()
            .filter(|o| o.set == set && o.complete + 500 >= from && o.invoke <= to + 500);
        near.cloned().collect()
    }
}
