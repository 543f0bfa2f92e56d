//! Writing snapshots: the periodic background task, and the one write at shutdown.
//!
//! The table is copied under the read lock (names are shared, so the copy is cheap) and
//! encoded and written on the blocking pool, so neither requests nor the runtime's workers
//! wait for the disk. A write that fails (a full disk, a directory that is not writable) is
//! logged when it starts failing and when it recovers, and never stops the server.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::{Meta, Reason, save};
use crate::config::Settings;
use crate::state::Namesrv;

/// Where and how often snapshots are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotConfig {
    /// The snapshot file.
    pub path: PathBuf,
    /// Period of the background write.
    pub(crate) interval: Duration,
}

impl SnapshotConfig {
    /// The snapshot configuration `settings` ask for, if warm restarts are on.
    pub(crate) fn from_settings(s: &Settings) -> Option<SnapshotConfig> {
        s.restore_routes_on_start.then(|| SnapshotConfig {
            path: s.route_snapshot_file(),
            interval: s.route_snapshot_interval_millis.duration(),
        })
    }
}

/// Writes the snapshots of one [`SnapshotConfig`], one write at a time. Cheap to clone: the
/// periodic task and the shutdown write share it.
#[derive(Debug, Clone)]
pub(crate) struct SnapshotWriter {
    config: SnapshotConfig,
    /// Held while a snapshot is written, so that a periodic write still running when the
    /// shutdown write starts cannot interleave with it.
    writing: Arc<Mutex<()>>,
}

impl SnapshotWriter {
    /// A writer of the snapshots `config` describes.
    pub(crate) fn new(config: SnapshotConfig) -> SnapshotWriter {
        SnapshotWriter {
            config,
            writing: Arc::default(),
        }
    }

    /// Where and how often it writes.
    pub(crate) fn config(&self) -> &SnapshotConfig {
        &self.config
    }
}

/// Copies the table and writes it on the blocking pool.
async fn write(state: &Namesrv, writer: &SnapshotWriter, reason: Reason) -> std::io::Result<()> {
    let parts = state.route_parts();
    let (path, writer) = (writer.config.path.clone(), writer.writing.clone());
    let meta = Meta::now(reason);
    tokio::task::spawn_blocking(move || {
        let _writing = writer.lock();
        save(&path, &meta, &parts)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// Writes the route table to the writer's file now. Returns whether the write succeeded
/// (a failure is logged).
pub(crate) async fn write_now(state: &Namesrv, writer: &SnapshotWriter, reason: Reason) -> bool {
    let config = writer.config();
    match write(state, writer, reason).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(file = %config.path.display(), error = %e, ?reason, "cannot write the route snapshot");
            false
        }
    }
}

/// Writes a snapshot every `interval` of the writer's config while the table changes, until
/// `cancel` fires.
pub(crate) async fn run(state: Namesrv, writer: SnapshotWriter, cancel: CancellationToken) {
    let config = writer.config().clone();
    let mut ticks = tokio::time::interval_at(Instant::now() + config.interval, config.interval);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut written_stamp = None;
    let mut failing = false;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let stamp = state.routes().change_stamp();
        if written_stamp == Some(stamp) {
            continue;
        }
        match write(&state, &writer, Reason::Periodic).await {
            Ok(()) => {
                if failing {
                    tracing::info!(file = %config.path.display(), "route snapshot written again");
                }
                failing = false;
                written_stamp = Some(stamp);
            }
            Err(e) => {
                // Logged once per failing spell, not at every tick.
                if !failing {
                    tracing::warn!(file = %config.path.display(), error = %e, "cannot write the route snapshot; retrying every {:?}", config.interval);
                }
                failing = true;
            }
        }
    }
}
