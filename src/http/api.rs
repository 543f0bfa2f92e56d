//! The JSON API: the status page's data for scripts, under `/api/...`.
//!
//! Field names follow RocketMQ's JSON (camelCase); durations are milliseconds. A topic's
//! route is the exact body a current client receives for GET_ROUTEINFO_BY_TOPIC. Clusters,
//! brokers and topic searches come from the cached overview, at most a second old
//! ([`super::views`]). The controller's JSON is `super::controller::api`'s.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::{App, readiness, visible_config, with_overview};
use crate::handlers::route::{RouteOptions, lookup};
use crate::metrics::{Eviction, LatencyClass, RegistrationOutcome};
use crate::protocol::code::version;
use crate::protocol::json::JsonStyle;
use crate::state::history::sample::{ALL_CLASSES, Sample};
use crate::state::history::{HistoryView, SAMPLE_EVERY};
use crate::state::route_table::overview::{BrokerView, GroupView, find_topics};

/// Topic searches list at most this many names unless `limit` says fewer.
pub(super) const MAX_TOPICS_LISTED: usize = 1000;

fn not_found(what: String) -> Response {
    (StatusCode::NOT_FOUND, Json(json!({ "error": what }))).into_response()
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A broker as JSON, with its group and cluster.
fn broker_json(cluster: &str, group: &GroupView, b: &BrokerView) -> Value {
    let mut v = json!({
        "cluster": cluster,
        "brokerName": &*group.name,
        "brokerId": b.id,
        "addr": &*b.addr,
        "live": b.live.is_some(),
    });
    if let Some(live) = &b.live {
        let extra = json!({
            "version": live.version,
            "versionName": version::name(live.version),
            "dataVersion": {
                "counter": live.data_version.counter,
                "stateVersion": live.data_version.state_version,
                "timestamp": live.data_version.timestamp,
            },
            "lastHeartbeatAgeMs": millis(live.last_heartbeat_age),
            "expiresInMs": millis(live.expires_in),
            "timeoutMs": millis(live.timeout),
            "haServerAddr": live.ha_server_addr,
        });
        if let (Value::Object(v), Value::Object(extra)) = (&mut v, extra) {
            v.extend(extra);
        }
    }
    v
}

fn group_json(cluster: &str, g: &GroupView) -> Value {
    json!({
        "brokerName": &*g.name,
        "zoneName": g.zone.as_deref(),
        "enableActingMaster": g.enable_acting_master,
        "topics": g.topics,
        "writableTopics": g.writable_topics,
        "brokers": g.brokers.iter().map(|b| broker_json(cluster, g, b)).collect::<Vec<_>>(),
    })
}

/// `GET /api/status`: readiness and the headline counts.
pub(super) async fn status(State(app): State<App>) -> Json<Value> {
    let now = Instant::now();
    let controller = app.side.controller.as_ref();
    let not_ready: Vec<String> = readiness(&app.state, controller, now)
        .iter()
        .map(ToString::to_string)
        .collect();
    let counts = app.state.routes().counts();
    let (namespaces, entries) = app.state.kv().counts();
    let m = app.state.metrics();
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "remotingAddr": app.remoting.to_string(),
        "uptimeSeconds": now.saturating_duration_since(app.state.started()).as_secs(),
        "ready": not_ready.is_empty(),
        "notReady": not_ready,
        "clusters": counts.broker_groups.len(),
        "brokerGroups": counts.broker_groups.values().sum::<usize>(),
        "liveBrokers": counts.live_brokers.values().sum::<usize>(),
        "topics": counts.topics,
        "connections": {
            "open": m.connections_open(),
            "accepted": m.connections_accepted(),
            "refused": m.connections_refused(),
        },
        "kv": { "namespaces": namespaces, "entries": entries },
        "standaloneController": app.side.standalone,
        "controller": controller.map(super::controller::api::summary_json),
    }))
}

/// `GET /api/controller`: the controller this process runs; 404 when it runs none.
pub(super) async fn controller(State(app): State<App>) -> Response {
    match &app.side.controller {
        Some(c) => Json(super::controller::api::controller_json(c)).into_response(),
        None => not_found("this process runs no controller".to_owned()),
    }
}

/// `GET /api/clusters`: clusters → broker groups → brokers.
pub(super) async fn clusters(State(app): State<App>) -> Response {
    with_overview(app, |_, overview| {
        let clusters: Vec<Value> = (overview.clusters.iter())
            .map(|c| {
                json!({
                    "clusterName": &*c.name,
                    "brokerGroups": c.groups.iter().map(|g| group_json(&c.name, g)).collect::<Vec<_>>(),
                })
            })
            .collect();
        Json(Value::Array(clusters)).into_response()
    })
    .await
}

/// `GET /api/brokers`: every broker, flat.
pub(super) async fn brokers(State(app): State<App>) -> Response {
    with_overview(app, |_, overview| {
        let mut out = Vec::new();
        for c in &overview.clusters {
            for g in &c.groups {
                out.extend(g.brokers.iter().map(|b| broker_json(&c.name, g, b)));
            }
        }
        Json(Value::Array(out)).into_response()
    })
    .await
}

/// The query of `GET /api/topics`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct TopicSearch {
    /// Part of the topic name (any case); all topics when absent.
    #[serde(default)]
    q: String,
    /// Most names to list (at most [`MAX_TOPICS_LISTED`]).
    limit: Option<usize>,
}

