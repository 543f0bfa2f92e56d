//! Watching files for a reload: a file's [`Fingerprint`] (what identifies one version of it
//! without reading it) and [`reload_on_request_or_change`], the loop that reloads on every
//! reload request (SIGHUP, see [`crate::reload`]) and when watched files change, polled on
//! tokio's clock. The auth accounts ([`crate::auth::watch`]) and the TLS material
//! ([`crate::tls::ServerTls::watch`]) are watched with it; each says what "changed" means
//! for its files and what a reload does.

use std::path::Path;
use std::time::{Duration, SystemTime};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How often watched files' metadata is compared with what was last loaded.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// What asked for a reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// A reload request (SIGHUP, or a handle's own reload): an operator's decision.
    Request,
    /// The watcher saw a watched file change (and settle).
    FileChange,
}

/// What identifies one version of a file without reading it: size, modification and change
/// times, and (on Unix) device and inode, so that an editor's write-and-rename is seen too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    unix: (u64, u64, i64, i64),
}

/// The file's fingerprint, or `None` if it cannot be read.
pub(crate) fn fingerprint(path: &Path) -> Option<Fingerprint> {
    let meta = std::fs::metadata(path).ok()?;
    Some(Fingerprint {
        len: meta.len(),
        modified: meta.modified().ok(),
        #[cfg(unix)]
        unix: {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino(), meta.ctime(), meta.ctime_nsec())
        },
    })
}

/// The watch loop: calls `reload` on every reload request and, polling `changed` (`Some`:
/// what differs from the last reload) every [`POLL_INTERVAL`], once a change has read the
/// same on two polls in a row, so an editor's write in progress, or a certificate and key
/// written one after the other, are not loaded half-way. Runs until `cancel` fires; a closed
/// reload channel leaves the polling on its own. Both `changed` and `reload` run on the
/// blocking pool, never on a runtime worker.
pub(crate) async fn reload_on_request_or_change<T, R>(
    mut reloads: watch::Receiver<u64>,
    cancel: CancellationToken,
    changed: impl Fn() -> Option<T> + Clone + Send + 'static,
    reload: impl Fn(Trigger) -> R + Clone + Send + 'static,
) where
    T: PartialEq + Send + 'static,
    R: Send + 'static,
{
    let mut poll = tokio::time::interval(POLL_INTERVAL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    poll.tick().await;
    let mut requests_open = true;
    let mut pending: Option<T> = None;
    loop {
        let trigger = tokio::select! {
            _ = cancel.cancelled() => return,
            request = reloads.changed(), if requests_open => match request {
                Ok(()) => Trigger::Request,
                // The handle is gone: only the file watch is left.
                Err(_) => {
                    requests_open = false;
                    continue;
                }
            },
            _ = poll.tick() => {
                let Some(now) = off_workers(&cancel, changed.clone()).await else {
                    return;
                };
                match (now, pending.take()) {
                    (Some(now), Some(before)) if now == before => Trigger::FileChange,
                    (now, _) => {
                        pending = now;
                        continue;
                    }
                }
            }
        };
        pending = None;
        let reload = reload.clone();
        if off_workers(&cancel, move || reload(trigger))
            .await
            .is_none()
        {
            return;
        }
    }
}

/// Runs `job` on the blocking pool; `None` once `cancel` fires (the task then ends without
/// waiting for the job, so a read that hangs never holds up shutdown) or the runtime is
/// shutting down.
pub(crate) async fn off_workers<T: Send + 'static>(
    cancel: &CancellationToken,
    job: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    tokio::select! {
        _ = cancel.cancelled() => None,
        done = tokio::task::spawn_blocking(job) => done.ok(),
    }
}
