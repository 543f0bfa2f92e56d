//! Warm restart: the route table written to disk periodically and at shutdown, and read back
//! at start, so that a restarted name server answers route lookups at once instead of
//! waiting up to a heartbeat period for every broker to register again.
//!
//! What is kept is `Parts`: brokers with how long ago each was last heard from, its
//! timeout and data version; queue data (write permissions included); static-topic
//! mappings; filter servers. A restored broker is judged exactly as if the server had never
//! stopped: its silence counts from its last heartbeat *before* the restart, so the scan
//! evicts it once its own timeout has passed (unless it heartbeats again), and its next
//! registration replaces it. It has no connection until it is heard from again (see
//! `crate::state::route_table::parts::NO_CONNECTION`).
//!
//! The file is replaced crash-safely through `crate::durable`, so a crash at any moment
//! leaves the previous snapshot or the new one; a file at the path that is not a snapshot is
//! moved aside first, never overwritten (`aside`). Reading never fails the start-up: a file
//! that is missing, unreadable, damaged, of a newer format, or older than the default broker
//! timeout is ignored with one log line, and the server starts empty, as Java always does.
//! The age is judged against the default timeout rather than the timeouts the brokers in it
//! declared, since any client can declare one: a registration cannot make an old snapshot
//! look fresh. `task` writes the periodic snapshots.

mod aside;
mod format;
mod header;
pub(crate) mod task;
#[cfg(test)]
mod tests;

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

pub use format::{decode, encode};
pub(crate) use header::FORMAT;

use super::Namesrv;
use super::route_table::parts::Parts;
use super::route_table::{DEFAULT_BROKER_TIMEOUT, RouteTable};
use crate::protocol::body::data_version::wall_clock_millis;

/// Why a snapshot was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    /// The periodic write.
    Periodic,
    /// The server was shutting down.
    Shutdown,
}

/// What a snapshot says about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// Wall-clock milliseconds when it was taken.
    pub written_at_millis: i64,
    /// The process that wrote it.
    pub pid: u32,
    /// Why it was written.
    pub reason: Reason,
}

impl Meta {
    /// A snapshot taken now by this process.
    pub(crate) fn now(reason: Reason) -> Meta {
        Meta {
            written_at_millis: wall_clock_millis(),
            pid: std::process::id(),
            reason,
        }
    }
}

/// Why a snapshot was not used.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Read(#[source] std::io::Error),
    /// The first line is not a snapshot header.
    #[error("it is not a route snapshot (no `namesrv-routes` header line)")]
    NotASnapshot,
    /// A newer server wrote it.
    #[error("it has format {found}, newer than this server's format {FORMAT}")]
    NewerFormat {
        /// The file's format.
        found: u32,
    },
    /// The body is shorter or longer than its header says (a truncated file).
    #[error("its body has {found} bytes where its header says {expected} (truncated?)")]
    Length {
        /// Bytes the header announces.
        expected: usize,
        /// Bytes present.
        found: usize,
    },
    /// The body does not match its checksum.
    #[error("its body does not match its checksum (damaged)")]
    Checksum,
    /// The body is not the expected JSON.
    #[error("its content is unreadable: {0}")]
    Content(#[source] serde_json::Error),
    /// It is older than the default broker timeout: its brokers would be expired, or kept
    /// only by the timeouts they declared.
    #[error(
        "it was written {} s ago, longer than the default broker timeout ({} s)",
        .age.as_secs(), .limit.as_secs()
    )]
    Stale {
        /// How long ago it was written.
        age: Duration,
        /// The default broker timeout.
        limit: Duration,
    },
}

impl SnapshotError {
    /// Whether the file itself is bad (rather than merely too old or too new), so that the
    /// previous snapshot may still serve.
    fn is_damage(&self) -> bool {
        !matches!(
            self,
            SnapshotError::Stale { .. } | SnapshotError::NewerFormat { .. }
        )
    }
}

