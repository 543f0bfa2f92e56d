//! The built `namesrv` binary and the `bin/` scripts, run as an operator runs them: help,
//! version and `-p` output, config-file errors that name the file, key and value, a real
//! start that answers over TCP and exits cleanly on SIGTERM, and `bin/mqnamesrv` /
//! `bin/mqshutdown` with their log and pid files.
//!
//! Every process is started with `HOME` (and, for the scripts, `ROCKETMQ_HOME`) in a
//! temporary directory and listens on `127.0.0.1` port 0; the address comes from the boot
//! line. Guards kill whatever is still running when a test fails.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;

use namesrv::config::Settings;
use namesrv::protocol::code::{request, response};

use crate::harness::process::{
    BIN, BOOT_LINE, PATIENCE, Reaped, alive, boot_addr, namesrv, private_config, run, run_namesrv,
    stderr, stdout, terminate, wait_exit,
};
use crate::harness::{TestClient, body_text};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// A process started by `bin/mqnamesrv` (not our child), killed by pid if still running.
struct PidGuard(u32);

impl Drop for PidGuard {
    fn drop(&mut self) {
        if alive(self.0) {
            let _ = Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .status();
        }
    }
}

/// Runs the binary with `args` in a fresh home and asserts that it exits with `code`.
fn exits_with(args: &[&str], code: i32) -> std::process::Output {
    let home = tempfile::tempdir().unwrap();
    let out = run_namesrv(home.path(), args, None);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
    out
}

#[test]
fn help_prints_usage_and_exits_0() {
    for flag in ["-h", "--help"] {
        let out = exits_with(&[flag], 0);
        let text = stdout(&out);
        for expected in [
            "Usage:",
            "--configFile",
            "--printConfigItem",
            "--namesrvAddr",
        ] {
            assert!(text.contains(expected), "{flag}: no {expected} in {text}");
        }
    }
}

