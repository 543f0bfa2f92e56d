//! The TCP server: the accept loop with its connection cap, one task per connection, the
//! broker-expiry scan, and graceful shutdown.
//!
//! Every task is spawned on one [`TaskTracker`] and stops when one [`CancellationToken`]
//! fires. [`run`] returns after the shutdown future completes and the tasks have drained, or
//! after the grace period, whichever is first.

mod budget;
mod config_reload;
mod connection;
pub mod handover;
mod io;
pub(crate) mod offload;
pub mod outbound;
mod port_owner;
pub mod prelude;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::{self, Gate};
use crate::config::Settings;
use crate::log_limit::LogLimit;
use crate::metrics::Refusal;
use crate::protocol::{FrameLimits, SerializeType};
use crate::reload::Reload;
use crate::state::snapshot::Reason;
use crate::state::snapshot::task::{self as snapshots, SnapshotConfig};
use crate::state::{ConnId, Namesrv, housekeeping};
pub use handover::bind;
use prelude::Prelude;

/// Server behaviour fixed at start-up.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Frame size limit.
    pub frame_limits: FrameLimits,
    /// Most connections held at once.
    pub max_connections: usize,
    /// Most response bytes buffered for one connection before it stops being read.
    pub max_queued_response_bytes: usize,
    /// Most bytes buffered for all connections together (`maxBufferedBytes`).
    pub max_buffered_bytes: usize,
    /// How long shutdown waits for connections to finish their requests.
    pub grace_period: Duration,
    /// Period of the broker-expiry scan.
    pub scan_interval: Duration,
    /// Header encoding of responses.
    pub serialize_type: SerializeType,
    /// The auth gate every request passes (off unless `authMode` says otherwise; see
    /// [`Gate::load`]).
    pub auth: Gate,
    /// Reload requests (SIGHUP); background tasks that re-read files subscribe to it.
    pub reload: Reload,
    /// Route snapshots (warm restart), if on.
    pub snapshot: Option<SnapshotConfig>,
    /// PROXY header, TLS decision and handshake of each connection. Plaintext only as built
    /// by [`ServerConfig::from_settings`]; `main` (and the tests) set it with
    /// [`Prelude::load`], which reads the `tls.*` keys.
    pub prelude: Prelude,
    /// Requests the server sends to its connected clients; the caller keeps a clone.
    pub outbound: outbound::Outbound,
}

impl ServerConfig {
    /// The server configuration for `settings`; the response encoding comes from
    /// `ROCKETMQ_SERIALIZE_TYPE` as in Java (JSON when unset).
    pub fn from_settings(s: &Settings, serialize_type: SerializeType) -> ServerConfig {
        ServerConfig {
            frame_limits: FrameLimits {
                max_frame_length: s.frame_max_length as usize,
            },
            max_connections: s.max_connections as usize,
            max_queued_response_bytes: s.max_queued_response_bytes as usize,
            max_buffered_bytes: s.max_buffered_bytes as usize,
            grace_period: Duration::from_millis(s.shutdown_grace_period_millis as u64),
            scan_interval: Duration::from_millis(s.scan_not_active_broker_interval as u64),
            serialize_type,
            auth: Gate::off(),
            reload: Reload::new(),
            snapshot: SnapshotConfig::from_settings(s),
            prelude: Prelude::new(
                crate::tls::ServerMode::Disabled,
                None,
                prelude::AllowList::parse(&s.proxy_protocol_allowed_addresses)
                    .expect("validated with the settings"),
                Duration::from_millis(s.handshake_timeout_millis as u64),
            ),
            outbound: outbound::Outbound::new(),
        }
    }
}

/// The sockets [`run`] serves: the remoting port and, when configured, the HTTP side door.
#[derive(Debug)]
pub struct Listeners {
    /// The RocketMQ remoting port.
    pub remoting: TcpListener,
    /// The HTTP listener (metrics, health, status page, address server), if on.
    pub http: Option<TcpListener>,
}

