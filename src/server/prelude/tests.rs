//! The prelude against real loopback sockets and a real rustls client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[path = "../../../tests/support/client_hello.rs"]
mod client_hello;

use super::proxy::{v1_header, v2_header};
use super::*;
use crate::metrics::PreludeOutcome;
use crate::server::budget::Budget;
use crate::state::ConnId;
use crate::tls::TlsSettings;
use client_hello::partial_client_hello;

fn test_mode_tls() -> ServerTls {
    let base = TlsSettings {
        config_file: "/nonexistent/tls.properties".into(),
        ..TlsSettings::default()
    };
    ServerTls::load(&base).unwrap()
}

fn prelude(mode: ServerMode, proxy_from: &str) -> Prelude {
    Prelude::new(
        mode,
        Some(test_mode_tls()),
        AllowList::parse(proxy_from).unwrap(),
        Duration::from_secs(5),
    )
}

/// A share of a budget too large to close anything.
fn holding(peer: SocketAddr) -> Holding {
    Budget::new(1 << 30).open(ConnId(1), peer)
}

/// Accepts one connection from a client that sends `bytes` (then keeps the socket open) and
/// runs the prelude on it.
async fn run_with(
    prelude: &Prelude,
    bytes: Vec<u8>,
    metrics: &Metrics,
) -> (Result<(Transport, SocketAddr), PreludeError>, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    client.write_all(&bytes).await.unwrap();
    let (stream, peer) = listener.accept().await.unwrap();
    let holding = holding(peer);
    (
        prelude.run(stream, peer, None, &holding, metrics).await,
        client,
    )
}

async fn read_available(stream: &mut (impl AsyncRead + Unpin), len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    stream.read_exact(&mut buf).await.unwrap();
    buf
}

const FRAME: &[u8] = &[0, 0, 0, 8, 0, 0, 0, 4, b'{', b'}', b' ', b' '];

#[tokio::test]
async fn plaintext_reaches_the_frame_layer_untouched() {
    let m = Metrics::default();
    let p = prelude(ServerMode::Permissive, "*");
    let (result, client) = run_with(&p, FRAME.to_vec(), &m).await;
    let (Transport::Plain(mut stream), addr) = result.unwrap() else {
        panic!("expected plaintext")
    };
    assert_eq!(addr, client.local_addr().unwrap());
    assert_eq!(read_available(&mut stream, FRAME.len()).await, FRAME);
}

#[tokio::test]
async fn proxy_headers_are_stripped_and_give_the_client_address() {
    let m = Metrics::default();
    let p = prelude(ServerMode::Permissive, "127.0.0.1");
    let source: SocketAddr = "203.0.113.9:4242".parse().unwrap();
    let dest: SocketAddr = "10.0.0.1:9876".parse().unwrap();
    for header in [
        v1_header(source, dest),
        v2_header(Some((source, dest)), &[(0x04, b"vpce-1"), (0x05, &[0xff])]),
    ] {
        let mut bytes = header.clone();
        bytes.extend_from_slice(FRAME);
        let (result, _client) = run_with(&p, bytes, &m).await;
        let (Transport::Plain(mut stream), addr) = result.unwrap() else {
            panic!("expected plaintext")
        };
        assert_eq!(addr, source);
        assert_eq!(read_available(&mut stream, FRAME.len()).await, FRAME);
    }
    assert_eq!(m.preludes(PreludeOutcome::ProxyHeader), 2);
    // LOCAL (a health check) keeps the socket's address.
    let mut bytes = v2_header(None, &[]);
    bytes.extend_from_slice(FRAME);
    let (result, client) = run_with(&p, bytes, &m).await;
    assert_eq!(result.unwrap().1, client.local_addr().unwrap());
}

