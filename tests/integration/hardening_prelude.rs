//! The connection prelude under attack: TLS handshakes that stall with a large ClientHello
//! are counted in the buffer budget (`maxBufferedBytes`), so the budget closes them long
//! before their handshake timeout, while everyone else keeps being served.
//!
//! The memory the attack costs the real binary is the abuse tool's business
//! (`examples/abuse.rs`, scenario `hellos`); this checks the mechanism.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::harness::{TestClient, TestServer, route, tls_client_config};

#[path = "../support/client_hello.rs"]
mod client_hello;
use client_hello::partial_client_hello;

const BUDGET: usize = 2 * 1024 * 1024;

#[tokio::test]
async fn stalled_client_hellos_are_closed_by_the_buffer_budget() {
    // A handshake timeout far beyond the test: whatever closes a handshake here is the budget.
    let server = TestServer::with_properties(&format!(
        "frameMaxLength=1048576\nmaxQueuedResponseBytes=1048576\nmaxBufferedBytes={BUDGET}\n\
         handshakeTimeoutMillis=600000\n"
    ))
    .await;
    let hello = partial_client_hello();
    let attackers = 80;
    let mut waits = JoinSet::new();
    for _ in 0..attackers {
        let mut s = TcpStream::connect(server.addr).await.unwrap();
        s.write_all(&hello).await.unwrap();
        waits.spawn(async move {
            let mut byte = [0u8; 1];
            // Closed (EOF or reset) within 3 s, or still held.
            let closed = matches!(
                tokio::time::timeout(Duration::from_secs(3), s.read(&mut byte)).await,
                Ok(Ok(0) | Err(_))
            );
            (closed, s)
        });
    }
    let mut held = Vec::new();
    let mut closed = 0;
    while let Some(done) = waits.join_next().await {
        let (was_closed, s) = done.unwrap();
        closed += usize::from(was_closed);
        held.push(s);
    }
    // The budget holds at least the bytes each handshake has buffered.
    let most_open = BUDGET / hello.len();
    assert!(
        attackers - closed <= most_open,
        "{closed} of {attackers} stalled handshakes closed; at most {most_open} fit the budget"
    );
    // Everyone else is served meanwhile, in clear and over TLS.
    let mut plain = server.client().await;
    assert_eq!(route(&mut plain, "NoSuchTopic").await.code, 17);
    let mut tls = TestClient::connect_tls(server.addr, tls_client_config(), b"")
        .await
        .unwrap();
    assert_eq!(route(&mut tls, "NoSuchTopic").await.code, 17);
    drop(held);
}
