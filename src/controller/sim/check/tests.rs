//! The checker catches what it must: an unclean election in the log, an acknowledged change
//! the log lost, a node applying a state never committed, a stale read, and a write
//! acknowledged by a node cut off from the majority.

use super::{Evidence, Violation, check};
use crate::controller::machine::{BrokerId, Event};
use crate::controller::sim::history::{Op, Outcome, Reg, Sample, Value};
use crate::controller::sim::net::Faults;

fn apply(id: BrokerId) -> Event {
    Event::ApplyBrokerIdEvent {
        cluster_name: "c".into(),
        broker_name: "set0".into(),
        broker_address: format!("10.0.1.{id}:10911"),
        new_broker_id: id,
        register_check_code: format!("10.0.1.{id}:10911;1"),
    }
}

fn elect(id: BrokerId) -> Event {
    Event::ElectMasterEvent {
        broker_name: "set0".into(),
        new_master_broker_id: Some(id),
        new_master_elected: true,
    }
}

fn sss(ids: &[BrokerId]) -> Event {
    Event::AlterSyncStateSetEvent {
        broker_name: "set0".into(),
        new_sync_state_set: ids.iter().copied().collect(),
    }
}

/// Three replicas, 1 elected, the set grown to {1, 2}.
fn log() -> Vec<(u64, Vec<Event>)> {
    let events = [apply(1), apply(2), apply(3), elect(1), sss(&[1, 2])];
    events
        .into_iter()
        .enumerate()
        .map(|(i, e)| (i as u64 + 1, vec![e]))
        .collect()
}

fn op(node: usize, invoke: u64, complete: u64, value: Value) -> Op {
    Op {
        proc: "b0".into(),
        node,
        op: "test",
        set: "set0".into(),
        invoke,
        complete,
        outcome: Outcome::Ok(value),
    }
}

fn reg(master: BrokerId, epoch: i32, sss: &[BrokerId], sss_epoch: i32) -> Reg {
    Reg {
        master: Some(master),
        epoch,
        sss: sss.iter().copied().collect(),
        sss_epoch,
    }
}

fn run(
    logs: &[Vec<(u64, Vec<Event>)>],
    samples: &[Sample],
    ops: &[Op],
    timeline: &[(u64, Faults)],
) -> Vec<Violation> {
    let sets = ["set0".to_owned()];
    check(&Evidence {
        logs,
        samples,
        ops,
        timeline,
        sets: &sets,
    })
}

#[test]
fn a_clean_run_passes() {
    let reads = [
        op(0, 0, 10, Value::Read(reg(1, 1, &[1], 1))),
        op(0, 20, 30, Value::Read(reg(1, 1, &[1, 2], 2))),
    ];
    let timeline = [(0, Faults::healthy())];
    assert!(run(&[log()], &[], &reads, &timeline).is_empty());
}

#[test]
fn an_unclean_election_and_a_foreign_prefix_are_caught() {
    let mut bad = log();
    bad.push((6, vec![elect(3)]));
    let found = run(&[bad.clone()], &[], &[], &[]);
    assert!(
        found.iter().any(|v| v.what.contains("unclean")),
        "{found:?}"
    );
    let mut other = log();
    other[4].1 = vec![sss(&[1, 3])];
    let found = run(&[bad, other], &[], &[], &[]);
    assert!(found.iter().any(|v| v.what.contains("prefix")), "{found:?}");
}

#[test]
fn a_lost_ack_an_uncommitted_sample_and_a_stale_read_are_caught() {
    let lost = op(
        0,
        0,
        10,
        Value::Elected {
            master: 2,
            epoch: 2,
        },
    );
    let found = run(&[log()], &[], &[lost], &[]);
    assert!(found.iter().any(|v| v.what.contains("lost")), "{found:?}");
    let sample = [(1, 5, "set0".to_owned(), reg(3, 1, &[3], 1))];
    let found = run(&[log()], &sample, &[], &[]);
    assert!(
        found.iter().any(|v| v.what.contains("applied")),
        "{found:?}"
    );
    let reads = [
        op(0, 0, 10, Value::Read(reg(1, 1, &[1, 2], 2))),
        op(1, 20, 30, Value::Read(reg(1, 1, &[1], 1))),
    ];
    let found = run(&[log()], &[], &reads, &[]);
    assert!(
        found.iter().any(|v| v.what.contains("linearizable")),
        "{found:?}"
    );
}

#[test]
fn a_write_acked_by_a_cut_off_node_is_caught() {
    let mut cut = Faults::healthy();
    cut.split(&[0], &[1, 2]);
    let timeline = [(0, Faults::healthy()), (5, cut), (50, Faults::healthy())];
    let altered = Value::Altered {
        epoch: 1,
        sss: [1, 2].into(),
        sss_epoch: 2,
    };
    let found = run(&[log()], &[], &[op(0, 10, 20, altered)], &timeline);
    assert!(
        found.iter().any(|v| v.what.contains("cut off")),
        "{found:?}"
    );
}
