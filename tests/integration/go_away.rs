//! Java's graceful shutdown (`enableShutdownGracefully`, `shutdownWaitTimeSeconds`): during
//! the wait the server keeps accepting and serving, but answers every request of a client
//! newer than 5.3.1 with `GO_AWAY` (1500, "please go away") without handling it — one-way
//! requests get nothing — so that the client reconnects elsewhere; older clients are served
//! as usual. Then it stops as always.

use std::time::Duration;

use namesrv::protocol::code::{request, response};

use crate::harness::{TestClient, TestServer, put_kv, register_broker_a, route};

#[tokio::test]
async fn newer_clients_are_told_to_go_away_during_the_wait() {
    let mut server = TestServer::with_properties(
        "enableShutdownGracefully=true\nshutdownWaitTimeSeconds=1\nshutdownGracePeriodMillis=500",
    )
    .await;
    let mut broker = server.client().await;
    register_broker_a(&mut broker).await;
    let mut newer = server.client().await;
    let mut older = server.client().await;
    older.version = 475; // V5_3_1: not newer than 5.3.1
    assert_eq!(route(&mut newer, "TopicA").await.code, 0);

    let started = std::time::Instant::now();
    let stopped = server.begin_stop();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let resp = route(&mut newer, "TopicA").await;
    assert_eq!(resp.code, response::GO_AWAY);
    assert_eq!(resp.remark.as_deref(), Some("please go away"));
    assert!(resp.is_response() && resp.ext_fields.is_none() && resp.body.is_none());
    // The request was not handled: a KV write does not happen.
    let put = put_kv(&mut newer, "ns", "k", "v").await;
    assert_eq!(put.code, response::GO_AWAY);
    assert!(server.state.kv().get("ns", "k").is_none());
    // One-way requests get no answer: the next answer is the next request's.
    let mut oneway = newer.command(
        request::GET_ROUTEINFO_BY_TOPIC,
        &[("topic", "TopicA")],
        None,
    );
    oneway.flag |= namesrv::protocol::code::FLAG_ONEWAY;
    newer.send(&oneway).await;
    let next = newer.call(request::GET_NAMESRV_CONFIG, &[], None).await;
    assert_eq!(next.code, response::GO_AWAY);
    // Older clients are served, and new connections are still accepted meanwhile.
    assert_eq!(route(&mut older, "TopicA").await.code, 0);
    let mut late = TestClient::connect(server.addr).await;
    assert_eq!(route(&mut late, "TopicA").await.code, response::GO_AWAY);

    tokio::time::timeout(Duration::from_secs(15), stopped)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the wait is kept"
    );
    assert!(tokio::net::TcpStream::connect(server.addr).await.is_err());
}

#[tokio::test]
async fn without_it_nobody_is_told_to_go_away() {
    let mut server = TestServer::with_properties("shutdownGracePeriodMillis=500").await;
    let mut client = server.client().await;
    let mut wire = bytes::BytesMut::new();
    let cmd = client.command(request::GET_NAMESRV_CONFIG, &[], None);
    namesrv::protocol::encode_frame(&cmd, namesrv::protocol::SerializeType::Json, &mut wire);
    client.send_raw(&wire).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let stopped = server.begin_stop();
    assert_eq!(
        client.recv().await.expect("answered").code,
        response::SUCCESS
    );
    stopped.await.unwrap().unwrap();
}
