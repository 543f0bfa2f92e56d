//! The HTTP accept loop: at most [`MAX_CONNECTIONS`] connections at once (further ones wait in
//! the kernel's backlog), request headers that must arrive within [`HEADER_READ_TIMEOUT`], one
//! task per connection owned by a tracker, and a graceful close of every connection when the
//! listener stops.
//!
//! The timeout is what keeps the cap from being a lock: without it, 64 clients that open a
//! connection and never finish their headers would keep every probe and scrape out.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// HTTP connections served at once: plenty for probes, Prometheus and a few browsers, and a
/// bound on what a misbehaving client can hold.
pub const MAX_CONNECTIONS: usize = 64;

/// How long a client may take to send a request's headers, counted from the moment the
/// connection waits for them (so an idle keep-alive connection is closed after it too).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Both ends of an HTTP connection.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    /// The client.
    pub remote: SocketAddr,
    /// The address the client reached this server at.
    pub local: SocketAddr,
}

/// Serves `app` on `listener` until `stop` completes, then closes every connection gracefully
/// (a request in progress is answered first).
pub(super) async fn serve(listener: TcpListener, app: Router, stop: impl Future<Output = ()>) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let connections = TaskTracker::new();
    let closing = CancellationToken::new();
    tokio::pin!(stop);
    loop {
        let permit = tokio::select! {
            _ = &mut stop => break,
            permit = permits.clone().acquire_owned() => permit.expect("never closed"),
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
        let _ = stream.set_nodelay(true);
        let peer = Peer {
            remote,
            local: stream.local_addr().unwrap_or(remote),
        };
        let service =
            TowerToHyperService::new(app.clone().layer(axum::Extension(ConnectInfo(peer))));
        let closing = closing.clone();
        connections.spawn(async move {
            let _permit = permit;
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            let result = tokio::select! {
                result = conn.as_mut() => result,
                _ = closing.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = result {
                tracing::debug!(%remote, error = %e, "HTTP connection ended with an error");
            }
        });
    }
    closing.cancel();
    connections.close();
    connections.wait().await;
}