#[test]
fn version_exits_0() {
    let out = exits_with(&["--version"], 0);
    assert!(stdout(&out).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn print_config_item_lists_every_effective_key() {
    let home = tempfile::tempdir().unwrap();
    let out = run_namesrv(home.path(), &["-p"], None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let kv_path = format!(
        "kvConfigPath={}/namesrv/kvConfig.json",
        home.path().display()
    );
    for line in [
        "listenPort=9876",
        "bindAddress=0.0.0.0",
        "frameMaxLength=16777216",
        "scanNotActiveBrokerInterval=10000",
        "rocketmqHome=",
        &kv_path,
    ] {
        assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
    }
    for info in Settings::KEYS {
        let prefix = format!("{}=", info.name);
        assert!(
            text.lines().any(|l| l.starts_with(&prefix)),
            "{} missing from -p",
            info.name
        );
    }
}

#[test]
fn print_config_item_reflects_the_config_file() {
    let (dir, conf) = crate::harness::temp_file(
        "my.conf",
        "listenPort=19999\norderMessageEnable=true\nclientWorkerThreads=4\n",
    );
    let out = run_namesrv(dir.path(), &["-p"], Some(&conf));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let loaded = format!("load config properties file OK, {}", conf.display());
    let store = format!("configStorePath={}", conf.display());
    for line in [
        loaded.as_str(),
        "listenPort=19999",
        "orderMessageEnable=true",
        "clientWorkerThreads=4",
        "enableTopicList=true",
        &store,
    ] {
        assert!(text.lines().any(|l| l == line), "no {line} in\n{text}");
    }
}

#[test]
fn bad_values_name_the_file_key_and_value() {
    let dir = tempfile::tempdir().unwrap();
    for (text, key, value) in [
        ("listenPort=abc\n", "listenPort", "abc"),
        ("listenPort=70000\n", "listenPort", "70000"),
        ("orderMessageEnable=yes\n", "orderMessageEnable", "yes"),
    ] {
        let conf = dir.path().join("bad.conf");
        std::fs::write(&conf, text).unwrap();
        let out = run_namesrv(dir.path(), &[], Some(&conf));
        assert!(!out.status.success(), "{text} was accepted");
        let err = stderr(&out);
        let file = conf.display().to_string();
        for part in [file.as_str(), key, value] {
            assert!(err.contains(part), "{text}: stderr lacks {part}: {err}");
        }
    }
}

#[test]
fn a_missing_config_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("no-such.conf");
    let out = run_namesrv(dir.path(), &[], Some(&conf));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains(&conf.display().to_string()), "{err}");
}

#[test]
fn unknown_options_exit_1_with_usage() {
    for option in ["--no-such-option", "-x"] {
        let out = exits_with(&[option], 1);
        let err = stderr(&out);
        assert!(err.contains(option) && err.contains("Usage:"), "{err}");
        assert!(stdout(&out).is_empty(), "{option}");
    }
}

#[test]
fn a_missing_option_argument_exits_1() {
    let out = exits_with(&["-c"], 1);
    assert!(stderr(&out).contains("--configFile"), "{}", stderr(&out));
}

#[tokio::test]
async fn starts_answers_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let conf = private_config(dir.path());
    let log = dir.path().join("stderr.log");
    let mut cmd = namesrv(dir.path());
    cmd.arg("-c")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = Reaped(cmd.spawn().unwrap());
    let (tx, lines) = mpsc::channel();
    let out = child.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = lines.recv_timeout(PATIENCE).unwrap_or_else(|_| {
        panic!(
            "no output; stderr: {}",
            std::fs::read_to_string(&log).unwrap()
        )
    });
    assert_eq!(
        first,
        format!("load config properties file OK, {}", conf.display())
    );
    let boot = lines.recv_timeout(PATIENCE).unwrap_or_else(|_| {
        panic!(
            "no boot line; stderr: {}",
            std::fs::read_to_string(&log).unwrap()
        )
    });
    assert!(boot.starts_with(BOOT_LINE), "{boot}");
    assert!(
        boot.contains("serializeType=JSON, address 127.0.0.1:"),
        "{boot}"
    );
    let addr = boot_addr(&boot);
    assert_ne!(addr.port(), 0);

    let mut client = TestClient::connect(addr).await;
    let resp = client.call(request::GET_NAMESRV_CONFIG, &[], None).await;
    assert_eq!(resp.code, response::SUCCESS);
    let body = body_text(&resp);
    assert!(body.contains("bindAddress=127.0.0.1\n"), "{body}");
    assert!(
        body.contains(&format!("configStorePath={}\n", conf.display())),
        "{body}"
    );
    let resp = client.call(999, &[], None).await;
    assert_eq!(resp.code, response::REQUEST_CODE_NOT_SUPPORTED);
    drop(client);

    terminate(child.0.id());
    let status = wait_exit(&mut child.0, PATIENCE).expect("exits after SIGTERM");
    assert!(
        status.success(),
        "{status}; stderr: {}",
        std::fs::read_to_string(&log).unwrap()
    );
}

/// Whether `bash` can be run; the script test is skipped without it.
fn bash_available() -> bool {
    Command::new("bash")
        .arg("-c")
        .arg("exit 0")
        .status()
        .is_ok_and(|s| s.success())
}

/// A script from `bin/` with the environment of the script test.
pub(crate) fn script(name: &str, home: &Path, rocketmq_home: &Path) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(Path::new(REPO).join("bin").join(name))
        .current_dir(home)
        .env("HOME", home)
        .env("ROCKETMQ_HOME", rocketmq_home)
        .env("NAMESRV_BIN", BIN)
        .env_remove("NAMESRV_PID_FILE")
        .env_remove("NAMESRV_LOG_DIR")
        .env_remove("NAMESRV_FOREGROUND")
        .env_remove("ROCKETMQ_SERIALIZE_TYPE")
        .env_remove("JAVA_OPT")
        .env_remove("JAVA_OPT_EXT")
        .env_remove("RUST_LOG");
    cmd
}

