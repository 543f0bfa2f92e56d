//! Crash-safe file replacement, for the KV store, the route snapshot and the persisted
//! configuration, and bounded reads of the small files an operator names ([`read`]).
//!
//! A file is replaced by writing a temporary file beside it, syncing it, and renaming it over
//! the original, then syncing the directory; a crash at any moment leaves either the old or
//! the new content. The previous content is kept as `<file>.bak` (as Java does) by linking
//! the old file under that name before the rename.
//!
//! The temporary file has an unpredictable name (`<file>.<16 hex digits>.tmp`) and is created
//! with `O_CREAT|O_EXCL|O_NOFOLLOW`, so a file or symbolic link planted under a guessable name
//! can neither redirect the write nor be truncated. [`replace`] never writes through a symbolic
//! link: a link at the path is itself replaced by the new file and its target is left alone.
//! Only the `-c` configuration file, which Java rewrites in place, is written through a link to
//! its target ([`replace_through_link`]), keeping the target's permissions.

pub(crate) mod read;
#[cfg(test)]
mod tests;

/// Test set-up shared by the modules that read a file (config, accounts, KV, TLS): a fresh
/// temporary directory holding one file `name` written with `text`.
#[cfg(test)]
pub(crate) fn temp_file(
    name: &str,
    text: impl AsRef<[u8]>,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// `path` with `suffix` appended to its last component (`kv.json` to `kv.json.bak`).
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The backup kept beside `path`.
pub(crate) fn backup_path(path: &Path) -> PathBuf {
    with_suffix(path, ".bak")
}

/// 64 bits no other process can predict: `RandomState` is seeded from the operating system's
/// randomness, and the counter keeps two names of one process apart.
fn random_suffix() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.finish()
}

