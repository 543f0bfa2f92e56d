//! Authentication in the built binary, as an operator runs it: the start-up checks of the
//! accounts file, the audit log in its own file, and reloads on SIGHUP and on file change.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use namesrv::protocol::code::{request, response};
use namesrv::protocol::{ExtFields, RemotingCommand, signature};

use crate::harness::TestClient;
use crate::harness::process::{
    BOOT_LINE, PATIENCE, Reaped, boot_addr, namesrv, private_config, run_namesrv, stderr,
    terminate, wait_exit,
};

const ACCOUNTS: &str =
    "accounts:\n  - accessKey: rocketmq2\n    secretKey: '12345678'\n    admin: true\n";

/// A config for a private server with `auth` lines appended.
fn auth_config(dir: &Path, auth: &str) -> PathBuf {
    let conf = private_config(dir);
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str(auth);
    std::fs::write(&conf, text).unwrap();
    conf
}

/// Starts the binary on `conf`; returns the process, its address and its stderr file.
fn start(dir: &Path, conf: &Path) -> (Reaped, SocketAddr, PathBuf) {
    let log = dir.join("stderr.log");
    let mut cmd = namesrv(dir);
    cmd.arg("-c")
        .arg(conf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = Reaped(cmd.spawn().unwrap());
    let out = BufReader::new(child.0.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if line.starts_with(BOOT_LINE) {
                let _ = tx.send(line);
            }
        }
    });
    let boot = rx.recv_timeout(PATIENCE).unwrap_or_else(|_| {
        panic!("no boot line; stderr: {}", read(&log));
    });
    (child, boot_addr(&boot), log)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Waits until `path` contains `text`.
fn wait_for(path: &Path, text: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let content = read(path);
        if content.contains(text) {
            return content;
        }
        assert!(
            Instant::now() < deadline,
            "no {text:?} in {}:\n{content}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn hangup(pid: u32) {
    let status = Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

async fn put_kv(addr: SocketAddr, secret: &str) -> RemotingCommand {
    let mut c = TestClient::connect(addr).await;
    let mut cmd = c.command(
        request::PUT_KV_CONFIG,
        &[("namespace", "ns"), ("key", "k"), ("value", "v")],
        None,
    );
    let fields = cmd.ext_fields.get_or_insert_with(ExtFields::new);
    fields.insert(signature::ACCESS_KEY, "rocketmq2");
    let content = signature::content(fields.iter(), b"", &[]);
    fields.insert(signature::SIGNATURE, signature::sign(secret, &content));
    c.send(&cmd).await;
    c.recv().await.unwrap()
}

#[tokio::test]
async fn reloads_on_sighup_and_on_change_and_audits_to_a_file() {
    let (dir, acl) = crate::harness::temp_file("acl.yml", ACCOUNTS);
    set_mode(&acl, 0o644);
    let audit = dir.path().join("audit.log");
    let conf = auth_config(
        dir.path(),
        &format!(
            "authMode=enforce\nauthConfigPath={}\nauthAuditLog={}\n",
            acl.display(),
            audit.display()
        ),
    );
    let (mut child, addr, log) = start(dir.path(), &conf);
    let pid = child.0.id();
    wait_for(&log, "other users can access it");

    assert_eq!(put_kv(addr, "12345678").await.code, response::SUCCESS);
    assert_eq!(put_kv(addr, "wrong").await.code, response::NO_PERMISSION);
    let trail = wait_for(&audit, "PUT_KV_CONFIG");
    for part in [
        "access_key=rocketmq2",
        "peer=127.0.0.1",
        r#"fields=key="k" namespace="ns""#,
        "response=0",
    ] {
        assert!(trail.contains(part), "no {part} in the audit log:\n{trail}");
    }
    assert!(
        !trail.contains("12345678") && !trail.contains("Signature"),
        "{trail}"
    );
    assert_eq!(
        trail.lines().count(),
        1,
        "only the accepted request: {trail}"
    );
    assert!(
        !read(&log).contains("PUT_KV_CONFIG"),
        "audit lines stay out of the main log"
    );
    assert!(!read(&log).contains("12345678"));

    // SIGHUP: the new secret is in force at once.
    std::fs::write(&acl, ACCOUNTS.replace("12345678", "second-secret")).unwrap();
    set_mode(&acl, 0o600);
    hangup(pid);
    wait_for(&log, "accounts reloaded (reload requested)");
    assert_eq!(put_kv(addr, "second-secret").await.code, response::SUCCESS);
    assert_eq!(put_kv(addr, "12345678").await.code, response::NO_PERMISSION);

    // A broken file is reported with its line and changes nothing.
    std::fs::write(&acl, "accounts:\n  - {accessKey: rocketmq2,\n").unwrap();
    hangup(pid);
    let errors = wait_for(&log, "keeping the previous accounts");
    assert!(
        errors.contains(&format!("accounts file {}, line", acl.display())),
        "{errors}"
    );
    assert_eq!(put_kv(addr, "second-secret").await.code, response::SUCCESS);

    // An edit is picked up without a signal.
    std::fs::write(&acl, ACCOUNTS.replace("12345678", "third-secret")).unwrap();
    wait_for(&log, "accounts reloaded (the file changed)");
    assert_eq!(put_kv(addr, "third-secret").await.code, response::SUCCESS);

    terminate(pid);
    let status = wait_exit(&mut child.0, PATIENCE).expect("exits after SIGTERM");
    assert!(status.success(), "{status}: {}", read(&log));
}

#[test]
fn start_up_refuses_a_broken_or_missing_accounts_file() {
    let (dir, acl) = crate::harness::temp_file(
        "acl.yml",
        "accounts:\n  - accessKey: rocketmq2\n    secretKey: 123\n",
    );
    for (auth, expected) in [
        (
            format!("authMode=enforce\nauthConfigPath={}\n", acl.display()),
            format!("accounts file {}, line 3", acl.display()),
        ),
        ("authMode=audit\n".to_owned(), "authConfigPath".to_owned()),
        (
            format!(
                "authMode=enforce\nauthConfigPath={}\n",
                dir.path().join("none.yml").display()
            ),
            "none.yml".to_owned(),
        ),
        (
            "authMode=on\n".to_owned(),
            "off, audit or enforce".to_owned(),
        ),
    ] {
        let conf = auth_config(dir.path(), &auth);
        let out = run_namesrv(dir.path(), &[], Some(&conf));
        assert!(!out.status.success(), "{auth} started");
        let err = stderr(&out);
        assert!(err.contains(&expected), "{auth}: no {expected:?} in {err}");
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}
