//! The HTTP side door: Prometheus metrics, health and readiness probes, the status page, a
//! JSON API and the address server Java clients poll — one listener, separate from the
//! remoting port, off unless `httpListenPort` is set.
//!
//! It runs as one task under the server's tracker ([`crate::server::run`] spawns `serve`)
//! and only *reads* the shared state through the [`Namesrv`] handle: every route is a `GET`,
//! so no endpoint can change anything. It keeps answering while the remoting connections
//! drain at shutdown, so `/readyz` reports the drain instead of refusing connections. When
//! the process runs the controller (embedded or standalone), the page, `/api/controller`,
//! `/metrics` and `/readyz` show it too (`controller`).
//!
//! Routes split in two groups: the open ones that probes, Prometheus and Java clients need
//! (`/healthz`, `/readyz`, `/metrics`, `/rocketmq/...`) and the operator ones (`/` and
//! `/api/...`). When `authMode=enforce`, the operator group asks for the credentials of an
//! admin account of the auth accounts file, as HTTP Basic authentication (`access`).
//!
//! No client can keep the probes out: connections are bounded in number, per client and in
//! time, with a reserve served probe-only (`listener`); the operator views read a cached
//! overview and do their work on the blocking pool (`views`), so they never hold up route
//! lookups or the runtime's workers. Every answer says it must not be framed or sniffed, and
//! the page carries a Content-Security-Policy of its own (`page`).

mod access;
mod api;
mod chart;
mod controller;
mod deadline;
pub mod exposition;
mod health;
mod html;
mod limits;
mod listener;
mod nsaddr;
mod page;
mod throttle;
mod trends;
mod views;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use parking_lot::Mutex;
use tokio::net::TcpListener;

use crate::auth::Gate;
use crate::config::Settings;
use crate::log_limit::LogLimit;
use crate::state::Namesrv;
use crate::state::readiness::NotReady;
pub(crate) use controller::Side;
pub(crate) use listener::Peer;
pub use listener::{
    HEADER_READ_TIMEOUT, MAX_CONNECTIONS, MAX_CONNECTIONS_PER_CLIENT, WRITE_TIMEOUT,
};

/// What every handler gets.
#[derive(Debug, Clone)]
struct App {
    state: Namesrv,
    /// Where the remoting listener is bound (the address server's default answer).
    remoting: SocketAddr,
    /// The request gate, whose accounts guard the operator routes when enforced.
    auth: Gate,
    /// The controller this process runs, if any, and whether it runs alone.
    side: Side,
    /// The operator views' cached overview and blocking-pool lane.
    views: Arc<views::Views>,
    /// Recent wrong credentials, by client.
    failures: Arc<throttle::Failures>,
    /// When the next refused-credentials line may be written; a short lock.
    refusal_log: Arc<Mutex<LogLimit>>,
}

/// Binds the HTTP listener as `httpBindAddress`/`httpListenPort` say, or `None` when
/// `httpListenPort` is 0.
pub async fn bind(s: &Settings) -> std::io::Result<Option<TcpListener>> {
    if s.http_listen_port == 0 {
        return Ok(None);
    }
    let addr = (s.http_bind_address.as_str(), s.http_listen_port as u16);
    TcpListener::bind(addr).await.map(Some)
}

/// Serves HTTP on `listener` until `stop` completes; `remoting` is the bound remoting
/// address, `auth` the remoting port's gate (its accounts guard the operator routes), `side`
/// the controller shown beside the name server.
pub(crate) async fn serve(
    listener: TcpListener,
    state: Namesrv,
    remoting: SocketAddr,
    (auth, side): (Gate, Side),
    stop: impl Future<Output = ()> + Send + 'static,
) {
    let local = listener.local_addr().ok();
    tracing::info!(address = ?local, "HTTP listener (metrics, status page, address server) up");
    let app = App {
        state,
        remoting,
        auth,
        side,
        views: Arc::default(),
        failures: Arc::default(),
        refusal_log: Arc::new(Mutex::new(LogLimit::new(access::REFUSAL_LOG_INTERVAL))),
    };
    let routers = listener::Routers {
        full: router(app.clone()),
        probes: probe_router(app),
    };
    listener::serve(listener, routers, stop).await;
    tracing::info!("HTTP listener stopped");
}

