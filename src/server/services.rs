//! The name server's background services, built in one list ([`list`]): the broker-expiry
//! scan, SIGHUP, the auth accounts watch, the config reload, the peer checks, the route
//! snapshots, the TLS material watch, the history sampler and the HTTP side door (given the
//! controller too, when the process runs one). Each wraps a task that lives with its subject
//! (`state::housekeeping`, `auth::watch`, `peers`, `tls`, `state::history`, `http`…); this
//! file only says what each needs and when it runs.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::listener::Connections;
use super::service::{Service, ServiceFuture};
use super::{Server, config_reload};
use crate::auth::Gate;
use crate::config::AuthMode;
use crate::reload::Reload;
use crate::state::snapshot::task as snapshots;
use crate::state::{Namesrv, history, housekeeping};

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
    let mut services = vec![
        expiry_scan(state, server.config.scan_interval, connections),
        // Turns SIGHUP into reload requests.
        task("sighup", handles.reload.clone(), Reload::listen_for_sighup),
    ];
    if handles.auth.mode() != AuthMode::Off {
        // Re-reads the accounts file on reload requests and when it changes.
        let gate = handles.auth.clone();
        let reloads = handles.reload.subscribe();
        services.push(task(
            "accounts-watch",
            (gate, reloads),
            |(gate, reloads), cancel| crate::auth::watch::run(gate, reloads, cancel),
        ));
    }
    // Re-reads the config file on reload requests.
    let reloads = handles.reload.subscribe();
    services.push(task(
        "config-reload",
        (state.clone(), reloads),
        |(state, reloads), cancel| config_reload::run(state, reloads, cancel),
    ));
    // Compares this server's routes with the other name servers'.
    services.push(task("peer-checks", state.clone(), crate::peers::run));
    if let Some(writer) = &server.snapshots {
        // Writes the route table periodically, for a warm restart.
        let parts = (state.clone(), writer.clone());
        services.push(task("route-snapshots", parts, |(state, writer), cancel| {
            snapshots::run(state, writer, cancel)
        }));
    }
    if let Some(tls) = handles.prelude.tls() {
        // Reloads the TLS material on reload requests and when its files change.
        let parts = (tls.clone(), handles.reload.subscribe(), state.clone());
        services.push(task("tls-watch", parts, |(tls, reloads, state), cancel| {
            tls.watch(reloads, cancel, move |ok| state.metrics().tls_reloaded(ok))
        }));
    }
    if let Some((listener, remoting)) = http {
        // Samples the metrics for the status page's trends, which only the side door shows.
        services.push(task("history", state.clone(), history::run));
        services.push(Box::new(HttpSideDoor {
            listener,
            state: state.clone(),
            remoting,
            auth: handles.auth.clone(),
            side: crate::http::Side {
                controller: handles.controller.clone(),
                // A standalone controller's main listener serves the controller's table.
                standalone: server.table.name == crate::dispatch::CONTROLLER.name,
            },
            limit: limit.clone(),
            permits: server.config.max_connections as u32,
            hard_stop: http_stop.clone(),
        }));
    }
    services
}

/// A service that only hands what it was built with to a task living with its subject
/// (`auth::watch`, `peers`, `tls`…): a name, those parts, and the function to run on them.
struct Task<P, F> {
    name: &'static str,
    parts: P,
    run: F,
}

/// Boxes a [`Task`] running `run(parts, cancel)`.
fn task<P, F, Fut>(name: &'static str, parts: P, run: F) -> Box<dyn Service>
where
    P: Send + Sync + 'static,
    F: FnOnce(P, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Box::new(Task { name, parts, run })
}

impl<P, F, Fut> Service for Task<P, F>
where
    P: Send + Sync + 'static,
    F: FnOnce(P, CancellationToken) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        let Task { parts, run, .. } = *self;
        Box::pin(run(parts, cancel))
    }
}

/// Unregisters brokers silent for too long, and closes their connections.
fn expiry_scan(
    state: &Namesrv,
    interval: Duration,
    connections: &Arc<Connections>,
) -> Box<dyn Service> {
    let parts = (state.clone(), connections.clone());
    task("expiry-scan", parts, move |(state, connections), cancel| {
        housekeeping::run(state, interval, cancel, move |conn| connections.close(conn))
    })
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
    /// The controller the status page, `/api` and `/metrics` show, if the process runs one.
    side: crate::http::Side,
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
            side,
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
        Box::pin(crate::http::serve(
            listener,
            state,
            remoting,
            (auth, side),
            drained,
        ))
    }
}

/// The controller's background work runs as any other service.
impl Service for crate::controller::Background {
    fn name(&self) -> &'static str {
        crate::controller::Background::name(self)
    }

    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
        (*self).run(cancel)
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
        all.extend(["route-snapshots", "history", "http"]);
        assert_eq!(names(|_| {}, true).await, all);
    }
}
