//! A byte stream whose writes must make progress: a write (or flush) the peer keeps waiting
//! for longer than the deadline fails with `TimedOut`, which ends the HTTP connection.
//!
//! hyper has a timeout for reading a request's headers but none for writing a response, so a
//! client that pipelines requests and never reads would otherwise hold its connection (and
//! its slot) for ever once the socket buffers are full. Any progress re-arms the deadline; a
//! client that reads a trickle is bounded by the connection's total budget instead
//! ([`super::listener`]).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// `S` with a deadline on every write.
#[derive(Debug)]
pub(super) struct WriteDeadline<S> {
    inner: S,
    timeout: Duration,
    /// Armed when a write first has to wait, disarmed by any progress.
    sleep: Pin<Box<Sleep>>,
    armed: bool,
}

impl<S> WriteDeadline<S> {
    /// `inner`, whose writes may wait at most `timeout` each.
    pub(super) fn new(inner: S, timeout: Duration) -> Self {
        WriteDeadline {
            inner,
            timeout,
            sleep: Box::pin(tokio::time::sleep(timeout)),
            armed: false,
        }
    }

    /// After the inner write answered `poll`: passes a result on (disarming the deadline),
    /// or waits, failing once the deadline has passed.
    fn watch<T>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if poll.is_ready() {
            self.armed = false;
            return poll;
        }
        if !self.armed {
            self.sleep.as_mut().reset(Instant::now() + self.timeout);
            self.armed = true;
        }
        ready!(self.sleep.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the client read nothing of the response within the write deadline",
        )))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.watch(cx, poll)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_flush(cx);
        this.watch(cx, poll)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.watch(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_reads_fails_at_the_deadline() {
        let (near, _far) = tokio::io::duplex(16);
        let mut stream = WriteDeadline::new(near, Duration::from_secs(10));
        let start = Instant::now();
        let err = stream.write_all(&[0; 64]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(start.elapsed(), Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn progress_rearms_the_deadline() {
        use tokio::io::AsyncReadExt;
        let (near, mut far) = tokio::io::duplex(16);
        let mut stream = WriteDeadline::new(near, Duration::from_secs(10));
        let reader = tokio::spawn(async move {
            let mut buf = [0; 16];
            for _ in 0..4 {
                tokio::time::sleep(Duration::from_secs(8)).await;
                far.read_exact(&mut buf).await.unwrap();
            }
        });
        // 64 bytes through a 16-byte pipe read every 8 s: each wait is under the deadline.
        stream.write_all(&[0; 64]).await.unwrap();
        reader.await.unwrap();
    }
}