fn router(app: App) -> Router {
    let open = probes()
        .route("/metrics", get(metrics))
        .route("/rocketmq/{subgroup}", get(nsaddr::nsaddr));
    let routes = open.merge(operator_routes(&app)).fallback(not_found);
    finish(routes, app)
}

/// What a probe-only connection serves ([`listener`]): the probes, and a 503 for the rest.
fn probe_router(app: App) -> Router {
    finish(probes().fallback(busy), app)
}

/// The probes, which every connection is answered on.
fn probes() -> Router<App> {
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
}

/// What every response gets (the security headers), and the state.
fn finish(routes: Router<App>, app: App) -> Router {
    routes
        .layer(axum::middleware::map_response(security_headers))
        .with_state(app)
}

async fn busy() -> Response {
    let mut response = text(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy: too many HTTP connections, from this address or in all; only /healthz and \
         /readyz are answered until some close\n",
    );
    let retry = HeaderValue::from_static("1");
    response.headers_mut().insert(header::RETRY_AFTER, retry);
    response
}

/// Headers every answer carries: nothing here is to be framed, sniffed as another type, or
/// given away in a `Referer`; a handler's own policy (the page's) takes precedence over the
/// default one, which allows nothing.
async fn security_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(
            "default-src 'none'; frame-ancestors 'none'",
        ));
    response
}

/// The status page and the JSON API, behind the credential check (which lets everything
/// through unless authentication is enforced).
fn operator_routes(app: &App) -> Router<App> {
    Router::new()
        .route("/", get(page::status_page))
        .route("/api/status", get(api::status))
        .route("/api/clusters", get(api::clusters))
        .route("/api/brokers", get(api::brokers))
        .route("/api/topics", get(api::topics))
        .route("/api/topics/{topic}/route", get(api::route))
        .route("/api/kv", get(api::kv_namespaces))
        .route("/api/kv/{namespace}", get(api::kv_namespace))
        .route("/api/config", get(api::config))
        .route("/api/history", get(api::history))
        .route("/api/controller", get(api::controller))
        .route_layer(axum::middleware::from_fn_with_state(
            app.clone(),
            access::require_admin,
        ))
}

async fn metrics(axum::extract::State(app): axum::extract::State<App>) -> Response {
    let controller = app.side.controller.as_ref();
    let body = exposition::render_with(&app.state, &app.auth, controller);
    ([(header::CONTENT_TYPE, exposition::CONTENT_TYPE)], body).into_response()
}

async fn not_found() -> Response {
    text(StatusCode::NOT_FOUND, "not found\n")
}

/// Answers with what `view` makes of the current overview, built and rendered on the
/// blocking pool ([`views`]).
async fn with_overview(
    app: App,
    view: impl FnOnce(&App, &views::Overview) -> Response + Send + 'static,
) -> Response {
    let Some(overview) = app.views.overview(&app.state).await else {
        return shutting_down();
    };
    let views = app.views.clone();
    views
        .run(move || view(&app, &overview))
        .await
        .unwrap_or_else(shutting_down)
}

/// Every reason this process is not ready at `now`: the name server's, and on a controller
/// node, not knowing a leader.
fn readiness(
    state: &Namesrv,
    controller: Option<&crate::controller::Controller>,
    now: tokio::time::Instant,
) -> Vec<NotReady> {
    let mut reasons = state.readiness(now);
    reasons.extend(controller.and_then(controller::not_ready));
    reasons
}

/// The answer when the runtime shuts down before a view could be built.
fn shutting_down() -> Response {
    text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
}

/// A plain-text response.
fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

/// Whether a configuration key's value is a secret and must not be shown.
fn is_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "secret",
        "password",
        "passwd",
        "token",
        "credential",
        "privatekey",
    ]
    .iter()
    .any(|s| key.contains(s))
}

/// The effective configuration, secrets replaced by `******`.
fn visible_config(state: &Namesrv) -> Vec<(String, String)> {
    state
        .config()
        .effective_properties()
        .into_iter()
        .map(|(k, v)| {
            let v = if is_secret(&k) && !v.is_empty() {
                "******".to_owned()
            } else {
                v
            };
            (k, v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_keys_are_hidden() {
        for key in [
            "secretKey",
            "aclPassword",
            "authToken",
            "innerClientAuthenticationCredentials",
        ] {
            assert!(is_secret(key), "{key}");
        }
        for key in ["listenPort", "kvConfigPath", "accessKey"] {
            assert!(!is_secret(key), "{key}");
        }
    }
}
