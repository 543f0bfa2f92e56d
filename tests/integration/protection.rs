//! Mass-eviction protection over TCP, on paused time: ten brokers that fall silent together
//! are held and their routes served; a few silent ones are evicted as Java evicts them;
//! holds end by themselves; closed connections are never held; brokers that only registered,
//! or only just arrived, neither keep a dead broker nor get a silent cluster evicted;
//! `evictionProtection=false` is Java.

use std::time::Duration;

use namesrv::protocol::code::{request, response};

use crate::harness::{TestClient, TestServer, apply_config, body_text, register, route};

/// Scans every second, no idle timeout: silence is found by the scan alone.
const SCAN_ONLY: &str = "scanNotActiveBrokerInterval=1000\nserverChannelMaxIdleTimeSeconds=0";

fn name(b: usize) -> String {
    format!("broker-{b}")
}

fn addr(b: usize) -> String {
    format!("10.0.0.{b}:10911")
}

fn topic(b: usize) -> String {
    format!("Topic{b}")
}

/// Broker `b` on its own connection, registered once, serving `Topic<b>` and `Shared`.
/// Brokers `range`, each registered on a connection of its own.
async fn brokers(server: &TestServer, range: std::ops::Range<usize>) -> Vec<TestClient> {
    let mut all = Vec::new();
    for b in range {
        all.push(broker(server, b).await);
    }
    all
}

async fn broker(server: &TestServer, b: usize) -> TestClient {
    let mut c = server.client().await;
    register(&mut c, &name(b), &addr(b), "0", 1, &[&topic(b), "Shared"]).await;
    c
}

/// Ten brokers, each on its own connection, serving `Topic<b>` and `Shared`, registered and
/// heard from again a heartbeat period (30 s) later: protection counts only brokers with
/// that much history.
async fn ten_brokers(server: &TestServer) -> Vec<TestClient> {
    let mut brokers = brokers(server, 0..10).await;
    pass(30).await;
    for (b, broker) in brokers.iter_mut().enumerate() {
        heartbeat(broker, b).await;
    }
    brokers
}

/// Ten brokers that fell silent 130 s ago and are held, and a client.
async fn held_cluster() -> (TestServer, Vec<TestClient>, TestClient) {
    let server = TestServer::with_properties(SCAN_ONLY).await;
    let brokers = ten_brokers(&server).await;
    let client = server.client().await;
    pass(130).await;
    assert_eq!(server.state.eviction_protection().held, 10);
    (server, brokers, client)
}

async fn heartbeat(broker: &mut TestClient, b: usize) {
    let (name, addr) = (name(b), addr(b));
    let ext = [
        ("clusterName", "DefaultCluster"),
        ("brokerAddr", addr.as_str()),
        ("brokerName", name.as_str()),
    ];
    assert_eq!(
        broker
            .call(request::BROKER_HEARTBEAT, &ext, None)
            .await
            .code,
        0
    );
}

