//! Logs nobody can fill or read secrets from: the built binary with file logs and the audit
//! log on, driven with KV writes, signed and unsigned admin requests and floods, and then
//! every line it wrote searched.

use std::path::Path;
use std::time::Duration;

use namesrv::protocol::code::{request, response};
use namesrv::protocol::{ExtFields, RemotingCommand, signature};

use crate::harness::TestClient;
use crate::harness::spawned::{self, Spawned};

const ACCESS_KEY: &str = "auditor01";
/// Values that must appear in no log line.
const SECRET_KEY: &str = "S3cr3t-ProbeKey-91";
const TOKEN: &str = "tok-ProbeToken-55";
const SIGNED_VALUE: &str = "kv-ProbeValue-signed-7d1f";
const UNSIGNED_VALUE: &str = "kv-ProbeValue-unsigned-2b9c";
const REFUSED_VALUE: &str = "kv-ProbeValue-badsig-e40a";
const TOO_LARGE_VALUE: &str = "kv-ProbeValue-large-";

/// A server in `authMode` with the audit log in `dir/audit.log` and file logs in `dir/logs`
/// at trace level for the name server's own lines.
fn start(dir: &Path, mode: &str, extra_args: &[&str]) -> Spawned {
    start_with(dir, &format!("authMode={mode}\n"), extra_args)
}

/// [`start`] with `extra` config lines (`authMode` among them).
fn start_with(dir: &Path, extra: &str, extra_args: &[&str]) -> Spawned {
    let acl = dir.join("acl.yml");
    std::fs::write(
        &acl,
        format!(
            "accounts:\n  - {{accessKey: {ACCESS_KEY}, secretKey: '{SECRET_KEY}', admin: true}}\n"
        ),
    )
    .unwrap();
    let conf = spawned::config(
        dir,
        &format!(
            "{extra}authConfigPath={}\nauthAuditLog={}\nmaxKvValueBytes=1024\n",
            acl.display(),
            dir.join("audit.log").display()
        ),
    );
    let logs = dir.join("logs").display().to_string();
    let mut args = vec!["--log-dir", &logs, "--log-level", "info,namesrv=trace"];
    args.extend_from_slice(extra_args);
    Spawned::start(&conf, dir, &args)
}

/// Signs `cmd` as `AclClientRPCHook` does, with a security token.
fn sign(mut cmd: RemotingCommand, secret: &str) -> RemotingCommand {
    let body = cmd.body.clone().unwrap_or_default();
    let fields = cmd.ext_fields.get_or_insert_with(ExtFields::new);
    fields.insert(signature::ACCESS_KEY, ACCESS_KEY);
    fields.insert(signature::SECURITY_TOKEN, TOKEN);
    let content = signature::content(fields.iter(), &body, &[]);
    fields.insert(signature::SIGNATURE, signature::sign(secret, &content));
    cmd
}

async fn send(c: &mut TestClient, cmd: RemotingCommand) -> RemotingCommand {
    c.send(&cmd).await;
    c.recv().await.expect("a response")
}

fn put(c: &mut TestClient, key: &str, value: &str) -> RemotingCommand {
    c.command(
        request::PUT_KV_CONFIG,
        &[("namespace", "probe-ns"), ("key", key), ("value", value)],
        None,
    )
}

/// Every line of every file under `dir` (main logs, rotated files, the audit log), each file
/// once (the link to the current log is skipped).
fn all_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in walk(dir) {
        let is_log = entry.extension().is_some_and(|e| e == "log");
        if is_log && entry.is_file() {
            let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap()).into_owned();
            lines.extend(text.lines().map(str::to_owned));
        }
    }
    lines
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_symlink() {
            continue;
        }
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn stop(mut server: Spawned) -> String {
    server.signal("TERM");
    assert!(server.wait_exit().success());
    server.log_text()
}

