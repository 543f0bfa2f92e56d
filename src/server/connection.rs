//! One client connection: read frames, handle each, write responses in order.
//!
//! Requests are handled in arrival order, and all responses to the requests that arrived
//! together are written together. Quick requests are handled on the connection's task; a
//! request that may wait for the disk or keep a core busy, and any frame too large to decode
//! at once, runs on the blocking pool ([`super::offload`]) while the task waits, so other
//! connections are never held up by it.
//!
//! Every byte the connection buffers (a partial frame, the frame being handled, responses
//! not yet written) is reported to the server-wide budget ([`super::budget`]). The
//! connection stops handling requests while more than `max_queued_response_bytes` — or,
//! when the budget is under pressure, more than its share — wait to be written, so a peer
//! that never reads cannot grow the server's memory; and it ends at once if the budget
//! closes it. A malformed frame closes the connection without a reply; so does the idle
//! timeout. When the connection ends, brokers it registered are unregistered at once. The
//! lines saying a connection was closed for a malformed frame or for idling are limited
//! server-wide ([`CloseLog`]): anyone can open connections, and each must not cost a line.
//!
//! A request whose handler finishes later ([`crate::dispatch::Handler::Async`]) does not hold
//! the connection up: its reply is awaited beside the connection's other sources and written
//! when it comes, carrying the request's opaque, so later requests may be answered first. At
//! most [`MAX_PENDING_REPLIES`] wait at once; beyond that the connection stops reading.
//!
//! The connection also carries the requests the server sends its client ([`super::outbound`]):
//! they are written as responses are, and a response frame answering one of them goes to
//! its waiter instead of being dispatched.
//!
//! The byte stream — the socket itself, or TLS over it, as the connection's prelude decided
//! ([`super::prelude`]) — is used only through [`Conn::read_some`] and [`Conn::write_or_idle`],
//! by way of [`Io`].

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::Poll;

use bytes::{Bytes, BytesMut};
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use super::Server;
use super::budget::Holding;
use super::io::Io;
use super::offload::Lane;
use super::outbound::{Attached, Line};
use super::prelude::Transport;
use crate::auth::Gate;
use crate::controller::Controller;
use crate::dispatch::{Cost, Pending, RequestTable, Served, serve as dispatch};
use crate::handlers::Context;
use crate::log_limit::LogLimit;
use crate::protocol::{DecodeError, RemotingCommand, decode_frame, encode_frame, split_frame};
use crate::state::{ConnId, Namesrv};

/// Read buffer size of a connection. Small: most requests are a few hundred bytes; a large
/// frame grows the buffer to its size (see `split_frame`).
const READ_CHUNK: usize = 4 * 1024;

/// Frames larger than this are decoded and handled on the blocking pool.
const INLINE_FRAME_MAX: usize = 64 * 1024;

/// Most replies of asynchronous handlers one connection waits for at once.
pub(super) const MAX_PENDING_REPLIES: usize = 256;

/// How often a connection closed for a malformed frame, or for idling, is logged: at most
/// once per interval each, with the number of closings not logged since.
const CLOSE_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// The server-wide limits on closing lines. Short locks, taken once per closed connection.
#[derive(Debug)]
pub(super) struct CloseLog {
    malformed: parking_lot::Mutex<LogLimit>,
    idle: parking_lot::Mutex<LogLimit>,
}

impl Default for CloseLog {
    fn default() -> CloseLog {
        CloseLog {
            malformed: parking_lot::Mutex::new(LogLimit::new(CLOSE_LOG_INTERVAL)),
            idle: parking_lot::Mutex::new(LogLimit::new(CLOSE_LOG_INTERVAL)),
        }
    }
}