#[tokio::test]
async fn a_header_split_across_segments_is_read_whole() {
    let p = prelude(ServerMode::Permissive, "*");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    client.set_nodelay(true).unwrap();
    let header = v1_header(
        "198.51.100.1:1".parse().unwrap(),
        "10.0.0.1:2".parse().unwrap(),
    );
    let (stream, peer) = listener.accept().await.unwrap();
    let server = tokio::spawn({
        let p = p.clone();
        async move {
            let holding = holding(peer);
            p.run(stream, peer, None, &holding, &Metrics::default())
                .await
        }
    });
    for part in [&header[..3], &header[3..20], &header[20..]] {
        client.write_all(part).await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    client.write_all(FRAME).await.unwrap();
    let (Transport::Plain(mut stream), addr) = server.await.unwrap().unwrap() else {
        panic!("expected plaintext")
    };
    assert_eq!(addr, "198.51.100.1:1".parse().unwrap());
    assert_eq!(read_available(&mut stream, FRAME.len()).await, FRAME);
}

/// A TLS client (test-mode settings: any certificate) that sends `prefix` in clear first.
async fn tls_client(addr: SocketAddr, prefix: Vec<u8>) -> std::io::Result<Vec<u8>> {
    let config = crate::tls::client::client_config(&TlsSettings::default()).unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let mut tcp = TcpStream::connect(addr).await?;
    tcp.write_all(&prefix).await?;
    let mut tls = connector
        .connect(crate::tls::client::server_name("127.0.0.1:1"), tcp)
        .await?;
    tls.write_all(FRAME).await?;
    tls.flush().await?;
    let mut echo = vec![0u8; FRAME.len()];
    tls.read_exact(&mut echo).await?;
    Ok(echo)
}

async fn tls_round_trip(p: &Prelude, prefix: Vec<u8>, m: &Metrics) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let client = tokio::spawn(tls_client(listener.local_addr().unwrap(), prefix));
    let (stream, peer) = listener.accept().await.unwrap();
    let holding = holding(peer);
    let (Transport::Tls(mut tls), addr) = p.run(stream, peer, None, &holding, m).await.unwrap()
    else {
        panic!("expected TLS")
    };
    let mut frame = vec![0u8; FRAME.len()];
    tls.read_exact(&mut frame).await.unwrap();
    tls.write_all(&frame).await.unwrap();
    tls.flush().await.unwrap();
    assert_eq!(client.await.unwrap().unwrap(), FRAME);
    addr
}

#[tokio::test]
async fn tls_is_served_in_permissive_and_enforcing_mode_also_after_a_proxy_header() {
    for mode in [ServerMode::Permissive, ServerMode::Enforcing] {
        let m = Metrics::default();
        let p = prelude(mode, "*");
        tls_round_trip(&p, Vec::new(), &m).await;
        let source: SocketAddr = "[2001:db8::7]:99".parse().unwrap();
        let header = v2_header(Some((source, "[2001:db8::1]:9876".parse().unwrap())), &[]);
        assert_eq!(tls_round_trip(&p, header, &m).await, source);
        assert_eq!(m.preludes(PreludeOutcome::TlsHandshake), 2);
        assert_eq!(m.preludes(PreludeOutcome::ProxyHeader), 1);
    }
}

#[tokio::test]
async fn modes_refuse_what_java_refuses() {
    let m = Metrics::default();
    let disabled = prelude(ServerMode::Disabled, "*");
    assert!(disabled.tls().is_none(), "no material in disabled mode");
    let hello = vec![0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5];
    let (result, _c) = run_with(&disabled, hello, &m).await;
    assert!(matches!(result, Err(PreludeError::TlsRefused)));
    let (result, _c) = run_with(&disabled, FRAME.to_vec(), &m).await;
    assert!(matches!(result, Ok((Transport::Plain(_), _))));
    let enforcing = prelude(ServerMode::Enforcing, "*");
    let (result, _c) = run_with(&enforcing, FRAME.to_vec(), &m).await;
    assert!(matches!(result, Err(PreludeError::PlainRefused)));
    let mut proxied = v1_header("1.2.3.4:5".parse().unwrap(), "5.6.7.8:9".parse().unwrap());
    proxied.extend_from_slice(FRAME);
    let (result, _c) = run_with(&enforcing, proxied, &m).await;
    assert!(matches!(result, Err(PreludeError::PlainRefused)));
    assert_eq!(m.preludes(PreludeOutcome::TlsRefused), 1);
    assert_eq!(m.preludes(PreludeOutcome::PlainRefused), 2);
}

