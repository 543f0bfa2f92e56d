//! The HTTP accept loop and the limits that keep the side door open for probes.
//!
//! Every connection is bounded in time: its request headers must arrive within
//! [`HEADER_READ_TIMEOUT`], each response write must make progress within [`WRITE_TIMEOUT`]
//! ([`super::deadline`]), and the connection as a whole closes after [`CONNECTION_BUDGET`] (a
//! request in progress is answered first). It is also bounded in number:
//!
//! - the ordinary pool holds [`MAX_CONNECTIONS`] connections, at most
//!   [`MAX_CONNECTIONS_PER_CLIENT`] of them from one client ([`super::limits`]);
//! - a connection that finds the pool, or its client's share of it, full is served in
//!   *probe-only* mode: one request, on a short leash, answering `/healthz` and `/readyz` and
//!   refusing every other path with a 503. Clients that hold their connections without
//!   reading can fill the ordinary pool, but what they send on a probe-only connection is
//!   answered at once with a few bytes and closed, so a kubelet probing from the same address
//!   still gets in;
//! - at most [`PROBE_RESERVE`] connections more than the pool are open at once; further ones
//!   wait in the kernel's backlog.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::deadline::WriteDeadline;
use super::limits::{Clients, Slot};

/// Connections of the ordinary pool: plenty for probes, Prometheus and a few browsers, and a
/// bound on what misbehaving clients can hold.
pub const MAX_CONNECTIONS: usize = 64;

/// Of the ordinary pool, what one client (an IPv4 address or an IPv6 /64) may hold.
pub const MAX_CONNECTIONS_PER_CLIENT: usize = 16;

/// Connections open beyond the ordinary pool, served probe-only: room for probes however
/// the pool is held.
pub(crate) const PROBE_RESERVE: usize = 16;

/// How long a client may take to send a request's headers, counted from the moment the
/// connection waits for them (so an idle keep-alive connection is closed after it too).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one write of a response may wait for the client to read.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest an ordinary connection stays open (keep-alive clients simply reconnect).
pub(crate) const CONNECTION_BUDGET: Duration = Duration::from_secs(60);

/// Header timeout, write deadline and total budget of a probe-only connection: a probe sends
/// its request at once and reads a few bytes.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Both ends of an HTTP connection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer {
    /// The client.
    pub(crate) remote: SocketAddr,
    /// The address the client reached this server at.
    pub(crate) local: SocketAddr,
}

/// The two services: everything, and the probes only.
#[derive(Debug, Clone)]
pub(super) struct Routers {
    /// The full router.
    pub(crate) full: Router,
    /// `/healthz` and `/readyz`, a 503 for the rest.
    pub(crate) probes: Router,
}

/// How a connection is served, and (held, never read) the slots it takes while it is.
enum Mode {
    Full {
        _ordinary: OwnedSemaphorePermit,
        _slot: Slot,
    },
    ProbeOnly,
}

/// What the connection's timeouts are in a mode.
struct Limits {
    header: Duration,
    write: Duration,
    budget: Duration,
    keep_alive: bool,
}

impl Mode {
    fn limits(&self) -> Limits {
        match self {
            Mode::Full { .. } => Limits {
                header: HEADER_READ_TIMEOUT,
                write: WRITE_TIMEOUT,
                budget: CONNECTION_BUDGET,
                keep_alive: true,
            },
            Mode::ProbeOnly => Limits {
                header: PROBE_TIMEOUT,
                write: PROBE_TIMEOUT,
                budget: PROBE_TIMEOUT,
                keep_alive: false,
            },
        }
    }
}

