//! The invariants of issue 24, checked after every run over what the run left: the committed
//! log of every node (read from its store once all have stopped), the nodes' applied states
//! sampled during the run, the clients' history and the fault timeline.
//!
//! From the log, replayed on a fresh machine, comes each broker set's committed sequence of
//! registers; on it: epochs never decrease, at most one master per epoch, a newly elected
//! master was in the previous sync-state set (unclean election is off). Every node's
//! committed log is a prefix of the longest. Every sampled applied state is in the sequence
//! and never goes back on its node. Every acknowledged change is in the sequence (it survived
//! the crashes), and none was acknowledged by a node cut off from the majority for the whole
//! request. Every GET_REPLICA_INFO answer is a committed state, and all of them together with
//! the acknowledged writes are linearizable (`linear`).

pub(super) mod linear;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::history::{Op, Outcome, Reg, Sample, Value};
use super::net::Faults;
use crate::controller::machine::{BrokerId, Event, Machine};

/// One broken invariant, with the time span and set that show it.
#[derive(Debug, Clone)]
pub(super) struct Violation {
    pub(super) what: String,
    pub(super) set: String,
    pub(super) from: u64,
    pub(super) to: u64,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}..{}] {}: {}",
            self.from, self.to, self.set, self.what
        )
    }
}

/// Everything a run leaves for the checker.
pub(super) struct Evidence<'a> {
    /// Each node's committed entries (index, events).
    pub(super) logs: &'a [Vec<(u64, Vec<Event>)>],
    /// `(node, time, set, register)` samples of applied state.
    pub(super) samples: &'a [Sample],
    pub(super) ops: &'a [Op],
    /// The faults in force from each time on.
    pub(super) timeline: &'a [(u64, Faults)],
    pub(super) sets: &'a [String],
}

/// Each set's committed sequence of registers, and the final machine.
pub(super) fn sequences(log: &[(u64, Vec<Event>)]) -> (BTreeMap<String, Vec<Reg>>, Machine) {
    let mut machine = Machine::default();
    let mut seqs: BTreeMap<String, Vec<Reg>> = BTreeMap::new();
    for (_, events) in log {
        for event in events {
            machine.apply(event);
        }
        for set in machine.broker_sets() {
            let sync = set.sync;
            let reg = Reg {
                master: sync.master_broker_id,
                epoch: sync.master_epoch,
                sss: sync.sync_state_set.clone(),
                sss_epoch: sync.sync_state_set_epoch,
            };
            let seq = seqs.entry(set.replicas.broker_name.clone()).or_default();
            if seq.last() != Some(&reg) {
                seq.push(reg);
            }
        }
    }
    (seqs, machine)
}

/// Checks every invariant; the violations found.
pub(super) fn check(e: &Evidence<'_>) -> Vec<Violation> {
    let mut out = Vec::new();
    let longest = e
        .logs
        .iter()
        .max_by_key(|l| l.len())
        .cloned()
        .unwrap_or_default();
    for (node, log) in e.logs.iter().enumerate() {
        if longest[..log.len()] != log[..] {
            out.push(violation(
                format!("n{node}'s committed log is not a prefix of the longest"),
                "",
                0,
                0,
            ));
        }
    }
    let (seqs, machine) = sequences(&longest);
    for (set, seq) in &seqs {
        sequence(set, seq, &mut out);
    }
    samples(e, &seqs, &mut out);
    acknowledged(e, &seqs, &machine, &mut out);
    minority(e, &mut out);
    for set in e.sets {
        reads(
            e,
            set,
            seqs.get(set).map_or(&[][..], Vec::as_slice),
            &mut out,
        );
    }
    out
}

fn violation(what: String, set: &str, from: u64, to: u64) -> Violation {
    Violation {
        what,
        set: set.to_owned(),
        from,
        to,
    }
}

fn sequence(set: &str, seq: &[Reg], out: &mut Vec<Violation>) {
    let mut masters: BTreeMap<i32, BTreeSet<BrokerId>> = BTreeMap::new();
    for pair in seq.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if after.epoch < before.epoch {
            out.push(violation(
                format!("epoch went back: {before} then {after}"),
                set,
                0,
                0,
            ));
        }
        let elected = after.epoch > before.epoch && after.master.is_some();
        let master = after.master.unwrap_or_default();
        if elected && !before.sss.is_empty() && !before.sss.contains(&master) {
            out.push(violation(
                format!("unclean election: {before} then {after}"),
                set,
                0,
                0,
            ));
        }
    }
    for reg in seq {
        if let Some(m) = reg.master {
            masters.entry(reg.epoch).or_default().insert(m);
        }
    }
    for (epoch, ms) in masters.iter().filter(|(_, ms)| ms.len() > 1) {
        out.push(violation(
            format!("two masters {ms:?} in epoch {epoch}"),
            set,
            0,
            0,
        ));
    }
}

/// The positions of `reg` in `seq`.
fn versions(seq: &[Reg], reg: &Reg) -> Vec<usize> {
    (0..seq.len()).filter(|&i| seq[i] == *reg).collect()
}