#[tokio::test]
async fn proxy_headers_are_refused_from_peers_not_allowed_and_when_malformed() {
    let m = Metrics::default();
    let header = v1_header("1.2.3.4:5".parse().unwrap(), "5.6.7.8:9".parse().unwrap());
    for allowed in ["", "10.0.0.*"] {
        let p = prelude(ServerMode::Permissive, allowed);
        let (result, _c) = run_with(&p, header.clone(), &m).await;
        assert!(
            matches!(result, Err(PreludeError::ProxyNotAllowed)),
            "{allowed:?}"
        );
        // Without a header the same peer is served.
        let (result, _c) = run_with(&p, FRAME.to_vec(), &m).await;
        assert!(result.is_ok());
    }
    let p = prelude(ServerMode::Permissive, "*");
    for bad in [
        b"PROXY TCP4 1.2.3.4 nonsense\r\n".to_vec(),
        format!("PROXY TCP4 {}\r\n", "9".repeat(150)).into_bytes(),
        {
            let mut v2 = v2_header(None, &[]);
            v2[12] = 0x2f; // command 15
            v2
        },
    ] {
        let (result, _c) = run_with(&p, bad.clone(), &m).await;
        assert!(
            matches!(result, Err(PreludeError::Proxy(_))),
            "{:?}: {result:?}",
            String::from_utf8_lossy(&bad),
            result = result.map(|(_, a)| a)
        );
    }
    assert_eq!(m.preludes(PreludeOutcome::ProxyMalformed), 3);
    assert_eq!(m.preludes(PreludeOutcome::ProxyNotAllowed), 2);
}

#[tokio::test]
async fn garbage_after_the_tls_byte_fails_the_handshake() {
    let m = Metrics::default();
    let p = prelude(ServerMode::Permissive, "*");
    let mut garbage = vec![0x16, 0x03, 0x01, 0x00, 0x20];
    garbage.extend_from_slice(&[0xAB; 32]);
    let (result, _c) = run_with(&p, garbage, &m).await;
    assert!(matches!(result, Err(PreludeError::Handshake(_))));
    assert_eq!(m.preludes(PreludeOutcome::TlsError), 1);
}

#[tokio::test(start_paused = true)]
async fn stalled_handshakes_time_out() {
    let m = Metrics::default();
    let p = prelude(ServerMode::Permissive, "*");
    for stalled in [
        vec![0x16, 0x03, 0x01, 0x02, 0x00, 0x01],
        b"PROXY TCP4 1.2.3.4".to_vec(),
        b"PRO".to_vec(),
        proxy::V2_SIGNATURE[..13.min(proxy::V2_SIGNATURE.len())].to_vec(),
        {
            let mut v2 = v2_header(None, &[(4, b"abc")]);
            v2.truncate(17);
            v2
        },
    ] {
        let (result, _c) = run_with(&p, stalled.clone(), &m).await;
        assert!(
            matches!(result, Err(PreludeError::Timeout(_))),
            "{stalled:?}: {:?}",
            result.map(|(_, a)| a)
        );
    }
    assert_eq!(m.preludes(PreludeOutcome::Timeout), 5);
}

#[tokio::test(start_paused = true)]
async fn a_silent_connection_is_only_idle() {
    let m = Metrics::default();
    let p = prelude(ServerMode::Permissive, "*");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let _client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (stream, peer) = listener.accept().await.unwrap();
    let result = p
        .run(
            stream,
            peer,
            Some(Duration::from_secs(120)),
            &holding(peer),
            &m,
        )
        .await;
    assert!(matches!(result, Err(PreludeError::Idle)));
    assert_eq!(m.preludes(PreludeOutcome::Timeout), 0);
}

/// What a prelude run on a task of its own gives back.
type Run = tokio::task::JoinHandle<Result<(Transport, SocketAddr), PreludeError>>;

/// Spawns the prelude of `stream` and counts how often its task is polled: each poll is a
/// wake-up, so the count is the work a connection that sends nothing more costs.
fn counted_run(
    p: &Prelude,
    stream: TcpStream,
    peer: SocketAddr,
) -> (Run, Arc<std::sync::atomic::AtomicUsize>) {
    let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = polls.clone();
    let p = p.clone();
    let mut run = Box::pin(async move {
        let holding = holding(peer);
        p.run(stream, peer, None, &holding, &Metrics::default())
            .await
    });
    let task = tokio::spawn(std::future::poll_fn(move |cx| {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        run.as_mut().poll(cx)
    }));
    (task, polls)
}