impl CloseLog {
    fn log(&self, end: &End, peer: SocketAddr) {
        match end {
            End::Malformed(e) => {
                if let Some(left_out) = self.malformed.lock().ready() {
                    tracing::warn!(%peer, error = %e, left_out, "malformed frame: closing the connection");
                }
            }
            End::Idle => {
                if let Some(left_out) = self.idle.lock().ready() {
                    tracing::info!(%peer, left_out, "connection idle: closing it");
                }
            }
            // The budget logs its closings (rate-limited).
            End::Evicted => tracing::debug!(%peer, "connection closed for the buffer budget"),
            End::Io(e) => tracing::debug!(%peer, error = %e, "connection error"),
            End::Eof | End::Cancelled => tracing::debug!(%peer, "connection closed"),
        }
    }
}

/// Why a connection ended.
enum End {
    Eof,
    Idle,
    Cancelled,
    /// Closed by the buffer budget.
    Evicted,
    Io(std::io::Error),
    Malformed(DecodeError),
}

struct Conn<'a> {
    state: Namesrv,
    server: &'a Server,
    conn: ConnId,
    peer: SocketAddr,
    registered_broker: bool,
    /// Close after this long without a read or a write; `None` never. Read from the live
    /// configuration when the connection is accepted, as Java sets up each channel.
    idle: Option<std::time::Duration>,
    /// This connection's share of the buffer budget.
    holding: Holding,
    /// Size of the frame being handled, which is no longer in the read buffer.
    in_flight: usize,
    /// Requests the server sends on this connection, and the responses they wait for.
    outbound: Attached,
    /// What this connection's requests are served by.
    table: &'static RequestTable,
}

/// Replies of asynchronous handlers the connection waits for. Empty (and holding no memory)
/// unless a handler finishes later; polled only when the connection's task wakes.
#[derive(Default)]
struct Replies(Vec<Pending>);

impl Replies {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn is_full(&self) -> bool {
        self.0.len() >= MAX_PENDING_REPLIES
    }

    fn push(&mut self, pending: Pending) {
        self.0.push(pending);
    }

    /// The next reply to be ready; never, while none waits.
    async fn next(&mut self) -> Served {
        std::future::poll_fn(|cx| {
            let ready =
                self.0
                    .iter_mut()
                    .enumerate()
                    .find_map(|(i, p)| match Pin::new(p).poll(cx) {
                        Poll::Ready(served) => Some((i, served)),
                        Poll::Pending => None,
                    });
            let Some((i, served)) = ready else {
                return Poll::Pending;
            };
            self.0.swap_remove(i);
            if self.0.is_empty() {
                self.0 = Vec::new();
            }
            Poll::Ready(served)
        })
        .await
    }
}

/// What a connection waits for between turns: the arm of its one `select!` that fired.
enum Wake {
    Cancelled,
    /// Closed by the buffer budget.
    Evicted,
    /// The server queued requests to send.
    Outbound,
    /// An asynchronous handler's reply is ready.
    Replied(Served),
    /// Bytes (or the end of the stream) may be there.
    Readable(std::io::Result<()>),
    Idle,
}

/// What a connection is served by: the state, the server's shared parts and its listener's
/// request table.
pub(super) struct Serving<'a> {
    pub(super) state: Namesrv,
    pub(super) server: &'a Server,
    pub(super) table: &'static RequestTable,
}

/// Serves one connection until it closes, fails, idles out (after `idle` without a byte,
/// if set), is closed for the buffer budget, or `cancel` fires. `holding` is its share of the
/// budget, opened when it was accepted (its prelude reported to it first).
pub(super) async fn serve(
    transport: Transport,
    peer: SocketAddr,
    holding: Holding,
    idle: Option<std::time::Duration>,
    Serving {
        state,
        server,
        table,
    }: Serving<'_>,
    cancel: CancellationToken,
) {
    let mut io = Io::new(transport);
    let conn = holding.conn();
    let mut c = Conn {
        state,
        server,
        conn,
        peer,
        registered_broker: false,
        idle,
        holding,
        in_flight: 0,
        outbound: server.handles.outbound.attach(conn),
        table,
    };
    let Err(end) = c.run(&mut io, &cancel).await;
    // Requests still waiting for responses learn at once that none will come.
    drop(c.outbound);
    server.closings.log(&end, peer);
    io.shutdown().await;
    if c.registered_broker {
        // An idle timeout is silence, which eviction protection may hold; a close is not.
        match end {
            End::Idle => c.state.connection_idled_out(conn),
            _ => c.state.connection_closed(conn),
        }
        // A controller's heartbeat on this connection marks it too (Java's
        // `BrokerHousekeepingService#onChannelClose` on the controller port).
        if let Some(controller) = &server.handles.controller {
            controller.connection_closed(conn, Instant::now());
        }
    }
}

