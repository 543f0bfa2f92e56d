//! The name server's background services, built in one list ([`list`]): the broker-expiry
//! scan, SIGHUP, the auth accounts watch, the config reload, the peer checks, the route
//! snapshots, the TLS material watch and the HTTP side door. Each wraps a task that lives
//! with its subject (`state::housekeeping`, `auth::watch`, `peers`, `tls`, `http`…); this
//! file only says what each needs and when it runs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;

use super::listener::Connections;
use super::service::{Service, ServiceFuture};
use super::{Server, config_reload};
use crate::auth::Gate;
use crate::config::AuthMode;
use crate::reload::Reload;
use crate::state::snapshot::task::{self as snapshots, SnapshotWriter};
use crate::state::{Namesrv, housekeeping};
use crate::tls::ServerTls;

/// What the services of one server are built from.
pub(super) struct Parts<'a> {
    pub(super) state: &'a Namesrv,
    pub(super) server: &'a Server,
    pub(super) connections: &'a Arc<Connections>,
    /// The remoting connection cap, whose permits the connections hold.
    pub(super) limit: &'a Arc<Semaphore>,
    /// The HTTP listener, if on, and the bound remoting address it shows.
    pub(super) http: Option<(TcpListener, SocketAddr)>,
    /// Stops the HTTP side door at the end of the grace period.
    pub(super) http_stop: &'a CancellationToken,
}

/// Every background service `parts` call for, in the order they start.
pub(super) fn list(parts: Parts<'_>) -> Vec<Box<dyn Service>> {
    let Parts {
        state,
        server,
        connections,
        limit,
        http,
        http_stop,
    } = parts;
    let handles = &server.handles;
    let mut services: Vec<Box<dyn Service>> = vec![
        Box::new(ExpiryScan {
            state: state.clone(),
            interval: server.config.scan_interval,
            connections: connections.clone(),
        }),
        Box::new(Sighup(handles.reload.clone())),
    ];
    if handles.auth.mode() != AuthMode::Off {
        services.push(Box::new(AccountsWatch {
            gate: handles.auth.clone(),
            reloads: handles.reload.subscribe(),
        }));
    }
    services.push(Box::new(ConfigReload {
        state: state.clone(),
        reloads: handles.reload.subscribe(),
    }));
    services.push(Box::new(PeerChecks(state.clone())));
    if let Some(writer) = &server.snapshots {
        services.push(Box::new(RouteSnapshots {
            state: state.clone(),
            writer: writer.clone(),
        }));
    }
    if let Some(tls) = handles.prelude.tls() {
        services.push(Box::new(TlsWatch {
            tls: tls.clone(),
            reloads: handles.reload.subscribe(),
        }));
    }
    if let Some((listener, remoting)) = http {
        services.push(Box::new(HttpSideDoor {
            listener,
            state: state.clone(),
            remoting,
            auth: handles.auth.clone(),
            limit: limit.clone(),
            permits: server.config.max_connections as u32,
            hard_stop: http_stop.clone(),
        }));
    }
    services
}

/// Unregisters brokers silent for too long, and closes their connections.
struct ExpiryScan {
    state: Namesrv,
    interval: Duration,
    connections: Arc<Connections>,
}

impl Service for ExpiryScan {
    fn name(&self) -> &'static str {
        "expiry-scan"
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        let ExpiryScan {
            state,
            interval,
            connections,
        } = *self;
        Box::pin(housekeeping::run(state, interval, cancel, move |conn| {
            connections.close(conn)
        }))
    }
}

/// Turns SIGHUP into reload requests.
struct Sighup(Reload);

impl Service for Sighup {
    fn name(&self) -> &'static str {
        "sighup"
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        Box::pin(self.0.listen_for_sighup(cancel))
    }
}

/// Re-reads the accounts file on reload requests and when it changes.
struct AccountsWatch {
    gate: Gate,
    reloads: watch::Receiver<u64>,
}

impl Service for AccountsWatch {
    fn name(&self) -> &'static str {
        "accounts-watch"
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        Box::pin(crate::auth::watch::run(self.gate, self.reloads, cancel))
    }
}

