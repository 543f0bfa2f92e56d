//! One schedule per Java controller bug issue 24 names, each asserting the behaviour the bug
//! broke (so it fails on a controller with that bug) and then the run's invariants:
//! apache/rocketmq#9717/#10416 (a failure detector that never ran), #10875 (an inverted
//! re-election check), #7017/#6662 (two masters after a partition), #7689 (controller leader
//! and broker master killed together), #7219 (a sync-state set that stopped shrinking) and
//! #4800 (an asymmetric partition flapping the master).

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::{Instant, sleep};

use super::broker::{CLUSTER, HEARTBEAT_TIMEOUT};
use super::history::Reg;
use super::run::{Report, Sim, block_on};
use super::schedule::{Fault, Schedule};
use crate::controller::code::request as cc;
use crate::controller::code::response as rc;

/// Raft's worst failover after a leader dies (lease plus election timeout, plus a round).
const RAFT_FAILOVER: Duration = Duration::from_millis(2_500);

async fn start(seed: u64) -> Sim {
    let sim = Sim::start(&Schedule::of(seed, Vec::new())).await;
    assert!(sim.master(0).is_some(), "no first master");
    let full = until(&sim, Duration::from_secs(10), |r| r.sss.len() == 3).await;
    assert!(
        full.is_some(),
        "the sync-state set never grew to 3: {:?}",
        sim.state(0)
    );
    sim
}

/// Waits up to `bound` for `test` on set 0's register (on the leader); how long it took.
async fn until(sim: &Sim, bound: Duration, test: impl Fn(&Reg) -> bool) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() <= bound {
        if sim.state(0).is_some_and(|r| test(&r)) {
            return Some(start.elapsed());
        }
        sleep(Duration::from_millis(20)).await;
    }
    None
}

fn clean(report: &Report) {
    assert!(report.violations.is_empty(), "{}", report.explain());
}

#[test]
fn j9717_j10416_a_silent_master_is_replaced_by_the_failure_detector() {
    block_on(async {
        let sim = start(9717).await;
        let old = sim.state(0).unwrap();
        sim.begin(Fault::SilenceMaster(0)).await;
        // Expiry at the heartbeat timeout, then one election.
        let bound = HEARTBEAT_TIMEOUT + Duration::from_secs(2);
        let took = until(&sim, bound, |r| r.epoch > old.epoch && r.master.is_some()).await;
        assert!(
            took.is_some(),
            "a silent master was not replaced within {bound:?}"
        );
        println!("sim scenario #9717 silent master replaced after {took:?}");
        clean(&sim.finish().await);
    });
}

#[test]
fn j10875_a_live_master_is_kept_and_a_dead_one_replaced() {
    block_on(async {
        let sim = start(10875).await;
        let old = sim.state(0).unwrap();
        let master = sim.master(0).unwrap();
        let other = sim
            .world
            .brokers
            .iter()
            .find(|b| b.set == sim.sets[0] && b.id() != old.master);
        let other = other.unwrap().clone();
        let fields = [
            ("clusterName", CLUSTER.to_owned()),
            ("brokerName", sim.sets[0].clone()),
            ("brokerId", other.id().unwrap().to_string()),
            ("designateElect", "false".to_owned()),
        ];
        let req = other.request(cc::CONTROLLER_ELECT_MASTER, &fields);
        let none = |_: &crate::protocol::RemotingCommand| super::history::Value::None;
        let answer = sim
            .world
            .call(&other, sim.leader(), "elect", req, &none)
            .await;
        let code = answer.map(|a| a.code);
        assert_eq!(
            code,
            Some(rc::CONTROLLER_MASTER_STILL_EXIST),
            "a live master was re-elected"
        );
        assert_eq!(sim.state(0).unwrap().master, old.master);
        sim.crash_broker(&master);
        let bound = Duration::from_secs(2);
        let took = until(&sim, bound, |r| {
            r.master.is_some() && r.master != old.master
        })
        .await;
        assert!(
            took.is_some(),
            "a dead master was not replaced within {bound:?}"
        );
        println!("sim scenario #10875 dead master replaced after {took:?}");
        clean(&sim.finish().await);
    });
}

#[test]
fn j7017_j6662_a_cut_off_leader_and_master_never_make_two_masters() {
    block_on(async {
        let sim = start(7017).await;
        let old = sim.state(0).unwrap();
        let leader = sim.leader();
        sim.begin(Fault::LeaderWithMaster(0)).await;
        // The majority elects a controller leader, then replaces the master it cannot hear.
        let bound = RAFT_FAILOVER + HEARTBEAT_TIMEOUT + Duration::from_secs(4);
        let took = until(&sim, bound, |r| {
            r.epoch > old.epoch && r.master != old.master
        })
        .await;
        assert!(
            took.is_some(),
            "the majority elected no new master within {bound:?}"
        );
        println!("sim scenario #7017 majority elected a new master after {took:?}");
        assert_ne!(sim.leader(), leader);
        sleep(Duration::from_secs(5)).await;
        sim.heal().await;
        clean(&sim.finish().await);
    });
}