/// Advances paused time and lets the scan and the connection tasks run.
async fn pass(secs: u64) {
    tokio::time::advance(Duration::from_secs(secs)).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

/// Whether `b`'s topic is routed to it.
async fn served(client: &mut TestClient, b: usize) -> bool {
    let resp = route(client, &topic(b)).await;
    resp.code == 0 && body_text(&resp).contains(&format!("\"brokerName\":\"{}\"", name(b)))
}

async fn config(client: &mut TestClient) -> String {
    body_text(&client.call(request::GET_NAMESRV_CONFIG, &[], None).await)
}

/// Brokers in the route of `Shared`.
async fn shared_groups(client: &mut TestClient) -> usize {
    let resp = route(client, "Shared").await;
    if resp.code == response::TOPIC_NOT_EXIST {
        return 0;
    }
    body_text(&resp).matches("\"brokerName\"").count() / 2
}

#[tokio::test(start_paused = true)]
async fn ten_silent_brokers_are_held_and_their_routes_served() {
    let server = TestServer::with_properties(SCAN_ONLY).await;
    let _brokers = ten_brokers(&server).await;
    let mut client = server.client().await;
    assert!(
        !config(&mut client)
            .await
            .contains("evictionProtectionHeldBrokers")
    );
    pass(130).await;
    for b in 0..10 {
        assert!(served(&mut client, b).await, "broker {b} held and served");
    }
    assert_eq!(shared_groups(&mut client).await, 10);
    let status = server.state.eviction_protection();
    assert_eq!((status.held, status.holds), (10, 1));
    assert_eq!(status.clusters, ["DefaultCluster"]);
    let conf = config(&mut client).await;
    assert!(
        conf.contains("\nevictionProtectionHeldBrokers=10\n"),
        "{conf}"
    );
}

#[tokio::test(start_paused = true)]
async fn two_of_ten_silent_are_evicted_normally() {
    let server = TestServer::with_properties(SCAN_ONLY).await;
    let mut brokers = ten_brokers(&server).await;
    let mut client = server.client().await;
    for _ in 0..4 {
        pass(30).await;
        for (b, broker) in brokers.iter_mut().enumerate().skip(2) {
            heartbeat(broker, b).await;
        }
    }
    pass(10).await;
    assert!(!served(&mut client, 0).await && !served(&mut client, 1).await);
    for b in 2..10 {
        assert!(served(&mut client, b).await);
    }
    // Their connections were closed, as Java closes an expired broker's channel.
    assert!(brokers[0].closed_without_reply().await);
    assert!(brokers[1].closed_without_reply().await);
    assert_eq!(server.state.eviction_protection().holds, 0);
}

#[tokio::test(start_paused = true)]
async fn when_eight_resume_the_other_two_are_evicted() {
    let (server, mut brokers, mut client) = held_cluster().await;
    for (b, broker) in brokers.iter_mut().enumerate().skip(2) {
        heartbeat(broker, b).await;
    }
    pass(2).await;
    assert!(!served(&mut client, 0).await && !served(&mut client, 1).await);
    assert_eq!(shared_groups(&mut client).await, 8);
    let status = server.state.eviction_protection();
    assert_eq!((status.held, status.since), (0, None));
    assert!(
        !config(&mut client)
            .await
            .contains("evictionProtectionHeldBrokers")
    );
}

#[tokio::test(start_paused = true)]
async fn all_silent_past_the_maximum_hold_are_evicted() {
    let (server, mut brokers, mut client) = held_cluster().await;
    pass(580).await;
    assert_eq!(shared_groups(&mut client).await, 10, "within the hold");
    pass(20).await;
    assert_eq!(shared_groups(&mut client).await, 0);
    assert_eq!(server.state.eviction_protection().overdue_evictions, 10);
    for broker in &mut brokers {
        assert!(broker.closed_without_reply().await);
    }
}

#[tokio::test(start_paused = true)]
async fn a_connection_closed_during_a_hold_removes_its_broker_at_once() {
    let (server, mut brokers, mut client) = held_cluster().await;
    drop(brokers.remove(3));
    for _ in 0..500 {
        if !served(&mut client, 3).await {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(!served(&mut client, 3).await);
    assert_eq!(shared_groups(&mut client).await, 9);
    assert_eq!(server.state.eviction_protection().held, 9);
}

#[tokio::test(start_paused = true)]
async fn protection_off_is_java() {
    let server =
        TestServer::with_properties(&format!("{SCAN_ONLY}\nevictionProtection=false")).await;
    let mut brokers = ten_brokers(&server).await;
    let mut client = server.client().await;
    pass(120).await;
    assert_eq!(shared_groups(&mut client).await, 10, "not yet past 120 s");
    pass(2).await;
    assert_eq!(shared_groups(&mut client).await, 0);
    for broker in &mut brokers {
        assert!(broker.closed_without_reply().await);
    }
    let status = server.state.eviction_protection();
    assert_eq!((status.held, status.holds), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn switching_protection_off_during_a_hold_evicts_at_the_next_scan() {
    let (server, _brokers, mut client) = held_cluster().await;
    assert_eq!(shared_groups(&mut client).await, 10);
    // From the file (a client may not change it unless authMode=enforce); applies at once.
    apply_config(&server, "evictionProtection=false");
    pass(2).await;
    assert_eq!(shared_groups(&mut client).await, 0);
}

/// With the default idle timeout (120 s, as the broker timeout) a network loss shows first
/// as idle connections: they are silence too, and held the same way.
#[tokio::test(start_paused = true)]
async fn idle_connections_of_a_silent_cluster_are_held() {
    let server = TestServer::start().await;
    let mut brokers = ten_brokers(&server).await;
    pass(125).await;
    for broker in &mut brokers {
        assert!(broker.closed_without_reply().await, "idled out");
    }
    // (A client connected now: an earlier one would have idled out too.)
    let mut client = server.client().await;
    for b in 0..10 {
        assert!(served(&mut client, b).await, "broker {b} held");
    }
    assert_eq!(server.state.eviction_protection().held, 10);
    pass(20).await;
    assert_eq!(
        shared_groups(&mut client).await,
        10,
        "the scan holds them too"
    );
    // The network is back: brokers reconnect and register again.
    for (b, broker) in brokers.iter_mut().enumerate() {
        *broker = server.client().await;
        register(broker, &name(b), &addr(b), "0", 2, &[&topic(b), "Shared"]).await;
    }
    pass(10).await;
    assert_eq!(shared_groups(&mut client).await, 10);
    let status = server.state.eviction_protection();
    assert_eq!((status.held, status.since, status.holds), (0, None, 1));
}

#[tokio::test(start_paused = true)]
async fn one_idle_broker_among_healthy_ones_is_removed_at_once() {
    let server = TestServer::with_properties("scanNotActiveBrokerInterval=3600000").await;
    let mut brokers = ten_brokers(&server).await;
    for _ in 0..4 {
        pass(30).await;
        for (b, broker) in brokers.iter_mut().enumerate().skip(1) {
            heartbeat(broker, b).await;
        }
    }
    pass(5).await;
    // No scan ran (the interval is an hour): the idle timeout alone removed it, as in Java.
    assert!(brokers[0].closed_without_reply().await);
    let mut client = server.client().await;
    assert!(!served(&mut client, 0).await);
    assert_eq!(shared_groups(&mut client).await, 9);
    assert_eq!(server.state.eviction_protection().holds, 0);
}

// --- Brokers that only registered, or only just arrived, do not sway protection. ---

#[tokio::test(start_paused = true)]
async fn registered_and_silent_fakes_neither_keep_a_dead_broker_nor_raise_a_hold() {
    let (server, mut client) = TestServer::with_client(SCAN_ONLY).await;
    let mut real = brokers(&server, 0..5).await;
    // Ten fakes register once and say nothing more; broker 0 dies after 30 s; the other four
    // heartbeat every 30 s.
    let _fakes = brokers(&server, 5..15).await;
    for round in 1..=6 {
        pass(30).await;
        for (b, broker) in real.iter_mut().enumerate() {
            if b > 0 || round == 1 {
                heartbeat(broker, b).await;
            }
        }
    }
    // 180 s: broker 0 has been silent 150 s, past its 120 s timeout: gone, as in Java.
    assert!(!served(&mut client, 0).await, "the dead broker was kept");
    for b in 1..5 {
        assert!(served(&mut client, b).await);
    }
    for b in 5..15 {
        assert!(!served(&mut client, b).await, "fake {b} was kept");
    }
    let status = server.state.eviction_protection();
    assert_eq!((status.held, status.holds), (0, 0), "a false hold");
}

#[tokio::test(start_paused = true)]
async fn heartbeating_newcomers_do_not_get_a_silent_cluster_evicted() {
    let (server, mut client) = TestServer::with_client(SCAN_ONLY).await;
    let mut real = brokers(&server, 0..5).await;
    pass(30).await;
    for (b, broker) in real.iter_mut().enumerate() {
        heartbeat(broker, b).await;
    }
    // The five fall silent together (a real mass silence); ten fakes appear and heartbeat
    // every 10 s.
    let mut fakes = brokers(&server, 5..15).await;
    for _ in 0..15 {
        pass(10).await;
        for (i, fake) in fakes.iter_mut().enumerate() {
            heartbeat(fake, i + 5).await;
        }
    }
    // 180 s: the five have been silent 150 s, and are held.
    for b in 0..5 {
        assert!(served(&mut client, b).await, "broker {b} was evicted");
    }
    let status = server.state.eviction_protection();
    assert_eq!((status.held, status.holds), (5, 1));
}
