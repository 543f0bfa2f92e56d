//! An upgrade with no refused connection: a second `namesrv --takeover PID` listens on the
//! same port (SO_REUSEPORT), the first hands over through its route snapshot and exits,
//! while clients keep looking routes up — some on long-lived connections, some on a new
//! connection per request. No connection may be refused and no request may fail; a request
//! whose connection closed before it was answered is sent again on a new connection, as
//! RocketMQ clients do, and counted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::code::request;
use namesrv::protocol::{
    FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, split_frame,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::spawned::{self, Spawned};
use crate::harness::{TestClient, register_broker_a, route};

#[derive(Default)]
struct Tally {
    answered: AtomicU64,
    /// Connection attempts refused (or otherwise failed).
    refused: AtomicU64,
    /// Answers other than SUCCESS.
    failed: AtomicU64,
    /// Requests sent again because their connection closed (FIN) before the answer.
    resent: AtomicU64,
    /// Requests sent again because their connection was reset before the answer.
    reset: AtomicU64,
    /// Of those, resets of connections that had never been answered: connections the old
    /// server's listener had queued and dropped when it closed.
    reset_fresh: AtomicU64,
}

/// How a lookup ended.
enum Outcome {
    Answered(i32),
    Closed,
    Reset,
}

/// One route lookup on `conn`, connecting first if needed (a refused connection counts in
/// `tally` and ends as `Closed`). A connection that closed or broke is dropped.
async fn lookup(
    conn: &mut Option<TcpStream>,
    addr: SocketAddr,
    opaque: i32,
    tally: &Tally,
) -> Outcome {
    if conn.is_none() {
        match TcpStream::connect(addr).await {
            Ok(s) => *conn = Some(s),
            Err(_) => {
                tally.refused.fetch_add(1, Ordering::Relaxed);
                return Outcome::Closed;
            }
        }
    }
    let stream = conn.as_mut().unwrap();
    let mut cmd = RemotingCommand::request(request::GET_ROUTEINFO_BY_TOPIC, opaque);
    cmd.version = 479;
    cmd.ext_fields = Some([("topic", "TopicA")].into_iter().collect());
    let mut out = BytesMut::new();
    encode_frame(&cmd, SerializeType::Json, &mut out);
    let mut input = BytesMut::new();
    let answer = async {
        stream.write_all(&out).await?;
        loop {
            let limits = FrameLimits {
                max_frame_length: 1 << 24,
            };
            if let Some(frame) = split_frame(&mut input, limits).expect("a valid frame") {
                return std::io::Result::Ok(Some(decode_frame(frame).expect("a valid answer").0));
            }
            if stream.read_buf(&mut input).await? == 0 {
                return Ok(None);
            }
        }
    };
    let outcome = match tokio::time::timeout(spawned::PATIENCE, answer)
        .await
        .expect("an answer or a close")
    {
        Ok(Some(resp)) => {
            assert_eq!(resp.opaque, opaque);
            return Outcome::Answered(resp.code);
        }
        Ok(None) => Outcome::Closed,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Outcome::Reset,
        Err(_) => Outcome::Closed,
    };
    *conn = None;
    outcome
}

/// Looks routes up until `stop`, on one connection (`reuse`) or a new one per request.
async fn client(addr: SocketAddr, reuse: bool, stop: Arc<AtomicBool>, tally: Arc<Tally>) {
    let mut conn = None;
    let mut opaque = 0;
    // Whether the current connection has been answered at least once.
    let mut proven = false;
    while !stop.load(Ordering::Relaxed) {
        opaque += 1;
        let code = loop {
            let fresh = conn.is_none() || !proven;
            match lookup(&mut conn, addr, opaque, &tally).await {
                Outcome::Answered(code) => break code,
                Outcome::Closed => {
                    tally.resent.fetch_add(1, Ordering::Relaxed);
                }
                Outcome::Reset => {
                    tally.reset.fetch_add(1, Ordering::Relaxed);
                    if fresh {
                        tally.reset_fresh.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            proven = false;
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        proven = true;
        tally.answered.fetch_add(1, Ordering::Relaxed);
        if code != 0 {
            tally.failed.fetch_add(1, Ordering::Relaxed);
        }
        if !reuse {
            conn = None;
            proven = false;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_refuses_no_connection_and_fails_no_request() {
    let dir = tempfile::tempdir().unwrap();
    // GO_AWAY is on: a handover must skip its wait (the lookups would fail with GO_AWAY).
    let graceful = "enableShutdownGracefully=true\nshutdownWaitTimeSeconds=30";
    let conf = spawned::config(dir.path(), graceful);
    let old = Spawned::start(&conf, dir.path(), &[]);
    let addr = old.addr;
    // The new server's file names the port the old one got.
    let conf = spawned::config(
        dir.path(),
        &format!("{graceful}\nlistenPort={}", addr.port()),
    );
    let mut broker = TestClient::connect(addr).await;
    register_broker_a(&mut broker).await;
    let before = route(&mut broker, "TopicA").await;

    // A second ordinary start on the port is still refused.
    let out = std::process::Command::new(spawned::BIN)
        .arg("-c")
        .arg(&conf)
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a second server started on a port in use"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot listen"));

    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let clients: Vec<_> = [true, true, false, false, false, false, false, false]
        .into_iter()
        .map(|reuse| tokio::spawn(client(addr, reuse, stop.clone(), tally.clone())))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before_swap = tally.answered.load(Ordering::Relaxed);

    let old_pid = old.pid().to_string();
    let mut new = tokio::task::spawn_blocking(move || {
        Spawned::start(&conf, dir.path(), &["--takeover", &old_pid])
    })
    .await
    .unwrap();
    let mut old = old;
    assert!(old.wait_exit().success(), "the old server exits cleanly");
    assert_eq!(new.addr, addr);
    assert!(
        new.wait_for_log("route table restored from the snapshot")
            .is_some()
    );
    let at_swap = tally.answered.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
    let (answered, refused, failed) = (
        load(&tally.answered),
        load(&tally.refused),
        load(&tally.failed),
    );
    let (resent, reset, reset_fresh) = (
        load(&tally.resent),
        load(&tally.reset),
        load(&tally.reset_fresh),
    );
    eprintln!(
        "takeover: {answered} lookups answered ({before_swap} before, {} after the new server booted), \
         {refused} refused, {failed} failed; sent again after a close: {resent}, after a reset: {reset} \
         ({reset_fresh} on connections never answered)",
        answered - at_swap
    );
    assert_eq!(refused, 0, "refused connections");
    assert_eq!(failed, 0, "failed lookups");
    assert_eq!(reset_fresh, 0, "queued connections reset");
    assert!(
        before_swap > 0 && answered > at_swap,
        "lookups ran on both servers"
    );
    // The new server serves the route the old one had.
    let mut client = TestClient::connect(addr).await;
    let after = route(&mut client, "TopicA").await;
    assert_eq!(after.code, 0);
    assert_eq!(after.body, before.body);
}

/// `bin/mqnamesrv` with the environment of the script test.
fn script(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    crate::cli::script("mqnamesrv", dir, dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn pid_in(file: &std::path::Path) -> u32 {
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Kills whatever the pid file names when the test ends, however it ends.
struct KillOnDrop(std::path::PathBuf);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.0) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", pid.trim()])
                .status();
        }
    }
}

#[tokio::test]
async fn the_script_upgrades_the_running_server_in_place() {
    let dir = tempfile::tempdir().unwrap();
    // A fixed port, as a takeover needs: one the system just handed out.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let conf = spawned::config(dir.path(), &format!("listenPort={port}"));
    let conf = conf.display().to_string();
    let pid_file = dir.path().join("logs/namesrv.pid");

    let out = script(dir.path(), &["--upgrade", "-c", &conf]);
    assert_eq!(out.status.code(), Some(1), "nothing to upgrade yet");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no running namesrv"));

    let out = script(dir.path(), &["-c", &conf]);
    let _cleanup = KillOnDrop(pid_file.clone());
    crate::harness::process::assert_success(&out);
    let old = pid_in(&pid_file);
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let mut broker = TestClient::connect(addr).await;
    register_broker_a(&mut broker).await;

    let out = script(dir.path(), &["--upgrade", "-c", &conf]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let new = pid_in(&pid_file);
    assert_ne!(new, old);
    assert!(
        said.contains(&format!("pid {old} handed over to pid {new}")),
        "{said}"
    );
    assert!(
        !crate::harness::process::alive(old),
        "the old server is gone"
    );
    let mut client = TestClient::connect(addr).await;
    assert_eq!(
        route(&mut client, "TopicA").await.code,
        0,
        "routes handed over"
    );

    let stop = std::process::Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/bin/mqshutdown"))
        .arg("namesrv")
        .env("NAMESRV_PID_FILE", &pid_file)
        .output()
        .unwrap();
    crate::harness::process::assert_success(&stop);
}