#[tokio::test(start_paused = true)]
async fn a_strict_prefix_of_a_signature_is_woken_only_by_new_bytes() {
    let p = prelude(ServerMode::Permissive, "*");
    let source: SocketAddr = "203.0.113.9:4242".parse().unwrap();
    let dest: SocketAddr = "10.0.0.1:9876".parse().unwrap();
    for header in [
        v1_header(source, dest),
        v2_header(Some((source, dest)), &[]),
    ] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        // `PROX`, or half the v2 signature: a strict prefix, so the prelude must wait.
        let cut = if header[0] == b'P' { 4 } else { 6 };
        client.write_all(&header[..cut]).await.unwrap();
        let (stream, peer) = listener.accept().await.unwrap();
        let (task, polls) = counted_run(&p, stream, peer);
        // Under the 5 s handshake timeout, with no byte arriving.
        tokio::time::sleep(Duration::from_secs(4)).await;
        let idle_polls = polls.load(std::sync::atomic::Ordering::Relaxed);
        assert!(
            idle_polls <= 3,
            "polled {idle_polls} times while no byte arrived"
        );
        client.write_all(&header[cut..]).await.unwrap();
        client.write_all(FRAME).await.unwrap();
        let (Transport::Plain(mut stream), addr) = task.await.unwrap().unwrap() else {
            panic!("expected plaintext")
        };
        assert_eq!(addr, source);
        assert_eq!(read_available(&mut stream, FRAME.len()).await, FRAME);
    }
}

#[tokio::test(start_paused = true)]
async fn stalled_handshakes_are_counted_in_the_budget_which_closes_them() {
    let p = prelude(ServerMode::Permissive, "*");
    let hello = partial_client_hello();
    // Room for one stalled handshake, not two.
    let budget = Budget::new(handshake_cost(hello.len()) + 8 * 1024);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut clients = Vec::new();
    let mut runs = Vec::new();
    for id in 1..=2 {
        let mut client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        client.write_all(&hello).await.unwrap();
        clients.push(client);
        let (stream, peer) = listener.accept().await.unwrap();
        let holding = budget.open(ConnId(id), peer);
        let p = p.clone();
        runs.push(tokio::spawn(async move {
            let result = p
                .run(stream, peer, None, &holding, &Metrics::default())
                .await;
            (result.map(|(_, addr)| addr), holding.is_closed())
        }));
        // Until rustls has read what was sent: the first handshake is counted whole.
        if id == 1 {
            let counted = async {
                while budget.used() < handshake_cost(hello.len()) {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            };
            tokio::time::timeout(Duration::from_secs(1), counted)
                .await
                .expect("the stalled handshake is counted in the budget");
        }
    }
    // The second handshake takes the total past the budget: the heavier of the two (both
    // hold as much) is closed at once, long before the 5 s handshake timeout.
    let [mut a, mut b] = <[_; 2]>::try_from(runs).unwrap();
    let first = tokio::time::timeout(Duration::from_secs(1), async {
        tokio::select! {
            done = &mut a => done.unwrap(),
            done = &mut b => done.unwrap(),
        }
    })
    .await
    .expect("a handshake closed by the budget");
    assert!(
        matches!(first, (Err(PreludeError::Evicted), true)),
        "{first:?}"
    );
    assert!(budget.used() <= handshake_cost(hello.len()) + 8 * 1024);
    assert!(
        budget.used() >= handshake_cost(hello.len()),
        "the other is still counted"
    );
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_closes_after_part_of_a_signature_is_seen_at_once() {
    let m = Metrics::default();
    let p = prelude(ServerMode::Permissive, "*");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    client.write_all(b"PRO").await.unwrap();
    client.shutdown().await.unwrap();
    let (stream, peer) = listener.accept().await.unwrap();
    let start = Instant::now();
    let result = p.run(stream, peer, None, &holding(peer), &m).await;
    assert!(
        matches!(result, Err(PreludeError::Eof)),
        "{:?}",
        result.map(|(_, a)| a)
    );
    // On the paused clock: not at the handshake deadline, where peeking would have seen it.
    assert!(start.elapsed() < Duration::from_secs(1));
}