/// Creates `path` as a new, empty file opened for writing (`O_CREAT|O_EXCL|O_NOFOLLOW`):
/// it fails on an existing file or a link there, so nothing planted can redirect the writes.
pub(crate) fn create_new_nofollow(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Creates a new, empty file beside `path` under an unpredictable name; it never opens an
/// existing file or follows a link.
fn create_temp(path: &Path) -> io::Result<(PathBuf, File)> {
    let mut last = None;
    for _ in 0..8 {
        let tmp = temp_name(path);
        match create_new_nofollow(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// A fresh unpredictable temporary name beside `path`: `<path>.<16 hex digits>.tmp`, the
/// form [`is_temp_of`] recognises.
fn temp_name(path: &Path) -> PathBuf {
    with_suffix(path, &format!(".{:016x}.tmp", random_suffix()))
}

/// Whether `name` is one of the temporary names used for `base` (`<base>.tmp` of earlier
/// versions, or `<base>.<16 hex digits>.tmp`).
fn is_temp_of(name: &str, base: &str) -> bool {
    let Some(rest) = name
        .strip_prefix(base)
        .and_then(|r| r.strip_prefix('.'))
        .and_then(|r| r.strip_suffix("tmp"))
    else {
        return false;
    };
    rest.is_empty()
        || rest
            .strip_suffix('.')
            .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    // Directories can be opened read-only and synced on Unix; elsewhere this is best effort.
    match File::open(dir) {
        Ok(d) => d.sync_all().or(Ok(())),
        Err(_) => Ok(()),
    }
}

/// Makes the creation, renaming or removal of a file in `path`'s directory durable.
pub(crate) fn sync_parent(path: &Path) -> io::Result<()> {
    sync_dir(parent_of(path))
}

/// How [`replace_with`] treats the old file.
#[derive(Clone, Copy)]
struct Mode {
    /// Keep the old content as `<path>.bak`.
    backup: bool,
    /// Write through a symbolic link at the path to its target.
    follow: bool,
}

/// Replaces `path` with `content` durably, keeping the old content as `<path>.bak`. A
/// symbolic link at `path` is replaced, never written through. Parent directories are
/// created as needed.
pub(crate) fn replace(path: &Path, content: &[u8]) -> io::Result<()> {
    let mode = Mode {
        backup: true,
        follow: false,
    };
    replace_with(path, content, mode)
}

/// Replaces `path` with `content` durably, leaving any `<path>.bak` alone (used when the old
/// content is known to be bad and the backup is the good copy).
pub(crate) fn replace_keeping_backup(path: &Path, content: &[u8]) -> io::Result<()> {
    let mode = Mode {
        backup: false,
        follow: false,
    };
    replace_with(path, content, mode)
}

/// Like [`replace`], but a symbolic link at `path` is followed and its target replaced,
/// with the target's permissions: how the `-c` configuration file is rewritten, since Java
/// writes it in place and operators link it from elsewhere.
pub(crate) fn replace_through_link(path: &Path, content: &[u8]) -> io::Result<()> {
    let mode = Mode {
        backup: true,
        follow: true,
    };
    replace_with(path, content, mode)
}

/// The file `path` names: the target of a symbolic link (followed to its end, even when
/// the target does not exist yet), else `path` itself.
fn resolve(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        let is_link = fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        let Some(target) = is_link.then(|| fs::read_link(&p).ok()).flatten() else {
            break;
        };
        p = match p.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
    }
    p
}

fn replace_with(path: &Path, content: &[u8], mode: Mode) -> io::Result<()> {
    let real = if mode.follow {
        resolve(path)
    } else {
        path.to_path_buf()
    };
    let dir = parent_of(&real);
    fs::create_dir_all(dir)?;
    // Only a regular file is backed up and lends its permissions (a link being replaced is
    // not, so its target is never read or copied).
    let found = fs::symlink_metadata(&real).ok();
    if found.as_ref().is_some_and(|m| m.is_symlink()) {
        tracing::warn!(file = %real.display(), "the file is a symbolic link: replacing the link with the file itself; its target is left alone");
    }
    let old = found.filter(|m| m.is_file());
    let (tmp, mut f) = create_temp(&real)?;
    let written = (|| {
        if let Some(old) = &old {
            f.set_permissions(old.permissions())?;
        }
        f.write_all(content)?;
        f.sync_all()?;
        drop(f);
        if mode.backup && old.is_some() {
            keep_backup(&real, &backup_path(path))?;
        }
        fs::rename(&tmp, &real)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written?;
    sync_dir(dir)
}

/// Makes `bak` a copy of the regular file `real`: a hard link when the file system allows,
/// else a copy into a fresh temporary file, then renamed into place. A hard link is made
/// under an unpredictable name and never replaces an existing file, so nothing planted is
/// followed either way.
fn keep_backup(real: &Path, bak: &Path) -> io::Result<()> {
    let linked = temp_name(bak);
    let staged = match fs::hard_link(real, &linked) {
        Ok(()) => linked,
        Err(_) => {
            let (tmp, mut f) = create_temp(bak)?;
            let copied = read::open_regular(real)
                .and_then(|mut r| io::copy(&mut r, &mut f))
                .and_then(|_| f.sync_all());
            if let Err(e) = copied {
                let _ = fs::remove_file(&tmp);
                return Err(e);
            }
            tmp
        }
    };
    fs::rename(&staged, bak).inspect_err(|_| {
        let _ = fs::remove_file(&staged);
    })
}

/// Removes temporary files left beside `path` (and beside its backup) by an interrupted
/// [`replace`], if any.
pub(crate) fn remove_stale_temp(path: &Path) {
    let Some(base) = path.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let bak = format!("{base}.bak");
    let Ok(entries) = fs::read_dir(parent_of(path)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if is_temp_of(name, base) || is_temp_of(name, &bak) {
            // `remove_file` removes a link itself, never its target.
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// The temporary files beside `path` (for tests that check none is left behind).
#[cfg(test)]
pub(crate) fn temp_files(path: &Path) -> Vec<PathBuf> {
    let base = path.file_name().unwrap().to_str().unwrap().to_owned();
    let mut found: Vec<PathBuf> = fs::read_dir(parent_of(path))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_str().is_some_and(|n| is_temp_of(n, &base)))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}
