//! The accept loop (mini-redis's `Listener`): accepts remoting connections under the
//! connection cap, runs each on the tracker (prelude, then frames), and at shutdown keeps
//! accepting what the kernel already queued until the queue has been quiet for a moment.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::{Server, connection, handover};
use crate::dispatch::RequestTable;
use crate::log_limit::LogLimit;
use crate::metrics::Refusal;
use crate::state::{ConnId, Namesrv, Phase};

/// Open connections, so that the expiry scan can close a broker's connection.
#[derive(Default)]
pub(super) struct Connections(Mutex<HashMap<ConnId, CancellationToken>>);

impl Connections {
    /// Closes `conn`, if it is still open.
    pub(super) fn close(&self, conn: ConnId) {
        if let Some(token) = self.0.lock().get(&conn) {
            token.cancel();
        }
    }
}

/// The remoting listener and what each accepted connection is given.
pub(super) struct Listener {
    pub(super) listener: TcpListener,
    /// What its connections are served by.
    pub(super) table: &'static RequestTable,
    pub(super) state: Namesrv,
    pub(super) server: Arc<Server>,
    pub(super) connections: Arc<Connections>,
    /// The connection cap: each connection holds one permit.
    pub(super) limit: Arc<Semaphore>,
    pub(super) tracker: TaskTracker,
    pub(super) cancel: CancellationToken,
}

impl Listener {
    /// Accepts until `shutdown` completes, begins the shutdown, and accepts what is still
    /// queued; returns when the listener should close.
    ///
    /// With `enableShutdownGracefully` the server first keeps serving for
    /// `shutdownWaitTimeSeconds`, telling newer clients to go away, as Java does. Then
    /// connections the kernel already queued for this listener are still accepted (and
    /// answered) until none came for [`handover::QUEUE_QUIET`], rather than reset when it
    /// closes; a takeover steers every new one to the new server.
    ///
    /// `stop` completes when shutdown begins, with how long the server keeps serving first.
    pub(super) async fn serve(self, stop: impl Future<Output = Duration>) {
        let mut refusals = LogLimit::new(Duration::from_secs(10));
        tokio::pin!(stop);
        let wait = loop {
            tokio::select! {
                wait = &mut stop => break wait,
                accepted = self.listener.accept() => self.admit(accepted, &mut refusals).await,
            }
        };
        let mut quiet_from = Instant::now() + wait;
        let closing = quiet_from + handover::QUEUE_DRAIN_MAX;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(quiet_from + handover::QUEUE_QUIET) => break,
                _ = tokio::time::sleep_until(closing) => break,
                // Drain began: only a further listener's loop can still be here.
                _ = self.cancel.cancelled() => break,
                accepted = self.listener.accept() => {
                    quiet_from = quiet_from.max(Instant::now());
                    self.admit(accepted, &mut refusals).await;
                }
            }
        }
    }

    /// Runs an accepted connection, unless the cap is reached.
    async fn admit(
        &self,
        accepted: std::io::Result<(TcpStream, SocketAddr)>,
        refusals: &mut LogLimit,
    ) {
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                // Typically out of file descriptors: back off instead of spinning.
                tracing::error!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                return;
            }
        };
        let Ok(permit) = self.limit.clone().try_acquire_owned() else {
            if let Some(suppressed) = refusals.ready() {
                let limit = self.server.config.max_connections;
                tracing::warn!(%peer, limit, refused_since_last_report = suppressed, "connection limit reached: refusing connections");
            }
            self.state.metrics().refused(Refusal::MaxConnections);
            drop(stream);
            return;
        };
        let open = self.state.connection_opened();
        let conn = self.state.next_conn_id();
        let token = self.cancel.child_token();
        self.connections.0.lock().insert(conn, token.clone());
        let (state, server) = (self.state.clone(), self.server.clone());
        let (connections, self_table) = (self.connections.clone(), self.table);
        self.tracker.spawn(async move {
            serve_connection(stream, peer, conn, state, &server, self_table, token).await;
            connections.0.lock().remove(&conn);
            drop((permit, open));
        });
    }
}

/// Moves the state into shutdown and returns how long it keeps serving first: Java's
/// `shutdownWaitTimeSeconds` when `enableShutdownGracefully` is on (newer clients are told to
/// go away meanwhile), except when a new process takes over (its clients wait in its queue
/// meanwhile).
pub(super) fn begin_shutdown(state: &Namesrv) -> Duration {
    let wait = go_away_wait(state);
    state.begin_shutdown();
    if !wait.is_zero() {
        state.go_away();
        tracing::info!(
            ?wait,
            "shutting down gracefully: clients newer than 5.3.1 are told to go away"
        );
    }
    wait
}

/// How long a shutdown starting now keeps serving and answers `GO_AWAY` first.
fn go_away_wait(state: &Namesrv) -> Duration {
    let handing_over = state.phase() == Phase::HandingOver;
    let config = state.config();
    let s = &config.settings;
    if !s.enable_shutdown_gracefully || handing_over {
        return Duration::ZERO;
    }
    s.shutdown_wait_time_seconds.duration()
}

/// One connection: the PROXY header, TLS decision and handshake (`prelude/`), then frames,
/// with the idle timeout read once for both.
async fn serve_connection(
    stream: TcpStream,
    peer: SocketAddr,
    conn: ConnId,
    state: Namesrv,
    server: &Server,
    table: &'static RequestTable,
    token: CancellationToken,
) {
    let idle = state
        .config()
        .settings
        .server_channel_max_idle_time_seconds
        .timeout();
    // The budget counts the connection from here: a prelude holds buffers too.
    let holding = server.budget.open(conn, peer);
    // Boxed: the handshake's state is large and needed only until it is done, so it must not
    // stay in every connection's task for the connection's life.
    let prelude = tokio::select! {
        done = Box::pin(server.handles.prelude.run(stream, peer, idle, &holding, state.metrics())) => done.ok(),
        _ = token.cancelled() => None,
    };
    if let Some((transport, client)) = prelude {
        let serving = connection::Serving {
            state,
            server,
            table,
        };
        connection::serve(transport, client, holding, idle, serving, token).await;
    }
}
