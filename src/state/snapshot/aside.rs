//! Never overwriting what is not ours: a file at `routeSnapshotPath` that is not a route
//! snapshot (a mistyped path naming another file, a symbolic link someone planted, a FIFO) is
//! renamed to `<path>.not-a-snapshot` (or `.not-a-snapshot.<n>` when that name is taken) with
//! a warning before the first snapshot is written, so its content survives and the snapshots
//! go on. A link is moved, not followed: its target is never opened or written.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::header::PREFIX;
use crate::durable::with_suffix;

/// Whether the regular file at `path` starts as a route snapshot does.
fn is_snapshot(path: &Path) -> bool {
    let mut head = Vec::with_capacity(PREFIX.len());
    crate::durable::read::open_regular(path)
        .and_then(|f| f.take(PREFIX.len() as u64).read_to_end(&mut head))
        .is_ok_and(|_| head == PREFIX)
}

/// The first free `<path>.not-a-snapshot[.<n>]`.
fn free_name(path: &Path) -> PathBuf {
    (0..)
        .map(|n| match n {
            0 => with_suffix(path, ".not-a-snapshot"),
            n => with_suffix(path, &format!(".not-a-snapshot.{n}")),
        })
        .find(|p| fs::symlink_metadata(p).is_err())
        .expect("some name is free")
}

/// Moves whatever is at `path` aside unless it is a route snapshot (or nothing, or a
/// directory, which no write can replace and whose failure is reported by the write).
pub(super) fn move_foreign(path: &Path) -> io::Result<()> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.is_dir() || (meta.is_file() && is_snapshot(path)) {
        return Ok(());
    }
    let aside = free_name(path);
    fs::rename(path, &aside)?;
    tracing::warn!(
        file = %path.display(),
        moved_to = %aside.display(),
        "the file at routeSnapshotPath is not a route snapshot: moved aside, not overwritten"
    );
    Ok(())
}
