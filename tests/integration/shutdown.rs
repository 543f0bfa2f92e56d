//! Graceful shutdown: requests that reached the server are answered, new connections are
//! refused, and `run` returns within the grace period even if a peer stops reading.

use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::code::request;
use namesrv::protocol::{SerializeType, encode_frame};

use crate::harness::{TestClient, TestServer};

#[tokio::test]
async fn in_flight_requests_are_answered_then_connections_close() {
    let mut server = TestServer::start().await;
    let mut client = server.client().await;
    let mut wire = BytesMut::new();
    for i in 0..100 {
        let key = format!("k{i}");
        let cmd = client.command(
            request::PUT_KV_CONFIG,
            &[("namespace", "ns"), ("key", &key), ("value", "v")],
            None,
        );
        encode_frame(&cmd, SerializeType::Json, &mut wire);
    }
    client.send_raw(&wire).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let stopped = server.begin_stop();
    for _ in 0..100 {
        assert_eq!(
            client.recv().await.expect("every request is answered").code,
            0
        );
    }
    assert!(client.recv().await.is_none(), "then the connection closes");
    tokio::time::timeout(Duration::from_secs(15), stopped)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    // Every acknowledged change is on disk.
    let kv = namesrv::kv::KvStore::open(server.home.path().join("namesrv/kvConfig.json")).unwrap();
    assert_eq!(kv.snapshot()["ns"].len(), 100);
    assert!(
        tokio::net::TcpStream::connect(server.addr).await.is_err(),
        "no longer accepting"
    );
}

#[tokio::test]
async fn a_peer_that_never_reads_cannot_hold_shutdown_beyond_the_grace_period() {
    let mut server =
        TestServer::with_properties("shutdownGracePeriodMillis=500\nmaxQueuedResponseBytes=65536")
            .await;
    let mut client = TestClient::connect(server.addr).await;
    // Ask for far more output than socket buffers hold, and never read it.
    let mut wire = BytesMut::new();
    for _ in 0..20_000 {
        encode_frame(
            &client.command(request::GET_NAMESRV_CONFIG, &[], None),
            SerializeType::Json,
            &mut wire,
        );
    }
    client.send_raw(&wire).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(10), server.begin_stop())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A SIGTERM sent the moment the boot line appears is a graceful stop (exit 0), not the
/// default action's death by signal: the handlers are installed before the line is printed.
#[test]
fn a_signal_right_after_the_boot_line_stops_the_server_gracefully() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let conf = crate::harness::process::private_config(dir.path());
        let mut child = crate::harness::process::command(&conf, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let booted =
            lines.any(|l| l.is_ok_and(|l| l.starts_with(crate::harness::process::BOOT_LINE)));
        assert!(booted, "no boot line");
        // At once, as a supervisor that waits for the line might.
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}
