//! Requests the server sends to a connected client ([`namesrv::server::outbound`]): a raw
//! client sees them as RocketMQ clients do, answers with the same opaque, and its own
//! requests on the same connection are answered meanwhile, in order.

use std::time::Duration;

use namesrv::protocol::code::{FLAG_ONEWAY, FLAG_RESPONSE, request, response};
use namesrv::protocol::{RemotingCommand, SerializeType};
use namesrv::server::outbound::OutboundError;
use namesrv::state::ConnId;

use crate::harness::{TestClient, TestServer};

/// Java's `RequestCode#NOTIFY_BROKER_ROLE_CHANGED`, which the controller sends to brokers.
const NOTIFY_BROKER_ROLE_CHANGED: i32 = 1008;

/// A server whose outbound handle the test keeps.
type Served = TestServer;

async fn serve() -> Served {
    TestServer::start().await
}

/// A server configured by `properties` (as in a config file).
async fn serve_with(properties: &str) -> Served {
    TestServer::with_properties(properties).await
}

/// A client of `served` and the id the server gave its connection (known once answered).
async fn attached_client(served: &Served) -> (TestClient, ConnId) {
    let before = served.outbound.connections();
    let mut client = TestClient::connect(served.addr).await;
    assert_eq!(kv_get(&mut client).await.code, response::QUERY_NOT_FOUND);
    let conn = served
        .outbound
        .connections()
        .into_iter()
        .find(|c| !before.contains(c))
        .expect("the connection is attached once served");
    (client, conn)
}

/// A fresh server, a client of it and that client's connection id.
async fn served_client() -> (Served, TestClient, ConnId) {
    let served = serve().await;
    let (client, conn) = attached_client(&served).await;
    (served, client, conn)
}

async fn kv_get(client: &mut TestClient) -> RemotingCommand {
    let ext = [("namespace", "ns"), ("key", "k")];
    client.call(request::GET_KV_CONFIG, &ext, None).await
}

