//! Crash-safe file replacement, for the KV store and the persisted configuration.
//!
//! A file is replaced by writing a sibling temporary file, syncing it, and renaming it over
//! the original, then syncing the directory; a crash at any moment leaves either the old or
//! the new content. The previous content is kept as `<file>.bak` (as Java does) by linking
//! the old file under that name before the rename. Like Java, which writes in place, an
//! update keeps the file's permissions and writes through a symbolic link to its target.

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

/// Makes the creation, renaming or removal of a file in `path`'s directory durable.
pub fn sync_parent(path: &Path) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    sync_dir(dir)
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

fn replace_with(path: &Path, content: &[u8], backup: bool) -> io::Result<()> {
    let real = resolve(path);
    let dir = real
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = temp_path(&real);
    let old = fs::metadata(&real).ok();
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        if let Some(old) = &old {
            f.set_permissions(old.permissions())?;
        }
        f.write_all(content)?;
        f.sync_all()?;
    }
    // The backup sits beside the name the operator configured, as Java's does.
    if backup && old.is_some() {
        let bak = backup_path(path);
        let bak_tmp = with_suffix(&bak, ".tmp");
        let _ = fs::remove_file(&bak_tmp);
        if fs::hard_link(&real, &bak_tmp).is_err() {
            fs::copy(&real, &bak_tmp)?;
            File::open(&bak_tmp)?.sync_all()?;
        }
        fs::rename(&bak_tmp, &bak)?;
    }
    fs::rename(&tmp, &real)?;
    sync_dir(dir)
}

/// Removes a temporary file left by an interrupted [`replace`], if any.
pub fn remove_stale_temp(path: &Path) {
    let _ = fs::remove_file(temp_path(&resolve(path)));
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

    #[cfg(unix)]
    #[test]
    fn writes_through_a_symlink_and_keeps_the_permissions() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real/ns.conf");
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(&target, "one").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.conf");
        symlink("real/ns.conf", &link).unwrap();
        replace(&link, b"two").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&target).unwrap(), b"two");
        let mode = fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(fs::read(backup_path(&link)).unwrap(), b"one");
        // A dangling link gets its target created, as writing through it would.
        let dangling = dir.path().join("dangling.json");
        symlink("real/kv.json", &dangling).unwrap();
        replace(&dangling, b"kv").unwrap();
        assert_eq!(fs::read(dir.path().join("real/kv.json")).unwrap(), b"kv");
    }
}
