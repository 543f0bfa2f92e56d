//! Applying the log to the controller's [`Machine`], and its raft snapshots: the machine's
//! tables with the last applied id and membership, as one JSON file `snapshot.json` beside
//! the log, replaced atomically (a "raft snapshot", not the name server's route snapshot).
//! The same bytes are what a leader streams to a lagging follower. Apply never fails: each
//! event goes to [`Machine::apply`], which ignores what no longer fits.

use std::io::{self, Cursor};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, ErrorSubject, ErrorVerb, RaftSnapshotBuilder, Snapshot};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::super::consensus::SharedMachine;
use super::super::machine::Machine;
use super::types::{Entry, LogId, SnapshotMeta, StorageError, StoredMembership, TypeConfig};
use crate::durable;

const SNAPSHOT: &str = "snapshot.json";

/// The file's content, and the bytes sent to followers.
#[derive(Serialize, Deserialize)]
struct SnapshotFile {
    meta: SnapshotMeta,
    machine: Machine,
}

/// The newest snapshot: its metadata and its bytes.
#[derive(Clone)]
struct Stored {
    meta: SnapshotMeta,
    bytes: Arc<Vec<u8>>,
}

/// The state machine side of the store; its clone is the snapshot builder.
#[derive(Clone)]
pub(crate) struct MachineStore {
    inner: Arc<Inner>,
}

struct Inner {
    machine: SharedMachine,
    path: PathBuf,
    applied: Mutex<(Option<LogId>, StoredMembership)>,
    snapshot: Mutex<Option<Stored>>,
    /// Makes snapshot ids unique within a process's life (a rebuilt snapshot of the same
    /// index is a different file).
    builds: AtomicU64,
}

impl MachineStore {
    /// Opens the snapshot in `dir`, if any, and restores `machine` from it.
    pub(crate) fn open(dir: &Path, machine: SharedMachine) -> io::Result<MachineStore> {
        let path = dir.join(SNAPSHOT);
        durable::remove_stale_temp(&path);
        let mut applied = (None, StoredMembership::default());
        let mut snapshot = None;
        match std::fs::read(&path) {
            Ok(bytes) => {
                let file: SnapshotFile = serde_json::from_slice(&bytes)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                *machine.write() = file.machine;
                applied = (file.meta.last_log_id, file.meta.last_membership.clone());
                snapshot = Some(Stored {
                    meta: file.meta,
                    bytes: Arc::new(bytes),
                });
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        Ok(MachineStore {
            inner: Arc::new(Inner {
                machine,
                path,
                applied: Mutex::new(applied),
                snapshot: Mutex::new(snapshot),
                builds: AtomicU64::new(0),
            }),
        })
    }

    /// Writes `stored` to disk and makes it the current snapshot.
    async fn keep(&self, stored: Stored) -> Result<(), StorageError> {
        let path = self.inner.path.clone();
        let bytes = stored.bytes.clone();
        tokio::task::spawn_blocking(move || durable::replace_keeping_backup(&path, &bytes))
            .await
            .unwrap_or_else(|e| Err(io::Error::other(e)))
            .map_err(|e| {
                let subject = ErrorSubject::Snapshot(Some(stored.meta.signature()));
                StorageError::from_io_error(subject, ErrorVerb::Write, e)
            })?;
        *self.inner.snapshot.lock() = Some(stored);
        Ok(())
    }

    fn snapshot_of(stored: &Stored) -> Snapshot<TypeConfig> {
        Snapshot {
            meta: stored.meta.clone(),
            snapshot: Box::new(Cursor::new(stored.bytes.as_ref().clone())),
        }
    }
}

impl RaftSnapshotBuilder<TypeConfig> for MachineStore {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        // The applied id, membership and tables are read together, under the machine's
        // lock, so the snapshot is exactly the state at its last log id.
        let (meta, file) = {
            let machine = self.inner.machine.read();
            let (last_log_id, membership) = self.inner.applied.lock().clone();
            let build = self.inner.builds.fetch_add(1, Ordering::Relaxed);
            let snapshot_id = match last_log_id {
                Some(id) => format!("{}-{}-{build}", id.leader_id.term, id.index),
                None => format!("0-0-{build}"),
            };
            let meta = SnapshotMeta {
                last_log_id,
                last_membership: membership,
                snapshot_id,
            };
            let file = SnapshotFile {
                meta: meta.clone(),
                machine: machine.clone(),
            };
            (meta, file)
        };
        // Serialised outside the lock: applies go on meanwhile.
        let bytes = serde_json::to_vec(&file).expect("a snapshot always serialises");
        let stored = Stored {
            meta,
            bytes: Arc::new(bytes),
        };
        self.keep(stored.clone()).await?;
        Ok(Self::snapshot_of(&stored))
    }
}

impl RaftStateMachine<TypeConfig> for MachineStore {
    type SnapshotBuilder = MachineStore;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        Ok(self.inner.applied.lock().clone())
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut answers = Vec::new();
        for entry in entries {
            // The machine's lock is taken first and the applied id moves with the tables,
            // so a snapshot never sees one without the other.
            let mut machine = self.inner.machine.write();
            let mut applied = self.inner.applied.lock();
            match entry.payload {
                EntryPayload::Blank => {}
                EntryPayload::Normal(events) => events.iter().for_each(|e| machine.apply(e)),
                EntryPayload::Membership(m) => {
                    applied.1 = StoredMembership::new(Some(entry.log_id), m);
                }
            }
            applied.0 = Some(entry.log_id);
            answers.push(());
        }
        Ok(answers)
    }

    async fn get_snapshot_builder(&mut self) -> MachineStore {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let bytes = snapshot.into_inner();
        let file: SnapshotFile = serde_json::from_slice(&bytes).map_err(|e| {
            let subject = ErrorSubject::Snapshot(Some(meta.signature()));
            let e = io::Error::new(io::ErrorKind::InvalidData, e);
            StorageError::from_io_error(subject, ErrorVerb::Read, e)
        })?;
        // Durable first: a crash right after leaves the new snapshot to restart from.
        let stored = Stored {
            meta: meta.clone(),
            bytes: Arc::new(bytes),
        };
        self.keep(stored).await?;
        let mut machine = self.inner.machine.write();
        *machine = file.machine;
        *self.inner.applied.lock() = (meta.last_log_id, meta.last_membership.clone());
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        Ok(self.inner.snapshot.lock().as_ref().map(Self::snapshot_of))
    }
}