fn role_changed() -> RemotingCommand {
    let mut cmd = RemotingCommand::request(NOTIFY_BROKER_ROLE_CHANGED, 0);
    cmd.body = Some(br#"{"masterAddress":"10.0.0.1:10911"}"#.to_vec().into());
    cmd
}

/// NOTIFY_BROKER_ROLE_CHANGED sent to `conn` in a task of its own, so the test can play the
/// client while the request waits for its response.
fn spawn_role_change(
    served: &Served,
    conn: ConnId,
    timeout: Duration,
) -> tokio::task::JoinHandle<Result<RemotingCommand, OutboundError>> {
    let outbound = served.outbound.clone();
    tokio::spawn(async move { outbound.request(conn, role_changed(), timeout).await })
}

/// A one-way request to `conn` finds no such connection.
fn assert_not_connected(served: &Served, conn: ConnId) {
    assert_eq!(
        served.outbound.oneway(conn, role_changed()),
        Err(OutboundError::NotConnected(conn))
    );
}

/// The response a client gives to `request`.
fn answer(request: &RemotingCommand, remark: &str) -> RemotingCommand {
    let mut cmd = RemotingCommand::response(response::SUCCESS, Some(remark.to_owned()));
    cmd.opaque = request.opaque;
    cmd
}

#[tokio::test]
async fn a_request_reaches_the_client_and_its_response_comes_back() {
    let (served, mut client, conn) = served_client().await;
    let waiting = spawn_role_change(&served, conn, Duration::from_secs(30));
    let sent = client.recv().await.expect("the request");
    assert_eq!(sent.code, NOTIFY_BROKER_ROLE_CHANGED);
    assert_eq!(
        sent.flag & (FLAG_RESPONSE | FLAG_ONEWAY),
        0,
        "a request, answered"
    );
    assert_eq!(sent.body_bytes(), br#"{"masterAddress":"10.0.0.1:10911"}"#);
    client.send(&answer(&sent, "role noted")).await;
    let got = waiting.await.unwrap().unwrap();
    assert_eq!(
        (got.opaque, got.remark.as_deref()),
        (sent.opaque, Some("role noted"))
    );
    assert_eq!(served.outbound.waiting(conn), 0);
    // Opaques are the server's: a second request gets the next one.
    let again = spawn_role_change(&served, conn, Duration::from_secs(30));
    let second = client.recv().await.unwrap();
    assert_ne!(second.opaque, sent.opaque);
    client.send(&answer(&second, "again")).await;
    assert_eq!(again.await.unwrap().unwrap().opaque, second.opaque);
}

#[tokio::test]
async fn a_one_way_request_is_delivered_with_the_one_way_flag() {
    let (served, mut client, conn) = served_client().await;
    served.outbound.oneway(conn, role_changed()).unwrap();
    let sent = client.recv().await.unwrap();
    assert_eq!(sent.code, NOTIFY_BROKER_ROLE_CHANGED);
    assert_eq!(sent.flag & (FLAG_RESPONSE | FLAG_ONEWAY), FLAG_ONEWAY);
    assert_eq!(served.outbound.waiting(conn), 0);
    // The connection carries on as before.
    assert_eq!(kv_get(&mut client).await.code, response::QUERY_NOT_FOUND);
}

#[tokio::test(start_paused = true)]
async fn a_request_the_client_never_answers_times_out_and_leaves_nothing() {
    let (served, mut client, conn) = served_client().await;
    let timeout = Duration::from_secs(3);
    let waiting = spawn_role_change(&served, conn, timeout);
    let sent = client.recv().await.unwrap();
    assert_eq!(
        waiting.await.unwrap(),
        Err(OutboundError::TimedOut(timeout))
    );
    assert_eq!(
        served.outbound.waiting(conn),
        0,
        "the timed-out entry is gone"
    );
    // A late answer is a stray response, dropped; the connection is still served.
    client.send(&answer(&sent, "too late")).await;
    assert_eq!(kv_get(&mut client).await.code, response::QUERY_NOT_FOUND);
}

#[tokio::test]
async fn an_unknown_connection_is_not_connected() {
    let (served, _client, conn) = served_client().await;
    let unknown = ConnId(conn.0 + 1000);
    let got = served
        .outbound
        .request(unknown, role_changed(), Duration::from_secs(1))
        .await;
    assert_eq!(got, Err(OutboundError::NotConnected(unknown)));
    assert_not_connected(&served, unknown);
}

#[tokio::test]
async fn a_waiting_request_learns_when_the_client_disconnects() {
    let (served, mut client, conn) = served_client().await;
    let waiting = spawn_role_change(&served, conn, Duration::from_secs(3600));
    client.recv().await.expect("the request");
    drop(client);
    let got = tokio::time::timeout(Duration::from_secs(10), waiting).await;
    assert_eq!(
        got.expect("at once, not at the timeout").unwrap(),
        Err(OutboundError::Closed)
    );
    assert!(!served.outbound.connections().contains(&conn));
    assert_not_connected(&served, conn);
}

#[tokio::test]
async fn the_clients_own_requests_are_answered_in_order_while_one_waits() {
    let (served, mut client, conn) = served_client().await;
    let waiting = spawn_role_change(&served, conn, Duration::from_secs(30));
    let sent = client.recv().await.unwrap();
    // Two requests in one write, answered in order while the server's request waits.
    let put = client.command(
        request::PUT_KV_CONFIG,
        &[("namespace", "ns"), ("key", "k"), ("value", "v")],
        None,
    );
    let get = client.command(
        request::GET_KV_CONFIG,
        &[("namespace", "ns"), ("key", "k")],
        None,
    );
    let mut both = bytes::BytesMut::new();
    for cmd in [&put, &get] {
        namesrv::protocol::encode_frame(cmd, SerializeType::Json, &mut both);
    }
    client.send_raw(&both).await;
    let first = client.recv().await.unwrap();
    let second = client.recv().await.unwrap();
    assert_eq!((first.opaque, first.code), (put.opaque, response::SUCCESS));
    assert_eq!(
        (second.opaque, second.ext("value")),
        (get.opaque, Some("v"))
    );
    assert!(!waiting.is_finished());
    // The answer and a request in one write: the answer goes to the waiter, the request is
    // answered.
    let mut together = bytes::BytesMut::new();
    let after = client.command(
        request::GET_KV_CONFIG,
        &[("namespace", "ns"), ("key", "k")],
        None,
    );
    namesrv::protocol::encode_frame(&answer(&sent, "ok"), SerializeType::Json, &mut together);
    namesrv::protocol::encode_frame(&after, SerializeType::Json, &mut together);
    client.send_raw(&together).await;
    let reply = client.recv().await.unwrap();
    assert_eq!(
        (reply.opaque, reply.ext("value")),
        (after.opaque, Some("v"))
    );
    assert_eq!(
        waiting.await.unwrap().unwrap().remark.as_deref(),
        Some("ok")
    );
}

#[tokio::test(start_paused = true)]
async fn writing_a_request_counts_as_activity_for_the_idle_timeout() {
    let served = serve_with("serverChannelMaxIdleTimeSeconds=10").await;
    let (mut client, conn) = attached_client(&served).await;
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(6)).await;
        served.outbound.oneway(conn, role_changed()).unwrap();
        assert!(client.recv().await.unwrap().is_oneway());
    }
    // 30 s without a request of the client's, never 10 s without a write.
    assert_eq!(kv_get(&mut client).await.code, response::QUERY_NOT_FOUND);
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert!(client.closed_without_reply().await, "idle for 11 s");
    assert!(!served.outbound.connections().contains(&conn));
}

#[tokio::test]
async fn a_large_response_decoded_off_the_connection_reaches_its_waiter() {
    let (served, mut client, conn) = served_client().await;
    let waiting = spawn_role_change(&served, conn, Duration::from_secs(30));
    let sent = client.recv().await.unwrap();
    // Over the 64 KiB the connection decodes on its own task.
    let body = vec![b'x'; 200 * 1024];
    client
        .send(&answer(&sent, "big").with_body(body.clone()))
        .await;
    let got = waiting.await.unwrap().unwrap();
    assert_eq!(
        (got.remark.as_deref(), got.body_bytes()),
        (Some("big"), &body[..])
    );
    assert_eq!(kv_get(&mut client).await.code, response::QUERY_NOT_FOUND);
}
