//! The raft log and vote on disk, under `<controllerStorePath>/raft-<selfId>/`: `log` (the
//! records of [`super::log_file`], appended and fsynced before openraft hears they are
//! written), `vote.json` (replaced atomically and fsynced on every change) and
//! `committed.json` (a hint for replay at start, written without fsync: losing it only means
//! the tail is applied once a leader confirms it). The whole unpurged log is also kept in
//! memory — a purge after each snapshot keeps it to a few thousand entries — so reads never
//! touch the disk. Blocking file work runs on tokio's blocking pool, never on a core thread.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{ErrorSubject, ErrorVerb, LogState, RaftLogReader};
use parking_lot::Mutex;

use super::log_file::{self, Record};
use super::types::{Entry, LogId, StorageError, TypeConfig, Vote};
use crate::durable;

/// This node's log and vote; cheap to clone (openraft's log reader is a clone).
#[derive(Clone)]
pub(crate) struct LogStore {
    shared: Arc<Shared>,
}

struct Shared {
    dir: PathBuf,
    mem: Mutex<LogMem>,
    file: Arc<Mutex<LogFile>>,
    committed: Mutex<Option<LogId>>,
}

/// The unpurged log, in memory.
#[derive(Default)]
struct LogMem {
    purged: Option<LogId>,
    entries: BTreeMap<u64, Entry>,
}

/// The open log file: where each entry's record starts, and the file's length.
struct LogFile {
    path: PathBuf,
    file: File,
    len: u64,
    offsets: BTreeMap<u64, u64>,
}

const LOG: &str = "log";
const VOTE: &str = "vote.json";
const COMMITTED: &str = "committed.json";

impl LogStore {
    /// Opens (creating when absent) the log in `dir`, dropping a torn tail left by a crash.
    pub(crate) fn open(dir: &Path) -> io::Result<LogStore> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(LOG);
        durable::remove_stale_temp(&path);
        durable::remove_stale_temp(&dir.join(VOTE));
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let scanned = log_file::scan(&bytes);
        let file = OpenOptions::new().append(true).create(true).open(&path)?;
        if let Some(why) = &scanned.torn {
            tracing::warn!(path = %path.display(), "raft log: dropping a torn tail: {why}");
            file.set_len(scanned.good_len)?;
            file.sync_all()?;
        }
        durable::sync_parent(&path)?;
        let mut mem = LogMem::default();
        let mut offsets = BTreeMap::new();
        for (offset, record) in scanned.records {
            match record {
                Record::Purged(id) => {
                    mem.entries.retain(|&i, _| i > id.index);
                    offsets.retain(|&i, _| i > id.index);
                    mem.purged = Some(id);
                }
                Record::Entry(entry) => {
                    let index = entry.log_id.index;
                    // Never written so (a truncation cuts the file), but a later record
                    // for an index always wins.
                    mem.entries.split_off(&index);
                    offsets.split_off(&index);
                    mem.entries.insert(index, entry);
                    offsets.insert(index, offset);
                }
            }
        }
        let committed = read_committed(&dir.join(COMMITTED));
        Ok(LogStore {
            shared: Arc::new(Shared {
                dir: dir.to_owned(),
                mem: Mutex::new(mem),
                file: Arc::new(Mutex::new(LogFile {
                    path,
                    file,
                    len: scanned.good_len,
                    offsets,
                })),
                committed: Mutex::new(committed),
            }),
        })
    }

    /// The last committed id openraft told this store about.
    pub(crate) fn committed(&self) -> Option<LogId> {
        *self.shared.committed.lock()
    }

    /// The id of the last entry held, or of the last purged one when none is held.
    pub(crate) fn last_log_id(&self) -> Option<LogId> {
        let mem = self.shared.mem.lock();
        mem.entries
            .values()
            .next_back()
            .map(|e| e.log_id)
            .or(mem.purged)
    }

    /// The entries held, in memory (for tests and the status page).
    #[cfg(test)]
    pub(crate) fn indexes(&self) -> (Option<u64>, Vec<u64>) {
        let mem = self.shared.mem.lock();
        (
            mem.purged.map(|p| p.index),
            mem.entries.keys().copied().collect(),
        )
    }
}

/// The committed hint, or `None` when absent or unreadable (it is written without fsync).
fn read_committed(path: &Path) -> Option<LogId> {
    let bytes = std::fs::read(path).ok()?;
    serde_json::from_slice(&bytes).ok()?
}

fn log_error(verb: ErrorVerb, e: io::Error) -> StorageError {
    StorageError::from_io_error(ErrorSubject::Logs, verb, e)
}

