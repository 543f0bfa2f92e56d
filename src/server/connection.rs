//! One client connection: read frames, dispatch each, write responses in order.
//!
//! Requests are handled in arrival order on the connection's task, and all responses to the
//! requests that arrived together are written together. The connection stops reading while
//! more than `max_queued_response_bytes` are waiting to be written, so a peer that never
//! reads cannot grow the server's memory. A malformed frame closes the connection without a
//! reply; so does the idle timeout. When the connection ends, brokers it registered are
//! unregistered at once.

use std::net::SocketAddr;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use super::ServerConfig;
use crate::dispatch::dispatch;
use crate::handlers::Context;
use crate::protocol::{DecodeError, decode_frame, encode_frame, split_frame};
use crate::state::{ConnId, Namesrv};

/// Read buffer size of a connection. Small: most requests are a few hundred bytes; a large
/// frame grows the buffer to its size (see `split_frame`).
const READ_CHUNK: usize = 4 * 1024;

/// Why a connection ended.
enum End {
    Eof,
    Idle,
    Cancelled,
    Io(std::io::Error),
    Malformed(DecodeError),
}

struct Conn<'a> {
    state: Namesrv,
    config: &'a ServerConfig,
    conn: ConnId,
    peer: SocketAddr,
    registered_broker: bool,
    /// Close after this long without a read or a write; `None` never. Read from the live
    /// configuration when the connection is accepted, as Java sets up each channel.
    idle: Option<std::time::Duration>,
}

/// Serves one connection until it closes, fails, idles out or `cancel` fires.
pub(super) async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    conn: ConnId,
    state: Namesrv,
    config: &ServerConfig,
    cancel: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let (mut reader, mut writer) = stream.into_split();
    let idle_seconds = state.config().settings.server_channel_max_idle_time_seconds;
    let mut c = Conn {
        state,
        config,
        conn,
        peer,
        registered_broker: false,
        idle: (idle_seconds > 0).then(|| std::time::Duration::from_secs(idle_seconds as u64)),
    };
    let end = c.run(&mut reader, &mut writer, &cancel).await;
    match &end {
        End::Malformed(e) => {
            tracing::warn!(%peer, error = %e, "malformed frame: closing the connection")
        }
        End::Idle => tracing::info!(%peer, "connection idle: closing it"),
        End::Io(e) => tracing::debug!(%peer, error = %e, "connection error"),
        End::Eof | End::Cancelled => tracing::debug!(%peer, "connection closed"),
    }
    let _ = writer.shutdown().await;
    if c.registered_broker {
        // An idle timeout is silence, which eviction protection may hold; a close is not.
        match end {
            End::Idle => c.state.connection_idled_out(conn),
            _ => c.state.connection_closed(conn),
        }
    }
}

impl Conn<'_> {
    async fn run(
        &mut self,
        reader: &mut tokio::net::tcp::OwnedReadHalf,
        writer: &mut OwnedWriteHalf,
        cancel: &CancellationToken,
    ) -> End {
        // Both buffers are released whenever they are empty, so a connection waiting for its
        // next request holds no buffer at all: ten thousand polling clients cost only their
        // sockets and tasks. A large frame's buffer is freed as soon as it has been handled.
        let mut input = BytesMut::new();
        let mut output = BytesMut::new();
        let idle = self.idle;
        let far = || Instant::now() + std::time::Duration::from_secs(86_400 * 365);
        let sleep = tokio::time::sleep_until(idle.map_or_else(far, |d| Instant::now() + d));
        tokio::pin!(sleep);
        // Set once cancelled: what already arrived is answered, then the connection closes.
        let mut draining = false;
        loop {
            // Requests that arrived whole are answered even if a malformed frame follows.
            let handled = self
                .handle_buffered(&mut input, &mut output, writer, sleep.as_mut())
                .await;
            let written = match output.is_empty() {
                true => Ok(()),
                false => {
                    write_or_idle(writer, &mut output, sleep.as_mut(), idle, &self.state).await
                }
            };
            if let Err(e) = handled.and(written) {
                return e;
            }
            output = BytesMut::new();
            if input.is_empty() {
                input = BytesMut::new();
            }
            if draining {
                return End::Cancelled;
            }
            if cancel.is_cancelled() {
                drain(reader, &mut input);
                draining = true;
                continue;
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    drain(reader, &mut input);
                    draining = true;
                }
                // Wait for bytes before taking a buffer for them.
                ready = reader.readable() => {
                    if let Err(e) = ready {
                        return End::Io(e);
                    }
                    if input.capacity() - input.len() < READ_CHUNK {
                        input.reserve(READ_CHUNK);
                    }
                    match reader.try_read_buf(&mut input) {
                        Ok(0) => return End::Eof,
                        Ok(n) => {
                            self.state.metrics().received(n);
                            if let Some(d) = idle {
                                sleep.as_mut().reset(Instant::now() + d);
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) => return End::Io(e),
                    }
                }
                _ = &mut sleep => return End::Idle,
            }
        }
    }

    /// Handles every complete frame in `input`, flushing when too much output is queued.
    async fn handle_buffered(
        &mut self,
        input: &mut BytesMut,
        output: &mut BytesMut,
        writer: &mut OwnedWriteHalf,
        mut sleep: std::pin::Pin<&mut Sleep>,
    ) -> Result<(), End> {
        while let Some(frame) =
            split_frame(input, self.config.frame_limits).map_err(End::Malformed)?
        {
            let (request, _) = decode_frame(frame).map_err(End::Malformed)?;
            let mut ctx = Context::new(&self.state, self.conn, self.peer, Instant::now());
            let response = dispatch(&mut ctx, &request, &self.config.auth);
            if ctx.registered_broker && !self.registered_broker {
                tracing::debug!(peer = %self.peer, conn = ?self.conn, "connection now carries a broker");
                self.registered_broker = true;
            }
            if let Some(response) = response {
                encode_frame(&response, self.config.serialize_type, output);
                if output.len() >= self.config.max_queued_response_bytes {
                    write_or_idle(writer, output, sleep.as_mut(), self.idle, &self.state).await?;
                }
            }
        }
        Ok(())
    }
}

/// Reads whatever the peer already sent, without waiting for more (and at most a few
/// megabytes, so a peer that keeps sending cannot hold shutdown up).
fn drain(reader: &mut tokio::net::tcp::OwnedReadHalf, input: &mut BytesMut) {
    const DRAIN_LIMIT: usize = 8 * 1024 * 1024;
    while input.len() < DRAIN_LIMIT {
        input.reserve(READ_CHUNK);
        match reader.try_read_buf(input) {
            Ok(n) if n > 0 => continue,
            _ => return,
        }
    }
}

/// Writes all of `output`, giving up if the peer reads nothing for the idle timeout.
async fn write_or_idle(
    writer: &mut OwnedWriteHalf,
    output: &mut BytesMut,
    mut sleep: std::pin::Pin<&mut Sleep>,
    idle: Option<std::time::Duration>,
    state: &Namesrv,
) -> Result<(), End> {
    while !output.is_empty() {
        tokio::select! {
            written = writer.write_buf(output) => match written {
                Ok(0) => return Err(End::Eof),
                Ok(n) => {
                    state.metrics().sent(n);
                    if let Some(d) = idle {
                        sleep.as_mut().reset(Instant::now() + d);
                    }
                }
                Err(e) => return Err(End::Io(e)),
            },
            _ = &mut sleep => return Err(End::Idle),
        }
    }
    Ok(())
}