#[test]
fn j7689_a_double_kill_elects_a_new_master_within_the_bound() {
    block_on(async {
        let sim = start(7689).await;
        // A warm group: a node's inactive-master scan first waits for liveness from its start.
        sleep(Duration::from_secs(12)).await;
        let old = sim.state(0).unwrap();
        sim.begin(Fault::DoubleKill(0)).await;
        // The master's close is seen by the followers too; at worst its heartbeat expires.
        let bound = RAFT_FAILOVER + HEARTBEAT_TIMEOUT + Duration::from_secs(2);
        let replaced = |r: &Reg| r.master.is_some() && r.master != old.master;
        let took = until(&sim, Duration::from_secs(30), replaced).await;
        assert!(
            took.is_some_and(|t| t <= bound),
            "no new master within {bound:?} of the double kill (took {took:?})"
        );
        println!("sim scenario #7689 double kill: new master after {took:?}");
        clean(&sim.finish().await);
    });
}

#[test]
fn j7219_the_sync_state_set_still_shrinks_after_a_race() {
    block_on(async {
        let sim = start(7219).await;
        let before = sim.state(0).unwrap();
        let master = sim.master(0).unwrap();
        let replica = sim
            .world
            .brokers
            .iter()
            .find(|b| b.set == sim.sets[0] && b.id().is_some() && b.id() != before.master);
        let replica = replica.unwrap().clone();
        // The race: the replica dies while the master's stale alter is in flight.
        let fields = [
            ("brokerName", sim.sets[0].clone()),
            ("masterBrokerId", master.id().unwrap().to_string()),
            ("masterEpoch", before.epoch.to_string()),
        ];
        let stale_epoch = before.sss_epoch - 1;
        let stale =
            serde_json::json!({"syncStateSet": &before.sss, "syncStateSetEpoch": stale_epoch});
        let req = master
            .request(cc::CONTROLLER_ALTER_SYNC_STATE_SET, &fields)
            .with_body(stale.to_string().into_bytes());
        sim.crash_broker(&replica);
        let none = |_: &crate::protocol::RemotingCommand| super::history::Value::None;
        let answer = sim
            .world
            .call(&master, sim.leader(), "alter_sync", req, &none)
            .await;
        assert_ne!(
            answer.map(|a| a.code),
            Some(0),
            "a stale alter was accepted"
        );
        let gone = replica.id().unwrap();
        let bound = Duration::from_secs(3);
        let took = until(&sim, bound, |r| {
            !r.sss.contains(&gone) && r.master == before.master
        })
        .await;
        assert!(
            took.is_some(),
            "the sync-state set did not shrink within {bound:?}"
        );
        println!("sim scenario #7219 sync-state set shrank after {took:?}");
        clean(&sim.finish().await);
    });
}

/// #4800, the broker shape: only the controller leader loses the broker master (both ways);
/// the followers still hear it. The leader decides from its own heartbeat table, as Java's
/// does, so the master is replaced once, at its heartbeat timeout (the followers' view is not
/// consulted: README, "Differences from Java's controller"); what must not happen is a flap —
/// the master moving back and forth, or a second election while the partition lasts.
#[test]
fn j4800_an_asymmetric_partition_replaces_the_master_at_most_once() {
    block_on(async {
        let sim = start(4800).await;
        let old = sim.state(0).unwrap();
        let master = sim.master(0).unwrap();
        sim.begin(Fault::AsymmetricMaster(0)).await;
        let mut epochs = vec![old.epoch];
        let started = Instant::now();
        // Far beyond the heartbeat timeout: the followers still hear the master.
        while started.elapsed() < Duration::from_secs(15) {
            if let Some(r) = sim.state(0).filter(|r| r.master.is_some())
                && epochs.last() != Some(&r.epoch)
            {
                epochs.push(r.epoch);
            }
            sleep(Duration::from_millis(20)).await;
        }
        assert!(!master.down.load(Ordering::SeqCst));
        assert!(
            epochs.len() <= 2 && epochs.windows(2).all(|w| w[0] < w[1]),
            "the master flapped: master epochs {epochs:?}"
        );
        println!("sim scenario #4800 master epochs during the partition: {epochs:?}");
        sim.heal().await;
        clean(&sim.finish().await);
    });
}
