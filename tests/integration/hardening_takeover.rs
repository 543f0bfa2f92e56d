//! `--takeover PID` that must not take over: a new server that cannot load what it needs (a
//! bad accounts file, an unusable KV file, an HTTP port someone else holds) fails before the
//! running one is asked to go, which keeps serving and fails no lookup; and a PID that is a
//! `namesrv` but does not listen on our port is refused and left alone. A takeover that can
//! go takes the old server's HTTP port too.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::harness::process::free_port;
use crate::harness::spawned::{self, BIN, Spawned};
use crate::harness::{TestClient, register_broker_a, route};

/// Lookups on a new connection each, every 5 ms, until `stop`: how many were answered
/// with SUCCESS, and how many failed (refused, closed, or answered otherwise).
async fn lookups(addr: SocketAddr, stop: Arc<AtomicBool>) -> (u64, u64) {
    let (mut answered, mut failed) = (0, 0);
    while !stop.load(Ordering::Relaxed) {
        // A refused or closed connection panics the lookup's task: counted as a failure.
        let one = tokio::spawn(async move {
            let mut client = TestClient::connect(addr).await;
            route(&mut client, "TopicA").await.code
        });
        let ok = matches!(
            tokio::time::timeout(spawned::PATIENCE, one).await,
            Ok(Ok(0))
        );
        if ok {
            answered += 1;
        } else {
            failed += 1;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (answered, failed)
}

/// Runs `namesrv -c conf --takeover pid` to its end: whether it took over, and its stderr.
/// One still running after 20 s took over (it is then killed).
async fn takeover(conf: std::path::PathBuf, home: std::path::PathBuf, pid: u32) -> (bool, String) {
    tokio::task::spawn_blocking(move || {
        let mut child = std::process::Command::new(BIN)
            .arg("-c")
            .arg(&conf)
            .args(["--takeover", &pid.to_string()])
            .env("HOME", &home)
            .env_remove("ROCKETMQ_HOME")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let took_over = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status.success();
            }
            if std::time::Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break true;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr);
        (took_over, stderr)
    })
    .await
    .unwrap()
}

async fn with_a_route(addr: SocketAddr) -> TestClient {
    let mut broker = TestClient::connect(addr).await;
    register_broker_a(&mut broker).await;
    broker
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_server_that_cannot_load_leaves_the_old_one_serving() {
    let dir = tempfile::tempdir().unwrap();
    let old = Spawned::start(&spawned::config(dir.path(), ""), dir.path(), &[]);
    let _broker = with_a_route(old.addr).await;
    let accounts = dir.path().join("plain_acl.yml");
    std::fs::write(&accounts, "accounts: [ {accessKey: \n").unwrap();
    let kv = dir.path().join("damaged.json");
    std::fs::write(&kv, "{").unwrap();
    std::fs::write(dir.path().join("damaged.json.bak"), "{").unwrap();
    let port = old.addr.port();
    let cases = [
        (
            format!(
                "listenPort={port}\nauthMode=enforce\nauthConfigPath={}",
                accounts.display()
            ),
            "plain_acl.yml",
        ),
        (
            format!("listenPort={port}\nkvConfigPath={}", kv.display()),
            "damaged.json",
        ),
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let looking = tokio::spawn(lookups(old.addr, stop.clone()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    for (extra, named) in cases {
        let conf = spawned::config(dir.path(), &extra);
        let (ok, stderr) = takeover(conf, dir.path().to_owned(), old.pid()).await;
        assert!(!ok, "the takeover succeeded without {named}");
        assert!(stderr.contains(named), "{stderr}");
        assert!(
            crate::harness::process::alive(old.pid()),
            "the old server was retired"
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    let (answered, failed) = looking.await.unwrap();
    assert_eq!(failed, 0, "lookups failed ({answered} answered)");
    assert!(answered > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pid_that_does_not_listen_on_our_port_is_left_alone() {
    let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let target = Spawned::start(&spawned::config(ours.path(), ""), ours.path(), &[]);
    let other = Spawned::start(&spawned::config(theirs.path(), ""), theirs.path(), &[]);
    let _broker = with_a_route(other.addr).await;
    let conf = spawned::config(ours.path(), &format!("listenPort={}", target.addr.port()));

    let (ok, stderr) = takeover(conf, ours.path().to_owned(), other.pid()).await;

    assert!(!ok, "took over from a server on another port");
    assert!(
        stderr.contains(&format!("does not listen on port {}", target.addr.port())),
        "{stderr}"
    );
    assert!(
        crate::harness::process::alive(other.pid()),
        "the other server was retired"
    );
    assert!(crate::harness::process::alive(target.pid()));
    let mut client = TestClient::connect(other.addr).await;
    assert_eq!(route(&mut client, "TopicA").await.code, 0);
    // The server on our port still gets every connection: nothing listens beside it.
    for _ in 0..8 {
        let mut client = TestClient::connect(target.addr).await;
        let resp = route(&mut client, "TopicA").await;
        assert_eq!(resp.code, 17, "TOPIC_NOT_EXIST from the target");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_port_someone_else_holds_is_found_before_the_old_server_goes() {
    let dir = tempfile::tempdir().unwrap();
    let old = Spawned::start(&spawned::config(dir.path(), ""), dir.path(), &[]);
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let http_port = held.local_addr().unwrap().port();
    let conf = spawned::config(
        dir.path(),
        &format!("listenPort={}\nhttpListenPort={http_port}", old.addr.port()),
    );

    let (ok, stderr) = takeover(conf, dir.path().to_owned(), old.pid()).await;

    assert!(!ok, "took over without its HTTP port");
    assert!(stderr.contains("cannot listen for HTTP"), "{stderr}");
    assert!(
        crate::harness::process::alive(old.pid()),
        "the old server was retired"
    );
    let mut client = TestClient::connect(old.addr).await;
    assert_eq!(route(&mut client, "TopicA").await.code, 17);
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_port_of_the_old_server_is_taken_over_once_it_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let http_port = free_port();
    let http = format!("httpListenPort={http_port}");
    let mut old = Spawned::start(&spawned::config(dir.path(), &http), dir.path(), &[]);
    let conf = spawned::config(
        dir.path(),
        &format!("listenPort={}\n{http}", old.addr.port()),
    );
    let pid = old.pid().to_string();
    let home = dir.path().to_owned();
    let new =
        tokio::task::spawn_blocking(move || Spawned::start(&conf, &home, &["--takeover", &pid]))
            .await
            .unwrap();
    assert!(old.wait_exit().success());
    let http_addr: SocketAddr = format!("127.0.0.1:{http_port}").parse().unwrap();
    let health = crate::harness::http_request(http_addr, "GET", "/healthz").await;
    assert_eq!(health.status, 200);
    drop(new);
}