impl From<TcpListener> for Listeners {
    fn from(remoting: TcpListener) -> Listeners {
        Listeners {
            remoting,
            http: None,
        }
    }
}

/// What every connection task shares: the configuration, the buffer budget and the lanes of
/// the blocking pool.
struct Server {
    config: ServerConfig,
    budget: Arc<budget::Budget>,
    offload: offload::Offload,
    closings: connection::CloseLog,
}

/// Open connections, so that the expiry scan can close a broker's connection.
#[derive(Default)]
struct Connections(Mutex<HashMap<ConnId, CancellationToken>>);

impl Connections {
    fn close(&self, conn: ConnId) {
        if let Some(token) = self.0.lock().get(&conn) {
            token.cancel();
        }
    }
}

/// How long a shutdown starting now keeps serving and answers `GO_AWAY` first: Java's
/// `shutdownWaitTimeSeconds` when `enableShutdownGracefully` is on, except when a new
/// process takes over (its clients wait in its queue meanwhile).
fn go_away_wait(state: &Namesrv) -> Duration {
    let config = state.config();
    let s = &config.settings;
    if !s.enable_shutdown_gracefully || state.handing_over() {
        return Duration::ZERO;
    }
    Duration::from_secs(s.shutdown_wait_time_seconds.max(0) as u64)
}

