//! Keeping the accounts current: a background task re-reads the accounts file when a reload is
//! requested (SIGHUP, see [`crate::reload`]) and when the file's metadata changes (polled every
//! [`POLL_INTERVAL`](crate::file_watch::POLL_INTERVAL) on tokio's clock, applied once it has settled for one interval, and only
//! if it does not loosen the policy: see [`super::loosening`]). Also the start-up check that
//! the file is not readable by other users. The watch loop itself is `crate::file_watch`'s,
//! shared with the TLS material's watcher.

use std::path::Path;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Gate, Shared};
use crate::file_watch::{Fingerprint, Trigger, fingerprint, reload_on_request_or_change};

/// Warns when the accounts file can be read or written by users other than its owner.
pub(super) fn warn_if_exposed(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path) {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                tracing::warn!(
                    file = %path.display(),
                    mode = format_args!("{mode:o}"),
                    "the accounts file holds secret keys but other users can access it: chmod 600 it"
                );
            }
        }
    }
}

/// Reloads `gate`'s accounts on every reload request and whenever the file changes, until
/// `cancel` fires. Does nothing for a gate that is off. A change is acted on once the file
/// has looked the same for one poll interval, so an
/// editor's write in progress is not loaded half-way. The file is read on the blocking pool,
/// never on a runtime worker.
pub(crate) async fn run(gate: Gate, reloads: watch::Receiver<u64>, cancel: CancellationToken) {
    let Some(shared) = gate.0 else {
        return;
    };
    let watched = shared.clone();
    reload_on_request_or_change(
        reloads,
        cancel,
        move || changed(&watched),
        move |trigger| shared.reload(trigger),
    )
    .await;
}

/// The accounts file's fingerprint when it differs from what the last reload saw.
fn changed(shared: &Shared) -> Option<Option<Fingerprint>> {
    let now = fingerprint(&shared.path);
    (now != *shared.seen.lock()).then_some(now)
}

/// What a reload of the accounts logs as its cause.
pub(super) fn why(trigger: Trigger) -> &'static str {
    match trigger {
        Trigger::Request => "reload requested",
        Trigger::FileChange => "the file changed",
    }
}
