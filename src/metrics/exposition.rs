//! The `/metrics` body: every metric in the Prometheus text format (version 0.0.4), written
//! by prometheus-client's encoder from a collector that reads the counters and the state at
//! scrape time.

use std::collections::BTreeMap;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};
use tokio::time::Instant;

use super::histogram::HistogramSnapshot;
use super::process::ProcessStats;
use super::{
    Eviction, MAX_CLUSTER_SERIES, Metrics, Prelude, Refusal, Registration, RequestClass,
    WriteStats, codes,
};
use crate::auth::{AuthStats, Gate, Reason};
use crate::protocol::body::Name;
use crate::state::Namesrv;

/// The `Content-Type` of the body [`render`] returns.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The metrics of `state` and of the auth gate `auth`, in the Prometheus text format.
pub fn render(state: &Namesrv, auth: &Gate) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape(state.clone(), auth.clone())));
    let mut out = String::with_capacity(16 * 1024);
    prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
        .expect("writing to a String cannot fail");
    out
}

/// One scrape of one server.
#[derive(Debug)]
struct Scrape(Namesrv, Gate);

type Result = std::result::Result<(), std::fmt::Error>;

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> Result {
        let state = &self.0;
        let metrics = state.metrics();
        encode_requests(&mut enc, metrics)?;
        encode_connections(&mut enc, metrics)?;
        encode_state(&mut enc, state)?;
        encode_peers(&mut enc, state)?;
        encode_events(&mut enc, metrics)?;
        encode_preludes(&mut enc, metrics)?;
        if let Some(stats) = self.1.stats() {
            encode_auth(&mut enc, &stats)?;
        }
        encode_process(&mut enc, &ProcessStats::read())
    }
}

fn counter(enc: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: u64) -> Result {
    let c = ConstCounter::new(value);
    c.encode(enc.encode_descriptor(name, help, None, c.metric_type())?)
}

fn bytes_counter(enc: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: u64) -> Result {
    let c = ConstCounter::new(value);
    c.encode(enc.encode_descriptor(name, help, Some(&Unit::Bytes), c.metric_type())?)
}

fn gauge(enc: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: i64) -> Result {
    let g = ConstGauge::new(value);
    g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)
}

/// A counter or gauge with one label, one series per `(label value, value)`.
fn labelled<'a>(
    enc: &mut DescriptorEncoder<'_>,
    (name, help, label): (&str, &str, &str),
    metric_type: MetricType,
    series: impl IntoIterator<Item = (&'a str, u64)>,
) -> Result {
    let mut family = enc.encode_descriptor(name, help, None, metric_type)?;
    for (value, n) in series {
        let labels = [(label, value)];
        let series = family.encode_family(&labels)?;
        match metric_type {
            MetricType::Counter => ConstCounter::new(n).encode(series)?,
            _ => ConstGauge::new(n as i64).encode(series)?,
        }
    }
    Ok(())
}

fn histogram(
    enc: &mut DescriptorEncoder<'_>,
    (name, help): (&str, &str),
    series: &[(Option<(&str, &str)>, HistogramSnapshot)],
) -> Result {
    let mut family =
        enc.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    for (label, h) in series {
        let (sum, count, buckets) = (h.sum_seconds, h.count, &h.buckets);
        match label {
            Some(label) => family
                .encode_family(&[*label])?
                .encode_histogram::<NoLabelSet>(sum, count, buckets, None)?,
            None => family.encode_histogram::<NoLabelSet>(sum, count, buckets, None)?,
        }
    }
    Ok(())
}

fn encode_requests(enc: &mut DescriptorEncoder<'_>, m: &Metrics) -> Result {
    let mut family = enc.encode_descriptor(
        "namesrv_requests",
        "Requests answered, by request code and response code (RocketMQ's lower-cased constant names; codes the server does not know count as other).",
        None,
        MetricType::Counter,
    )?;
    for (req, row) in m.requests.iter().enumerate() {
        for (resp, count) in row.iter().enumerate() {
            let count = super::read(count);
            // Only pairs that occurred: most of the fixed table never does.
            if count > 0 {
                let labels = [
                    ("request_code", codes::request_name(req)),
                    ("response_code", codes::response_name(resp)),
                ];
                ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
            }
        }
    }
    let latency: Vec<_> = RequestClass::ALL
        .iter()
        .map(|&c| (Some(("class", c.name())), m.latency[c as usize].snapshot()))
        .collect();
    histogram(
        enc,
        (
            "namesrv_request_duration",
            "Time from a request's arrival to its response, by request class.",
        ),
        &latency,
    )?;
    bytes_counter(
        enc,
        "namesrv_received",
        "Bytes read from client connections.",
        super::read(&m.received_bytes),
    )?;
    bytes_counter(
        enc,
        "namesrv_sent",
        "Bytes written to client connections.",
        super::read(&m.sent_bytes),
    )
}

