//! The handle over the in-memory consensus: the leader-only flow (2007, failures, read
//! barriers), liveness turning into elections (closed connection, expiry, the leader's
//! inactive-master scan and its wait for liveness after a leader change), notifications.
//! Time is tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::{Instant, advance};
use tokio_util::sync::CancellationToken;

use super::elections::ElectionReason;
use super::leader::{LeadError, Purpose};
use super::liveness::{BrokerKey, Heartbeat};
use super::local::LocalConsensus;
use super::machine::decide::NextBrokerId;
use super::machine::{BrokerId, Event};
use super::{Controller, ControllerSettings, SharedMachine};
use crate::state::ConnId;

pub(crate) fn node() -> (Controller, Arc<LocalConsensus>) {
    let machine = SharedMachine::default();
    let consensus = LocalConsensus::leader(machine.clone());
    let controller = Controller::with_consensus(
        ControllerSettings::default(),
        machine,
        consensus.clone(),
        None,
    );
    (controller, consensus)
}

pub(crate) fn addr(id: BrokerId) -> String {
    format!("127.0.0.1:{}", 30901 + id * 10)
}

/// broker-a with replicas `ids` and `master` elected, written straight to the machine.
fn seed(controller: &Controller, ids: &[BrokerId], master: BrokerId) {
    let mut m = controller.inner.machine.write();
    for &id in ids {
        m.apply(&Event::ApplyBrokerIdEvent {
            cluster_name: "DefaultCluster".into(),
            broker_name: "broker-a".into(),
            broker_address: addr(id),
            new_broker_id: id,
            register_check_code: format!("{};1", addr(id)),
        });
    }
    m.apply(&Event::ElectMasterEvent {
        broker_name: "broker-a".into(),
        new_master_broker_id: Some(master),
        new_master_elected: true,
    });
    m.apply(&Event::AlterSyncStateSetEvent {
        broker_name: "broker-a".into(),
        new_sync_state_set: ids.iter().copied().collect(),
    });
}

fn beat(controller: &Controller, id: BrokerId) {
    let key = BrokerKey {
        cluster: "DefaultCluster".into(),
        broker_name: "broker-a".into(),
        broker_id: id,
    };
    let beat = Heartbeat {
        broker_addr: addr(id),
        epoch: 1,
        max_offset: 100,
        confirm_offset: 100,
        timeout: Duration::from_secs(10),
        election_priority: i32::MAX,
    };
    controller.heartbeat(key, beat, ConnId(id as u64), Instant::now());
}

fn master(controller: &Controller) -> Option<BrokerId> {
    let m = controller.inner.machine.read();
    m.broker_set("broker-a")
        .and_then(|s| s.sync.master_broker_id)
}

/// Runs every background task of `controller` until the returned token is cancelled.
fn run_services(controller: &Controller) -> CancellationToken {
    let cancel = CancellationToken::new();
    for service in controller.services() {
        tokio::spawn(service.run(cancel.child_token()));
    }
    cancel
}

async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_follower_refuses_leader_work_and_a_broken_log_fails_it() {
    let (controller, consensus) = node();
    let read = NextBrokerId {
        cluster_name: None,
        broker_name: "broker-a".into(),
    };
    consensus.set_leader(false);
    let outcome = controller
        .lead(Purpose::PLAIN, |m, _, _| read.decide(m))
        .await;
    assert_eq!(outcome, Err(LeadError::NotLeader));
    consensus.set_leader(true);
    assert_eq!(
        controller
            .lead(Purpose::PLAIN, |m, _, _| read.decide(m))
            .await
            .unwrap()
            .code,
        0
    );
    // A read needs no log, unless processReadEvent asks for a barrier.
    consensus.set_failing(true);
    assert!(
        controller
            .lead(Purpose::PLAIN, |m, _, _| read.decide(m))
            .await
            .is_ok()
    );
    let mut settings = controller.settings();
    settings.process_read_event = true;
    controller.update_settings(settings);
    let outcome = controller
        .lead(Purpose::PLAIN, |m, _, _| read.decide(m))
        .await;
    assert!(matches!(outcome, Err(LeadError::Failed(_))), "{outcome:?}");
}

