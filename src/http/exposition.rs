//! The `/metrics` body: every metric in the Prometheus text format (version 0.0.4), written
//! by prometheus-client's encoder from a collector that reads the counters and the state at
//! scrape time. The counters' own families are written by [`crate::metrics`]; the state's
//! gauges (routes, KV, eviction protection, peers) and the auth gate's counters are written
//! here, where they are served, so that `metrics` stays a leaf the state can hold; the
//! controller's, when the process runs one, by `super::controller::metrics`.

use std::collections::BTreeMap;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use tokio::time::Instant;

use crate::auth::{AuthStats, Gate, Reason};
use crate::controller::Controller;
use crate::metrics::MAX_CLUSTER_SERIES;
use crate::metrics::exposition::{
    Result, counter, encode_connections, encode_events, encode_preludes, encode_process,
    encode_requests, gauge, labelled,
};
use crate::protocol::body::Name;
use crate::state::Namesrv;

/// The `Content-Type` of the body [`render`] returns.
pub(crate) const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The metrics of `state` and of the auth gate `auth`, in the Prometheus text format.
pub fn render(state: &Namesrv, auth: &Gate) -> String {
    render_with(state, auth, None)
}

/// [`render`], with the `namesrv_controller_*` families of `controller` when the process
/// runs one (and its leader in `namesrv_ready`).
pub fn render_with(state: &Namesrv, auth: &Gate, controller: Option<&Controller>) -> String {
    let mut registry = Registry::default();
    let scrape = Scrape(state.clone(), auth.clone(), controller.cloned());
    registry.register_collector(Box::new(scrape));
    let mut out = String::with_capacity(16 * 1024);
    prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
        .expect("writing to a String cannot fail");
    out
}

/// One scrape of one server, and of the controller it runs.
#[derive(Debug)]
struct Scrape(Namesrv, Gate, Option<Controller>);

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> Result {
        let state = &self.0;
        let metrics = state.metrics();
        encode_requests(&mut enc, metrics)?;
        encode_connections(&mut enc, metrics)?;
        encode_state(&mut enc, state, self.2.as_ref())?;
        encode_peers(&mut enc, state)?;
        encode_events(&mut enc, metrics)?;
        encode_preludes(&mut enc, metrics)?;
        if let Some(stats) = self.1.stats() {
            encode_auth(&mut enc, &stats)?;
        }
        if let Some(controller) = &self.2 {
            super::controller::metrics::encode(&mut enc, &controller.status())?;
        }
        encode_process(&mut enc)
    }
}

/// One value per reported cluster (0 for a cluster without any now), and once the cap is
/// reached, the sum of all other clusters as `_other`.
fn per_cluster<'a>(reported: &'a [Name], values: &BTreeMap<Name, usize>) -> Vec<(&'a str, u64)> {
    let mut out: Vec<(&str, u64)> = reported
        .iter()
        .map(|c| (&**c, values.get(c).copied().unwrap_or(0) as u64))
        .collect();
    if reported.len() >= MAX_CLUSTER_SERIES {
        let other = values
            .iter()
            .filter(|(c, _)| reported.binary_search(c).is_err())
            .map(|(_, &n)| n as u64)
            .sum();
        out.push(("_other", other));
    }
    out
}