#[tokio::test]
async fn no_kv_value_or_secret_reaches_any_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "audit", &[]);
    let mut c = TestClient::connect(server.addr).await;

    let signed = sign(put(&mut c, "k-signed", SIGNED_VALUE), SECRET_KEY);
    assert_eq!(send(&mut c, signed).await.code, response::SUCCESS);
    let unsigned = put(&mut c, "k-unsigned", UNSIGNED_VALUE);
    assert_eq!(send(&mut c, unsigned).await.code, response::SUCCESS);
    let bad = sign(put(&mut c, "k-bad", REFUSED_VALUE), "not-the-secret");
    assert_eq!(
        send(&mut c, bad).await.code,
        response::SUCCESS,
        "audit mode"
    );
    let large = format!("{TOO_LARGE_VALUE}{}", "x".repeat(2000));
    let refused = sign(put(&mut c, "k-large", &large), SECRET_KEY);
    assert_ne!(send(&mut c, refused).await.code, response::SUCCESS);
    let get = c.command(
        request::GET_KV_CONFIG,
        &[("namespace", "probe-ns"), ("key", "k-signed")],
        None,
    );
    let got = send(&mut c, get).await;
    assert_eq!(got.ext("value"), Some(SIGNED_VALUE));
    let list = c.command(
        request::GET_KVLIST_BY_NAMESPACE,
        &[("namespace", "probe-ns")],
        None,
    );
    assert_eq!(send(&mut c, list).await.code, response::SUCCESS);
    let delete = c.command(
        request::DELETE_KV_CONFIG,
        &[("namespace", "probe-ns"), ("key", "k-unsigned")],
        None,
    );
    assert_eq!(
        send(&mut c, sign(delete, SECRET_KEY)).await.code,
        response::SUCCESS
    );
    drop(c);

    let stderr = stop(server);
    let lines = all_lines(dir.path());
    let audit = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
    assert!(
        audit.contains("PUT_KV_CONFIG") && audit.contains(ACCESS_KEY),
        "{audit}"
    );
    assert!(
        lines.iter().any(|l| l.contains("KV config put")),
        "the main log was written: {lines:#?}"
    );
    for secret in [
        SECRET_KEY,
        TOKEN,
        SIGNED_VALUE,
        UNSIGNED_VALUE,
        REFUSED_VALUE,
        TOO_LARGE_VALUE,
    ] {
        for line in lines
            .iter()
            .chain(stderr.lines().map(str::to_owned).collect::<Vec<_>>().iter())
        {
            assert!(!line.contains(secret), "{secret} logged: {line}");
        }
    }
}

/// A JSON-header frame whose `extFields` object is written as given (a repeated key
/// included), with no body.
fn raw_frame(code: i32, ext_json: &str) -> Vec<u8> {
    let header = format!(
        r#"{{"code":{code},"flag":0,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":479,"extFields":{ext_json}}}"#
    );
    let mut out = Vec::new();
    out.extend_from_slice(&((4 + header.len()) as u32).to_be_bytes());
    out.extend_from_slice(&(header.len() as u32).to_be_bytes());
    out.extend_from_slice(header.as_bytes());
    out
}

#[tokio::test]
async fn a_signed_request_that_repeats_a_field_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "enforce", &[]);
    // Signed over the last value of `topic`, as the server's decoder keeps it.
    let fields = [(signature::ACCESS_KEY, ACCESS_KEY), ("topic", "TopicB")];
    let sig = signature::sign(SECRET_KEY, &signature::content(fields, b"", &[]));
    let ext = format!(
        r#"{{"topic":"TopicA","AccessKey":"{ACCESS_KEY}","topic":"TopicB","Signature":"{sig}"}}"#
    );
    let mut c = TestClient::connect(server.addr).await;
    c.send_raw(&raw_frame(request::DELETE_TOPIC_IN_NAMESRV, &ext))
        .await;
    let resp = c.recv().await.unwrap();
    assert_eq!(resp.code, response::NO_PERMISSION, "{:?}", resp.remark);
    // The same request without the repeat is served.
    let ext = format!(r#"{{"AccessKey":"{ACCESS_KEY}","topic":"TopicB","Signature":"{sig}"}}"#);
    c.send_raw(&raw_frame(request::DELETE_TOPIC_IN_NAMESRV, &ext))
        .await;
    assert_eq!(c.recv().await.unwrap().code, response::SUCCESS);
    drop(c);
    stop(server);
}