#[test]
fn mqnamesrv_passes_the_system_properties_of_java_opt() {
    if !bash_available() {
        eprintln!("note: bash is not available; skipping the bin/mqnamesrv test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = private_config(dir.path());
    let mut print = script("mqnamesrv", dir.path(), dir.path());
    // As runserver.sh: JAVA_OPT first, JAVA_OPT_EXT last (so it wins); JVM flags are skipped.
    print
        .env(
            "JAVA_OPT",
            "-server -Xms1g -Dtls.server.mode=disabled -XX:+UseG1GC",
        )
        .env(
            "JAVA_OPT_EXT",
            "-Dtls.server.mode=enforcing -Dtls.config.file=/nonexistent/tls.properties \
             -Dtls.server.keyPassword=zz-secret-zz",
        )
        .arg("-p")
        .arg("-c")
        .arg(&conf);
    let out = run(print);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("tls.server.mode=enforcing\n"), "{text}");
    assert!(text.contains("tls.config.file=/nonexistent/tls.properties\n"));
    assert!(text.contains("# tls.server.keyPassword is set (not shown)\n"));
    assert!(!text.contains("zz-secret-zz"));
}

#[tokio::test]
async fn scripts_start_the_server_in_the_background_and_stop_it() {
    if !bash_available() {
        eprintln!("note: bash is not available; skipping the bin/mqnamesrv test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let rocketmq_home = dir.path().join("rocketmq");
    std::fs::create_dir_all(&home).unwrap();
    let conf = private_config(dir.path());
    let logs = rocketmq_home.join("logs");
    let (log_file, pid_file) = (logs.join("namesrv-rs.log"), logs.join("namesrv.pid"));
    let out_file = logs.join("namesrv.out");

    let mut start = script("mqnamesrv", &home, &rocketmq_home);
    start.arg("-c").arg(&conf);
    let out = run(start);
    assert!(
        out.status.success(),
        "mqnamesrv failed: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains(BOOT_LINE), "{}", stdout(&out));
    assert!(stdout(&out).contains(&log_file.display().to_string()));
    let pid: u32 = std::fs::read_to_string(&pid_file)
        .expect("the pid file is written")
        .trim()
        .parse()
        .unwrap();
    let _guard = PidGuard(pid);
    assert!(alive(pid));
    let console = std::fs::read_to_string(&out_file).expect("the console file is written");
    let boot = console.lines().find(|l| l.starts_with(BOOT_LINE)).unwrap();
    // The log proper is a rotating file, `namesrv-rs.log` linking to the current one.
    assert!(log_file.is_symlink());
    let log = std::fs::read_to_string(&log_file).expect("the log file is written");
    assert!(log.contains(BOOT_LINE), "{log}");

    let mut client = TestClient::connect(boot_addr(boot)).await;
    let resp = client.call(request::GET_NAMESRV_CONFIG, &[], None).await;
    assert_eq!(resp.code, response::SUCCESS);
    let body = body_text(&resp);
    let reported_home = format!("rocketmqHome={}\n", rocketmq_home.display());
    assert!(body.contains(&reported_home), "{body}");
    drop(client);

    let mut again = script("mqnamesrv", &home, &rocketmq_home);
    again.arg("-c").arg(&conf);
    let out = run(again);
    assert_eq!(out.status.code(), Some(1), "a second start is refused");
    assert!(stderr(&out).contains("already running"), "{}", stderr(&out));

    // The pid file is named explicitly so that mqshutdown never falls back to stopping
    // other namesrv processes of this user (other tests' servers).
    let stop = || {
        let mut cmd = script("mqshutdown", &home, &rocketmq_home);
        cmd.arg("namesrv").env("NAMESRV_PID_FILE", &pid_file);
        run(cmd)
    };
    let out = stop();
    assert!(
        out.status.success(),
        "mqshutdown failed: {}{}",
        stdout(&out),
        stderr(&out)
    );
    let said = stdout(&out);
    assert!(
        said.contains(&format!("The mqnamesrv({pid}) is running...")),
        "{said}"
    );
    assert!(
        said.contains(&format!("Send shutdown request to mqnamesrv({pid}) OK")),
        "{said}"
    );
    assert!(!alive(pid), "the server is gone once mqshutdown returns");
    assert!(!pid_file.exists(), "the pid file is removed");

    let out = stop();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("No mqnamesrv running."),
        "{}",
        stdout(&out)
    );

    let mut wrong = script("mqshutdown", &home, &rocketmq_home);
    wrong.arg("broker");
    let out = run(wrong);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("Usage: mqshutdown namesrv"));
}
