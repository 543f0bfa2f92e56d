//! Unit tests of crash-safe replacement and bounded reads: temporary files that cannot be
//! redirected, links never written through, stale temporaries removed, FIFOs and oversized
//! files refused.

use std::fs;

use super::read::{MAX_SMALL_FILE, read_capped, read_small};
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
    assert_eq!(temp_files(&path), Vec::<PathBuf>::new());
    assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 2);
}

#[test]
fn temporary_names_are_unpredictable_and_recognised() {
    let a = format!("f.json.{:016x}.tmp", random_suffix());
    let b = format!("f.json.{:016x}.tmp", random_suffix());
    assert_ne!(a, b);
    assert!(is_temp_of(&a, "f.json") && is_temp_of("f.json.tmp", "f.json"));
    for other in [
        "f.json",
        "f.json.bak",
        "f.json.corrupt",
        "f.json.1234.tmp",
        "g.json.tmp",
    ] {
        assert!(!is_temp_of(other, "f.json"), "{other}");
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_at_the_path_is_replaced_never_written_through() {
    use std::os::unix::fs::symlink;
    let (dir, victim) = super::temp_file("victim", "precious");
    let path = dir.path().join("routes.snapshot");
    symlink(&victim, &path).unwrap();
    replace(&path, b"new").unwrap();
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
    assert!(fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(fs::read(&path).unwrap(), b"new");
    // The link was not backed up either: nothing reads its target.
    assert!(fs::symlink_metadata(backup_path(&path)).is_err());
}

#[cfg(unix)]
#[test]
fn planted_temporary_and_backup_links_redirect_nothing() {
    use std::os::unix::fs::symlink;
    let (dir, victim) = super::temp_file("victim", "precious");
    let path = dir.path().join("kvConfig.json");
    replace(&path, b"one").unwrap();
    // The names earlier versions used, planted as links to another file.
    for planted in [
        with_suffix(&path, ".tmp"),
        with_suffix(&backup_path(&path), ".tmp"),
    ] {
        symlink(&victim, &planted).unwrap();
    }
    replace(&path, b"two").unwrap();
    replace(&path, b"three").unwrap();
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
    assert!(fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(fs::read(&path).unwrap(), b"three");
    assert_eq!(fs::read(backup_path(&path)).unwrap(), b"two");
    // Start-up clean-up removes the planted links (not their target).
    remove_stale_temp(&path);
    assert!(fs::symlink_metadata(with_suffix(&path, ".tmp")).is_err());
    assert!(fs::symlink_metadata(with_suffix(&backup_path(&path), ".tmp")).is_err());
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
}

#[test]
fn stale_temporary_files_of_both_namings_are_removed_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kvConfig.json");
    let stale = [
        "kvConfig.json.tmp",
        "kvConfig.json.0123456789abcdef.tmp",
        "kvConfig.json.bak.tmp",
        "kvConfig.json.bak.fedcba9876543210.tmp",
    ];
    let kept = [
        "kvConfig.json",
        "kvConfig.json.bak",
        "other.json.0123456789abcdef.tmp",
    ];
    for name in stale.iter().chain(&kept) {
        fs::write(dir.path().join(name), "x").unwrap();
    }
    remove_stale_temp(&path);
    for name in stale {
        assert!(!dir.path().join(name).exists(), "{name} is removed");
    }
    for name in kept {
        assert!(dir.path().join(name).exists(), "{name} is kept");
    }
}

#[test]
fn a_failed_write_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kv.json");
    // A directory where the file should be: the rename fails.
    fs::create_dir(&path).unwrap();
    assert!(replace(&path, b"one").is_err());
    assert_eq!(temp_files(&path), Vec::<PathBuf>::new());
}

#[cfg(unix)]
#[test]
fn the_config_file_is_written_through_its_link_keeping_the_permissions() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real/ns.conf");
    fs::create_dir_all(target.parent().unwrap()).unwrap();
    fs::write(&target, "one").unwrap();
    fs::set_permissions(&target, fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("link.conf");
    symlink("real/ns.conf", &link).unwrap();
    replace_through_link(&link, b"two").unwrap();
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
    replace_through_link(&dangling, b"kv").unwrap();
    assert_eq!(fs::read(dir.path().join("real/kv.json")).unwrap(), b"kv");
}

#[cfg(unix)]
#[test]
fn reads_refuse_fifos_directories_and_oversized_files_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("cert.pem");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // Without the check this read would wait for a writer for ever.
    let e = read_small(&fifo).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let e = read_small(dir.path()).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
    let big = dir.path().join("chain.pem");
    fs::write(&big, vec![b'a'; 11]).unwrap();
    let e = read_capped(&big, 10).unwrap_err();
    assert!(e.to_string().contains("limit of 10 bytes"), "{e}");
    assert_eq!(read_capped(&big, 11).unwrap().len(), 11);
    const { assert!(MAX_SMALL_FILE >= 1 << 20) };
}