fn encode_connections(enc: &mut DescriptorEncoder<'_>, m: &Metrics) -> Result {
    gauge(
        enc,
        "namesrv_connections_open",
        "Client connections open now.",
        m.connections_open(),
    )?;
    counter(
        enc,
        "namesrv_connections_accepted",
        "Client connections accepted.",
        m.connections_accepted(),
    )?;
    labelled(
        enc,
        (
            "namesrv_connections_refused",
            "Client connections closed as soon as they were accepted, by reason.",
            "reason",
        ),
        MetricType::Counter,
        Refusal::ALL
            .iter()
            .map(|&r| (r.name(), super::read(&m.connections_refused[r as usize]))),
    )
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

fn encode_state(enc: &mut DescriptorEncoder<'_>, state: &Namesrv) -> Result {
    let counts = state.routes().counts();
    let (namespaces, entries) = state.kv().counts();
    let ready = state.readiness(Instant::now()).is_empty();
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

fn encode_events(enc: &mut DescriptorEncoder<'_>, m: &Metrics) -> Result {
    labelled(
        enc,
        (
            "namesrv_registrations",
            "REGISTER_BROKER requests: body applied (full), recognised as unchanged, or refused.",
            "outcome",
        ),
        MetricType::Counter,
        Registration::ALL
            .iter()
            .map(|&r| (r.name(), super::read(&m.registrations[r as usize]))),
    )?;
    labelled(
        enc,
        (
            "namesrv_broker_evictions",
            "Brokers removed from the live table, by reason.",
            "reason",
        ),
        MetricType::Counter,
        Eviction::ALL
            .iter()
            .map(|&e| (e.name(), super::read(&m.evictions[e as usize]))),
    )?;
    encode_writes(enc, "kv", "KV store (PUT/DELETE_KV_CONFIG)", &m.kv_writes)?;
    encode_writes(
        enc,
        "config",
        "configuration (UPDATE_NAMESRV_CONFIG)",
        &m.config_writes,
    )
}

fn encode_writes(
    enc: &mut DescriptorEncoder<'_>,
    what: &str,
    desc: &str,
    w: &WriteStats,
) -> Result {
    histogram(
        enc,
        (
            &format!("namesrv_{what}_write_duration"),
            &format!("Time to apply a change to the {desc} durably, including the file sync."),
        ),
        &[(None, w.latency.snapshot())],
    )?;
    counter(
        enc,
        &format!("namesrv_{what}_write_failures"),
        &format!("Changes to the {desc} that could not be written; nothing was changed."),
        super::read(&w.failures),
    )
}

/// TLS handshakes, their failures, mode rejections and PROXY headers.
fn encode_preludes(enc: &mut DescriptorEncoder<'_>, m: &Metrics) -> Result {
    counter(
        enc,
        "namesrv_tls_handshakes",
        "TLS handshakes completed.",
        m.preludes(Prelude::TlsHandshake),
    )?;
    labelled(
        enc,
        (
            "namesrv_handshake_failures",
            "Connections closed during their TLS or PROXY handshake, by reason.",
            "reason",
        ),
        MetricType::Counter,
        Prelude::FAILURES
            .iter()
            .map(|&(p, label)| (label, m.preludes(p))),
    )?;
    labelled(
        enc,
        (
            "namesrv_tls_mode_rejections",
            "Connections closed for tls.server.mode: TLS while disabled, plaintext while enforcing.",
            "reason",
        ),
        MetricType::Counter,
        Prelude::MODE_REJECTIONS
            .iter()
            .map(|&(p, label)| (label, m.preludes(p))),
    )?;
    counter(
        enc,
        "namesrv_proxy_headers",
        "PROXY protocol headers accepted (the client address they carry is used).",
        m.preludes(Prelude::ProxyHeader),
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

fn encode_process(enc: &mut DescriptorEncoder<'_>, p: &ProcessStats) -> Result {
    if let Some(cpu) = p.cpu_seconds {
        let c = ConstCounter::new(cpu);
        c.encode(enc.encode_descriptor(
            "process_cpu",
            "Total user and system CPU time spent.",
            Some(&Unit::Seconds),
            c.metric_type(),
        )?)?;
    }
    let gauges: [(&str, &str, Option<Unit>, Option<f64>); 6] = [
        (
            "process_resident_memory",
            "Resident memory size.",
            Some(Unit::Bytes),
            p.resident_bytes.map(|v| v as f64),
        ),
        (
            "process_virtual_memory",
            "Virtual memory size.",
            Some(Unit::Bytes),
            p.virtual_bytes.map(|v| v as f64),
        ),
        (
            "process_open_fds",
            "Open file descriptors.",
            None,
            p.open_fds.map(|v| v as f64),
        ),
        (
            "process_max_fds",
            "Limit on open file descriptors.",
            None,
            p.max_fds.map(|v| v as f64),
        ),
        (
            "process_threads",
            "OS threads.",
            None,
            p.threads.map(|v| v as f64),
        ),
        (
            "process_start_time",
            "Start time of the process since the Unix epoch.",
            Some(Unit::Seconds),
            p.start_time_seconds,
        ),
    ];
    for (name, help, unit, value) in gauges {
        if let Some(value) = value {
            let g = ConstGauge::new(value);
            g.encode(enc.encode_descriptor(name, help, unit.as_ref(), g.metric_type())?)?;
        }
    }
    Ok(())
}
