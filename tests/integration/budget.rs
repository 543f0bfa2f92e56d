//! The server-wide buffer budget (`maxBufferedBytes`), against the real binary, whose resident
//! memory is sampled from `/proc` throughout:
//!
//! - 1 000 connections that pipeline KV-list requests and never read their answers: the
//!   server's RSS stays within the budget plus 64 MB, a well-behaved client keeps being
//!   answered, and once the attackers are gone the memory is given back (measured against a
//!   baseline taken after a first round, which pages in code and arenas once);
//! - connections that each send most of a 15 MB frame and stop: the same bound holds.
//!
//! Speed is the load test's business (`examples/abuse.rs`); these check memory and service.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::code::{request, response};
use namesrv::protocol::{RemotingCommand, SerializeType, encode_frame};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

use crate::harness::process::{Server, rss_bytes};
use crate::harness::{TestClient, put_kv, route};

const MIB: u64 = 1024 * 1024;
const BUDGET: u64 = 32 * MIB;
/// How far above the budget the process may grow before the test fails.
const SLACK: u64 = 64 * MIB;

/// A server with a small budget, and small socket buffers so that unread answers stay in the
/// server rather than in the kernel.
fn start(dir: &tempfile::TempDir) -> Server {
    let conf = dir.path().join("namesrv.properties");
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    std::fs::write(
        &conf,
        format!(
            "bindAddress=127.0.0.1\nlistenPort=0\nkvConfigPath={kv}\nconfigStorePath={conf}\n\
             maxBufferedBytes={BUDGET}\nserverSocketSndBufSize=4096\nmaxConnections=5000\n",
            kv = dir.path().join("kv.json").display(),
            conf = conf.display(),
        ),
    )
    .unwrap();
    Server::start_up(&conf, &dir.path().join("home"))
}

/// Samples the RSS of `pid` until `stop`, keeping the maximum.
fn sample_rss(pid: u32, stop: Arc<AtomicBool>, max: Arc<AtomicU64>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            if let Some(rss) = rss_bytes(pid) {
                max.fetch_max(rss, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

/// A connection whose receive buffer is small, so that the server's answers back up at once.
async fn connect_small(addr: std::net::SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Route lookups until `stop`: every one must be answered. Returns how many were.
async fn well_behaved(mut client: TestClient, stop: Arc<AtomicBool>) -> usize {
    let mut answered = 0;
    while !stop.load(Ordering::Relaxed) {
        assert_eq!(
            route(&mut client, "NoSuchTopic").await.code,
            response::TOPIC_NOT_EXIST
        );
        answered += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    answered
}

/// Settles the RSS after load: the lowest of the samples over 2.5 s (the server trims its
/// allocator once a second).
async fn settled_rss(pid: u32) -> u64 {
    let mut low = u64::MAX;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        low = low.min(rss_bytes(pid).expect("the server is running"));
    }
    low
}

/// The server's RSS sampled, and a well-behaved client's lookups, around an attack.
struct Watch {
    pid: u32,
    baseline: u64,
    stop: Arc<AtomicBool>,
    max: Arc<AtomicU64>,
    sampler: std::thread::JoinHandle<()>,
    lookups: tokio::task::JoinHandle<usize>,
}

impl Watch {
    async fn start(server: &Server, client: TestClient) -> Watch {
        let pid = server.pid();
        let baseline = settled_rss(pid).await;
        let stop = Arc::new(AtomicBool::new(false));
        let max = Arc::new(AtomicU64::new(0));
        Watch {
            pid,
            baseline,
            sampler: sample_rss(pid, stop.clone(), max.clone()),
            lookups: tokio::spawn(well_behaved(client, stop.clone())),
            stop,
            max,
        }
    }

    /// Ends the attack by dropping `attackers`, then checks the peak, that the lookups were
    /// answered, and that the memory was given back.
    async fn check<T>(self, attackers: T) {
        let during = self.max.load(Ordering::Relaxed);
        drop(attackers);
        let after = settled_rss(self.pid).await;
        self.stop.store(true, Ordering::Relaxed);
        self.sampler.join().unwrap();
        let answered = self.lookups.await.unwrap();
        let baseline = self.baseline;
        eprintln!(
            "RSS: baseline {} MiB, peak {} MiB under attack, {} MiB after; {answered} lookups answered",
            baseline / MIB,
            during / MIB,
            after / MIB
        );
        assert!(
            during <= BUDGET + SLACK,
            "RSS reached {} MiB; budget {} MiB + {} MiB",
            during / MIB,
            BUDGET / MIB,
            SLACK / MIB
        );
        assert!(answered > 0);
        assert!(
            after <= baseline + BUDGET / 2,
            "memory was not given back: {} MiB after the attack, {} MiB before",
            after / MIB,
            baseline / MIB
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_that_never_read_stay_within_the_budget() {
    const ATTACKERS: usize = 1000;
    const PIPELINED: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir);
    let addr = server.addr();
    // A namespace whose listing is about 128 KiB.
    let mut admin = TestClient::connect(addr).await;
    let value = "v".repeat(64 * 1024);
    for key in ["a", "b"] {
        let put = put_kv(&mut admin, "big", key, &value).await;
        assert_eq!(put.code, response::SUCCESS, "{:?}", put.remark);
    }
    let mut wire = BytesMut::new();
    for opaque in 0..PIPELINED as i32 {
        let mut cmd = RemotingCommand::request(request::GET_KVLIST_BY_NAMESPACE, opaque);
        cmd.ext_fields = Some([("namespace", "big")].into_iter().collect());
        encode_frame(&cmd, SerializeType::Json, &mut wire);
    }
    let attack = || async {
        let mut attackers = Vec::with_capacity(ATTACKERS);
        for _ in 0..ATTACKERS {
            let mut stream = connect_small(addr).await;
            // Some are closed by the server before they finish sending: that is the point.
            let _ = stream.write_all(&wire).await;
            attackers.push(stream);
        }
        // Let the server work through what it was sent.
        tokio::time::sleep(Duration::from_secs(3)).await;
        attackers
    };
    // A first round pages in the code and the allocator arenas these paths use for the first
    // time (about 10 MiB that stays resident, and the same after any number of rounds): the
    // baseline is taken after it, so that what is measured is what an attack leaves behind.
    drop(attack().await);
    let watch = Watch::start(&server, admin).await;
    watch.check(attack().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_partial_frames_stay_within_the_budget() {
    const ATTACKERS: usize = 40;
    const FRAME: usize = 15 * 1024 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let server = start(&dir);
    let addr = server.addr();
    let watch = Watch::start(&server, TestClient::connect(addr).await).await;
    // A length prefix announcing a 15 MB frame, then all of it but the last byte.
    let mut partial = vec![b'x'; FRAME - 1];
    partial[..4].copy_from_slice(&(FRAME as i32 - 4).to_be_bytes());
    partial[4..8].copy_from_slice(&16u32.to_be_bytes());
    let partial: Arc<[u8]> = partial.into();
    let senders: Vec<_> = (0..ATTACKERS)
        .map(|_| {
            let partial = partial.clone();
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(addr).await.unwrap();
                // Closed by the server part-way for most of them.
                let _ = stream.write_all(&partial).await;
                stream
            })
        })
        .collect();
    let mut streams = Vec::new();
    for s in senders {
        streams.push(s.await.unwrap());
    }
    watch.check(streams).await;
}
