//! Warm restart: the route table survives a graceful restart and a kill -9, a restored broker
//! is owned by the connection it is next heard from, and a bad snapshot or an unwritable
//! snapshot directory is logged and survived.

use std::time::Duration;

use namesrv::protocol::code::response;

use crate::harness::spawned::{self, Spawned};
use crate::harness::{
    Options, TestClient, TestServer, body_text, cluster_info, query_data_version, register,
    register_master, route,
};

const TOPICS: [&str; 3] = ["TopicA", "TopicB", "TopicC"];

/// The route bodies of `TOPICS` and the cluster info, as a client reads them.
async fn view(client: &mut TestClient) -> Vec<String> {
    let mut seen = Vec::new();
    for topic in TOPICS {
        let resp = route(client, topic).await;
        seen.push(format!("{} {}", resp.code, body_text(&resp)));
    }
    let info = cluster_info(client).await;
    seen.push(body_text(&info));
    seen
}

async fn register_two(server_addr: std::net::SocketAddr) -> (TestClient, TestClient) {
    let mut a = TestClient::connect(server_addr).await;
    register(&mut a, "broker-a", "10.0.0.1:10911", "0", 3, &TOPICS).await;
    let mut b = TestClient::connect(server_addr).await;
    register(&mut b, "broker-b", "10.0.0.2:10911", "0", 5, &TOPICS[..2]).await;
    // A permission change is part of what is kept.
    let wiped = crate::harness::wipe_write_perm(&mut a, "broker-b").await;
    assert_eq!(wiped.code, 0);
    (a, b)
}

#[tokio::test]
async fn routes_survive_a_graceful_restart_unchanged() {
    let warm = Options {
        warm_restart: true,
        ..Options::default()
    };
    let first = TestServer::start_with(warm.clone()).await;
    let brokers = register_two(first.addr).await;
    let mut client = first.client().await;
    let before = view(&mut client).await;
    assert!(before[0].starts_with("0 "));
    let home = first.stop_keeping_home().await;
    drop(brokers);

    let second = TestServer::start_in(home, warm).await;
    let mut client = second.client().await;
    assert_eq!(
        view(&mut client).await,
        before,
        "the route after equals the route before"
    );
    // The restored data version: an unchanged broker is told nothing changed.
    let mut broker = second.client().await;
    let qdv = query_data_version(&mut broker, "broker-a", "10.0.0.1:10911", 3).await;
    assert_eq!(qdv.ext("changed"), Some("false"));
    // That request also bound the restored broker to this connection: closing it
    // unregisters the broker at once, as before the restart.
    drop(broker);
    for _ in 0..500 {
        let info = cluster_info(&mut client).await;
        if !body_text(&info).contains("broker-a") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("broker-a still registered after its new connection closed");
}

#[tokio::test]
async fn with_warm_restart_off_a_restart_starts_empty_as_java() {
    // As the harness would not: the file says so.
    let props = "restoreRoutesOnStart=false";
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), props).unwrap();
    let off = Options {
        config_file: Some(file.path().to_path_buf()),
        warm_restart: true,
        ..Options::default()
    };
    let first = TestServer::start_with(off.clone()).await;
    let _brokers = register_two(first.addr).await;
    let home = first.stop_keeping_home().await;
    assert!(
        !home.path().join("namesrv/routes.snapshot").exists(),
        "nothing written"
    );
    let second = TestServer::start_in(home, off).await;
    let mut client = second.client().await;
    assert_eq!(
        route(&mut client, "TopicA").await.code,
        response::TOPIC_NOT_EXIST
    );
}

/// Waits until the periodic snapshot at `path` mentions `needle`.
fn wait_for_snapshot(path: &std::path::Path, needle: &str) {
    let deadline = std::time::Instant::now() + spawned::PATIENCE;
    while std::time::Instant::now() < deadline {
        let text = std::fs::read(path).unwrap_or_default();
        if String::from_utf8_lossy(&text).contains(needle) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never mentioned {needle}", path.display());
}

#[tokio::test]
async fn routes_survive_kill_9_through_the_periodic_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let conf = spawned::config(dir.path(), "routeSnapshotIntervalMillis=100");
    let first = Spawned::start(&conf, dir.path(), &[]);
    let brokers = register_two(first.addr).await;
    let mut client = TestClient::connect(first.addr).await;
    let before = view(&mut client).await;
    // The wipe happened last; once the snapshot shows it, it holds everything.
    wait_for_snapshot(
        &dir.path().join("store/routes.snapshot"),
        "broker-b\",4,4,4",
    );
    first.signal("KILL");
    drop((first, brokers, client));

    let mut second = Spawned::start(&conf, dir.path(), &[]);
    assert!(
        second
            .wait_for_log("route table restored from the snapshot")
            .is_some()
    );
    let mut client = TestClient::connect(second.addr).await;
    let after = view(&mut client).await;
    assert_eq!(after, before);
}

#[tokio::test]
async fn a_damaged_snapshot_is_logged_and_the_server_starts_empty() {
    let dir = tempfile::tempdir().unwrap();
    let conf = spawned::config(dir.path(), "");
    std::fs::create_dir_all(dir.path().join("store")).unwrap();
    let damaged: [(&str, &[u8]); 3] = [
        ("not a route snapshot", b"\x00\x01garbage"),
        ("truncated", b"namesrv-routes 1 9999 00000000\n{\"writtenAt"),
        ("newer than this server", b"namesrv-routes 7 2 00000000\n{}"),
    ];
    for (why, bytes) in damaged {
        std::fs::write(dir.path().join("store/routes.snapshot"), bytes).unwrap();
        let _ = std::fs::remove_file(dir.path().join("store/routes.snapshot.bak"));
        let mut server = Spawned::start(&conf, dir.path(), &[]);
        let line = server.wait_for_log("route snapshot ignored").expect(why);
        assert!(line.contains(why), "{line}");
        let mut client = TestClient::connect(server.addr).await;
        assert_eq!(
            route(&mut client, "TopicA").await.code,
            response::TOPIC_NOT_EXIST
        );
        register_master(&mut client, "broker-a", "10.0.0.1:10911", &TOPICS).await;
        assert_eq!(route(&mut client, "TopicA").await.code, 0, "{why}");
        server.signal("TERM");
        assert!(server.wait_exit().success());
    }
}

#[tokio::test]
async fn an_unwritable_snapshot_directory_is_logged_and_survived() {
    // A regular file where the snapshot's directory should be: no write can succeed, even
    // as root.
    let (dir, blocker) = crate::harness::temp_file("not-a-dir", "x");
    let extra = format!(
        "routeSnapshotPath={}\nrouteSnapshotIntervalMillis=100",
        blocker.join("routes.snapshot").display()
    );
    let conf = spawned::config(dir.path(), &extra);
    let mut server = Spawned::start(&conf, dir.path(), &[]);
    let mut client = TestClient::connect(server.addr).await;
    register_master(&mut client, "broker-a", "10.0.0.1:10911", &TOPICS).await;
    assert!(
        server
            .wait_for_log("cannot write the route snapshot")
            .is_some()
    );
    // Still serving, and the failure is reported once, not at every attempt.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(route(&mut client, "TopicA").await.code, 0);
    let reports = server
        .log_text()
        .matches("cannot write the route snapshot")
        .count();
    assert_eq!(reports, 1, "{}", server.log_text());
    server.signal("TERM");
    assert!(
        server.wait_exit().success(),
        "a failed final snapshot is no failed shutdown"
    );
}