fn samples(e: &Evidence<'_>, seqs: &BTreeMap<String, Vec<Reg>>, out: &mut Vec<Violation>) {
    let mut last: BTreeMap<(usize, &str), usize> = BTreeMap::new();
    for (node, at, set, reg) in e.samples {
        let seq = seqs.get(set).map_or(&[][..], Vec::as_slice);
        let floor = last.get(&(*node, set.as_str())).copied().unwrap_or(0);
        match versions(seq, reg).into_iter().find(|&v| v >= floor) {
            Some(v) => {
                last.insert((*node, set.as_str()), v);
            }
            None => out.push(violation(
                format!("n{node} applied {reg}, not a committed state at or after version {floor}"),
                set,
                *at,
                *at,
            )),
        }
    }
}

/// Where an acknowledged write landed in the sequence, if it did.
fn landed(seq: &[Reg], value: &Value) -> Option<Option<usize>> {
    let found = match value {
        Value::Elected { master, epoch } => seq
            .iter()
            .position(|r| r.master == Some(*master) && r.epoch == *epoch),
        Value::Altered {
            epoch,
            sss,
            sss_epoch,
        } => seq
            .iter()
            .position(|r| r.epoch == *epoch && r.sss == *sss && r.sss_epoch == *sss_epoch),
        _ => return None,
    };
    Some(found)
}

fn acknowledged(
    e: &Evidence<'_>,
    seqs: &BTreeMap<String, Vec<Reg>>,
    machine: &Machine,
    out: &mut Vec<Violation>,
) {
    for op in e.ops {
        let Outcome::Ok(value) = &op.outcome else {
            continue;
        };
        let seq = seqs.get(&op.set).map_or(&[][..], Vec::as_slice);
        let lost = match value {
            Value::Applied { id, addr } => machine
                .replica_info(&op.set)
                .and_then(|r| r.broker_ids.get(id))
                .is_none_or(|entry| entry.address != *addr),
            other => landed(seq, other) == Some(None),
        };
        if lost {
            out.push(violation(
                format!("acknowledged change lost: {op}"),
                &op.set,
                op.invoke,
                op.complete,
            ));
        }
    }
}

/// Whether controller node `node` could reach a majority (itself and one peer, both ways)
/// under `faults`.
fn in_majority(faults: &Faults, node: usize) -> bool {
    let up = |n: usize| !faults.down.contains(&n) && !faults.paused.contains(&n);
    let linked =
        |a: usize, b: usize| !faults.cut.contains(&(a, b)) && !faults.cut.contains(&(b, a));
    up(node) && (0..3).any(|p| p != node && up(p) && linked(node, p))
}

fn minority(e: &Evidence<'_>, out: &mut Vec<Violation>) {
    let writes = e.ops.iter().filter(|o| {
        matches!(
            o.outcome,
            Outcome::Ok(Value::Elected { .. } | Value::Altered { .. } | Value::Applied { .. })
        )
    });
    for op in writes {
        // The faults in force at the invoke, and every change up to the completion.
        let start = e
            .timeline
            .partition_point(|(t, _)| *t <= op.invoke)
            .saturating_sub(1);
        let span = e.timeline[start..]
            .iter()
            .take_while(|(t, _)| *t <= op.complete);
        let mut cut_off = true;
        for (_, faults) in span {
            cut_off &= !in_majority(faults, op.node);
        }
        if cut_off && !e.timeline.is_empty() {
            out.push(violation(
                format!("a node cut off from the majority acknowledged: {op}"),
                &op.set,
                op.invoke,
                op.complete,
            ));
        }
    }
}

fn reads(e: &Evidence<'_>, set: &str, seq: &[Reg], out: &mut Vec<Violation>) {
    let mut ops = Vec::new();
    for (label, op) in e.ops.iter().enumerate().filter(|(_, o)| o.set == set) {
        let Outcome::Ok(value) = &op.outcome else {
            continue;
        };
        let (versions, write) = match value {
            Value::Read(reg) => (versions(seq, reg), false),
            other => match landed(seq, other) {
                Some(Some(v)) => (vec![v], true),
                _ => continue,
            },
        };
        if versions.is_empty() {
            out.push(violation(
                format!("answer is not a committed state: {op}"),
                set,
                op.invoke,
                op.complete,
            ));
            continue;
        }
        ops.push(linear::LinOp {
            invoke: op.invoke,
            complete: op.complete,
            versions,
            write,
            label,
        });
    }
    if let Err(why) = linear::check(&ops) {
        let op = &e.ops[why.label];
        let by = e
            .ops
            .get(why.forced_by)
            .map_or("-".to_owned(), |o| o.to_string());
        out.push(violation(
            format!(
                "not linearizable: {op} cannot be placed at or after version {} (forced by {by})",
                why.at_least
            ),
            set,
            e.ops.get(why.forced_by).map_or(op.invoke, |o| o.invoke),
            op.complete,
        ));
    }
}
