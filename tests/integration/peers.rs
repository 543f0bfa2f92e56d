//! N nodes, checked: three name servers list each other in `namesrvPeers`; a broker registers
//! with only two of them. Each node asks its peers over the remoting port and reports the
//! brokers registered with it that a peer lacks, or holds at an older data version, once the
//! difference has lasted; a peer that answers garbage or hangs is reported unreachable and
//! the others are still checked.

use std::net::SocketAddr;
use std::time::Duration;

use namesrv::protocol::code::request;
use namesrv::state::peering::{Difference, PeerReport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::harness::{
    Options, TestClient, TestServer, apply_config, body_text, fake_peer, register,
    register_broker_a,
};

pub(crate) const PROPS: &str =
    "peerCheckIntervalMillis=200\npeerDivergenceAfterMillis=600\nserverChannelMaxIdleTimeSeconds=0";

/// `namesrvPeers` is the operator's (start-up only over the wire unless `authMode=enforce`):
/// applied as a reload of the file does.
pub(crate) async fn set_peers(server: &TestServer, peers: &[SocketAddr]) {
    let list: Vec<String> = peers.iter().map(ToString::to_string).collect();
    apply_config(server, &format!("namesrvPeers={}", list.join(";")));
}

/// Waits (boundedly: 15 s) until `server`'s report satisfies `done`.
pub(crate) async fn report_until(
    server: &TestServer,
    done: impl Fn(&PeerReport) -> bool,
) -> PeerReport {
    for _ in 0..750 {
        let report = server.state.peer_report();
        if done(&report) {
            return report;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("report never settled: {:#?}", server.state.peer_report());
}

fn divergent(report: &PeerReport, peer: SocketAddr) -> Vec<(String, Difference)> {
    let mut out: Vec<(String, Difference)> = report
        .divergent
        .iter()
        .filter(|d| d.peer == peer.to_string())
        .map(|d| (d.broker_name.clone(), d.difference.clone()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Registers broker-a (data version 1) and broker-b (data version `counter_b`) on `conn`.
async fn register_a_and_b(conn: &mut TestClient, counter_b: i64) {
    register_broker_a(conn).await;
    register(
        conn,
        "broker-b",
        "10.0.0.2:10911",
        "0",
        counter_b,
        &["TopicA", "TopicB"],
    )
    .await;
}

#[tokio::test]
async fn three_nodes_and_a_broker_that_registers_with_two() {
    let a = TestServer::start_with(Options {
        properties: PROPS.into(),
        http: true,
        ..Options::default()
    })
    .await;
    let (b, c) = (
        TestServer::with_properties(PROPS).await,
        TestServer::with_properties(PROPS).await,
    );
    let all = [a.addr, b.addr, c.addr];
    let mut brokers = Vec::new();
    for (server, counter_b) in [(&a, 2), (&b, 1)] {
        let mut conn = server.client().await;
        register_a_and_b(&mut conn, counter_b).await;
        brokers.push(conn);
    }
    let heard = b
        .state
        .routes()
        .live("DefaultCluster", "10.0.0.1:10911")
        .unwrap()
        .last_update;
    for server in [&a, &b, &c] {
        set_peers(server, &all).await;
    }

    let settled =
        |r: &PeerReport| r.peers.len() == 3 && r.peers.iter().all(|p| p.unreachable.is_none());
    let report_a = report_until(&a, |r| settled(r) && r.divergent.len() == 3).await;
    assert_eq!(
        report_a.peers.iter().filter(|p| p.is_self).count(),
        1,
        "a node knows itself"
    );
    assert!(
        report_a
            .peers
            .iter()
            .filter(|p| !p.is_self)
            .all(|p| p.compares_versions)
    );
    assert_eq!(
        divergent(&report_a, c.addr),
        [
            ("broker-a".to_owned(), Difference::Missing),
            ("broker-b".to_owned(), Difference::Missing)
        ]
    );
    assert_eq!(
        divergent(&report_a, b.addr),
        [("broker-b".to_owned(), Difference::OlderVersion)]
    );

    let report_b = report_until(&b, |r| settled(r) && r.divergent.len() == 2).await;
    assert_eq!(
        divergent(&report_b, c.addr),
        [
            ("broker-a".to_owned(), Difference::Missing),
            ("broker-b".to_owned(), Difference::Missing)
        ]
    );
    assert!(
        divergent(&report_b, a.addr).is_empty(),
        "a's newer version is a's to report"
    );
    let report_c = report_until(&c, settled).await;
    assert!(
        report_c.divergent.is_empty(),
        "c has no broker the others lack"
    );

    // Exported where mqadmin getNamesrvConfig sees it.
    let mut admin = a.client().await;
    let config = body_text(&admin.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    assert!(
        config.contains("\nnamesrvPeersDivergentBrokers=3\n"),
        "{config}"
    );
    // The checks never counted as the broker's heartbeat.
    let still = b
        .state
        .routes()
        .live("DefaultCluster", "10.0.0.1:10911")
        .unwrap()
        .last_update;
    assert_eq!(still, heard);

    // The broker registers with the third node: the divergence ends.
    let mut conn = c.client().await;
    register_a_and_b(&mut conn, 2).await;
    report_until(&a, |r| settled(r) && r.divergent.len() == 1).await;
    report_until(&b, |r| settled(r) && r.divergent.is_empty()).await;
    drop((brokers, conn));
}

/// A "name server" that answers every connection with garbage.
async fn garbage_peer() -> SocketAddr {
    fake_peer(|mut s| async move {
        let mut buf = [0u8; 1024];
        while let Ok(n) = s.read(&mut buf).await {
            if n == 0
                || s.write_all(b"\x00\x00\x00\x09\xff\xff\xff\xffgarbage!")
                    .await
                    .is_err()
            {
                return;
            }
        }
    })
    .await
}

/// A "name server" that accepts and never answers.
async fn hanging_peer() -> SocketAddr {
    fake_peer(|s| async move {
        // Held open, never read or written.
        std::future::pending::<()>().await;
        drop(s);
    })
    .await
}

#[tokio::test]
async fn a_peer_that_answers_garbage_or_hangs_is_reported_and_survived() {
    let a = TestServer::with_properties(PROPS).await;
    let b = TestServer::with_properties(PROPS).await;
    let mut broker = a.client().await;
    register_broker_a(&mut broker).await;
    let (garbage, hanging) = (garbage_peer().await, hanging_peer().await);
    set_peers(&a, &[b.addr, garbage, hanging]).await;
    let report = report_until(&a, |r| {
        r.peers.len() == 3
            && r.peers.iter().filter(|p| p.unreachable.is_some()).count() == 2
            && r.divergent.len() == 1
    })
    .await;
    let why = |addr: SocketAddr| {
        report
            .peers
            .iter()
            .find(|p| p.peer == addr.to_string())
            .and_then(|p| p.unreachable.clone())
            .unwrap()
    };
    assert!(
        why(hanging).contains("no answer within"),
        "{}",
        why(hanging)
    );
    assert!(!why(garbage).is_empty());
    assert_eq!(
        divergent(&report, b.addr),
        [("broker-a".to_owned(), Difference::Missing)]
    );
    let mut admin = TestClient::connect(a.addr).await;
    let config = body_text(&admin.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    assert!(config.contains("\nnamesrvPeersUnreachable=2\n"), "{config}");
    // Still checking: the good peer catches up and the divergence ends.
    let mut on_b = b.client().await;
    register_broker_a(&mut on_b).await;
    report_until(&a, |r| r.divergent.is_empty() && r.peers.len() == 3).await;
}