/// Runs file work on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e)))
}

impl LogFile {
    /// Appends `bytes` (the records of entries starting at the given relative offsets) and
    /// fsyncs.
    /// On failure the file is cut back to where it was, so a half-written batch never sits
    /// before a later one (the scan at the next start would stop there and lose the later).
    fn append(&mut self, bytes: &[u8], starts: &[(u64, u64)]) -> io::Result<()> {
        let written = self
            .file
            .write_all(bytes)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = written {
            let _ = self.file.set_len(self.len);
            return Err(e);
        }
        for &(index, relative) in starts {
            self.offsets.insert(index, self.len + relative);
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Cuts the file where entry `index` starts.
    fn truncate(&mut self, index: u64) -> io::Result<()> {
        let Some(&offset) = self.offsets.get(&index) else {
            return Ok(());
        };
        self.file.set_len(offset)?;
        self.file.sync_data()?;
        self.offsets.split_off(&index);
        self.len = offset;
        Ok(())
    }

    /// Replaces the file, atomically, by `purged` followed by `kept`.
    fn rewrite(&mut self, purged: LogId, kept: &[Entry]) -> io::Result<()> {
        let mut bytes = Vec::new();
        log_file::encode(&Record::Purged(purged), &mut bytes);
        let mut offsets = BTreeMap::new();
        for entry in kept {
            offsets.insert(entry.log_id.index, bytes.len() as u64);
            log_file::encode(&Record::Entry(entry.clone()), &mut bytes);
        }
        durable::replace_keeping_backup(&self.path, &bytes)?;
        self.file = OpenOptions::new().append(true).open(&self.path)?;
        self.len = bytes.len() as u64;
        self.offsets = offsets;
        Ok(())
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let mem = self.shared.mem.lock();
        Ok(mem.entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let mem = self.shared.mem.lock();
        let last = mem.entries.values().next_back().map(|e| e.log_id);
        Ok(LogState {
            last_purged_log_id: mem.purged,
            last_log_id: last.or(mem.purged),
        })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let path = self.shared.dir.join(VOTE);
        let json = serde_json::to_vec(vote).expect("a vote always serialises");
        blocking(move || durable::replace_keeping_backup(&path, &json))
            .await
            .map_err(|e| StorageError::from_io_error(ErrorSubject::Vote, ErrorVerb::Write, e))
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        let path = self.shared.dir.join(VOTE);
        let read_error = |e| StorageError::from_io_error(ErrorSubject::Vote, ErrorVerb::Read, e);
        match durable::read::read_small(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| read_error(io::Error::new(io::ErrorKind::InvalidData, e))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(read_error(e)),
        }
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        *self.shared.committed.lock() = committed;
        let json = serde_json::to_vec(&committed).expect("a log id always serialises");
        // A hint only (see the module doc): a failed or torn write is harmless.
        if let Err(e) = std::fs::write(self.shared.dir.join(COMMITTED), json) {
            tracing::debug!("raft log: committed hint not written: {e}");
        }
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(self.committed())
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let mut bytes = Vec::new();
        let mut starts = Vec::with_capacity(entries.len());
        for entry in &entries {
            starts.push((entry.log_id.index, bytes.len() as u64));
            log_file::encode(&Record::Entry(entry.clone()), &mut bytes);
        }
        let file = self.shared.file.clone();
        let written = blocking(move || file.lock().append(&bytes, &starts)).await;
        match written {
            Ok(()) => {
                let mut mem = self.shared.mem.lock();
                for entry in entries {
                    mem.entries.insert(entry.log_id.index, entry);
                }
                drop(mem);
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(io::Error::new(e.kind(), e.to_string())));
                Err(log_error(ErrorVerb::Write, e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let file = self.shared.file.clone();
        let index = log_id.index;
        blocking(move || file.lock().truncate(index))
            .await
            .map_err(|e| log_error(ErrorVerb::Delete, e))?;
        self.shared.mem.lock().entries.split_off(&index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let kept: Vec<Entry> = {
            let mem = self.shared.mem.lock();
            mem.entries
                .range(log_id.index + 1..)
                .map(|(_, e)| e.clone())
                .collect()
        };
        let file = self.shared.file.clone();
        blocking(move || file.lock().rewrite(log_id, &kept))
            .await
            .map_err(|e| log_error(ErrorVerb::Delete, e))?;
        let mut mem = self.shared.mem.lock();
        mem.entries = mem.entries.split_off(&(log_id.index + 1));
        mem.purged = Some(log_id);
        Ok(())
    }
}
