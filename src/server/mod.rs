//! The TCP server: the remoting listener with its connection cap, one task per connection,
//! the background services, and graceful shutdown.
//!
//! [`run`] is short on purpose: build the shared [`Server`], start the services
//! (`services`), accept until the shutdown future completes (`listener`), then drain.
//! Every task is spawned on one [`TaskTracker`] and stops when one [`CancellationToken`]
//! fires; [`run`] returns after the tasks have drained, or after the grace period, whichever
//! is first.
//!
//! What the server is given comes in two parts: [`ServerConfig`], plain values from the
//! settings, and [`Handles`], the runtime objects shared with the rest of the process (the
//! auth gate, reload requests, the TLS/PROXY prelude).

mod budget;
mod config_reload;
mod connection;
pub mod handover;
mod io;
mod listener;
pub(crate) use crate::offload;
pub mod outbound;
mod port_owner;
pub mod prelude;
mod service;
mod services;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::Gate;
use crate::config::Settings;
use crate::dispatch::{NAMESRV, RequestTable};
use crate::protocol::{FrameLimits, SerializeType};
use crate::reload::Reload;
use crate::state::Namesrv;
use crate::state::snapshot::Reason;
use crate::state::snapshot::task::{self as snapshots, SnapshotConfig, SnapshotWriter};
pub use handover::bind;
use listener::{Connections, Listener};
use prelude::Prelude;
pub use service::{Service, ServiceFuture};

/// Server behaviour fixed at start-up: plain values, read from the settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Frame size limit.
    pub(crate) frame_limits: FrameLimits,
    /// Most connections held at once.
    pub(crate) max_connections: usize,
    /// Most response bytes buffered for one connection before it stops being read.
    pub(crate) max_queued_response_bytes: usize,
    /// Most bytes buffered for all connections together (`maxBufferedBytes`).
    pub(crate) max_buffered_bytes: usize,
    /// How long shutdown waits for connections to finish their requests.
    pub(crate) grace_period: Duration,
    /// Period of the broker-expiry scan.
    pub(crate) scan_interval: Duration,
    /// Header encoding of responses.
    pub(crate) serialize_type: SerializeType,
    /// Route snapshots (warm restart), if on.
    pub snapshot: Option<SnapshotConfig>,
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
            grace_period: s.shutdown_grace_period_millis.duration(),
            scan_interval: s.scan_not_active_broker_interval.duration(),
            serialize_type,
            snapshot: SnapshotConfig::from_settings(s),
        }
    }
}

/// The runtime objects the server shares with the rest of the process, each built (and its
/// files read) before the server starts.
#[derive(Debug, Clone)]
pub struct Handles {
    /// The auth gate every request passes (off unless `authMode` says otherwise; see
    /// [`Gate::load`]).
    pub auth: Gate,
    /// Reload requests (SIGHUP); background tasks that re-read files subscribe to it.
    pub reload: Reload,
    /// PROXY header, TLS decision and handshake of each connection ([`Prelude::load`] reads
    /// the `tls.*` keys).
    pub prelude: Prelude,
    /// Requests the server sends to its connected clients; the caller keeps a clone.
    pub outbound: outbound::Outbound,
    /// The controller this process also runs (embedded or standalone), whose rows the
    /// controller's request table serves; `None` for a plain name server.
    pub controller: Option<crate::controller::Controller>,
}

impl Handles {
    /// The handles for `auth` and `prelude`, with no reload requested yet.
    pub fn new(auth: Gate, prelude: Prelude) -> Handles {
        Handles {
            auth,
            reload: Reload::new(),
            prelude,
            outbound: outbound::Outbound::new(),
            controller: None,
        }
    }

    /// The handles, serving `controller` too.
    pub fn with_controller(mut self, controller: crate::controller::Controller) -> Handles {
        self.controller = Some(controller);
        self
    }
}

/// The sockets [`run`] serves: the name server's remoting port, further remoting listeners
/// each with its own request table, and, when configured, the HTTP side door.
#[derive(Debug)]
pub struct Listeners {
    /// The RocketMQ remoting port, serving the name server's table.
    pub remoting: TcpListener,
    /// Further remoting listeners (the controller's port, say). They share the connection
    /// cap, the buffer budget, the prelude (TLS, PROXY), the auth gate and the metrics with
    /// `remoting`, and stop accepting when it does.
    pub more: Vec<Remoting>,
    /// The HTTP listener (metrics, health, status page, address server), if on.
    pub http: Option<TcpListener>,
}

/// A remoting listener and the request table its connections are served by.
#[derive(Debug)]
pub struct Remoting {
    /// The socket.
    pub listener: TcpListener,
    /// What its connections are served by.
    pub table: &'static RequestTable,
}

impl From<TcpListener> for Listeners {
    fn from(remoting: TcpListener) -> Listeners {
        Listeners {
            remoting,
            more: Vec::new(),
            http: None,
        }
    }
}

