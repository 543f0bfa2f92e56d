//! Committing changes: the limits, then one write for the whole batch — the file rewritten
//! whole for a small table, a journal append for a large one — then memory.

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::atomic::Ordering;

use super::file::render_file;
use super::journal::{self, AppendError, Edit};
use super::{KvError, KvStore, apply};
use crate::durable;

/// What is on disk, as the committing writer tracks it.
#[derive(Debug)]
pub(super) struct Disk {
    /// What `maxKvTotalBytes` counts in the table.
    bytes: usize,
    /// Hash and size of the file's bytes (what a journal names as its base).
    snapshot_hash: u64,
    snapshot_len: u64,
    /// The journal being appended to, if the table is journaled.
    journal: Option<journal::Writer>,
    /// A journal holding acknowledged changes exists but can no longer be appended to: the
    /// file must be rewritten before anything else.
    orphaned_journal: bool,
}

impl Disk {
    pub(super) fn new(bytes: usize, file: &[u8]) -> Disk {
        Disk {
            bytes,
            snapshot_hash: journal::snapshot_hash(file),
            snapshot_len: file.len() as u64,
            journal: None,
            orphaned_journal: false,
        }
    }
}

/// A copy of an I/O error for each writer of a failed batch.
fn copy(e: &io::Error) -> KvError {
    KvError::Io(io::Error::new(e.kind(), e.to_string()))
}

impl KvStore {
    pub(super) fn submit(&self, edit: Edit) -> Result<(), KvError> {
        self.commits.submit(edit, |batch| self.commit(batch))
    }

    /// Folds a journal (if any) into the file, so that the file alone holds the table, as
    /// Java's does. The server calls this at shutdown; a crash instead leaves the journal,
    /// which the next start folds in.
    pub fn flush(&self) -> io::Result<()> {
        let mut disk = self.disk.lock();
        if disk.journal.is_some() || disk.orphaned_journal {
            self.compact(&mut disk)?;
        }
        Ok(())
    }

    /// Commits a batch: every change that fits the limits, in one write.
    fn commit(&self, batch: Vec<Edit>) -> Vec<Result<(), KvError>> {
        let mut disk = self.disk.lock();
        let (accepted, mut results, bytes) = self.admit(&batch, disk.bytes);
        if accepted.is_empty() {
            return results;
        }
        let edits: Vec<&Edit> = accepted.iter().map(|&i| &batch[i]).collect();
        let written = match disk.orphaned_journal {
            true => self.compact(&mut disk),
            false => Ok(()),
        }
        .and_then(|()| {
            if disk.journal.is_some() || bytes > self.tuning.write_through_max {
                self.append(&mut disk, &edits)
            } else {
                self.write_through(&mut disk, &edits)
            }
        });
        match written {
            Ok(()) => {
                disk.bytes = bytes;
                self.epoch.fetch_add(1, Ordering::AcqRel);
            }
            Err(e) => {
                for &i in &accepted {
                    results[i] = Err(copy(&e));
                }
            }
        }
        let journal_len = disk.journal.as_ref().map_or(0, journal::Writer::len);
        if journal_len > self.tuning.compact_min.max(disk.snapshot_len)
            && let Err(e) = self.compact(&mut disk)
        {
            // The changes are safe in the journal; the next commit tries again.
            tracing::error!(file = %self.path.display(), error = %e, "cannot fold the KV journal into the file");
        }
        results
    }

    /// Which changes of a batch fit the limits, in order: their indices, every change's
    /// result so far, and the table's size after the accepted ones. A change that does not
    /// grow the table is always accepted.
    fn admit(
        &self,
        batch: &[Edit],
        mut bytes: usize,
    ) -> (Vec<usize>, Vec<Result<(), KvError>>, usize) {
        let table = self.table.read();
        // Value sizes as earlier changes of this batch leave them (`None`: deleted), and the
        // namespaces they create.
        let mut values: HashMap<(&str, &str), Option<usize>> = HashMap::new();
        let mut created: HashSet<&str> = HashSet::new();
        let mut accepted = Vec::with_capacity(batch.len());
        let mut results = Vec::with_capacity(batch.len());
        for (i, edit) in batch.iter().enumerate() {
            let (namespace, key) = match edit {
                Edit::Put { namespace, key, .. } | Edit::Delete { namespace, key } => {
                    (namespace.as_str(), key.as_str())
                }
            };
            let old = values.get(&(namespace, key)).copied().unwrap_or_else(|| {
                table
                    .get(namespace)
                    .and_then(|e| e.get(key))
                    .map(String::len)
            });
            let without = bytes - old.map_or(0, |v| key.len() + v);
            let after = match edit {
                Edit::Put { value, .. } => {
                    let new_namespace =
                        table.get(namespace).is_none() && !created.contains(namespace);
                    let after = without
                        + key.len()
                        + value.len()
                        + if new_namespace { namespace.len() } else { 0 };
                    let max = self.limits.max_total_bytes;
                    if after > max && after > bytes {
                        results.push(Err(KvError::Full { would: after, max }));
                        continue;
                    }
                    if new_namespace {
                        created.insert(namespace);
                    }
                    values.insert((namespace, key), Some(value.len()));
                    after
                }
                Edit::Delete { .. } => {
                    values.insert((namespace, key), None);
                    without
                }
            };
            bytes = after;
            accepted.push(i);
            results.push(Ok(()));
        }
        (accepted, results, bytes)
    }

    /// Rewrites the whole file with the changes, then shows them.
    fn write_through(&self, disk: &mut Disk, edits: &[&Edit]) -> io::Result<()> {
        let mut next = self.table.read().clone();
        for edit in edits {
            apply(&mut next, edit);
        }
        let rendered = render_file(&next);
        durable::replace(&self.path, &rendered)?;
        *self.table.write() = next;
        disk.snapshot_hash = journal::snapshot_hash(&rendered);
        disk.snapshot_len = rendered.len() as u64;
        Ok(())
    }

    /// Appends the changes to the journal (starting one if needed), then shows them.
    fn append(&self, disk: &mut Disk, edits: &[&Edit]) -> io::Result<()> {
        if disk.journal.is_none() {
            disk.journal = Some(journal::Writer::create(&self.path, disk.snapshot_hash)?);
        }
        let mut records = Vec::new();
        for edit in edits {
            journal::encode(edit, &mut records);
        }
        let writer = disk.journal.as_mut().expect("just ensured");
        match writer.append(&records) {
            Ok(()) => {}
            Err(AppendError::Failed(e)) => return Err(e),
            Err(e @ AppendError::Unusable(_)) => {
                // The journal may end in a partial record: later appends would sit behind it.
                disk.journal = None;
                disk.orphaned_journal = true;
                return Err(e.into_io());
            }
        }
        let mut table = self.table.write();
        for edit in edits {
            apply(&mut table, edit);
        }
        Ok(())
    }

    /// Writes the whole table as the file and drops the journal, whose changes it holds.
    fn compact(&self, disk: &mut Disk) -> io::Result<()> {
        let rendered = render_file(&self.table.read());
        durable::replace(&self.path, &rendered)?;
        disk.snapshot_hash = journal::snapshot_hash(&rendered);
        disk.snapshot_len = rendered.len() as u64;
        disk.journal = None;
        disk.orphaned_journal = false;
        // A journal left behind names the old file as its base, so it is ignored at start.
        if let Err(e) = journal::remove(&self.path) {
            tracing::warn!(error = %e, "cannot remove the folded KV journal; it will be ignored");
        }
        Ok(())
    }
}
