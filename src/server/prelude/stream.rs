//! The socket as the prelude hands it on: the bytes the prelude read to make its decisions
//! (the start of a frame, of a ClientHello, or what followed a PROXY line), put back in front
//! of the rest, so that the next reader — the frame layer or rustls — sees exactly what the
//! client sent.
//!
//! Reading those bytes, rather than peeking at them, is what lets the prelude wait on the
//! socket's readiness like any reader: a connection that sent part of a PROXY signature and
//! stopped is woken again only when more bytes arrive.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A socket with the bytes already read from it in front.
#[derive(Debug)]
pub struct Started {
    head: Bytes,
    socket: TcpStream,
    /// Bytes handed to the reader so far, `head` included: during a TLS handshake, an upper
    /// bound of what rustls holds for the connection.
    taken: usize,
}

impl Started {
    /// `socket` after `head` was read from it.
    pub(super) fn new(head: Bytes, socket: TcpStream) -> Started {
        Started {
            head,
            socket,
            taken: 0,
        }
    }

    /// The socket (for its options and addresses).
    pub(crate) fn socket(&self) -> &TcpStream {
        &self.socket
    }

    /// The bytes read ahead, and the socket.
    pub(crate) fn into_parts(self) -> (Bytes, TcpStream) {
        (self.head, self.socket)
    }

    /// Bytes handed to the reader so far.
    pub(crate) fn taken(&self) -> usize {
        self.taken
    }

    /// Waits until a read may return bytes (at once while bytes read ahead are left).
    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self.head.is_empty() {
            true => self.socket.readable().await,
            false => Ok(()),
        }
    }
}

impl AsyncRead for Started {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.head.is_empty() {
            let n = this.head.len().min(buf.remaining());
            buf.put_slice(&this.head.split_to(n));
            this.taken += n;
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.socket).poll_read(cx, buf);
        this.taken += buf.filled().len() - before;
        polled
    }
}

impl AsyncWrite for Started {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().socket).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().socket).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.socket.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().socket).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().socket).poll_shutdown(cx)
    }
}
