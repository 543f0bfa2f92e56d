//! Crash-safe file replacement, for the KV store and the persisted configuration.
//!
//! A file is replaced by writing a sibling temporary file, syncing it, and renaming it over
//! the original, then syncing the directory; a crash at any moment leaves either the old or
//! the new content. The previous content is kept as `<file>.bak` (as Java does) by linking
//! the old file under that name before the rename.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The backup kept beside `path`.
pub fn backup_path(path: &Path) -> PathBuf {
    with_suffix(path, ".bak")
}

/// The temporary file used while replacing `path`.
pub fn temp_path(path: &Path) -> PathBuf {
    with_suffix(path, ".tmp")
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    // Directories can be opened read-only and synced on Unix; elsewhere this is best effort.
    match File::open(dir) {
        Ok(d) => d.sync_all().or(Ok(())),
        Err(_) => Ok(()),
    }
}

/// Replaces `path` with `content` durably, keeping the old content as `<path>.bak`.
/// Parent directories are created as needed.
pub fn replace(path: &Path, content: &[u8]) -> io::Result<()> {
    replace_with(path, content, true)
}

/// Replaces `path` with `content` durably, leaving any `<path>.bak` alone (used when the old
/// content is known to be bad and the backup is the good copy).
pub fn replace_keeping_backup(path: &Path, content: &[u8]) -> io::Result<()> {
    replace_with(path, content, false)
}

fn replace_with(path: &Path, content: &[u8], backup: bool) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = temp_path(path);
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(content)?;
        f.sync_all()?;
    }
    if backup && path.exists() {
        let bak = backup_path(path);
        let bak_tmp = with_suffix(&bak, ".tmp");
        let _ = fs::remove_file(&bak_tmp);
        if fs::hard_link(path, &bak_tmp).is_err() {
            fs::copy(path, &bak_tmp)?;
            File::open(&bak_tmp)?.sync_all()?;
        }
        fs::rename(&bak_tmp, &bak)?;
    }
    fs::rename(&tmp, path)?;
    sync_dir(dir)
}

/// Removes a temporary file left by an interrupted [`replace`], if any.
pub fn remove_stale_temp(path: &Path) {
    let _ = fs::remove_file(temp_path(path));
    let _ = fs::remove_file(with_suffix(&backup_path(path), ".tmp"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_and_keeps_a_backup() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/dir/file.json");
        replace(&path, b"one").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"one");
        assert!(!backup_path(&path).exists());
        replace(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read(backup_path(&path)).unwrap(), b"one");
        replace(&path, b"three").unwrap();
        assert_eq!(fs::read(backup_path(&path)).unwrap(), b"two");
        assert!(!temp_path(&path).exists());
    }
}