/// Reads the snapshot at `path` and shifts every broker's age by the time that passed since
/// it was written (`now_millis`, wall clock). `Ok(None)` when there is no file.
pub(crate) fn load(path: &Path, now_millis: i64) -> Result<Option<(Meta, Parts)>, SnapshotError> {
    // Only a regular file is read: a FIFO or device put at the path cannot hold the start.
    let read = |p: &Path| -> std::io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        crate::durable::read::open_regular(p)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    };
    let bytes = match read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(SnapshotError::Read(e)),
    };
    let (meta, mut parts) = decode(&bytes)?;
    // A clock set back since the write counts as no time passed.
    let passed =
        Duration::from_millis(now_millis.saturating_sub(meta.written_at_millis).max(0) as u64);
    if passed > DEFAULT_BROKER_TIMEOUT {
        return Err(SnapshotError::Stale {
            age: passed,
            limit: DEFAULT_BROKER_TIMEOUT,
        });
    }
    for (_, live) in &mut parts.live {
        live.age = live.age.saturating_add(passed);
    }
    Ok(Some((meta, parts)))
}

/// Writes `parts` to `path` crash-safely (the previous snapshot is kept as `<path>.bak`).
/// Anything at `path` that is not a route snapshot is first moved aside, never overwritten
/// (see [`aside`]).
pub(crate) fn save(path: &Path, meta: &Meta, parts: &Parts) -> std::io::Result<()> {
    aside::move_foreign(path)?;
    crate::durable::replace(path, &encode(meta, parts))
}

/// What [`Namesrv::restore_routes`](crate::state::Namesrv::restore_routes) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
    /// Routes were restored from the snapshot.
    Routes {
        /// Brokers restored.
        brokers: usize,
        /// Topics restored.
        topics: usize,
    },
    /// There was no snapshot.
    Nothing,
    /// The snapshot was ignored (logged with the reason).
    Ignored,
}

impl Namesrv {
    /// The route table's content now, for a snapshot.
    pub(crate) fn route_parts(&self) -> Parts {
        self.routes().to_parts(Instant::now())
    }

    /// Restores the route table from the snapshot at `path` (or, when that file is damaged,
    /// from the previous one kept beside it), if there is a usable one; otherwise logs why
    /// not and leaves the table as it is. Never fails.
    pub fn restore_routes(&self, path: &Path) -> Restored {
        crate::durable::remove_stale_temp(path);
        let now = wall_clock_millis();
        let found = match load(path, now) {
            Err(e) if e.is_damage() => {
                let backup = crate::durable::backup_path(path);
                match load(&backup, now) {
                    Ok(Some(found)) => {
                        tracing::warn!(file = %path.display(), "route snapshot unusable ({e}); using the previous one, {}", backup.display());
                        Ok(Some((backup, found)))
                    }
                    Ok(None) => Err(e),
                    Err(b) => {
                        tracing::warn!(file = %backup.display(), "previous route snapshot unusable too: {b}");
                        Err(e)
                    }
                }
            }
            other => other.map(|found| found.map(|f| (path.to_path_buf(), f))),
        };
        let (file, (meta, parts)) = match found {
            Ok(Some(found)) => found,
            Ok(None) => {
                tracing::info!(file = %path.display(), "no route snapshot: starting with an empty route table");
                return Restored::Nothing;
            }
            Err(e) => {
                tracing::warn!(file = %path.display(), "route snapshot ignored, starting with an empty route table: {e}");
                return Restored::Ignored;
            }
        };
        let (brokers, topics) = (parts.live.len(), parts.topics.len());
        let table = RouteTable::from_parts(parts, Instant::now());
        self.metrics()
            .note_clusters(table.counts().live_brokers.keys().map(|c| &**c));
        *self.routes_mut() = table;
        tracing::info!(
            file = %file.display(),
            brokers,
            topics,
            written_by_pid = meta.pid,
            reason = ?meta.reason,
            age_ms = now.saturating_sub(meta.written_at_millis),
            "route table restored from the snapshot"
        );
        Restored::Routes { brokers, topics }
    }
}
