//! The status page's trends: the last hour of the in-process history
//! ([`crate::state::history`]) as six charts — requests by class, latency, live brokers by
//! cluster, registrations and evictions, connections, resident memory.
//!
//! Rates are per second, so the one-minute samples of the older part of the hour and the
//! ten-second samples of its last ten minutes read alike on one line. Registrations and
//! evictions are drawn from the one-minute samples only: brokers register every 30 s, which
//! ten-second samples would draw as a comb of zeros and peaks.

use std::time::Duration;

use super::chart::{self, Chart, Series};
use super::html::Html;
use crate::metrics::{LatencyClass, RegistrationOutcome};
use crate::state::history::HistoryView;
use crate::state::history::sample::{ALL_CLASSES, Sample};

/// The id of the chart drawn from the one-minute samples.
const REGISTRATIONS: &str = "chart-registrations";

/// How far back the charts go.
const WINDOW: Duration = Duration::from_secs(3600);

/// Writes the trends section from `history`, `now` being the time since the server started.
pub(super) fn section(h: &mut Html, history: &HistoryView, now: Duration) {
    let samples = history.timeline();
    let ages = |samples: &[Sample]| -> Vec<Duration> {
        samples.iter().map(|s| now.saturating_sub(s.end)).collect()
    };
    let (fine_ages, coarse_ages) = (ages(&samples), ages(&history.coarse));
    h.raw("<section id=\"trends\"><h2>Trends <span class=\"tag\">last hour</span></h2>")
        .raw("<p class=\"empty\">A sample every 10 s for the last 10 minutes, every minute ")
        .raw("before (registrations and evictions: every minute); hover over a chart for its ")
        .raw("values. The same data as JSON: ")
        .raw("<a href=\"/api/history\">/api/history</a>.</p><div class=\"charts\">");
    let charts = [
        requests(&samples),
        latency(&samples),
        live_brokers(history, &samples),
        registrations(&history.coarse),
        connections(&samples),
        memory(&samples),
    ];
    for (id, title, unit, whole, lines) in charts {
        let ages = match id {
            REGISTRATIONS => &coarse_ages,
            _ => &fine_ages,
        };
        let chart = Chart {
            id,
            title,
            unit,
            whole,
            ages,
            window: WINDOW,
            series: lines,
        };
        chart::render(h, &chart);
    }
    h.raw("</div></section>");
}

/// A chart's id, title, unit, whether its values are whole, and its series.
type Charted = (&'static str, &'static str, &'static str, bool, Vec<Series>);

fn series(
    name: impl Into<String>,
    samples: &[Sample],
    value: impl Fn(&Sample) -> Option<f64>,
) -> Series {
    Series {
        name: name.into(),
        values: samples.iter().map(value).collect(),
    }
}

/// Requests per second of each class that had any in the hour (the busiest first).
fn requests(samples: &[Sample]) -> Charted {
    let mut classes: Vec<(u64, LatencyClass)> = LatencyClass::ALL
        .iter()
        .map(|&c| {
            (
                samples
                    .iter()
                    .map(|s| u64::from(s.requests[c as usize]))
                    .sum::<u64>(),
                c,
            )
        })
        .filter(|(total, _)| *total > 0)
        .collect();
    classes.sort_by_key(|&(total, _)| std::cmp::Reverse(total));
    let mut lines: Vec<Series> = (classes.into_iter())
        .map(|(_, c)| series(c.name(), samples, |s| s.per_second(s.requests[c as usize])))
        .collect();
    if lines.is_empty() {
        lines.push(series("all", samples, |s| s.per_second(0)));
    }
    (
        "chart-requests",
        "Requests by class (per second)",
        "req/s",
        false,
        lines,
    )
}

/// Median and 99th percentile over all requests.
fn latency(samples: &[Sample]) -> Charted {
    let ms = |v: f32| (!v.is_nan()).then_some(f64::from(v));
    let lines = vec![
        series("p50", samples, |s| ms(s.p50_ms[ALL_CLASSES])),
        series("p99", samples, |s| ms(s.p99_ms[ALL_CLASSES])),
    ];
    (
        "chart-latency",
        "Latency of all requests (ms)",
        "ms",
        false,
        lines,
    )
}

/// Live brokers of each charted cluster, and of the others together if there are more.
fn live_brokers(history: &HistoryView, samples: &[Sample]) -> Charted {
    let mut lines: Vec<Series> = (history.clusters.iter().enumerate())
        .map(|(slot, name)| series(&**name, samples, |s| Some(f64::from(s.gauges.live[slot]))))
        .collect();
    let rest = |s: &Sample| {
        s.gauges
            .live_total
            .saturating_sub(s.gauges.live.iter().sum())
    };
    if samples.iter().any(|s| rest(s) > 0) {
        lines.push(series("other clusters", samples, |s| {
            Some(f64::from(rest(s)))
        }));
    }
    if lines.is_empty() {
        lines.push(series("all clusters", samples, |s| {
            Some(f64::from(s.gauges.live_total))
        }));
    }
    ("chart-brokers", "Live brokers by cluster", "", true, lines)
}

/// Registrations applied or unchanged, refused ones, and evictions, per minute.
fn registrations(samples: &[Sample]) -> Charted {
    let per_minute = |s: &Sample, n: u32| s.per_second(n).map(|r| r * 60.0);
    let refused = RegistrationOutcome::Refused as usize;
    let accepted = |s: &Sample| s.registrations.iter().sum::<u32>() - s.registrations[refused];
    let lines = vec![
        series("registrations", samples, |s| per_minute(s, accepted(s))),
        series("refused", samples, |s| {
            per_minute(s, s.registrations[refused])
        }),
        series("evictions", samples, |s| {
            per_minute(s, s.evictions.iter().sum())
        }),
    ];
    (
        REGISTRATIONS,
        "Registrations and evictions (per minute)",
        "/min",
        false,
        lines,
    )
}

fn connections(samples: &[Sample]) -> Charted {
    let lines = vec![series("open", samples, |s| {
        Some(f64::from(s.gauges.connections))
    })];
    (
        "chart-connections",
        "Remoting connections open",
        "",
        true,
        lines,
    )
}

fn memory(samples: &[Sample]) -> Charted {
    let mib = |s: &Sample| (s.gauges.rss_kib > 0).then(|| f64::from(s.gauges.rss_kib) / 1024.0);
    let lines = vec![series("resident", samples, mib)];
    ("chart-memory", "Resident memory (MiB)", "MiB", false, lines)
}
