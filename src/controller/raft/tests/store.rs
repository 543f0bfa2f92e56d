//! The log store on its own: a torn tail after a crash, truncation and purge surviving a
//! reopen, the vote's round trip.

use std::io::Write;

use openraft::storage::RaftLogStorage;
use openraft::{CommittedLeaderId, EntryPayload, RaftLogReader};

use super::super::log_file::{self, Record};
use super::super::log_store::LogStore;
use super::super::types::{Entry, LogId, Vote};

fn entry(index: u64) -> Entry {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 7), index),
        payload: EntryPayload::Normal(vec![super::new_set(&format!("broker-{index}"))]),
    }
}

/// A log file holding entries `1..=n`, as a previous run wrote it.
fn written(dir: &std::path::Path, n: u64) -> std::path::PathBuf {
    let mut bytes = Vec::new();
    for i in 1..=n {
        log_file::encode(&Record::Entry(entry(i)), &mut bytes);
    }
    let path = dir.join("log");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[tokio::test]
async fn a_torn_tail_is_dropped_on_open_and_the_log_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(dir.path(), 3);
    let good = std::fs::metadata(&path).unwrap().len();
    // Half of a fourth record, as a kill -9 mid-write leaves it.
    let mut torn = Vec::new();
    log_file::encode(&Record::Entry(entry(4)), &mut torn);
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(&torn[..torn.len() / 2]).unwrap();
    drop(file);

    let mut store = LogStore::open(dir.path()).unwrap();
    assert_eq!(store.indexes(), (None, vec![1, 2, 3]));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), good);
    let state = store.get_log_state().await.unwrap();
    assert_eq!(state.last_log_id.map(|id| id.index), Some(3));
    let read = store.try_get_log_entries(2..4).await.unwrap();
    assert_eq!(read, vec![entry(2), entry(3)]);
}

#[tokio::test]
async fn truncation_and_purge_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    written(dir.path(), 6);
    let mut store = LogStore::open(dir.path()).unwrap();
    store.truncate(entry(5).log_id).await.unwrap();
    store.purge(entry(2).log_id).await.unwrap();
    assert_eq!(store.indexes(), (Some(2), vec![3, 4]));
    drop(store);

    let mut store = LogStore::open(dir.path()).unwrap();
    assert_eq!(store.indexes(), (Some(2), vec![3, 4]));
    let state = store.get_log_state().await.unwrap();
    assert_eq!(state.last_purged_log_id, Some(entry(2).log_id));
    // Everything purged: the log state falls back to the purged id.
    store.purge(entry(4).log_id).await.unwrap();
    let state = store.get_log_state().await.unwrap();
    assert_eq!(state.last_log_id, Some(entry(4).log_id));
}

#[tokio::test]
async fn the_vote_and_the_committed_hint_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = LogStore::open(dir.path()).unwrap();
    assert_eq!(store.read_vote().await.unwrap(), None);
    let vote = Vote::new_committed(4, 9);
    store.save_vote(&vote).await.unwrap();
    store.save_committed(Some(entry(3).log_id)).await.unwrap();
    drop(store);
    let mut store = LogStore::open(dir.path()).unwrap();
    assert_eq!(store.read_vote().await.unwrap(), Some(vote));
    assert_eq!(store.read_committed().await.unwrap(), Some(entry(3).log_id));
    // A torn hint is no hint.
    std::fs::write(dir.path().join("committed.json"), b"{\"leader_id").unwrap();
    let mut store = LogStore::open(dir.path()).unwrap();
    assert_eq!(store.read_committed().await.unwrap(), None);
}

#[tokio::test]
async fn a_snapshot_installed_elsewhere_restores_the_same_machine_after_a_restart() {
    use openraft::RaftSnapshotBuilder;
    use openraft::storage::RaftStateMachine;

    use super::super::state_machine::MachineStore;
    use crate::controller::consensus::SharedMachine;

    let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let source = SharedMachine::default();
    let mut store = MachineStore::open(from.path(), source.clone()).unwrap();
    // 333 sets of 3 replicas: the 1 000-replica controller of the issue.
    let entries: Vec<Entry> = (1..=333u64)
        .map(|i| Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 7), i),
            payload: EntryPayload::Normal(
                (1..=3)
                    .map(|id| crate::controller::machine::Event::ApplyBrokerIdEvent {
                        cluster_name: "DefaultCluster".to_owned(),
                        broker_name: format!("broker-{i}"),
                        broker_address: format!("10.0.{}.{}:10911", i / 256, i % 256),
                        new_broker_id: id,
                        register_check_code: format!("10.0.0.1:10911;{id}"),
                    })
                    .collect(),
            ),
        })
        .collect();
    store.apply(entries).await.unwrap();
    let started = tokio::time::Instant::now();
    let snapshot = store.build_snapshot().await.unwrap();
    let bytes = snapshot.snapshot.get_ref().len();
    eprintln!(
        "raft snapshot of 1 000 replicas: {bytes} bytes in {:?}",
        started.elapsed()
    );
    assert_eq!(snapshot.meta.last_log_id.map(|id| id.index), Some(333));

    let target = SharedMachine::default();
    let mut other = MachineStore::open(to.path(), target.clone()).unwrap();
    other
        .install_snapshot(&snapshot.meta, snapshot.snapshot)
        .await
        .unwrap();
    assert_eq!(*target.read(), *source.read());
    assert_eq!(target.read().len(), 333);
    let (applied, _) = other.applied_state().await.unwrap();
    assert_eq!(applied, snapshot.meta.last_log_id);

    let restarted = SharedMachine::default();
    let mut reopened = MachineStore::open(to.path(), restarted.clone()).unwrap();
    assert_eq!(*restarted.read(), *source.read());
    assert_eq!(reopened.applied_state().await.unwrap().0, applied);
}