#[tokio::test]
async fn floods_of_admin_requests_and_bad_frames_write_a_few_lines() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "audit", &[]);
    let mut c = TestClient::connect(server.addr).await;
    let many: Vec<(String, String)> = (0..1000)
        .map(|i| (format!("field{i}"), "y".repeat(100)))
        .collect();
    let many: Vec<(&str, &str)> = many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    for i in 0..400 {
        let code = if i % 2 == 0 {
            9999
        } else {
            request::WIPE_WRITE_PERM_OF_BROKER
        };
        let cmd = c.command(code, &many, None);
        send(&mut c, cmd).await;
    }
    // A control character in an access key cannot start a line of its own.
    let forged = c.command(
        request::GET_NAMESRV_CONFIG,
        &[
            (signature::ACCESS_KEY, "x\nFORGED-LINE"),
            (signature::SIGNATURE, "AA=="),
        ],
        None,
    );
    send(&mut c, forged).await;
    drop(c);
    for _ in 0..200 {
        let mut bad = TestClient::connect(server.addr).await;
        // A header length larger than the frame: malformed.
        bad.send_raw(&[0, 0, 0, 8, 0, 0, 0, 200, 1, 2, 3, 4]).await;
        assert!(bad.closed_without_reply().await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop(server);

    let audit = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
    let audit_lines: Vec<&str> = audit.lines().collect();
    assert!(
        (1..=40).contains(&audit_lines.len()),
        "{} audit lines",
        audit_lines.len()
    );
    for line in &audit_lines {
        assert!(line.len() <= 1024, "{} bytes: {line}", line.len());
        assert!(!line.contains("9999"), "no line for unknown codes: {line}");
    }
    let lines = all_lines(dir.path());
    let malformed = lines
        .iter()
        .filter(|l| l.contains("malformed frame"))
        .count();
    assert!(
        (1..=10).contains(&malformed),
        "{malformed} malformed-frame lines"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("FORGED-LINE")),
        "a forged line: {lines:#?}"
    );
    let total: usize = lines.iter().map(|l| l.len() + 1).sum();
    assert!(total < 256 * 1024, "{total} bytes of log");
}

#[tokio::test]
async fn log_files_stop_at_log_max_size() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), "audit", &["--log-max-size", "64K"]);
    // Each connection served writes a debug line at this level.
    for _ in 0..1000 {
        let mut c = TestClient::connect(server.addr).await;
        c.call(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")], None)
            .await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop(server);
    let current = dir.path().join("logs").join("namesrv-rs.log");
    let text = std::fs::read_to_string(&current).unwrap();
    assert!(text.len() <= 64 * 1024 + 512, "{} bytes", text.len());
    assert!(
        text.contains("the log file reached --log-max-size (65536 bytes)"),
        "{text}"
    );
}

#[tokio::test]
async fn idle_closings_are_logged_with_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let conf = "authMode=off\nserverChannelMaxIdleTimeSeconds=1\n";
    let server = start_with(dir.path(), conf, &[]);
    let mut clients = Vec::new();
    for _ in 0..30 {
        let mut c = TestClient::connect(server.addr).await;
        c.call(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")], None)
            .await;
        clients.push(c);
    }
    for c in &mut clients {
        assert!(c.closed_without_reply().await, "closed for idling");
    }
    drop(clients);
    stop(server);
    let lines = all_lines(dir.path());
    let idle: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("connection idle"))
        .collect();
    assert!((1..=3).contains(&idle.len()), "{idle:#?}");
}
