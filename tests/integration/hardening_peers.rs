//! Hostile peers (`namesrvPeers`): an answer larger than `peerMaxAnswerBytes` is refused from
//! its length before it is read; a peer that trickles bytes fails its own check and does not
//! hold up the others'; peers that fail are retried with a back-off, so a long list of bad
//! addresses at a short interval opens few connections; and the connections close when the
//! list empties.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use namesrv::state::peering::{Difference, PeerReport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::harness::{TestServer, fake_peer, register_broker_a};

use crate::peers::{PROPS, report_until, set_peers};

fn unreachable_why(report: &PeerReport, peer: SocketAddr) -> Option<String> {
    report
        .peers
        .iter()
        .find(|p| p.peer == peer.to_string())
        .and_then(|p| p.unreachable.clone())
}

/// The properties of a server checking `peers` from the start.
fn checking(props: &str, peers: &[SocketAddr]) -> String {
    let list: Vec<String> = peers.iter().map(ToString::to_string).collect();
    format!("{props}\nnamesrvPeers={}", list.join(";"))
}

/// A server checking `peers`, with one broker registered (that its peers lack).
async fn server_with_a_broker(peers: &[SocketAddr]) -> (TestServer, crate::harness::TestClient) {
    let a = TestServer::with_properties(&checking(PROPS, peers)).await;
    let mut broker = a.client().await;
    register_broker_a(&mut broker).await;
    (a, broker)
}

/// A peer that answers every request with a frame announcing `len` bytes and then streams
/// them as fast as the reader takes them. Returns its address and the most bytes it got
/// written on any one connection.
async fn flooding_peer(len: usize) -> (SocketAddr, Arc<AtomicU64>) {
    let most = Arc::new(AtomicU64::new(0));
    let record = most.clone();
    let addr = fake_peer(move |mut s| {
        let most = record.clone();
        async move {
            let mut request = [0u8; 512];
            if s.read(&mut request).await.unwrap_or(0) == 0 {
                return;
            }
            let mut written = 0u64;
            let chunk = vec![0u8; 64 * 1024];
            let mut left = len;
            if s.write_all(&(len as u32).to_be_bytes()).await.is_err() {
                return;
            }
            while left > 0 {
                let n = left.min(chunk.len());
                if s.write_all(&chunk[..n]).await.is_err() {
                    break;
                }
                written += n as u64;
                most.fetch_max(written, Ordering::Relaxed);
                left -= n;
            }
        }
    })
    .await;
    (addr, most)
}

#[tokio::test]
async fn an_answer_over_the_cap_is_refused_before_it_is_read() {
    // 64 MiB: within the admin client's frame limit, far over peerMaxAnswerBytes' default.
    let (peer, most) = flooding_peer(64 << 20).await;
    let (a, _broker) = server_with_a_broker(&[peer]).await;
    let report = report_until(&a, |r| unreachable_why(r, peer).is_some()).await;
    let why = unreachable_why(&report, peer).unwrap();
    assert!(why.contains("exceeds the limit"), "{why}");
    // What the peer got written is what the socket buffers hold, not the answer.
    let written = most.load(Ordering::Relaxed);
    assert!(
        written < 24 << 20,
        "{written} bytes of the answer were taken"
    );
}

/// A peer that answers every request with a frame announcing 1 000 000 bytes, then sends one
/// byte every 50 ms (each read succeeds well within any per-read timeout).
async fn trickling_peer() -> SocketAddr {
    fake_peer(|mut s| async move {
        let mut request = [0u8; 512];
        if s.read(&mut request).await.unwrap_or(0) == 0 {
            return;
        }
        if s.write_all(&1_000_000u32.to_be_bytes()).await.is_err() {
            return;
        }
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if s.write_all(b"x").await.is_err() {
                return;
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_trickling_peer_fails_its_check_and_the_others_go_on() {
    let b = TestServer::with_properties(PROPS).await;
    let slow = trickling_peer().await;
    let (a, _broker) = server_with_a_broker(&[b.addr, slow]).await;
    let report = report_until(&a, |r| {
        unreachable_why(r, slow).is_some()
            && r.divergent
                .iter()
                .any(|d| d.peer == b.addr.to_string() && d.difference == Difference::Missing)
    })
    .await;
    let why = unreachable_why(&report, slow).unwrap();
    assert!(why.contains("no answer within"), "{why}");
    assert!(unreachable_why(&report, b.addr).is_none());
}

/// `n` listeners that count the connections they accept and close each at once.
async fn closing_peers(n: usize) -> (Vec<SocketAddr>, Arc<AtomicUsize>) {
    let accepted = Arc::new(AtomicUsize::new(0));
    let mut addrs = Vec::new();
    for _ in 0..n {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        addrs.push(listener.local_addr().unwrap());
        let accepted = accepted.clone();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                accepted.fetch_add(1, Ordering::Relaxed);
                drop(s);
            }
        });
    }
    (addrs, accepted)
}

#[tokio::test]
async fn many_failing_peers_at_a_short_interval_open_few_connections() {
    let (peers, accepted) = closing_peers(50).await;
    let props = "peerCheckIntervalMillis=100\nserverChannelMaxIdleTimeSeconds=0";
    let a = TestServer::with_properties(&checking(props, &peers)).await;
    report_until(&a, |r| {
        r.peers.len() == 50 && r.peers.iter().all(|p| p.unreachable.is_some())
    })
    .await;
    let first = accepted.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let opened = accepted.load(Ordering::Relaxed) - first;
    // Asked every 100 ms, they would get 1 500 connections in these 3 s.
    assert!(
        opened <= 200,
        "{opened} connections in 3 s to 50 failing peers"
    );
    let report = a.state.peer_report();
    assert!(report.peers.iter().all(|p| p.unreachable.is_some()));
}

/// A TCP relay to `target` that counts the connections open through it.
async fn counting_relay(target: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let open = Arc::new(AtomicUsize::new(0));
    let count = open.clone();
    let addr = fake_peer(move |mut inbound| {
        let open = count.clone();
        open.fetch_add(1, Ordering::Relaxed);
        async move {
            if let Ok(mut outbound) = TcpStream::connect(target).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
            open.fetch_sub(1, Ordering::Relaxed);
        }
    })
    .await;
    (addr, open)
}

#[tokio::test]
async fn the_connections_close_when_the_list_empties() {
    let b = TestServer::with_properties(PROPS).await;
    let (relay, open) = counting_relay(b.addr).await;
    let a = TestServer::with_properties(&checking(PROPS, &[relay])).await;
    report_until(&a, |r| {
        r.peers.len() == 1 && r.peers[0].unreachable.is_none()
    })
    .await;
    assert_eq!(open.load(Ordering::Relaxed), 1, "one connection, reused");
    set_peers(&a, &[]).await;
    for _ in 0..250 {
        if open.load(Ordering::Relaxed) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        open.load(Ordering::Relaxed),
        0,
        "the peer connection stays open"
    );
    report_until(&a, |r| r.peers.is_empty()).await;
}
