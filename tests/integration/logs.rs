//! Logs an operator can keep: `--log-dir` writes rotating files with a bounded count beside a
//! Java name server's own logs without touching them, and `--log-format json` writes one JSON
//! object per line.

use crate::harness::spawned::{self, Spawned};

/// The rotated log files (`namesrv-rs.<date>.log`) in `dir`.
fn rotated(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("namesrv-rs.") && n.ends_with(".log") && n != "namesrv-rs.log")
        .collect();
    names.sort();
    names
}

#[test]
fn log_files_rotate_with_a_bounded_count_and_spare_javas_files() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    for day in 1..=9 {
        std::fs::write(logs.join(format!("namesrv-rs.2020-01-0{day}.log")), "old\n").unwrap();
    }
    // A Java name server's files in the same directory.
    for java in ["namesrv.log", "namesrv.1.log", "namesrv_default.log"] {
        std::fs::write(logs.join(java), "java\n").unwrap();
    }
    let conf = spawned::config(dir.path(), "");
    let logs_arg = logs.display().to_string();
    let mut server = Spawned::start(
        &conf,
        dir.path(),
        &["--log-dir", &logs_arg, "--log-max-files", "3"],
    );
    let current = logs.join("namesrv-rs.log");
    assert!(
        current.is_symlink(),
        "namesrv-rs.log links to the current file"
    );
    server.signal("TERM");
    assert!(server.wait_exit().success());
    let text = std::fs::read_to_string(&current).unwrap();
    assert!(text.contains("The Name Server boot success."), "{text}");
    assert!(
        text.contains("name server stopped"),
        "flushed at exit: {text}"
    );
    let kept = rotated(&logs);
    assert!(kept.len() <= 3, "at most 3 files kept: {kept:?}");
    for java in ["namesrv.log", "namesrv.1.log", "namesrv_default.log"] {
        assert_eq!(std::fs::read_to_string(logs.join(java)).unwrap(), "java\n");
    }
}

#[test]
fn json_lines_for_log_shippers() {
    let dir = tempfile::tempdir().unwrap();
    let conf = spawned::config(dir.path(), "");
    let logs = dir.path().join("logs");
    let logs_arg = logs.display().to_string();
    let mut server = Spawned::start(
        &conf,
        dir.path(),
        &["--log-dir", &logs_arg, "--log-format", "json"],
    );
    server.signal("TERM");
    assert!(server.wait_exit().success());
    let text = std::fs::read_to_string(logs.join("namesrv-rs.log")).unwrap();
    let mut messages = Vec::new();
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(
            v["timestamp"].is_string() && v["level"].is_string(),
            "{line}"
        );
        messages.push(
            v["fields"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("The Name Server boot success.")),
        "{messages:?}"
    );
    // Without --log-dir, JSON goes to stderr.
    let mut server = Spawned::start(&conf, dir.path(), &["--log-format", "json"]);
    let line = server
        .wait_for_log("\"message\":\"The Name Server boot success")
        .expect("a JSON boot line on stderr");
    assert!(
        serde_json::from_str::<serde_json::Value>(&line).is_ok(),
        "{line}"
    );
}

#[test]
fn an_unusable_log_dir_is_a_clear_start_up_error() {
    let (dir, blocker) = crate::harness::temp_file("file", "x");
    let conf = spawned::config(dir.path(), "");
    let out = std::process::Command::new(spawned::BIN)
        .arg("-c")
        .arg(&conf)
        .arg("--log-dir")
        .arg(blocker.join("logs"))
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--log-dir") && err.contains("file/logs"),
        "{err}"
    );
}