fn encode_state(
    enc: &mut DescriptorEncoder<'_>,
    state: &Namesrv,
    controller: Option<&Controller>,
) -> Result {
    let counts = state.routes().counts();
    let (namespaces, entries) = state.kv().counts();
    let ready = super::readiness(state, controller, Instant::now()).is_empty();
    let clusters = state.metrics().clusters_to_report(
        counts
            .live_brokers
            .keys()
            .chain(counts.broker_groups.keys()),
    );
    gauge(
        enc,
        "namesrv_ready",
        "1 when /readyz would answer 200, else 0.",
        ready as i64,
    )?;
    labelled(
        enc,
        (
            "namesrv_live_brokers",
            "Brokers in the live table, by the cluster they registered under.",
            "cluster",
        ),
        MetricType::Gauge,
        per_cluster(&clusters, &counts.live_brokers),
    )?;
    labelled(
        enc,
        (
            "namesrv_broker_groups",
            "Broker groups, by cluster.",
            "cluster",
        ),
        MetricType::Gauge,
        per_cluster(&clusters, &counts.broker_groups),
    )?;
    gauge(
        enc,
        "namesrv_topics",
        "Topics with a route.",
        counts.topics as i64,
    )?;
    gauge(
        enc,
        "namesrv_kv_namespaces",
        "Namespaces in the KV store.",
        namespaces as i64,
    )?;
    gauge(
        enc,
        "namesrv_kv_entries",
        "Keys in the KV store, over all namespaces.",
        entries as i64,
    )?;
    let protection = state.eviction_protection();
    gauge(
        enc,
        "namesrv_eviction_protection_held_brokers",
        "Silent brokers eviction protection keeps in the routes now.",
        protection.held as i64,
    )?;
    counter(
        enc,
        "namesrv_eviction_protection_holds",
        "Holds eviction protection has begun (each a mass silence it did not evict).",
        protection.holds,
    )?;
    counter(
        enc,
        "namesrv_eviction_protection_overdue_evictions",
        "Held brokers evicted anyway after their timeout plus evictionProtectionMaxHoldMillis.",
        protection.overdue_evictions,
    )?;
    counter(
        enc,
        "namesrv_route_cache_hits",
        "Route lookups answered from the encoded-route cache.",
        counts.cache_hits,
    )?;
    counter(
        enc,
        "namesrv_route_cache_misses",
        "Route lookups that encoded the route (first lookup after a change, or zone-filtered).",
        counts.cache_misses,
    )
}

// --- Peer checks (`crate::peers`): one series per configured peer. ---
fn encode_peers(enc: &mut DescriptorEncoder<'_>, state: &Namesrv) -> Result {
    let report = state.peer_report();
    let peers: Vec<_> = report.peers.iter().filter(|p| !p.is_self).collect();
    labelled(
        enc,
        (
            "namesrv_peer_reachable",
            "Whether the last peer check could ask this name server of namesrvPeers (1) or not (0).",
            "peer",
        ),
        MetricType::Gauge,
        peers
            .iter()
            .map(|p| (p.peer.as_str(), u64::from(p.unreachable.is_none()))),
    )?;
    labelled(
        enc,
        (
            "namesrv_peer_divergent_brokers",
            "Brokers registered here that this peer lacks or holds at an older data version, for longer than peerDivergenceAfterMillis.",
            "peer",
        ),
        MetricType::Gauge,
        peers.iter().map(|p| {
            let n = report.divergent.iter().filter(|d| d.peer == p.peer).count();
            (p.peer.as_str(), n as u64)
        }),
    )
}

/// The auth gate's decisions (only when `authMode` is not `off`).
fn encode_auth(enc: &mut DescriptorEncoder<'_>, stats: &AuthStats) -> Result {
    gauge(
        enc,
        "namesrv_auth_accounts",
        "Accounts loaded from the auth accounts file.",
        stats.accounts as i64,
    )?;
    labelled(
        enc,
        (
            "namesrv_auth_refused",
            "Requests refused with NO_PERMISSION (authMode=enforce), by reason.",
            "reason",
        ),
        MetricType::Counter,
        Reason::ALL
            .iter()
            .map(|&r| (r.label(), stats.refused_for(r))),
    )?;
    labelled(
        enc,
        (
            "namesrv_auth_would_refuse",
            "Requests authMode=audit let through that enforce would refuse, by reason.",
            "reason",
        ),
        MetricType::Counter,
        Reason::ALL
            .iter()
            .map(|&r| (r.label(), stats.would_refuse_for(r))),
    )?;
    labelled(
        enc,
        (
            "namesrv_auth_admitted",
            "Requests of a class that needs a signature, let through: signed, or by address.",
            "by",
        ),
        MetricType::Counter,
        [
            ("signature", stats.accepted_signed),
            ("address", stats.accepted_by_address),
        ],
    )?;
    labelled(
        enc,
        (
            "namesrv_auth_http_refused",
            "HTTP requests for the status page and /api refused for want of valid admin credentials (authMode=enforce), by reason.",
            "reason",
        ),
        MetricType::Counter,
        Reason::ALL
            .iter()
            .map(|&r| (r.label(), stats.http_refused_for(r))),
    )?;
    labelled(
        enc,
        (
            "namesrv_auth_reloads",
            "Reloads of the accounts file, by outcome (a failed one keeps the previous accounts).",
            "outcome",
        ),
        MetricType::Counter,
        [("ok", stats.reloads), ("failed", stats.reload_failures)],
    )
}