/// What every connection task shares: the configuration and handles, the buffer budget and
/// the lanes of the blocking pool; and, until [`run`] starts them, services the caller adds.
pub struct Server {
    config: ServerConfig,
    handles: Handles,
    budget: Arc<budget::Budget>,
    offload: offload::Offload,
    closings: connection::CloseLog,
    snapshots: Option<SnapshotWriter>,
    extra: Vec<Box<dyn Service>>,
    /// What the main remoting listener serves: the name server's table, or the controller's
    /// in a standalone controller.
    table: &'static RequestTable,
}

impl Server {
    /// A server with `config` and `handles`.
    pub fn new(config: ServerConfig, handles: Handles) -> Server {
        Server {
            budget: budget::Budget::new(config.max_buffered_bytes),
            offload: offload::Offload::new(),
            closings: connection::CloseLog::default(),
            snapshots: config.snapshot.clone().map(SnapshotWriter::new),
            extra: Vec::new(),
            table: &NAMESRV,
            config,
            handles,
        }
    }

    /// Runs `service` beside the server's own, on the same tracker and token (the binary's
    /// allocator trim, say).
    pub fn with_service(mut self, service: impl Service) -> Server {
        self.extra.push(Box::new(service));
        self
    }

    /// Runs every service of `services` beside the server's own (the controller's).
    pub fn with_services(mut self, services: impl IntoIterator<Item = impl Service>) -> Server {
        for service in services {
            self.extra.push(Box::new(service));
        }
        self
    }

    /// The server, its main remoting listener serving `table` rather than the name
    /// server's (a standalone controller serves only [`crate::dispatch::CONTROLLER`]).
    pub fn serving(mut self, table: &'static RequestTable) -> Server {
        self.table = table;
        self
    }
}

/// Serves `listeners` until `shutdown` completes, then drains within the grace period. The
/// HTTP side door keeps answering (not ready) until the remoting connections have drained.
pub async fn run(
    listeners: impl Into<Listeners>,
    state: Namesrv,
    mut server: Server,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let Listeners {
        remoting,
        more,
        http,
    } = listeners.into();
    let (cancel, tracker) = (CancellationToken::new(), TaskTracker::new());
    let connections = Arc::new(Connections::default());
    let limit = Arc::new(Semaphore::new(server.config.max_connections));
    let http_stop = CancellationToken::new();
    // The address server and status page show the bound remoting address.
    let http = match http {
        Some(listener) => Some((listener, remoting.local_addr()?)),
        None => None,
    };
    let extra = std::mem::take(&mut server.extra);
    let mut background = services::list(services::Parts {
        state: &state,
        server: &server,
        connections: &connections,
        limit: &limit,
        http,
        http_stop: &http_stop,
    });
    background.extend(extra);
    service::start(background, &tracker, &cancel);
    let server = Arc::new(server);
    let listener = |listener, table| Listener {
        listener,
        table,
        state: state.clone(),
        server: server.clone(),
        connections: connections.clone(),
        limit: limit.clone(),
        tracker: tracker.clone(),
        cancel: cancel.clone(),
    };
    // The name server's listener decides when accepting stops; the others follow it, with
    // the same wait.
    let (stopping, stopped) = tokio::sync::watch::channel(None);
    for more in more {
        let mut stopped = stopped.clone();
        let until = async move {
            match stopped.wait_for(Option::is_some).await {
                Ok(wait) => wait.unwrap_or_default(),
                Err(_) => Duration::ZERO,
            }
        };
        tracker.spawn(listener(more.listener, more.table).serve(until));
    }
    let until = async {
        shutdown.await;
        let wait = listener::begin_shutdown(&state);
        stopping.send_replace(Some(wait));
        wait
    };
    let table = server.table;
    listener(remoting, table).serve(until).await;
    drain(&state, &server, &cancel, &tracker).await;
    http_stop.cancel();
    Ok(())
}

/// After the listener closed: freezes the routes, stops every task and waits for them within
/// the grace period, then writes the final route snapshot.
async fn drain(
    state: &Namesrv,
    server: &Server,
    cancel: &CancellationToken,
    tracker: &TaskTracker,
) {
    tracing::info!("shutting down: no new connections; finishing in-flight requests");
    // Connections closed from here on are the server's doing, not their brokers': the
    // brokers stay in the final snapshot.
    state.freeze_routes();
    cancel.cancel();
    tracker.close();
    let grace = server.config.grace_period;
    if tokio::time::timeout(grace, tracker.wait()).await.is_err() {
        tracing::warn!(
            remaining = tracker.len(),
            grace = ?grace,
            "grace period over: closing the remaining connections"
        );
    }
    if let Some(writer) = &server.snapshots
        && snapshots::write_now(state, writer, Reason::Shutdown).await
    {
        tracing::info!(file = %writer.config().path.display(), "route snapshot written");
    }
}
