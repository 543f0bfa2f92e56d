//! The Prometheus text (version 0.0.4) of the counters recorded here: each function writes
//! its metric families into an encoder the caller owns, so that the `/metrics` body
//! (`crate::http`'s exposition) can put the state's gauges between them in a fixed order.
//! The writing helpers are shared with it, so every family is written the same way.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

use super::histogram::HistogramSnapshot;
use super::process::ProcessStats;
use super::{
    Eviction, LatencyClass, Metrics, PreludeOutcome, Refusal, RegistrationOutcome, WriteStats,
    codes,
};

/// What writing a family returns.
pub(crate) type Result = std::result::Result<(), std::fmt::Error>;

/// A counter without labels.
pub(crate) fn counter(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: u64,
) -> Result {
    let c = ConstCounter::new(value);
    c.encode(enc.encode_descriptor(name, help, None, c.metric_type())?)
}

/// A counter of bytes without labels.
fn bytes_counter(enc: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: u64) -> Result {
    let c = ConstCounter::new(value);
    c.encode(enc.encode_descriptor(name, help, Some(&Unit::Bytes), c.metric_type())?)
}

/// A gauge without labels.
pub(crate) fn gauge(enc: &mut DescriptorEncoder<'_>, name: &str, help: &str, value: i64) -> Result {
    let g = ConstGauge::new(value);
    g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)
}

/// A counter or gauge with one label, one series per `(label value, value)`.
pub(crate) fn labelled<'a>(
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

/// A histogram, one series per `(label, snapshot)` (`None`: no label).
fn histogram(
    enc: &mut DescriptorEncoder<'_>,
    (name, help): (&str, &str),
    series: &[(Option<(&str, &str)>, HistogramSnapshot)],
) -> Result {
    let mut family =
        enc.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    for (label, h) in series {
        let (sum, count, buckets) = (h.sum_seconds, h.count, &per_bucket(&h.buckets));
        match label {
            Some(label) => family
                .encode_family(&[*label])?
                .encode_histogram::<NoLabelSet>(sum, count, buckets, None)?,
            None => family.encode_histogram::<NoLabelSet>(sum, count, buckets, None)?,
        }
    }
    Ok(())
}

/// The counts of each bucket alone, from cumulative ones: prometheus-client's encoder sums the
/// counts it is given, so cumulative ones would be summed twice (a `+Inf` bucket above the
/// count, and every quantile wrong).
fn per_bucket(cumulative: &[(f64, u64)]) -> Vec<(f64, u64)> {
    let mut below = 0;
    cumulative
        .iter()
        .map(|&(bound, at_or_below)| {
            let n = at_or_below - below;
            below = at_or_below;
            (bound, n)
        })
        .collect()
}

/// Requests by code pair, their latency by class, and the bytes read and written.
pub(crate) fn encode_requests(enc: &mut DescriptorEncoder<'_>, m: &Metrics) -> Result {
    let mut family = enc.encode_descriptor(
        "namesrv_requests",
        "Requests answered, by request code and response code (RocketMQ's lower-cased constant names; codes the server does not know count as other).",
        None,
        MetricType::Counter,
    )?;
    for (req, row) in m.requests.iter().enumerate() {
        for (resp, count) in row.iter().enumerate() {
            let count = super::read(count);
            // Only pairs that occurred: most of the fixed table never does. A slot's label is
            // noted before its first count.
            if count > 0
                && let Some(label) = m.request_label(req)
            {
                let labels = [
                    ("request_code", label),
                    ("response_code", codes::response_name(resp)),
                ];
                ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
            }
        }
    }
    let latency: Vec<_> = LatencyClass::ALL
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

/// Connections open, accepted and refused.
pub(crate) fn encode_connections(enc: &mut DescriptorEncoder<'_>, m: &Metrics) -> Result {
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

/// Registrations, evictions and durable writes.
pub(crate) fn encode_events(enc: &mut DescriptorEncoder<'_>, m: &Metrics) -> Result {
    labelled(
        enc,
        (
            "namesrv_registrations",
            "REGISTER_BROKER requests: body applied (full), recognised as unchanged, or refused.",
            "outcome",
        ),
        MetricType::Counter,
        RegistrationOutcome::ALL
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

/// TLS handshakes, their failures, mode rejections, material reloads and PROXY headers.
pub(crate) fn encode_preludes(enc: &mut DescriptorEncoder<'_>, m: &Metrics) -> Result {
    counter(
        enc,
        "namesrv_tls_handshakes",
        "TLS handshakes completed.",
        m.preludes(PreludeOutcome::TlsHandshake),
    )?;
    let reloads = &m.tls_reloads;
    labelled(
        enc,
        (
            "namesrv_tls_reloads",
            "Reloads of the TLS certificate, key and trust files, by outcome (a failed one keeps the previous material).",
            "outcome",
        ),
        MetricType::Counter,
        [
            ("ok", super::read(&reloads.ok)),
            ("failed", super::read(&reloads.failed)),
        ],
    )?;
    gauge(
        enc,
        "namesrv_tls_reload_failing",
        "1 while the last TLS reload failed and the previous material is still served, else 0.",
        i64::from(reloads.failing()),
    )?;
    labelled(
        enc,
        (
            "namesrv_handshake_failures",
            "Connections closed during their TLS or PROXY handshake, by reason.",
            "reason",
        ),
        MetricType::Counter,
        PreludeOutcome::FAILURES
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
        PreludeOutcome::MODE_REJECTIONS
            .iter()
            .map(|&(p, label)| (label, m.preludes(p))),
    )?;
    counter(
        enc,
        "namesrv_proxy_headers",
        "PROXY protocol headers accepted (the client address they carry is used).",
        m.preludes(PreludeOutcome::ProxyHeader),
    )
}

/// The process's CPU, memory, file descriptors and threads, read now.
pub(crate) fn encode_process(enc: &mut DescriptorEncoder<'_>) -> Result {
    let p = &ProcessStats::read();
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use prometheus_client::collector::Collector;
    use prometheus_client::registry::Registry;

    use super::*;

    #[derive(Debug)]
    struct Writes(Metrics);

    impl Collector for Writes {
        fn encode(&self, mut enc: DescriptorEncoder<'_>) -> Result {
            encode_events(&mut enc, &self.0)
        }
    }

    #[test]
    fn histogram_buckets_are_cumulative_once() {
        let m = Metrics::default();
        m.write(crate::metrics::Write::Kv, Duration::from_millis(2), true);
        m.write(crate::metrics::Write::Kv, Duration::from_millis(20), true);
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Writes(m)));
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).unwrap();
        for line in [
            "namesrv_kv_write_duration_seconds_bucket{le=\"0.001\"} 0",
            "namesrv_kv_write_duration_seconds_bucket{le=\"0.0025\"} 1",
            "namesrv_kv_write_duration_seconds_bucket{le=\"0.025\"} 2",
            "namesrv_kv_write_duration_seconds_bucket{le=\"1\"} 2",
            "namesrv_kv_write_duration_seconds_bucket{le=\"+Inf\"} 2",
            "namesrv_kv_write_duration_seconds_count 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
