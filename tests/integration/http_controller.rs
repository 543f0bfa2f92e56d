//! The controller on the HTTP side door: `/api/controller`, the summary in `/api/status`,
//! the page's "Controller" section, the `namesrv_controller_*` metrics and readiness — over a
//! real one-node raft group started from Java's keys holding a broker set, and over a
//! consensus stand-in whose leadership and peers the test sets (a node without a leader, a
//! leader with an unreachable peer).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use crate::harness::controller::instant_controller;
use crate::harness::process::{self, PATIENCE, Reaped, free_port};
use crate::harness::{HttpResponse, Options, TestClient, TestServer, http_request};
use namesrv::controller::code::request as cc;
use namesrv::controller::consensus::PeerStatus;
use namesrv::controller::{Controller, GroupStatus};

const SET: [(&str, &str); 2] = [
    ("clusterName", "DefaultCluster"),
    ("brokerName", "broker-a"),
];
const BROKER_ADDR: &str = "127.0.0.1:10911";

/// A server embedding a one-node group of Java's keys, with the HTTP side door.
async fn one_node_group() -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let properties = format!(
        "controllerDLegerGroup=obs-group\ncontrollerDLegerPeers=n0-127.0.0.1:9878\n\
         controllerDLegerSelfId=n0\ncontrollerStorePath={}\n",
        dir.path().join("raft").display()
    );
    let opts = Options {
        properties,
        controller: true,
        http: true,
        ..Options::default()
    };
    TestServer::start_in(dir, opts).await
}

async fn ok(
    c: &mut TestClient,
    code: i32,
    ext: &[(&str, &str)],
) -> namesrv::protocol::RemotingCommand {
    let resp = c.call(code, ext, None).await;
    assert_eq!(resp.code, 0, "{code}: {:?}", resp.remark);
    resp
}

/// A broker without an identity file joins set broker-a as replica 1, heartbeats once and
/// is elected master.
async fn join_and_elect(c: &mut TestClient) {
    let next = ok(c, cc::CONTROLLER_GET_NEXT_BROKER_ID, &SET).await;
    assert_eq!(next.ext("nextBrokerId"), Some("1"));
    let code = format!("{BROKER_ADDR};1");
    let apply = [
        SET[0],
        SET[1],
        ("appliedBrokerId", "1"),
        ("registerCheckCode", &code),
    ];
    ok(c, cc::CONTROLLER_APPLY_BROKER_ID, &apply).await;
    let register = [
        SET[0],
        SET[1],
        ("brokerId", "1"),
        ("brokerAddress", BROKER_ADDR),
    ];
    ok(c, cc::CONTROLLER_REGISTER_BROKER, &register).await;
    let beat = [
        SET[0],
        SET[1],
        ("brokerAddr", BROKER_ADDR),
        ("brokerId", "1"),
        ("epoch", "0"),
        ("maxOffset", "0"),
    ];
    ok(c, cc::BROKER_HEARTBEAT, &beat).await;
    let elect = [
        SET[0],
        SET[1],
        ("brokerId", "1"),
        ("designateElect", "false"),
    ];
    let elected = ok(c, cc::CONTROLLER_ELECT_MASTER, &elect).await;
    assert_eq!(elected.ext("masterEpoch"), Some("1"));
}

/// `path` until `done` says its answer is the one awaited (a one-node group elects itself
/// within a second or two).
async fn poll(
    server: &TestServer,
    path: &str,
    done: impl Fn(&HttpResponse) -> bool,
) -> HttpResponse {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let r = server.get(path).await;
        if done(&r) || tokio::time::Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn json(r: &HttpResponse) -> Value {
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(&r.body).unwrap()
}

/// The value of the unlabelled or labelled series `series` (`name{l="v"}`) in `/metrics`.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|l| {
        let (name, value) = l.rsplit_once(' ')?;
        (name == series).then(|| value.parse().unwrap())
    })
}

