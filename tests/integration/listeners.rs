//! A second remoting listener with a request table of its own, served by the same connection
//! code as the name server's port; and a handler that finishes later, whose reply is written
//! when it comes while the same connection's other requests are answered.

use std::time::Duration;

use crate::harness::{Options, TestClient, TestServer};
use namesrv::auth::Permission;
use namesrv::dispatch::{Later, RequestTable, Route, index_of, numbered};
use namesrv::handlers::Context;
use namesrv::metrics::LatencyClass;
use namesrv::protocol::RemotingCommand;
use namesrv::protocol::code::{request, response};

const WAIT: i32 = 1;
const ECHO: i32 = 2;

/// Answers after the milliseconds its `ms` field names, with the remark `waited`.
fn wait(_: &Context<'_>, req: &RemotingCommand) -> Later {
    let ms: u64 = req.ext("ms").and_then(|v| v.parse().ok()).unwrap_or(0);
    Box::pin(async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(RemotingCommand::error(response::SUCCESS, "waited").into())
    })
}

/// Answers at once with its `text` field as the remark.
fn echo(_: &Context<'_>, req: &RemotingCommand) -> namesrv::handlers::HandlerResult {
    let text = req.ext("text").unwrap_or_default();
    Ok(RemotingCommand::error(response::SUCCESS, text).into())
}

#[rustfmt::skip]
static ROWS: [Route; 2] = numbered([
    Route::later(WAIT, "WAIT", "wait", wait, LatencyClass::Admin, Permission::Read),
    Route::new(ECHO, "ECHO", "echo", echo, LatencyClass::Admin, Permission::Read),
], 40);
static INDEX: [u8; 8] = index_of(&ROWS);
static TEST_TABLE: RequestTable = RequestTable::new("test", &ROWS, &INDEX);

/// A name server with a second listener serving [`TEST_TABLE`]; its address.
async fn with_test_listener() -> (TestServer, std::net::SocketAddr) {
    let served = TestServer::start_with(Options {
        more_tables: vec![&TEST_TABLE],
        ..Options::default()
    })
    .await;
    let addr = served.more[0];
    (served, addr)
}

#[tokio::test]
async fn each_listener_serves_its_own_table() {
    let (served, test_addr) = with_test_listener().await;
    let mut test = TestClient::connect(test_addr).await;
    let echoed = test.call(ECHO, &[("text", "hello")], None).await;
    assert_eq!(
        (echoed.code, echoed.remark.as_deref()),
        (response::SUCCESS, Some("hello"))
    );
    // The test table has no name-server codes, and Java's answer to an unknown code comes back.
    let kv = test
        .ask(request::GET_KV_CONFIG, &[("namespace", "ns"), ("key", "k")])
        .await;
    assert_eq!(kv.code, response::REQUEST_CODE_NOT_SUPPORTED);
    // The name server's port still serves the name server's table, and not the test's.
    let mut namesrv = TestClient::connect(served.addr).await;
    let kv = namesrv
        .ask(request::GET_KV_CONFIG, &[("namespace", "ns"), ("key", "k")])
        .await;
    assert_eq!(kv.code, response::QUERY_NOT_FOUND);
    let echo = namesrv.call(ECHO, &[("text", "hello")], None).await;
    assert_eq!(echo.code, response::REQUEST_CODE_NOT_SUPPORTED);
}

#[tokio::test]
async fn a_reply_that_comes_later_lets_the_connections_other_requests_be_answered_first() {
    let (_served, test_addr) = with_test_listener().await;
    let mut client = TestClient::connect(test_addr).await;
    let slow = client.command(WAIT, &[("ms", "300")], None);
    let first = client.command(ECHO, &[("text", "one")], None);
    let second = client.command(ECHO, &[("text", "two")], None);
    for cmd in [&slow, &first, &second] {
        client.send(cmd).await;
    }
    // The quick requests are answered in their order while the slow one waits; the slow
    // one's reply carries its opaque.
    let mut got = Vec::new();
    for _ in 0..3 {
        let resp = tokio::time::timeout(Duration::from_secs(10), client.recv())
            .await
            .expect("answered in time")
            .expect("a response");
        got.push((resp.opaque, resp.remark.unwrap_or_default()));
    }
    assert_eq!(
        got,
        [
            (first.opaque, "one".to_owned()),
            (second.opaque, "two".to_owned()),
            (slow.opaque, "waited".to_owned()),
        ]
    );
}

#[tokio::test]
async fn many_replies_wait_at_once_and_each_finds_its_request() {
    let (_served, test_addr) = with_test_listener().await;
    let mut client = TestClient::connect(test_addr).await;
    // Later requests wait less: the replies come in the reverse order of the requests,
    // more of them than one connection may wait for at once.
    let count = 300;
    let mut opaques = Vec::new();
    for i in 0..count {
        let ms = ((count - i) * 2).to_string();
        let cmd = client.command(WAIT, &[("ms", &ms)], None);
        opaques.push(cmd.opaque);
        client.send(&cmd).await;
    }
    let mut seen = Vec::new();
    for _ in 0..count {
        let resp = tokio::time::timeout(Duration::from_secs(20), client.recv())
            .await
            .expect("answered in time")
            .expect("a response");
        assert_eq!(resp.remark.as_deref(), Some("waited"));
        seen.push(resp.opaque);
    }
    seen.sort_unstable();
    opaques.sort_unstable();
    assert_eq!(seen, opaques, "every request answered once");
}
