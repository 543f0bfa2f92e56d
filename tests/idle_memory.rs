//! What an idle connection costs the server: live heap bytes, counted by a global allocator.
//!
//! Thousands of clients keep a connection to the name server and ask for routes only every
//! 30 s, so a connection that is waiting for its next request must not keep its read or write
//! buffer. This counts heap bytes, not time, so it is deterministic on a noisy machine.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::time::Duration;

use bytes::BytesMut;
use namesrv::auth::Gate;
use namesrv::config::{Config, Env};
use namesrv::kv::KvStore;
use namesrv::protocol::{RemotingCommand, SerializeType, encode_frame};
use namesrv::server::prelude::Prelude;
use namesrv::server::{self, Handles, Server, ServerConfig};
use namesrv::state::Namesrv;
use namesrv::tls::TlsSettings;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as isize - layout.size() as isize, Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const CONNECTIONS: usize = 400;
/// Heap bytes one served, now idle connection may keep: its task, socket registration and
/// bookkeeping. A kept 4 KiB read buffer alone would exceed it.
const MAX_BYTES_PER_IDLE_CONNECTION: isize = 3 * 1024;

/// Live heap bytes once they stop changing (the server finishes each connection's request
/// after the client has read the response).
async fn settled_live() -> isize {
    let mut last = LIVE.load(Relaxed);
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = LIVE.load(Relaxed);
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// A server in the default TLS mode (permissive, test-mode certificate); returns its address
/// and a handle that stops it.
async fn start_server(
    home: &std::path::Path,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let env = Env {
        home: home.display().to_string(),
        rocketmq_home: None,
    };
    let config = Config::load(None, &env).unwrap();
    let kv = KvStore::open(std::path::PathBuf::from(&config.settings.kv_config_path)).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server_config = ServerConfig::from_settings(&config.settings, SerializeType::Json);
    let tls = TlsSettings {
        config_file: home.join("absent-tls.properties"),
        ..TlsSettings::default()
    };
    let prelude = Prelude::load(&tls, &config.settings).unwrap();
    let server_config = Server::new(server_config, Handles::new(Gate::off(), prelude));
    let state = Namesrv::new(config, kv);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server::run(listener, state, server_config, async {
        let _ = stopped.await;
    }));
    (addr, stop, server)
}

/// GET_NAMESRV_CONFIG: a response of a couple of kilobytes, so a kept write buffer shows.
fn config_request() -> Vec<u8> {
    let mut request = BytesMut::new();
    encode_frame(
        &RemotingCommand::request(319, 1),
        SerializeType::Json,
        &mut request,
    );
    request.to_vec()
}

/// Sends one request on `stream` and reads its answer.
fn ask(stream: &mut impl ReadWrite, request: &[u8]) {
    stream.write_all(request).unwrap();
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).unwrap();
    let mut rest = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut rest).unwrap();
    assert!(rest.len() > 1024, "response of {} bytes", rest.len());
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// Live heap bytes each of `CONNECTIONS` connections made by `open` keeps once idle.
async fn per_idle_connection<S: Send + 'static>(
    open: impl Fn() -> S + Clone + Send + 'static,
) -> isize {
    // One connection first, so one-time allocations (lazily built tables, thread-locals)
    // are not charged to the others.
    let first = tokio::task::spawn_blocking(open.clone()).await.unwrap();
    let before = settled_live().await;
    let streams =
        tokio::task::spawn_blocking(move || (0..CONNECTIONS).map(|_| open()).collect::<Vec<_>>())
            .await
            .unwrap();
    let after = settled_live().await;
    drop((first, streams));
    (after - before) / CONNECTIONS as isize
}

/// Heap bytes an idle TLS connection may keep: the TLS session (keys, state, rustls' record
/// buffer, about 8 KiB) on top of the plaintext connection's; our own read and write buffers
/// are freed as for plaintext.
const MAX_BYTES_PER_IDLE_TLS_CONNECTION: isize = 16 * 1024;

// One test, so that nothing else allocates while it counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_keeps_no_buffers_plain_or_tls() {
    let home = tempfile::tempdir().unwrap();
    let (addr, stop, server) = start_server(home.path()).await;
    let request = config_request();
    let plain = per_idle_connection({
        let request = request.clone();
        move || {
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            ask(&mut stream, &request);
            stream
        }
    })
    .await;
    println!("{plain} heap bytes per idle connection");
    assert!(
        plain <= MAX_BYTES_PER_IDLE_CONNECTION,
        "an idle connection keeps {plain} heap bytes (limit {MAX_BYTES_PER_IDLE_CONNECTION})"
    );

    let client =
        std::sync::Arc::new(namesrv::tls::client::client_config(&TlsSettings::default()).unwrap());
    let tls = per_idle_connection(move || {
        let tcp = std::net::TcpStream::connect(addr).unwrap();
        let name = namesrv::tls::client::server_name(&addr.to_string());
        let session = rustls::ClientConnection::new(client.clone(), name).unwrap();
        let mut stream = rustls::StreamOwned::new(session, tcp);
        ask(&mut stream, &request);
        // Only the server's heap counts: free the client's session, keep its socket open.
        stream.sock
    })
    .await;
    println!("{tls} heap bytes per idle TLS connection");
    assert!(
        tls <= MAX_BYTES_PER_IDLE_TLS_CONNECTION,
        "an idle TLS connection keeps {tls} heap bytes (limit {MAX_BYTES_PER_IDLE_TLS_CONNECTION})"
    );
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}
