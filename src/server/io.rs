//! The byte stream a connection reads frames from and writes responses to: the socket's own
//! halves for plaintext (after the bytes the prelude read ahead), or a TLS session over the
//! socket.
//!
//! Reading follows the plaintext design of `connection.rs` in both cases: wait until bytes
//! are there, then take a buffer and read what is available without waiting, so a connection
//! between requests holds no read buffer of ours. For TLS, "bytes are there" is the socket's
//! readiness, and "read what is available" decrypts every complete record until rustls would
//! have to wait for the socket; rustls then holds no plaintext, so waiting on the socket again
//! cannot miss any. (rustls keeps its own small per-connection state and record buffer.)

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWriteExt, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio_rustls::server::TlsStream;

use super::prelude::{Started, Transport};

/// Plaintext read in one go from a TLS session before the frames are handled (more is read on
/// the next turn, without waiting).
const TLS_READ_BATCH: usize = 256 * 1024;

/// A connection's byte stream.
pub(super) enum Io {
    /// The socket, split so reading and writing need no lock; `head` holds the bytes the
    /// prelude read, which come first.
    Plain {
        head: Bytes,
        r: OwnedReadHalf,
        w: OwnedWriteHalf,
    },
    /// TLS over the socket; `more` says rustls may hold plaintext already decrypted.
    Tls {
        stream: Box<TlsStream<Started>>,
        more: bool,
    },
}

impl Io {
    /// The stream of a connection whose prelude chose `transport`.
    pub(super) fn new(transport: Transport) -> Io {
        match transport {
            Transport::Plain(started) => {
                let (head, stream) = started.into_parts();
                let _ = stream.set_nodelay(true);
                let (r, w) = stream.into_split();
                Io::Plain { head, r, w }
            }
            Transport::Tls(stream) => {
                let _ = stream.get_ref().0.socket().set_nodelay(true);
                // The handshake may have read the first request's records already.
                Io::Tls { stream, more: true }
            }
        }
    }

    /// Waits until a read may return bytes (or the end of the stream).
    pub(super) async fn readable(&self) -> io::Result<()> {
        match self {
            Io::Plain { head, .. } if !head.is_empty() => Ok(()),
            Io::Plain { r, .. } => r.readable().await,
            Io::Tls { more: true, .. } => Ok(()),
            Io::Tls { stream, .. } => stream.get_ref().0.readable().await,
        }
    }

    /// Reads what is available into `input` without waiting: `Ok(0)` at the end of the stream,
    /// `WouldBlock` when nothing was there after all.
    pub(super) fn try_read_buf(&mut self, input: &mut BytesMut, chunk: usize) -> io::Result<usize> {
        match self {
            Io::Plain { head, .. } if !head.is_empty() => {
                input.extend_from_slice(head);
                Ok(std::mem::take(head).len())
            }
            Io::Plain { r, .. } => {
                if input.capacity() - input.len() < chunk {
                    input.reserve(chunk);
                }
                r.try_read_buf(input)
            }
            Io::Tls { stream, more } => {
                let mut cx = Context::from_waker(Waker::noop());
                let mut total = 0;
                *more = false;
                loop {
                    // Read into zeroed room (no unsafe `set_len`), then cut to what was read.
                    let start = input.len();
                    input.resize(start + chunk, 0);
                    let mut buf = ReadBuf::new(&mut input[start..]);
                    let polled = Pin::new(&mut **stream).poll_read(&mut cx, &mut buf);
                    let n = buf.filled().len();
                    input.truncate(start + n);
                    match polled {
                        Poll::Ready(Ok(())) => {
                            if n == 0 {
                                // The end of the stream; bytes read before it are handled first.
                                return Ok(total);
                            }
                            total += n;
                            if total >= TLS_READ_BATCH {
                                *more = true;
                                return Ok(total);
                            }
                        }
                        Poll::Ready(Err(e)) => return if total > 0 { Ok(total) } else { Err(e) },
                        Poll::Pending if total > 0 => return Ok(total),
                        Poll::Pending => return Err(io::ErrorKind::WouldBlock.into()),
                    }
                }
            }
        }
    }

    /// Writes some of `output`, as `AsyncWriteExt::write_buf`.
    pub(super) async fn write_buf(&mut self, output: &mut BytesMut) -> io::Result<usize> {
        match self {
            Io::Plain { w, .. } => w.write_buf(output).await,
            Io::Tls { stream, .. } => stream.write_buf(output).await,
        }
    }

    /// Sends what a TLS session still holds; nothing to do for plaintext.
    pub(super) async fn flush(&mut self) -> io::Result<()> {
        match self {
            Io::Plain { .. } => Ok(()),
            Io::Tls { stream, .. } => stream.flush().await,
        }
    }

    /// Closes the sending side (TLS: `close_notify` first).
    pub(super) async fn shutdown(&mut self) {
        let _ = match self {
            Io::Plain { w, .. } => w.shutdown().await,
            Io::Tls { stream, .. } => stream.shutdown().await,
        };
    }
}