#[tokio::test]
async fn a_one_node_group_shows_its_leader_broker_set_and_election() {
    let server = one_node_group().await;
    let ready = poll(&server, "/readyz", |r| r.status == 200).await;
    assert_eq!(
        ready.status, 200,
        "a one-node group elects itself: {}",
        ready.body
    );
    let mut c = TestClient::connect(server.controller_addr.unwrap()).await;
    join_and_elect(&mut c).await;

    let api = json(&server.get("/api/controller").await);
    let group = &api["group"];
    assert_eq!(group["name"], "obs-group");
    assert_eq!(
        (group["selfId"].as_str(), group["leaderId"].as_str()),
        (Some("n0"), Some("n0"))
    );
    assert_eq!(
        (group["isLeader"].as_bool(), group["leaderReady"].as_bool()),
        (Some(true), Some(true))
    );
    assert!(group["term"].as_u64().unwrap() >= 1);
    let committed = group["committedIndex"].as_u64().unwrap();
    assert_eq!(group["appliedIndex"].as_u64(), Some(committed), "{group}");
    assert_eq!(group["applyLag"], 0);
    let peers = group["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 1);
    assert_eq!(peers[0]["addr"], "127.0.0.1:9878");
    assert_eq!(
        (peers[0]["self"].as_bool(), peers[0]["leader"].as_bool()),
        (Some(true), Some(true))
    );

    let sets = api["brokerSets"].as_array().unwrap();
    assert_eq!(sets.len(), 1, "{api}");
    let set = &sets[0];
    assert_eq!(
        (set["clusterName"].as_str(), set["brokerName"].as_str()),
        (Some("DefaultCluster"), Some("broker-a"))
    );
    assert_eq!(set["masterBrokerId"], 1);
    assert_eq!(set["masterAddress"], BROKER_ADDR);
    assert_eq!(set["masterEpoch"], 1);
    assert_eq!(set["syncStateSet"], serde_json::json!([1]));
    let replica = &set["replicas"][0];
    assert_eq!(
        (
            replica["brokerId"].as_i64(),
            replica["inSync"].as_bool(),
            replica["alive"].as_bool()
        ),
        (Some(1), Some(true), Some(true))
    );

    let elections = api["elections"].as_array().unwrap();
    assert_eq!(elections.len(), 1, "{api}");
    let e = &elections[0];
    assert_eq!(
        (e["brokerName"].as_str(), e["reason"].as_str()),
        (Some("broker-a"), Some("broker_trigger"))
    );
    assert_eq!(
        (
            e["oldMasterBrokerId"].clone(),
            e["newMasterBrokerId"].as_i64(),
            e["masterEpoch"].as_i64()
        ),
        (Value::Null, Some(1), Some(1))
    );
    assert!(e["timeMillis"].as_i64().unwrap() > 1_700_000_000_000);
    assert_eq!(api["electionsByReason"]["broker_trigger"], 1);
    assert_eq!(api["heartbeats"], 1);

    let status = json(&server.get("/api/status").await);
    assert_eq!(status["ready"], true);
    assert_eq!(status["standaloneController"], false);
    assert_eq!(status["controller"]["leaderId"], "n0");
    assert_eq!(status["controller"]["brokerSets"], 1);

    let page = server.get("/").await;
    assert_eq!(page.status, 200);
    for part in [
        "<section id=\"controller\"><h2>Controller <span class=\"tag\">group obs-group</span>",
        "<b>n0</b><span>leader (this node)</span>",
        "<span class=\"tag ok\">master 1 127.0.0.1:10911</span>",
        "<td class=\"ok\">in sync</td><td class=\"ok\">alive</td>",
        "<td>broker-a</td><td>none → 1</td><td>1</td><td>broker_trigger</td>",
        "<a href=\"/api/controller\">/api/controller</a>",
        // Embedded: the name server's sections stay.
        "<section id=\"clusters\">",
    ] {
        assert!(page.body.contains(part), "{part} missing from the page");
    }

    let metrics = server.get("/metrics").await.body;
    for (series, value) in [
        ("namesrv_ready", 1.0),
        ("namesrv_controller_is_leader", 1.0),
        ("namesrv_controller_leader_known", 1.0),
        ("namesrv_controller_apply_lag", 0.0),
        ("namesrv_controller_commit_index", committed as f64),
        ("namesrv_controller_broker_sets", 1.0),
        ("namesrv_controller_broker_sets_without_master", 0.0),
        ("namesrv_controller_replicas", 1.0),
        ("namesrv_controller_live_replicas", 1.0),
        ("namesrv_controller_heartbeats_total", 1.0),
        (
            "namesrv_controller_elections_total{reason=\"broker_trigger\"}",
            1.0,
        ),
        (
            "namesrv_controller_elections_total{reason=\"heartbeat_expired\"}",
            0.0,
        ),
        ("namesrv_controller_last_failover_seconds", 0.0),
        ("namesrv_controller_peers_unreachable", 0.0),
    ] {
        assert_eq!(
            sample(&metrics, series),
            Some(value),
            "{series} in:\n{metrics}"
        );
    }
    assert!(sample(&metrics, "namesrv_controller_term").unwrap() >= 1.0);
    // A one-node group has no other peer to be reachable or not.
    assert!(
        !metrics.contains("namesrv_controller_peer_reachable{"),
        "{metrics}"
    );
}

fn peer(id: &str, port: u16, reachable: Option<bool>) -> PeerStatus {
    PeerStatus {
        id: id.into(),
        addr: format!("127.0.0.1:{port}"),
        reachable,
        matched: reachable.map(|_| 7),
    }
}

/// Node n0 of a three-node group, leaderless until the test says otherwise.
fn three_node_member() -> (Controller, watch::Sender<GroupStatus>) {
    let status = GroupStatus {
        self_id: "n0".into(),
        term: 3,
        committed: Some(7),
        applied: Some(5),
        last_log: Some(7),
        peers: vec![
            peer("n0", 9878, None),
            peer("n1", 9879, None),
            peer("n2", 9880, None),
        ],
        ..GroupStatus::default()
    };
    instant_controller(status)
}

#[tokio::test]
async fn readiness_waits_for_a_known_leader_and_the_leader_shows_its_peers() {
    let (controller, group) = three_node_member();
    let server = TestServer::start_with(Options {
        controller_with: Some(controller),
        http: true,
        ..Options::default()
    })
    .await;

    let not_ready = server.get("/readyz").await;
    assert_eq!(not_ready.status, 503);
    assert!(
        not_ready
            .body
            .contains("controller group group1: no leader known to this node"),
        "{}",
        not_ready.body
    );
    let status = json(&server.get("/api/status").await);
    assert_eq!(status["ready"], false);
    let metrics = server.get("/metrics").await.body;
    assert_eq!(sample(&metrics, "namesrv_ready"), Some(0.0));
    assert_eq!(
        sample(&metrics, "namesrv_controller_leader_known"),
        Some(0.0)
    );
    assert_eq!(sample(&metrics, "namesrv_controller_apply_lag"), Some(2.0));
    assert_eq!(
        sample(&metrics, "namesrv_controller_snapshot_index"),
        Some(-1.0)
    );
    let page = server.get("/").await.body;
    assert!(
        page.contains("<b>none known</b><span>leader</span>"),
        "{page}"
    );
    assert!(
        page.contains("not ready: controller group group1"),
        "{page}"
    );

    // A follower that knows the leader is ready; it cannot see the peers.
    group.send_modify(|g| g.leader_id = Some("n1".into()));
    assert_eq!(server.get("/readyz").await.status, 200);
    let page = server.get("/").await.body;
    assert!(
        page.contains("<td>n1</td><td>127.0.0.1:9879</td><td><span class=\"tag ok\">leader</span>"),
        "{page}"
    );
    assert!(
        page.contains("<td class=\"empty\">known to the leader</td>"),
        "{page}"
    );

    // The leader, with n2 out of reach.
    group.send_modify(|g| {
        g.leader_id = Some("n0".into());
        g.is_leader = true;
        g.peers = vec![
            peer("n0", 9878, Some(true)),
            peer("n1", 9879, Some(true)),
            peer("n2", 9880, Some(false)),
        ];
    });
    let metrics = server.get("/metrics").await.body;
    assert_eq!(sample(&metrics, "namesrv_ready"), Some(1.0));
    assert_eq!(sample(&metrics, "namesrv_controller_is_leader"), Some(1.0));
    assert_eq!(
        sample(&metrics, "namesrv_controller_peer_reachable{peer=\"n1\"}"),
        Some(1.0)
    );
    assert_eq!(
        sample(&metrics, "namesrv_controller_peer_reachable{peer=\"n2\"}"),
        Some(0.0)
    );
    assert!(
        !metrics.contains("peer=\"n0\""),
        "no series for the node itself"
    );
    assert_eq!(
        sample(&metrics, "namesrv_controller_peers_unreachable"),
        Some(1.0)
    );
    let api = json(&server.get("/api/controller").await);
    let reachable: Vec<Value> = (api["group"]["peers"].as_array().unwrap().iter())
        .map(|p| p["reachable"].clone())
        .collect();
    assert_eq!(
        reachable,
        [Value::Bool(true), Value::Bool(true), Value::Bool(false)]
    );
    let page = server.get("/").await.body;
    assert!(page.contains("<td>n2</td><td>127.0.0.1:9880</td><td><span class=\"tag\">follower</span></td><td class=\"bad\">no</td>"), "{page}");
    assert!(
        page.contains("No broker has asked the controller for an id yet."),
        "{page}"
    );
}

#[tokio::test]
async fn a_plain_name_server_has_no_controller_views() {
    let server = TestServer::start_with(Options {
        http: true,
        ..Options::default()
    })
    .await;
    assert_eq!(server.get("/api/controller").await.status, 404);
    let status = json(&server.get("/api/status").await);
    assert_eq!(status["controller"], Value::Null);
    assert!(
        !server
            .get("/metrics")
            .await
            .body
            .contains("namesrv_controller_")
    );
    assert!(!server.get("/").await.body.contains("id=\"controller\""));
}

/// `namesrv --controller -c conf` with the side door on: the child and the side door's
/// address, from the line the binary prints about it.
fn standalone(dir: &std::path::Path) -> (Reaped, SocketAddr) {
    let conf = dir.join("controller.conf");
    let text = format!(
        "bindAddress=127.0.0.1\nhttpListenPort={}\nhttpBindAddress=127.0.0.1\n\
         controllerDLegerGroup=alone\ncontrollerDLegerPeers=n0-127.0.0.1:{}\n\
         controllerDLegerSelfId=n0\ncontrollerStorePath={}\n",
        free_port(),
        free_port(),
        dir.join("raft").display()
    );
    std::fs::write(&conf, text).unwrap();
    let mut child = process::namesrv(dir)
        .args(["--controller", "-c", conf.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = Reaped(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    loop {
        let line = rx.recv_timeout(PATIENCE).expect("the side door's line");
        if let Some(rest) = line.strip_prefix("Status page, metrics and address server at http://")
        {
            return (child, rest.trim_end_matches('/').parse().unwrap());
        }
    }
}

#[tokio::test]
async fn a_standalone_controllers_page_shows_the_controller_and_no_routes() {
    let dir = tempfile::tempdir().unwrap();
    let (_child, http) = standalone(dir.path());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while http_request(http, "GET", "/readyz").await.status != 200 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "a one-node group elects itself"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let status = json(&http_request(http, "GET", "/api/status").await);
    assert_eq!(status["standaloneController"], true);
    assert_eq!(status["controller"]["group"], "alone");
    let page = http_request(http, "GET", "/").await.body;
    assert!(page.contains("RocketMQ controller at 127.0.0.1:"), "{page}");
    assert!(page.contains("<section id=\"controller\">"), "{page}");
    for absent in [
        "id=\"clusters\"",
        "id=\"topics\"",
        "id=\"kv\"",
        "live brokers",
    ] {
        assert!(
            !page.contains(absent),
            "{absent} on a standalone controller's page"
        );
    }
    let metrics = http_request(http, "GET", "/metrics").await.body;
    assert_eq!(sample(&metrics, "namesrv_controller_is_leader"), Some(1.0));
}
