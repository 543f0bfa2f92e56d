//! Opening the store: the file (or its backup when the file is damaged), then the changes a
//! crash left in the journal, folded into the file before the server starts serving.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;

use parking_lot::{Mutex, RwLock};

use super::file::{parse_file, read_table, render_file};
use super::group_commit::GroupCommit;
use super::write::Disk;
use super::{KvError, KvLimits, KvStore, Namespaces, Tuning, apply, journal, table_bytes};
use crate::durable;

/// Why the store could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file and its backup are both unusable.
    #[error(
        "KV config file {path} is unreadable ({reason}) and its backup {backup} cannot replace it ({backup_reason}); refusing to start rather than lose the table"
    )]
    Unusable {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
        backup: String,
        /// What is wrong with the backup.
        backup_reason: String,
    },
    /// The journal of changes since the file was written could not be read or folded in.
    #[error(
        "KV journal {path} cannot be applied ({reason}); refusing to start rather than lose acknowledged changes"
    )]
    Journal {
        /// The journal.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

impl KvStore {
    pub(crate) fn open_tuned(
        path: PathBuf,
        limits: KvLimits,
        tuning: Tuning,
    ) -> Result<KvStore, LoadError> {
        durable::remove_stale_temp(&path);
        let (table, bytes) = match read_table(&path) {
            Ok(Some(loaded)) => loaded,
            // Our writes never remove the file; a backup without it means the file was lost
            // (deleted, or an interrupted older version): the backup is the best copy there is.
            Ok(None) if durable::backup_path(&path).exists() => {
                recover(&path, MISSING_WITH_BACKUP.into())?
            }
            Ok(None) => (Namespaces::new(), Vec::new()),
            Err(reason) => recover(&path, reason)?,
        };
        let (table, bytes) = replay_journal(&path, table, bytes)?;
        Ok(KvStore {
            limits,
            tuning,
            epoch: AtomicU64::new(0),
            commits: GroupCommit::new(|| {
                Err(KvError::Io(std::io::Error::other(
                    "the KV commit was abandoned",
                )))
            }),
            disk: Mutex::new(Disk::new(table_bytes(&table), &bytes)),
            table: RwLock::new(table),
            path,
        })
    }
}

impl KvStore {
    /// Checks, writing nothing, that the store at `path` would open: its file, or else its
    /// backup, reads. For a takeover, which must know before the running server goes, and
    /// must not touch the files that server still writes (it folds its journal on exit).
    pub fn check(path: &Path) -> Result<(), LoadError> {
        let reason = match read_table(path) {
            Ok(Some(_)) => return Ok(()),
            Ok(None) if !durable::backup_path(path).exists() => return Ok(()),
            Ok(None) => MISSING_WITH_BACKUP.to_owned(),
            Err(reason) => reason,
        };
        read_backup(path, &reason).map(drop)
    }
}

/// Why the file is passed over for its backup when only the backup exists (the file was
/// lost; see `open_tuned`).
const MISSING_WITH_BACKUP: &str = "the file is missing but its backup exists";

/// The error for a file that cannot be used (for `reason`) and a backup that cannot replace
/// it (for `backup_reason`).
fn unusable(path: &Path, reason: &str, backup_reason: String) -> LoadError {
    LoadError::Unusable {
        path: path.display().to_string(),
        reason: reason.to_owned(),
        backup: durable::backup_path(path).display().to_string(),
        backup_reason,
    }
}

/// The table in the backup of `path`, which cannot be used for `reason`; opening and checking
/// the store fall back on it alike.
fn read_backup(path: &Path, reason: &str) -> Result<Namespaces, LoadError> {
    match read_table(&durable::backup_path(path)) {
        Ok(Some((table, _))) => Ok(table),
        Ok(None) => Err(unusable(path, reason, "it does not exist".into())),
        Err(e) => Err(unusable(path, reason, e)),
    }
}

/// Restores the table from the backup; returns it and the bytes now in the file.
fn recover(path: &Path, reason: String) -> Result<(Namespaces, Vec<u8>), LoadError> {
    let table = read_backup(path, &reason)?;
    tracing::warn!(
        file = %path.display(),
        %reason,
        backup = %durable::backup_path(path).display(),
        "KV config file is damaged: recovered the table from its backup; the damaged file is kept as .corrupt"
    );
    // Keep a copy of the damaged file for the operator, then replace it atomically: until
    // the restored file is in place, a crash leaves the damaged file and the backup as
    // they were, and the next start recovers again.
    let corrupt = durable::with_suffix(path, ".corrupt");
    // Written as a new file, not copied onto the name: a link planted there is replaced.
    if let Ok(damaged) = std::fs::read(path) {
        let _ = durable::replace_keeping_backup(&corrupt, &damaged);
    }
    let bytes = render_file(&table);
    durable::replace_keeping_backup(path, &bytes)
        .map_err(|e| unusable(path, &reason, format!("restoring it failed: {e}")))?;
    Ok((table, bytes))
}

/// Applies the changes a journal continuing this very file holds, writes the result as the
/// file (read back, so that the table iterates as Java's loaded from that file would), and
/// removes the journal. A journal continuing another file is stale: its changes are in the
/// file already.
fn replay_journal(
    path: &Path,
    mut table: Namespaces,
    bytes: Vec<u8>,
) -> Result<(Namespaces, Vec<u8>), LoadError> {
    let failed = |reason: String| LoadError::Journal {
        path: journal::path_of(path).display().to_string(),
        reason,
    };
    let Some(found) = journal::read(path).map_err(|e| failed(e.to_string()))? else {
        return Ok((table, bytes));
    };
    let current = found.base == Some(journal::snapshot_hash(&bytes));
    if found.torn > 0 {
        tracing::info!(
            bytes = found.torn,
            "KV journal ends with an incomplete record (a write cut short before it was acknowledged): ignoring it"
        );
    }
    if !current || found.edits.is_empty() {
        journal::remove(path).map_err(|e| failed(e.to_string()))?;
        return Ok((table, bytes));
    }
    for edit in &found.edits {
        apply(&mut table, edit);
    }
    let rendered = render_file(&table);
    durable::replace(path, &rendered).map_err(|e| failed(format!("writing the file: {e}")))?;
    journal::remove(path).map_err(|e| failed(e.to_string()))?;
    tracing::info!(
        changes = found.edits.len(),
        file = %path.display(),
        "KV journal folded into the file"
    );
    let table = parse_file(&rendered).map_err(failed)?;
    Ok((table, rendered))
}