#[tokio::test(start_paused = true)]
async fn a_closed_master_connection_elects_a_new_master_at_once_and_notifies() {
    let (controller, consensus) = node();
    seed(&controller, &[1, 2], 1);
    let notices = controller.inner.receivers.lock().take().unwrap();
    let (mut inactive, mut notices) = (notices.inactive, notices.notices);
    beat(&controller, 1);
    beat(&controller, 2);
    controller.connection_closed(ConnId(1), Instant::now());
    let trigger = inactive.try_recv().expect("the master's close is reported");
    assert_eq!(
        (trigger.broker_id, trigger.reason),
        (Some(1), ElectionReason::MasterConnectionClosed)
    );
    controller.elect_for_inactive(&trigger).await;
    assert_eq!(master(&controller), Some(2));
    assert_eq!(consensus.proposals.load(Ordering::SeqCst), 1);
    // The live replica (2) is told; the dead one is not dialled.
    let notice = notices.try_recv().expect("a notice");
    assert_eq!(notice.addr, addr(2));
    assert!(notices.try_recv().is_err());
    let a2 = addr(2);
    assert_eq!(
        notice.fields(),
        [
            ("masterAddress", a2),
            ("masterEpoch", "2".to_owned()),
            ("syncStateSetEpoch", "3".to_owned()),
            ("masterBrokerId", "2".to_owned()),
        ]
    );
    assert_eq!(
        notice.body(),
        Some(&br#"{"syncStateSet":[2],"syncStateSetEpoch":3}"#[..])
    );
    let status = controller.status();
    assert_eq!(status.elections.len(), 1);
    assert_eq!(
        status.elections[0].reason,
        ElectionReason::MasterConnectionClosed
    );
    assert_eq!(status.last_failover, Some(Duration::ZERO));
}

#[tokio::test(start_paused = true)]
async fn a_slave_going_away_elects_nobody() {
    let (controller, consensus) = node();
    seed(&controller, &[1, 2], 1);
    let receivers = controller.inner.receivers.lock().take().unwrap();
    let mut inactive = receivers.inactive;
    beat(&controller, 1);
    beat(&controller, 2);
    controller.connection_closed(ConnId(2), Instant::now());
    controller
        .elect_for_inactive(&inactive.try_recv().unwrap())
        .await;
    assert_eq!(master(&controller), Some(1));
    assert_eq!(consensus.proposals.load(Ordering::SeqCst), 0);
}

/// A paused old master that resumes heartbeats again after it was replaced: the leader tells
/// it the new master at once (it may otherwise take writes as master until its next poll).
/// Replicas seen for the first time are not told anything.
#[tokio::test(start_paused = true)]
async fn a_replaced_master_that_returns_is_told_the_new_master() {
    let (controller, _consensus) = node();
    seed(&controller, &[1, 2], 1);
    let notices = controller.inner.receivers.lock().take().unwrap();
    let (mut inactive, mut notices) = (notices.inactive, notices.notices);
    beat(&controller, 1);
    beat(&controller, 2);
    assert!(notices.try_recv().is_err(), "first heartbeats tell nobody");
    controller.connection_closed(ConnId(1), Instant::now());
    controller
        .elect_for_inactive(&inactive.try_recv().unwrap())
        .await;
    assert_eq!(master(&controller), Some(2));
    while notices.try_recv().is_ok() {} // the election's own notice to 2
    beat(&controller, 1);
    let told = notices
        .try_recv()
        .expect("the returning old master is told");
    assert_eq!(told.addr, addr(1));
    assert!(told.fields().contains(&("masterBrokerId", "2".to_owned())));
    assert!(told.fields().contains(&("masterEpoch", "2".to_owned())));
    beat(&controller, 1);
    assert!(notices.try_recv().is_err(), "told once");
}

/// apache/rocketmq#9717: the expiry scan must run, so that a hung master with an open
/// connection is replaced.
#[tokio::test(start_paused = true)]
async fn the_expiry_scan_runs_and_replaces_a_silent_master() {
    let (controller, _consensus) = node();
    seed(&controller, &[1, 2], 1);
    // Only the expiry scan may notice: the leader's scan is kept out of the way.
    let mut settings = controller.settings();
    settings.scan_inactive_master_interval = Duration::from_secs(3600);
    controller.update_settings(settings);
    let cancel = run_services(&controller);
    beat(&controller, 1);
    for _ in 0..20 {
        beat(&controller, 2);
        advance(Duration::from_secs(1)).await;
        settle().await;
    }
    assert_eq!(master(&controller), Some(2));
    let status = controller.status();
    assert_eq!(status.elections[0].reason, ElectionReason::HeartbeatExpired);
    cancel.cancel();
}

/// A silent master is replaced when its heartbeat timeout runs out, not at the next
/// `scanNotActiveBrokerInterval` tick after it (up to 5 s later with Java's default).
#[tokio::test(start_paused = true)]
async fn a_silent_master_is_replaced_when_its_timeout_runs_out() {
    let (controller, _consensus) = node();
    seed(&controller, &[1, 2], 1);
    let mut settings = controller.settings();
    settings.scan_inactive_master_interval = Duration::from_secs(3600);
    settings.scan_not_active_broker_interval = Duration::from_secs(3600);
    controller.update_settings(settings);
    let cancel = run_services(&controller);
    beat(&controller, 1);
    let silent_since = tokio::time::Instant::now();
    let mut replaced_after = None;
    for _ in 0..150 {
        beat(&controller, 2);
        advance(Duration::from_millis(100)).await;
        settle().await;
        if master(&controller) == Some(2) {
            replaced_after = Some(silent_since.elapsed());
            break;
        }
    }
    let after = replaced_after.expect("the silent master was replaced");
    // Java's default heartbeat timeout is 10 s; the scan interval (1 h here) plays no part.
    assert!(after >= Duration::from_secs(10), "{after:?}");
    assert!(after <= Duration::from_millis(10_200), "{after:?}");
    cancel.cancel();
}

/// A new leader's table holds only the heartbeats received since it started: the scan must
/// not take a master it has not heard from yet for dead (Java scans after 5 s).
#[tokio::test(start_paused = true)]
async fn the_inactive_master_scan_waits_for_liveness_after_a_leader_change() {
    let (controller, consensus) = node();
    consensus.set_leader(false);
    seed(&controller, &[1, 2], 1);
    let cancel = run_services(&controller);
    settle().await;
    consensus.set_leader(true);
    settle().await;
    for second in 0..20 {
        beat(&controller, 2);
        if second >= 7 {
            beat(&controller, 1);
        }
        advance(Duration::from_secs(1)).await;
        settle().await;
    }
    assert_eq!(master(&controller), Some(1));
    assert!(controller.status().elections.is_empty());
    cancel.cancel();
}

/// apache/rocketmq#7689: the controller leader and the broker master die together. A follower
/// that has heard the brokers for longer than a heartbeat timeout elects at once when it
/// becomes leader, instead of waiting another timeout from its leadership.
#[tokio::test(start_paused = true)]
async fn a_new_leader_that_knows_liveness_elects_at_once_after_a_double_kill() {
    let (controller, consensus) = node();
    consensus.set_leader(false);
    seed(&controller, &[1, 2], 1);
    let cancel = run_services(&controller);
    for _ in 0..12 {
        beat(&controller, 1);
        beat(&controller, 2);
        advance(Duration::from_secs(1)).await;
        settle().await;
    }
    // The master's connection closes while this node is a follower: it cannot elect yet.
    controller.connection_closed(ConnId(1), Instant::now());
    settle().await;
    assert_eq!(master(&controller), Some(1));
    advance(Duration::from_millis(1500)).await; // the old leader's lease runs out
    consensus.set_leader(true);
    let became_leader = Instant::now();
    for _ in 0..20 {
        beat(&controller, 2);
        advance(Duration::from_millis(100)).await;
        settle().await;
        if master(&controller) == Some(2) {
            break;
        }
    }
    assert_eq!(master(&controller), Some(2));
    assert!(became_leader.elapsed() <= Duration::from_millis(200));
    cancel.cancel();
}

/// apache/rocketmq#10875: the scan elects for a set whose master is dead, never for one whose
/// master is alive.
#[tokio::test(start_paused = true)]
async fn the_inactive_master_scan_reelects_a_dead_master_and_keeps_a_live_one() {
    let (controller, consensus) = node();
    seed(&controller, &[1, 2, 3], 1);
    let now = Instant::now();
    beat(&controller, 1);
    beat(&controller, 2);
    assert!(controller.sets_needing_election(now).is_empty());
    // Dead master (no heartbeat on this node), a live replica: re-elected.
    let (dead, _c) = node();
    seed(&dead, &[1, 2, 3], 1);
    beat(&dead, 2);
    assert_eq!(dead.sets_needing_election(Instant::now()), ["broker-a"]);
    let cancel = run_services(&dead);
    for _ in 0..16 {
        beat(&dead, 2);
        advance(Duration::from_secs(1)).await;
        settle().await;
    }
    assert_eq!(master(&dead), Some(2));
    assert_eq!(
        dead.status().elections[0].reason,
        ElectionReason::InactiveMasterScan
    );
    cancel.cancel();
    assert_eq!(consensus.proposals.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn a_controller_election_finding_nobody_clears_the_master_once() {
    let (controller, consensus) = node();
    seed(&controller, &[1, 2], 1);
    let inactive = super::Inactive {
        broker_name: "broker-a".into(),
        broker_id: Some(1),
        reason: ElectionReason::HeartbeatExpired,
        detected: Instant::now(),
    };
    controller.elect_for_inactive(&inactive).await;
    assert_eq!(master(&controller), None);
    // One not-elected event, not electMasterMaxRetryCount of them.
    assert_eq!(consensus.proposals.load(Ordering::SeqCst), 1);
    let m = controller.inner.machine.read();
    assert_eq!(m.broker_set("broker-a").unwrap().sync.master_epoch, 2);
}

#[tokio::test(start_paused = true)]
async fn a_commit_that_never_comes_fails_after_five_seconds() {
    let (controller, consensus) = node();
    seed(&controller, &[1, 2], 1);
    consensus.set_hanging(true);
    let request = super::machine::decide::ElectMaster {
        broker_name: "broker-a".into(),
        trigger: super::machine::decide::Trigger::Admin(2),
    };
    beat(&controller, 2);
    let started = Instant::now();
    let outcome = controller
        .lead(Purpose::PLAIN, |m, l, f| request.decide(m, l, f))
        .await;
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    let Err(LeadError::Failed(remark)) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        remark.starts_with("java.util.concurrent.TimeoutException"),
        "{remark}"
    );
    // The scheduler is free again.
    consensus.set_hanging(false);
    let outcome = controller
        .lead(Purpose::PLAIN, |m, l, f| request.decide(m, l, f))
        .await;
    assert_eq!(outcome.unwrap().code, 0);
}