/// Serves `routers` on `listener` until `stop` completes, then closes every connection
/// gracefully (a request in progress is answered first).
pub(super) async fn serve(listener: TcpListener, routers: Routers, stop: impl Future<Output = ()>) {
    let all = Arc::new(Semaphore::new(MAX_CONNECTIONS + PROBE_RESERVE));
    let ordinary = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let clients = Clients::new(MAX_CONNECTIONS_PER_CLIENT);
    let connections = TaskTracker::new();
    let closing = CancellationToken::new();
    tokio::pin!(stop);
    loop {
        let permit = tokio::select! {
            _ = &mut stop => break,
            permit = all.clone().acquire_owned() => permit.expect("never closed"),
        };
        let (stream, remote) = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Typically out of file descriptors: back off instead of spinning.
                    tracing::warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        // The client's share is looked at only when an ordinary slot is free: under a flood
        // of connections the pool is full and the per-client table is left alone.
        let mode = ordinary
            .clone()
            .try_acquire_owned()
            .ok()
            .and_then(|ordinary| {
                let slot = clients.take(remote.ip())?;
                Some(Mode::Full {
                    _ordinary: ordinary,
                    _slot: slot,
                })
            })
            .unwrap_or(Mode::ProbeOnly);
        let router = match mode {
            Mode::Full { .. } => routers.full.clone(),
            Mode::ProbeOnly => routers.probes.clone(),
        };
        let _ = stream.set_nodelay(true);
        let peer = Peer {
            remote,
            local: stream.local_addr().unwrap_or(remote),
        };
        let closing = closing.clone();
        connections.spawn(async move {
            let _permit = permit;
            connection(stream, peer, router, mode, closing).await;
        });
    }
    closing.cancel();
    connections.close();
    connections.wait().await;
}

/// Serves one connection within its mode's limits.
async fn connection<S>(
    stream: S,
    peer: Peer,
    router: Router,
    mode: Mode,
    closing: CancellationToken,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = mode.limits();
    let service = TowerToHyperService::new(router.layer(axum::Extension(ConnectInfo(peer))));
    let io = TokioIo::new(WriteDeadline::new(stream, limits.write));
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header)
        .keep_alive(limits.keep_alive)
        .serve_connection(io, service);
    tokio::pin!(conn);
    let result = tokio::select! {
        result = conn.as_mut() => result,
        _ = closing.cancelled() => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
        _ = tokio::time::sleep(limits.budget) => {
            // The response in progress may still finish, within one more write deadline (a
            // client reading a trickle would otherwise keep it going).
            conn.as_mut().graceful_shutdown();
            tokio::time::timeout(limits.write, conn).await.unwrap_or(Ok(()))
        }
    };
    if let Err(e) = result {
        tracing::debug!(remote = %peer.remote, error = %e, "HTTP connection ended with an error");
    }
    drop(mode);
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
    use tokio::time::Instant;

    const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";

    /// A connection in `mode` over an in-memory pipe (so paused time is exact).
    fn open(mode: Mode) -> DuplexStream {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let remote: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let peer = Peer {
            remote,
            local: remote,
        };
        let router = Router::new().route("/", get(|| async { "ok" }));
        tokio::spawn(connection(
            server,
            peer,
            router,
            mode,
            CancellationToken::new(),
        ));
        client
    }

    fn ordinary() -> Mode {
        Mode::Full {
            _ordinary: Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap(),
            _slot: Clients::new(1).take("127.0.0.1".parse().unwrap()).unwrap(),
        }
    }

    /// Reads one answer to [`REQUEST`]; `false` if the connection closed instead.
    async fn answer(client: &mut DuplexStream) -> bool {
        let mut seen = Vec::new();
        let mut buf = [0; 1024];
        while !seen.ends_with(b"\r\n\r\nok") {
            match client.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        true
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_connection_closes_when_its_budget_is_spent() {
        let mut client = open(ordinary());
        let start = Instant::now();
        // A request every 5 s: the header timeout never ends this connection, the budget does.
        for _ in 0..30 {
            if client.write_all(REQUEST).await.is_err() || !answer(&mut client).await {
                let lasted = start.elapsed();
                assert!(lasted >= CONNECTION_BUDGET, "{lasted:?}");
                assert!(
                    lasted < CONNECTION_BUDGET + Duration::from_secs(6),
                    "{lasted:?}"
                );
                return;
            }
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        panic!("still open after 150 s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_probe_only_connection_answers_once_and_waits_briefly() {
        let mut client = open(Mode::ProbeOnly);
        client.write_all(&REQUEST.repeat(2)).await.unwrap();
        assert!(answer(&mut client).await);
        assert!(!answer(&mut client).await, "one request per connection");
        // One that sends nothing is closed after the probe timeout.
        let mut silent = open(Mode::ProbeOnly);
        let start = Instant::now();
        let mut buf = Vec::new();
        let _ = silent.read_to_end(&mut buf).await;
        assert_eq!(start.elapsed(), PROBE_TIMEOUT);
    }
}
