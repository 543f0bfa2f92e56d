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

const BUDGET: usize = 2 * 1024 * 1024;

/// The first `records` full TLS records of a ClientHello that claims 60 000 bytes: rustls
/// must hold all of them while it waits for the rest.
fn partial_client_hello(records: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..records {
        out.extend_from_slice(&[0x16, 0x03, 0x01]);
        out.extend_from_slice(&16_384u16.to_be_bytes());
        let mut payload = vec![0u8; 16_384];
        if i == 0 {
            payload[0] = 1; // client_hello
            payload[1..4].copy_from_slice(&60_000u32.to_be_bytes()[1..]);
            payload[4..6].copy_from_slice(&[3, 3]);
        }
        out.extend_from_slice(&payload);
    }
    out
}

#[tokio::test]
async fn stalled_client_hellos_are_closed_by_the_buffer_budget() {
    // A handshake timeout far beyond the test: whatever closes a handshake here is the budget.
    let server = TestServer::with_properties(&format!(
        "frameMaxLength=1048576\nmaxQueuedResponseBytes=1048576\nmaxBufferedBytes={BUDGET}\n\
         handshakeTimeoutMillis=600000\n"
    ))
    .await;
    let hello = partial_client_hello(3);
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