/// Serves `listeners` until `shutdown` completes, then drains within the grace period. The
/// HTTP side door keeps answering (not ready) until the remoting connections have drained.
pub async fn run(
    listeners: impl Into<Listeners>,
    state: Namesrv,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let Listeners {
        remoting: listener,
        http,
    } = listeners.into();
    let cancel = CancellationToken::new();
    let tracker = TaskTracker::new();
    let connections = Arc::new(Connections::default());
    let server = Arc::new(Server {
        budget: budget::Budget::new(config.max_buffered_bytes),
        offload: offload::Offload::new(),
        closings: connection::CloseLog::default(),
        config,
    });
    let config = &server.config;
    {
        let connections = connections.clone();
        tracker.spawn(housekeeping::run(
            state.clone(),
            config.scan_interval,
            cancel.child_token(),
            move |conn| connections.close(conn),
        ));
    }
    // --- reload on SIGHUP, and the auth accounts that follow it (auth/) ---
    tracker.spawn(
        config
            .reload
            .clone()
            .listen_for_sighup(cancel.child_token()),
    );
    if config.auth.mode() != crate::config::AuthMode::Off {
        tracker.spawn(auth::watch::run(
            config.auth.clone(),
            config.reload.subscribe(),
            cancel.child_token(),
        ));
    }
    // --- Reload (issue 15): the config file follows SIGHUP too. ---
    tracker.spawn(config_reload::run(
        state.clone(),
        config.reload.subscribe(),
        cancel.child_token(),
    ));
    // --- Peer checks (issue 15): divergence from the other name servers. ---
    tracker.spawn(crate::peers::run(state.clone(), cancel.child_token()));
    // --- Warm restart (issue 15): periodic route snapshots. ---
    if let Some(snapshot) = &config.snapshot {
        tracker.spawn(snapshots::run(
            state.clone(),
            snapshot.clone(),
            cancel.child_token(),
        ));
    }
    // --- TLS material follows its files and SIGHUP (tls/) ---
    if let Some(tls) = config.prelude.tls() {
        tracker.spawn(
            tls.clone()
                .watch(config.reload.subscribe(), cancel.child_token()),
        );
    }
    let limit = Arc::new(Semaphore::new(config.max_connections));
    // The HTTP side door stops once shutdown has begun and every connection has drained (all
    // connection permits are back), or when the grace period is over.
    let http_stop = CancellationToken::new();
    if let Some(http) = http {
        let (cancel, hard, limit) = (cancel.clone(), http_stop.clone(), limit.clone());
        let permits = config.max_connections as u32;
        let drained = async move {
            cancel.cancelled().await;
            tokio::select! {
                _ = limit.acquire_many(permits) => {}
                _ = hard.cancelled() => {}
            }
        };
        let remoting = listener.local_addr()?;
        let auth = config.auth.clone();
        tracker.spawn(crate::http::serve(
            http,
            state.clone(),
            remoting,
            auth,
            drained,
        ));
    }
    let mut refusals = LogLimit::new(Duration::from_secs(10));
    tokio::pin!(shutdown);
    // Graceful shutdown and upgrade (issue 15). With `enableShutdownGracefully` the server
    // first keeps serving for `shutdownWaitTimeSeconds`, telling newer clients to go away,
    // as Java does. Then connections the kernel already queued for this listener are still
    // accepted (and answered) until none came for a moment, rather than reset when it
    // closes; a takeover steers every new one to the new server.
    let mut closing = None;
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    let mut quiet_from = far;
    loop {
        tokio::select! {
            _ = &mut shutdown, if closing.is_none() => {
                state.begin_shutdown();
                let wait = go_away_wait(&state);
                if !wait.is_zero() {
                    state.go_away();
                    tracing::info!(?wait, "shutting down gracefully: clients newer than 5.3.1 are told to go away");
                }
                quiet_from = Instant::now() + wait;
                closing = Some(quiet_from + handover::QUEUE_DRAIN_MAX);
                continue;
            }
            _ = tokio::time::sleep_until(quiet_from + handover::QUEUE_QUIET), if closing.is_some() => break,
            _ = tokio::time::sleep_until(closing.unwrap_or(far)) => break,
            accepted = listener.accept() => {
                if closing.is_some() {
                    quiet_from = quiet_from.max(Instant::now());
                }
                let (stream, peer) = match accepted {
                    Ok(pair) => pair,
                    Err(e) => {
                        // Typically out of file descriptors: back off instead of spinning.
                        tracing::error!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let Ok(permit) = limit.clone().try_acquire_owned() else {
                    if let Some(suppressed) = refusals.ready() {
                        tracing::warn!(%peer, limit = config.max_connections, refused_since_last_report = suppressed, "connection limit reached: refusing connections");
                    }
                    state.metrics().refused(Refusal::MaxConnections);
                    drop(stream);
                    continue;
                };
                let open = state.connection_opened();
                let conn = state.next_conn_id();
                let token = cancel.child_token();
                connections.0.lock().insert(conn, token.clone());
                let (state, server, connections) = (state.clone(), server.clone(), connections.clone());
                tracker.spawn(async move {
                    // PROXY header, TLS decision and handshake (prelude/), then frames, with
                    // the idle timeout read once for both.
                    let idle_seconds = state.config().settings.server_channel_max_idle_time_seconds;
                    let idle = (idle_seconds > 0).then(|| Duration::from_secs(idle_seconds as u64));
                    // Boxed: the handshake's state is large and needed only until it is done,
                    // so it must not stay in every connection's task for the connection's life.
                    // The budget counts the connection from here: a prelude holds buffers too.
                    let holding = server.budget.open(conn, peer);
                    let prelude = tokio::select! {
                        done = Box::pin(server.config.prelude.run(stream, peer, idle, &holding, state.metrics())) => done.ok(),
                        _ = token.cancelled() => None,
                    };
                    if let Some((transport, client)) = prelude {
                        connection::serve(transport, client, holding, idle, state, &server, token).await;
                    }
                    connections.0.lock().remove(&conn);
                    drop((permit, open));
                });
            }
        }
    }
    drop(listener);
    tracing::info!("shutting down: no new connections; finishing in-flight requests");
    // Connections closed from here on are the server's doing, not their brokers': the
    // brokers stay in the final snapshot.
    state.freeze_routes();
    cancel.cancel();
    tracker.close();
    if tokio::time::timeout(config.grace_period, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            remaining = tracker.len(),
            grace = ?config.grace_period,
            "grace period over: closing the remaining connections"
        );
    }
    if let Some(snapshot) = &config.snapshot
        && snapshots::write_now(&state, snapshot, Reason::Shutdown).await
    {
        tracing::info!(file = %snapshot.path.display(), "route snapshot written");
    }
    http_stop.cancel();
    Ok(())
}
