//! Whole groups: election, replication, leader loss, restart, compaction and catch-up by
//! snapshot, and the asymmetric partition of apache/rocketmq#4800.

use std::time::Duration;

use super::super::code;
use super::{Group, Tuning, fast, new_set, wait_until};
use crate::controller::consensus::{Consensus, ConsensusError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_node_group_elects_itself_commits_and_applies() {
    let group = Group::start(1, fast()).await;
    assert_eq!(group.leader().await, 0);
    group
        .node(0)
        .propose(vec![new_set("broker-a")])
        .await
        .unwrap();
    // Resolved only once applied here.
    assert!(group.machine(0).broker_set("broker-a").is_some());
    group.node(0).barrier().await.unwrap();
    let status = group.status(0);
    assert_eq!(status.leader_id.as_deref(), Some("n0"));
    assert_eq!(status.peers.len(), 1);
    assert_eq!(status.peers[0].reachable, Some(true));
    // The committed index is reported, and the applied one reaches it.
    wait_until(Duration::from_secs(2), "applied = committed", || {
        let status = group.status(0);
        (status.committed.is_some() && status.applied == status.committed).then_some(())
    })
    .await;
    group.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_elect_one_leader_replicate_and_followers_refuse_proposals() {
    let group = Group::start(3, fast()).await;
    let leader = group.leader().await;
    group
        .node(leader)
        .propose(vec![new_set("broker-a")])
        .await
        .unwrap();
    for i in 0..3 {
        wait_until(Duration::from_secs(3), "replication", || {
            group.machine(i).broker_set("broker-a").map(|_| ())
        })
        .await;
    }
    let follower = (leader + 1) % 3;
    let refused = group
        .node(follower)
        .propose(vec![new_set("broker-b")])
        .await;
    assert_eq!(refused, Err(ConsensusError::NotLeader));
    assert_eq!(
        group.node(follower).barrier().await,
        Err(ConsensusError::NotLeader)
    );
    let status = group.status(leader);
    assert!(
        status.peers.iter().all(|p| p.reachable == Some(true)),
        "{status:?}"
    );
    let follows = group.status(follower);
    assert!(!follows.leader_ready);
    assert_eq!(follows.leader_id, status.leader_id);
    assert!(follows.peers.iter().all(|p| p.reachable.is_none()));
    group.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_the_leader_elects_another_and_keeps_every_committed_entry() {
    let group = Group::start(3, fast()).await;
    let first = group.leader().await;
    for name in ["broker-a", "broker-b"] {
        group
            .node(first)
            .propose(vec![new_set(name)])
            .await
            .unwrap();
    }
    let term = group.status(first).term;
    group.stop(first).await;
    let started = tokio::time::Instant::now();
    let second = group.leader().await;
    assert_ne!(second, first);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(group.status(second).term > term);
    assert!(group.machine(second).broker_set("broker-b").is_some());
    group
        .node(second)
        .propose(vec![new_set("broker-c")])
        .await
        .unwrap();
    group.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_recovers_its_machine_from_snapshot_and_tail() {
    let tuning = Tuning {
        snapshot_every: 5,
        keep_behind_snapshot: 2,
        ..fast()
    };
    let mut group = Group::start(1, tuning).await;
    group.leader().await;
    for i in 0..12 {
        group
            .node(0)
            .propose(vec![new_set(&format!("broker-{i}"))])
            .await
            .unwrap();
    }
    let before = group.machine(0);
    let (purged, _) = wait_until(Duration::from_secs(3), "a purge", || {
        let held = group.node(0).log.indexes();
        held.0.map(|_| held)
    })
    .await;
    group.stop(0).await;
    group.restart(0).await;
    // Restored before serving: the snapshot plus the committed tail are in the machine.
    assert_eq!(group.machine(0), before);
    assert_eq!(group.node(0).log.indexes().0, purged);
    group.leader().await;
    group
        .node(0)
        .propose(vec![new_set("broker-late")])
        .await
        .unwrap();
    assert_eq!(group.machine(0).len(), 13);
    group.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_follower_is_brought_up_by_a_snapshot() {
    let tuning = Tuning {
        snapshot_every: 5,
        keep_behind_snapshot: 0,
        ..fast()
    };
    let mut group = Group::start(3, tuning).await;
    let leader = group.leader().await;
    let lagging = (leader + 1) % 3;
    group.stop(lagging).await;
    wait_until(
        Duration::from_secs(3),
        "the stopped peer shown unreachable",
        || {
            let peer = group.status(leader).peers[lagging].clone();
            (peer.reachable == Some(false)).then_some(())
        },
    )
    .await;
    for i in 0..20 {
        group
            .node(leader)
            .propose(vec![new_set(&format!("broker-{i}"))])
            .await
            .unwrap();
    }
    wait_until(Duration::from_secs(3), "the leader's log compacted", || {
        group.node(leader).log.indexes().0.filter(|&p| p >= 10)
    })
    .await;
    group.restart(lagging).await;
    let expected = group.machine(leader);
    wait_until(Duration::from_secs(5), "the follower caught up", || {
        (group.machine(lagging) == expected).then_some(())
    })
    .await;
    // It could not have come from the log: the entries it missed were purged.
    assert!(group.status(lagging).snapshot.is_some());
    group.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_cannot_hear_the_leader_does_not_depose_it() {
    let group = Group::start(3, fast()).await;
    let leader = group.leader().await;
    let deaf = (leader + 1) % 3;
    let term = group.status(leader).term;
    // The leader's appends and heartbeats never reach `deaf`; everything else flows.
    group.refuse(deaf, code::RAFT_APPEND_ENTRIES);
    // Long enough for `deaf` to stand for election several times (lease + timeout ≤ 0.8 s).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let status = group.status(leader);
    assert!(status.leader_ready, "the leader was deposed: {status:?}");
    assert_eq!(status.term, term, "the leader's term changed");
    assert!(
        group.status(deaf).term > term,
        "the deaf node never stood for election"
    );
    group
        .node(leader)
        .propose(vec![new_set("broker-a")])
        .await
        .unwrap();
    group.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_default_timings_a_killed_leader_is_replaced_within_three_seconds() {
    let group = Group::start(3, Tuning::default()).await;
    let first = group.leader().await;
    group
        .node(first)
        .propose(vec![new_set("broker-a")])
        .await
        .unwrap();
    group.stop(first).await;
    let started = tokio::time::Instant::now();
    let second = group.leader().await;
    let took = started.elapsed();
    eprintln!("controller-leader failover (default timings): {took:?}");
    assert_ne!(second, first);
    assert!(took < Duration::from_secs(3), "failover took {took:?}");
    group.shutdown().await;
}

/// A leader whose appends no quorum accepts stops leading at once: it names no leader in
/// CONTROLLER_GET_METADATA_INFO and refuses leader-only work, although openraft 0.9 keeps
/// it in the leader state (brokers follow whichever node names a leader, and its state may
/// be stale once the others elect).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_its_quorum_stops_leading_within_the_read_lease() {
    let group = Group::start(3, fast()).await;
    let leader = group.leader().await;
    for i in (0..3).filter(|&i| i != leader) {
        group.refuse(i, code::RAFT_APPEND_ENTRIES);
    }
    let lease = fast().election_min;
    tokio::time::sleep(lease * 2).await;
    let status = group.status(leader);
    assert!(!status.is_leader && !status.leader_ready, "{status:?}");
    assert_eq!(status.leader_id, None);
    assert!(
        status
            .peers
            .iter()
            .filter(|p| p.reachable == Some(false))
            .count()
            == 2
    );
    group.shutdown().await;
}

/// A raft core that quit (openraft stops it on a failed log write, e.g. a full disk) leaves
/// metrics that still say "leader": the node must not claim to lead on them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_raft_core_quit_no_longer_leads() {
    let group = Group::start(1, fast()).await;
    assert_eq!(group.leader().await, 0);
    group.node(0).raft.shutdown().await.unwrap();
    let status = group.status(0);
    assert!(!status.is_leader && !status.leader_ready, "{status:?}");
    assert_eq!(status.leader_id, None);
    wait_until(
        Duration::from_secs(2),
        "the published status follows",
        || (!group.node(0).watch().borrow().leader_ready).then_some(()),
    )
    .await;
}
