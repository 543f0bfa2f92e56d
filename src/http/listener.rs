//! The HTTP listener: at most [`MAX_CONNECTIONS`] connections at once (further ones wait in
//! the kernel's backlog), and each connection remembers the local address it arrived on,
//! which the address server needs.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// HTTP connections served at once: plenty for probes, Prometheus and a few browsers, and a
/// bound on what a misbehaving client can hold.
pub const MAX_CONNECTIONS: usize = 64;

/// Both ends of an HTTP connection.
#[derive(Debug, Clone, Copy)]
pub struct Peer {
    /// The client.
    pub remote: SocketAddr,
    /// The address the client reached this server at.
    pub local: SocketAddr,
}

/// A TCP listener with a connection cap.
pub(super) struct Capped {
    inner: TcpListener,
    permits: Arc<Semaphore>,
}

impl Capped {
    pub(super) fn new(inner: TcpListener) -> Capped {
        Capped {
            inner,
            permits: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        }
    }
}

/// An accepted connection holding its place under the cap.
pub(super) struct Conn {
    stream: TcpStream,
    local: SocketAddr,
    _permit: OwnedSemaphorePermit,
}

impl axum::serve::Listener for Capped {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Conn, SocketAddr) {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        loop {
            match self.inner.accept().await {
                Ok((stream, remote)) => {
                    let _ = stream.set_nodelay(true);
                    let local = stream.local_addr().unwrap_or(remote);
                    let conn = Conn {
                        stream,
                        local,
                        _permit: permit,
                    };
                    return (conn, remote);
                }
                Err(e) => {
                    // Typically out of file descriptors: back off instead of spinning.
                    tracing::warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl Connected<IncomingStream<'_, Capped>> for Peer {
    fn connect_info(stream: IncomingStream<'_, Capped>) -> Peer {
        Peer {
            remote: *stream.remote_addr(),
            local: stream.io().local,
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}
