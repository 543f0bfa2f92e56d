//! What an idle connection costs the server: live heap bytes, counted by a global allocator.
//!
//! Thousands of clients keep a connection to the name server and ask for routes only every
//! 30 s, so a connection that is waiting for its next request must not keep its read or write
//! buffer. This counts heap bytes, not time, so it is deterministic on a noisy machine.
//!
//! The other tests of this binary run at the same time, so the allocator counts only what the
//! threads of one runtime allocate and free: the runtime the measured server runs on, and
//! nothing else. The clients connect from the test's own thread and are not counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::time::Duration;

use bytes::BytesMut;
use namesrv::protocol::{RemotingCommand, SerializeType, encode_frame};
use namesrv::tls::TlsSettings;

use crate::harness::TestServer;

struct Counting;

/// Live heap bytes of the counted threads.
static LIVE: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// Whether this thread is one of the measured server's. Const-initialised without a
    /// destructor, so reading it never allocates and works while a thread exits.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn counted() -> bool {
    COUNTED.try_with(Cell::get).unwrap_or(false)
}

fn count(bytes: isize) {
    if counted() {
        LIVE.fetch_add(bytes, Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
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
fn settled_live() -> isize {
    let mut last = LIVE.load(Relaxed);
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(20));
        let now = LIVE.load(Relaxed);
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// A test server in the default TLS mode (permissive, test-mode certificate) on a runtime of
/// its own whose threads are counted.
fn start_server() -> (tokio::runtime::Runtime, TestServer) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(|| COUNTED.with(|c| c.set(true)))
        .enable_all()
        .build()
        .unwrap();
    // Started on a worker, so that what it allocates is counted when it is freed.
    let server = runtime
        .block_on(async { tokio::spawn(TestServer::start()).await })
        .unwrap();
    (runtime, server)
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
fn per_idle_connection<S>(open: impl Fn() -> S) -> isize {
    // One connection first, so one-time allocations (lazily built tables, thread-locals)
    // are not charged to the others.
    let first = open();
    let before = settled_live();
    let streams: Vec<S> = (0..CONNECTIONS).map(|_| open()).collect();
    let after = settled_live();
    drop((first, streams));
    (after - before) / CONNECTIONS as isize
}

/// Heap bytes an idle TLS connection may keep: the TLS session (keys, state, rustls' record
/// buffer, about 8 KiB) on top of the plaintext connection's; our own read and write buffers
/// are freed as for plaintext.
const MAX_BYTES_PER_IDLE_TLS_CONNECTION: isize = 16 * 1024;

#[test]
fn an_idle_connection_keeps_no_buffers_plain_or_tls() {
    let (runtime, server) = start_server();
    let addr = server.addr;
    let request = config_request();
    let plain = per_idle_connection(|| {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        ask(&mut stream, &request);
        stream
    });
    println!("{plain} heap bytes per idle connection");
    assert!(
        plain <= MAX_BYTES_PER_IDLE_CONNECTION,
        "an idle connection keeps {plain} heap bytes (limit {MAX_BYTES_PER_IDLE_CONNECTION})"
    );

    let client =
        std::sync::Arc::new(namesrv::tls::client::client_config(&TlsSettings::default()).unwrap());
    let tls = per_idle_connection(|| {
        let tcp = std::net::TcpStream::connect(addr).unwrap();
        let name = namesrv::tls::client::server_name(&addr.to_string());
        let session = rustls::ClientConnection::new(client.clone(), name).unwrap();
        let mut stream = rustls::StreamOwned::new(session, tcp);
        ask(&mut stream, &request);
        // Only the server's heap counts: free the client's session, keep its socket open.
        stream.sock
    });
    println!("{tls} heap bytes per idle TLS connection");
    assert!(
        tls <= MAX_BYTES_PER_IDLE_TLS_CONNECTION,
        "an idle TLS connection keeps {tls} heap bytes (limit {MAX_BYTES_PER_IDLE_TLS_CONNECTION})"
    );
    runtime.block_on(server.stop()).unwrap();
}