/// `GET /api/topics?q=PART&limit=N`: topic names containing `q`, sorted.
pub(super) async fn topics(State(app): State<App>, Query(search): Query<TopicSearch>) -> Response {
    let limit = search.limit.unwrap_or(100).min(MAX_TOPICS_LISTED);
    with_overview(app, move |_, overview| {
        let (found, total) = find_topics(&overview.topics, &search.q, limit);
        let names: Vec<&str> = found.iter().map(|n| &**n).collect();
        Json(json!({ "total": total, "topics": names })).into_response()
    })
    .await
}

/// The route of `topic` as a current client sees it (standard JSON, no zone filter).
pub(super) fn client_route(app: &App, topic: &str) -> Option<bytes::Bytes> {
    let options = RouteOptions::from_settings(&app.state.config().settings);
    lookup(&app.state, topic, JsonStyle::Standard, None, options)
}

/// `GET /api/topics/{topic}/route`.
pub(super) async fn route(State(app): State<App>, Path(topic): Path<String>) -> Response {
    match client_route(&app, &topic) {
        Some(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        None => not_found(format!("no route for topic {topic:?}")),
    }
}

/// `GET /api/kv`: namespaces and their key counts.
pub(super) async fn kv_namespaces(State(app): State<App>) -> Json<Value> {
    let namespaces: Vec<Value> = (app.state.kv().overview(0).into_iter())
        .map(|ns| json!({ "namespace": ns.namespace, "keys": ns.keys }))
        .collect();
    Json(Value::Array(namespaces))
}

/// `GET /api/kv/{namespace}`: a namespace's entries.
pub(super) async fn kv_namespace(
    State(app): State<App>,
    Path(namespace): Path<String>,
) -> Response {
    match app.state.kv().namespace(&namespace) {
        Some(entries) => {
            Json(json!({ "namespace": namespace, "entries": entries })).into_response()
        }
        None => not_found(format!("no KV namespace {namespace:?}")),
    }
}

/// `GET /api/config`: the effective configuration, secrets hidden.
pub(super) async fn config(State(app): State<App>) -> Json<Value> {
    let config: serde_json::Map<String, Value> = visible_config(&app.state)
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    Json(Value::Object(config))
}

/// `GET /api/history`: the samples behind the page's trends, both tiers, oldest first.
pub(super) async fn history(State(app): State<App>) -> Json<Value> {
    let history = app.state.history();
    let now = Instant::now().saturating_duration_since(app.state.started());
    let view = history.view();
    Json(json!({
        "uptimeSeconds": now.as_secs(),
        "sampleEverySeconds": SAMPLE_EVERY.as_secs(),
        "memoryBytes": history.memory_bytes(),
        "clusters": view.clusters.iter().map(|c| &**c).collect::<Vec<_>>(),
        "tenSeconds": samples_json(&view, &view.fine, now),
        "oneMinute": samples_json(&view, &view.coarse, now),
    }))
}

fn samples_json(view: &HistoryView, samples: &[Sample], now: std::time::Duration) -> Vec<Value> {
    samples.iter().map(|s| sample_json(view, s, now)).collect()
}

/// `v` rounded to three decimals (a microsecond of latency, a request per thousand seconds):
/// what an `f32` holds beyond that is noise.
fn thousandths(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Seconds, to the millisecond.
fn seconds(d: std::time::Duration) -> f64 {
    d.as_millis() as f64 / 1000.0
}

fn sample_json(view: &HistoryView, s: &Sample, now: std::time::Duration) -> Value {
    let by_class = |f: &dyn Fn(usize) -> Value| -> serde_json::Map<String, Value> {
        (LatencyClass::ALL.iter())
            .map(|&c| (c.name().to_owned(), f(c as usize)))
            .collect()
    };
    let quantiles = |q: &[f32]| {
        let ms = |v: f32| match v.is_nan() {
            true => Value::Null,
            false => json!(thousandths(f64::from(v))),
        };
        let mut m = by_class(&|c| ms(q[c]));
        m.insert("all".to_owned(), ms(q[ALL_CLASSES]));
        m
    };
    let live: serde_json::Map<String, Value> = (view.clusters.iter().enumerate())
        .map(|(slot, c)| (c.to_string(), json!(s.gauges.live[slot])))
        .collect();
    json!({
        "ageSeconds": seconds(now.saturating_sub(s.end)),
        "endUptimeSeconds": seconds(s.end),
        "spanSeconds": seconds(s.span),
        "requestsPerSecond": by_class(&|c| {
            json!(thousandths(s.per_second(s.requests[c]).unwrap_or(0.0)))
        }),
        "latencyMs": { "p50": quantiles(&s.p50_ms), "p99": quantiles(&s.p99_ms) },
        "liveBrokers": { "total": s.gauges.live_total, "byCluster": live },
        "registrations": (RegistrationOutcome::ALL.iter())
            .map(|&r| (r.name().to_owned(), json!(s.registrations[r as usize])))
            .collect::<serde_json::Map<_, _>>(),
        "evictions": (Eviction::ALL.iter())
            .map(|&e| (e.name().to_owned(), json!(s.evictions[e as usize])))
            .collect::<serde_json::Map<_, _>>(),
        "connections": s.gauges.connections,
        "residentBytes": (s.gauges.rss_kib > 0).then(|| u64::from(s.gauges.rss_kib) * 1024),
    })
}