/// Re-reads the config file on reload requests.
struct ConfigReload {
    state: Namesrv,
    reloads: watch::Receiver<u64>,
}

impl Service for ConfigReload {
    fn name(&self) -> &'static str {
        "config-reload"
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        Box::pin(config_reload::run(self.state, self.reloads, cancel))
    }
}

/// Compares this server's routes with the other name servers'.
struct PeerChecks(Namesrv);

impl Service for PeerChecks {
    fn name(&self) -> &'static str {
        "peer-checks"
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        Box::pin(crate::peers::run(self.0, cancel))
    }
}

/// Writes the route table periodically, for a warm restart.
struct RouteSnapshots {
    state: Namesrv,
    writer: SnapshotWriter,
}

impl Service for RouteSnapshots {
    fn name(&self) -> &'static str {
        "route-snapshots"
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        Box::pin(snapshots::run(self.state, self.writer, cancel))
    }
}

/// Reloads the TLS material on reload requests and when its files change.
struct TlsWatch {
    tls: ServerTls,
    reloads: watch::Receiver<u64>,
}

impl Service for TlsWatch {
    fn name(&self) -> &'static str {
        "tls-watch"
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        Box::pin(self.tls.watch(self.reloads, cancel))
    }
}

/// The HTTP side door (metrics, health, status page, address server). Unlike the others it
/// outlives the cancel: it keeps answering (not ready) until every remoting connection has
/// drained — all of `limit`'s permits are back — or `hard_stop` fires at the end of the grace
/// period.
struct HttpSideDoor {
    listener: TcpListener,
    state: Namesrv,
    remoting: SocketAddr,
    auth: Gate,
    limit: Arc<Semaphore>,
    /// All of `limit`'s permits.
    permits: u32,
    hard_stop: CancellationToken,
}

impl Service for HttpSideDoor {
    fn name(&self) -> &'static str {
        "http"
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        let HttpSideDoor {
            listener,
            state,
            remoting,
            auth,
            limit,
            permits,
            hard_stop,
        } = *self;
        let drained = async move {
            cancel.cancelled().await;
            tokio::select! {
                _ = limit.acquire_many(permits) => {}
                _ = hard_stop.cancelled() => {}
            }
        };
        Box::pin(crate::http::serve(listener, state, remoting, auth, drained))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::AllowList;
    use crate::config::{Config, Env};
    use crate::kv::KvStore;
    use crate::protocol::SerializeType;
    use crate::server::prelude::Prelude;
    use crate::server::{Handles, ServerConfig};
    use crate::tls::ServerMode;

    /// The names of the services a server with `settings` (as edited by `edit`) runs.
    async fn names(edit: impl FnOnce(&mut Config), http: bool) -> Vec<&'static str> {
        let dir = tempfile::tempdir().unwrap();
        let env = Env {
            home: dir.path().display().to_string(),
            rocketmq_home: None,
        };
        let mut config = Config::defaults(&env);
        edit(&mut config);
        let server_config = ServerConfig::from_settings(&config.settings, SerializeType::Json);
        let prelude = Prelude::new(
            ServerMode::Disabled,
            None,
            AllowList::parse("").unwrap(),
            Duration::from_secs(1),
        );
        let server = Server::new(server_config, Handles::new(Gate::off(), prelude));
        let state = Namesrv::new(config, KvStore::open(dir.path().join("kv.json")).unwrap());
        let http = match http {
            true => {
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                Some((listener, addr))
            }
            false => None,
        };
        let list = list(Parts {
            state: &state,
            server: &server,
            connections: &Arc::default(),
            limit: &Arc::new(Semaphore::new(1)),
            http,
            http_stop: &CancellationToken::new(),
        });
        list.iter().map(|s| s.name()).collect()
    }

    #[tokio::test]
    async fn the_list_holds_what_the_settings_turn_on() {
        let always = ["expiry-scan", "sighup", "config-reload", "peer-checks"];
        let cold = |c: &mut Config| c.settings.restore_routes_on_start = false;
        assert_eq!(names(cold, false).await, always);
        let mut all = always.to_vec();
        all.extend(["route-snapshots", "http"]);
        assert_eq!(names(|_| {}, true).await, all);
    }
}