impl Conn<'_> {
    async fn run(&mut self, io: &mut Io, cancel: &CancellationToken) -> Result<Infallible, End> {
        // Both buffers are released whenever they are empty, so a connection waiting for its
        // next request holds no buffer at all: ten thousand polling clients cost only their
        // sockets and tasks. A large frame's buffer is freed as soon as it has been handled.
        let mut input = BytesMut::new();
        let mut output = BytesMut::new();
        let mut replies = Replies::default();
        let idle = self.idle;
        let far = || Instant::now() + std::time::Duration::from_secs(86_400 * 365);
        let sleep = tokio::time::sleep_until(idle.map_or_else(far, |d| Instant::now() + d));
        tokio::pin!(sleep);
        // Set once cancelled: what already arrived is answered, then the connection closes.
        let mut draining = false;
        loop {
            // Requests that arrived whole are answered even if a malformed frame follows.
            let handled = self
                .handle_buffered(&mut input, &mut output, &mut replies, io, sleep.as_mut())
                .await;
            let written = match output.is_empty() {
                true => Ok(()),
                false => self.write_or_idle(io, &mut output, sleep.as_mut()).await,
            };
            handled.and(written)?;
            output = BytesMut::new();
            if input.is_empty() {
                input = BytesMut::new();
            }
            self.report(&input, &output)?;
            if draining && replies.is_empty() {
                return Err(End::Cancelled);
            }
            if cancel.is_cancelled() && !draining {
                drain(io, &mut input);
                draining = true;
                continue;
            }
            // One source per arm, checked in this order; each is acted on below.
            let wake = tokio::select! {
                biased;
                _ = cancel.cancelled(), if !draining => Wake::Cancelled,
                _ = self.holding.closed() => Wake::Evicted,
                // Before reading: the server's requests are few and their queue is bounded,
                // and a peer that keeps sending must not hold back what is sent to it.
                _ = self.outbound.line().queued() => Wake::Outbound,
                served = replies.next(), if !replies.is_empty() => Wake::Replied(served),
                // Wait for bytes before taking a buffer for them; not while draining (what
                // arrived is read) or while as many replies wait as the connection allows.
                ready = io.readable(), if !draining && !replies.is_full() => Wake::Readable(ready),
                _ = &mut sleep => Wake::Idle,
            };
            match wake {
                Wake::Cancelled => {
                    drain(io, &mut input);
                    draining = true;
                }
                Wake::Evicted => return Err(End::Evicted),
                // Written, with any responses, at the top of the next turn.
                Wake::Outbound => self.encode_outbound(&mut output),
                // Written, as the others, at the top of the next turn.
                Wake::Replied(served) => {
                    if let Some(response) = self.took(served, &mut replies) {
                        self.encode(&response, &mut output);
                    }
                }
                Wake::Readable(ready) => {
                    ready.map_err(End::Io)?;
                    if self.read_some(io, &mut input)?
                        && let Some(d) = idle
                    {
                        sleep.as_mut().reset(Instant::now() + d);
                    }
                }
                Wake::Idle => return Err(End::Idle),
            }
        }
    }

    /// Encodes the requests the server queued for this connection into `output`.
    fn encode_outbound(&self, output: &mut BytesMut) {
        for request in self.outbound.line().take_queued() {
            self.encode(&request, output);
        }
    }

    /// Queues `cmd` in `output`: the one path by which responses and the server's own
    /// requests reach the client, written (and counted by the budget) alike.
    fn encode(&self, cmd: &RemotingCommand, output: &mut BytesMut) {
        encode_frame(cmd, self.server.config.serialize_type, output);
    }

    /// Reads what the socket has without waiting; `true` if bytes arrived.
    fn read_some(&self, io: &mut Io, input: &mut BytesMut) -> Result<bool, End> {
        match io.try_read_buf(input, READ_CHUNK) {
            Ok(0) => Err(End::Eof),
            Ok(n) => {
                self.state.metrics().received(n);
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(End::Io(e)),
        }
    }

    /// Reports the bytes the connection holds to the budget; `Evicted` if it closed us.
    fn report(&self, input: &BytesMut, output: &BytesMut) -> Result<(), End> {
        let held = input.capacity() + self.in_flight + output.capacity();
        match self.holding.report(held) {
            true => Ok(()),
            false => Err(End::Evicted),
        }
    }

    /// Handles every complete frame in `input`, flushing when too much output is queued.
    async fn handle_buffered(
        &mut self,
        input: &mut BytesMut,
        output: &mut BytesMut,
        replies: &mut Replies,
        io: &mut Io,
        mut sleep: std::pin::Pin<&mut Sleep>,
    ) -> Result<(), End> {
        let config = &self.server.config;
        let mut handled_any = false;
        while !replies.is_full()
            && let Some(frame) = split_frame(input, config.frame_limits).map_err(End::Malformed)?
        {
            handled_any = true;
            self.in_flight = frame.len();
            self.report(input, output)?;
            let served = self.handle(frame).await;
            self.in_flight = 0;
            if let Some(response) = self.took(served?, replies) {
                self.encode(&response, output);
            }
            self.report(input, output)?;
            if output.len() >= config.max_queued_response_bytes
                || (!output.is_empty() && self.holding.over_share())
            {
                // Stop handling until the peer has read what is queued.
                self.write_or_idle(io, output, sleep.as_mut()).await?;
                *output = BytesMut::new();
                self.report(input, output)?;
            }
        }
        if handled_any && !input.is_empty() {
            // The frames split off shared the buffer's allocation: keep only the rest, so that
            // the bytes reported are the bytes held once those frames are gone.
            *input = BytesMut::from(&input[..]);
        }
        // A partial frame may have reserved room for all of itself.
        self.report(input, output)
    }

    /// Notes what serving a request did to the connection, keeps its pending reply, and
    /// returns its response to write, if any.
    fn took(&mut self, served: Served, replies: &mut Replies) -> Option<RemotingCommand> {
        if served.registered_broker && !self.registered_broker {
            tracing::debug!(peer = %self.peer, conn = ?self.conn, "connection now carries a broker");
            self.registered_broker = true;
        }
        if let Some(pending) = served.pending {
            replies.push(pending);
        }
        served.response
    }

    /// Decodes and handles one frame, on the blocking pool when it may take long.
    async fn handle(&mut self, frame: Bytes) -> Result<Served, End> {
        let table = self.table;
        let served = if frame.len() > INLINE_FRAME_MAX {
            let (state, conn, peer) = (self.state.clone(), self.conn, self.peer);
            let auth = self.server.handles.auth.clone();
            let controller = self.server.handles.controller.clone();
            let line = self.outbound.line().clone();
            self.offloaded(Lane::Cpu, move |now| {
                let (request, _) = decode_frame(frame)?;
                let who = (conn, peer, &auth, controller.as_ref());
                Ok(handle_request(table, &state, who, &line, now, request))
            })
            .await?
            .map_err(End::Malformed)?
        } else {
            let (request, _) = decode_frame(frame).map_err(End::Malformed)?;
            let lane = match table.cost(&request) {
                Cost::Quick => None,
                Cost::Disk => Some(Lane::Disk),
                Cost::Cpu => Some(Lane::Cpu),
                Cost::Listing => (!self.state.routes().lists_quickly()).then_some(Lane::Cpu),
            };
            match lane {
                None => {
                    let handles = &self.server.handles;
                    let who = (
                        self.conn,
                        self.peer,
                        &handles.auth,
                        handles.controller.as_ref(),
                    );
                    let line = self.outbound.line();
                    handle_request(table, &self.state, who, line, Instant::now(), request)
                }
                Some(lane) => {
                    let (state, conn, peer) = (self.state.clone(), self.conn, self.peer);
                    let auth = self.server.handles.auth.clone();
                    let controller = self.server.handles.controller.clone();
                    let line = self.outbound.line().clone();
                    self.offloaded(lane, move |now| {
                        let who = (conn, peer, &auth, controller.as_ref());
                        handle_request(table, &state, who, &line, now, request)
                    })
                    .await?
                }
            }
        };
        Ok(served)
    }

    /// Runs `job` in `lane` of the blocking pool, unless the budget closes the connection
    /// first: its buffers are then freed at once, not after its turn in the lane.
    ///
    /// Boxed: the job (with its request) and the lane's wait are needed only while it runs,
    /// and must not be part of every connection's task, idle or not, for its whole life. A
    /// request that runs on the blocking pool costs far more than this allocation.
    async fn offloaded<T: Send + 'static>(
        &self,
        lane: Lane,
        job: impl FnOnce(Instant) -> T + Send + 'static,
    ) -> Result<T, End> {
        let run = Box::pin(self.server.offload.run(lane, job));
        tokio::select! {
            done = run => done.ok_or(End::Cancelled),
            _ = self.holding.closed() => Err(End::Evicted),
        }
    }

    /// Writes all of `output`, giving up if the peer reads nothing for the idle timeout or
    /// the buffer budget closes the connection.
    async fn write_or_idle(
        &self,
        io: &mut Io,
        output: &mut BytesMut,
        mut sleep: std::pin::Pin<&mut Sleep>,
    ) -> Result<(), End> {
        while !output.is_empty() {
            tokio::select! {
                written = io.write_buf(output) => match written {
                    Ok(0) => return Err(End::Eof),
                    Ok(n) => {
                        self.state.metrics().sent(n);
                        if let Some(d) = self.idle {
                            sleep.as_mut().reset(Instant::now() + d);
                        }
                    }
                    Err(e) => return Err(End::Io(e)),
                },
                _ = self.holding.closed() => return Err(End::Evicted),
                _ = &mut sleep => return Err(End::Idle),
            }
        }
        // TLS: what the session still holds must reach the socket too.
        tokio::select! {
            flushed = io.flush() => flushed.map_err(End::Io),
            _ = self.holding.closed() => Err(End::Evicted),
            _ = &mut sleep => Err(End::Idle),
        }
    }
}

/// Handles one request: its response (if any), and whether it registered a broker on the
/// connection. A response to a request the server sent on `line` goes to its waiter; any
/// other frame is dispatched (which drops stray responses).
fn handle_request(
    table: &RequestTable,
    state: &Namesrv,
    (conn, peer, auth, controller): (ConnId, SocketAddr, &Gate, Option<&Controller>),
    line: &Line,
    now: Instant,
    request: RemotingCommand,
) -> Served {
    let request = match request.is_response() {
        true => match line.deliver(request) {
            Ok(()) => return Served::default(),
            Err(unmatched) => unmatched,
        },
        false => request,
    };
    let ctx = Context::new(state, conn, peer, now).with_controller(controller);
    dispatch(table, &ctx, &request, auth)
}

/// Reads whatever the peer already sent, without waiting for more (and at most a few
/// megabytes, so a peer that keeps sending cannot hold shutdown up).
fn drain(io: &mut Io, input: &mut BytesMut) {
    const DRAIN_LIMIT: usize = 8 * 1024 * 1024;
    while input.len() < DRAIN_LIMIT {
        match io.try_read_buf(input, READ_CHUNK) {
            Ok(n) if n > 0 => continue,
            _ => return,
        }
    }
}
