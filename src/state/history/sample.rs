//! One sample of the history and how it is computed: the counters are cumulative, so a
//! sample is the difference between two [`Reading`]s (requests and latency buckets by class,
//! registrations, evictions), plus the gauges as they were at its end (live brokers per
//! charted cluster, open connections, resident memory).
//!
//! Quantiles come from the latency buckets' differences, interpolated inside the bucket as
//! Prometheus's `histogram_quantile` does, so the page and a Grafana panel over
//! `namesrv_request_duration_seconds` agree.

use std::time::Duration;

use tokio::time::Instant;

use crate::metrics::histogram::{BOUNDS_NANOS, BUCKETS};
use crate::metrics::{Eviction, LatencyClass, Metrics, RegistrationOutcome};

/// Latency classes, in [`LatencyClass::ALL`] order.
pub(crate) const CLASSES: usize = LatencyClass::ALL.len();
/// Clusters whose live brokers get their own series (the first ones seen); the rest count in
/// the total only, so broker-chosen cluster names cannot grow the history.
pub(crate) const CLUSTERS_CHARTED: usize = 8;
/// Index of the all-classes quantile in [`Sample::p50_ms`] and [`Sample::p99_ms`].
pub(crate) const ALL_CLASSES: usize = CLASSES;

/// The cumulative counters at one moment.
#[derive(Debug, Clone)]
pub(crate) struct Reading {
    pub(crate) at: Instant,
    /// Observations per latency bucket, by class.
    latency: [[u64; BUCKETS]; CLASSES],
    registrations: [u64; RegistrationOutcome::ALL.len()],
    evictions: [u64; Eviction::ALL.len()],
}

impl Reading {
    /// The counters of `metrics` now.
    pub(crate) fn take(metrics: &Metrics, at: Instant) -> Reading {
        Reading {
            at,
            latency: LatencyClass::ALL.map(|c| metrics.latency_counts(c)),
            registrations: metrics.registration_counts(),
            evictions: metrics.eviction_counts(),
        }
    }
}

/// The gauges at a sample's end.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Gauges {
    /// Live brokers over all clusters.
    pub(crate) live_total: u32,
    /// Live brokers of each charted cluster, by slot (`History`'s cluster names).
    pub(crate) live: [u32; CLUSTERS_CHARTED],
    pub(crate) connections: u32,
    /// Resident set size in KiB; 0 when unknown.
    pub(crate) rss_kib: u32,
}

/// What happened between two readings, and the gauges at the end. Plain numbers in fixed
/// arrays: its size is fixed, so the rings' memory is too.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    /// When the span ended, as time since the server started.
    pub(crate) end: Duration,
    /// How long the span was.
    pub(crate) span: Duration,
    /// Requests answered in the span, by class.
    pub(crate) requests: [u32; CLASSES],
    /// Median latency by class, then over all classes ([`ALL_CLASSES`]), in milliseconds;
    /// NaN where the span had no request.
    pub(crate) p50_ms: [f32; CLASSES + 1],
    /// The 99th percentile, as `p50_ms`.
    pub(crate) p99_ms: [f32; CLASSES + 1],
    /// REGISTER_BROKERs in the span, in [`RegistrationOutcome::ALL`] order.
    pub(crate) registrations: [u32; RegistrationOutcome::ALL.len()],
    /// Evictions in the span, in [`Eviction::ALL`] order.
    pub(crate) evictions: [u32; Eviction::ALL.len()],
    pub(crate) gauges: Gauges,
}

impl Sample {
    /// The sample from `before` to `after`, which ended `end` after the server started.
    pub(crate) fn between(
        before: &Reading,
        after: &Reading,
        gauges: Gauges,
        end: Duration,
    ) -> Sample {
        let per_class: [[u64; BUCKETS]; CLASSES] =
            std::array::from_fn(|c| delta(&before.latency[c], &after.latency[c]));
        let mut all = [0u64; BUCKETS];
        for buckets in &per_class {
            for (sum, n) in all.iter_mut().zip(buckets) {
                *sum += n;
            }
        }
        let quantiles = |q: f64| {
            let mut out = [f32::NAN; CLASSES + 1];
            for (value, buckets) in out.iter_mut().zip(&per_class) {
                *value = quantile_ms(buckets, q);
            }
            out[ALL_CLASSES] = quantile_ms(&all, q);
            out
        };
        Sample {
            end,
            span: after.at.saturating_duration_since(before.at),
            requests: per_class.each_ref().map(|b| saturate(b.iter().sum())),
            p50_ms: quantiles(0.5),
            p99_ms: quantiles(0.99),
            registrations: delta(&before.registrations, &after.registrations).map(saturate),
            evictions: delta(&before.evictions, &after.evictions).map(saturate),
            gauges,
        }
    }

    /// `count` events in the span, per second; `None` for an empty span.
    pub(crate) fn per_second(&self, count: u32) -> Option<f64> {
        let secs = self.span.as_secs_f64();
        (secs > 0.0).then(|| f64::from(count) / secs)
    }
}

/// `after - before`, element by element (counters only grow; a wrap would read as 0).
fn delta<const N: usize>(before: &[u64; N], after: &[u64; N]) -> [u64; N] {
    std::array::from_fn(|i| after[i].saturating_sub(before[i]))
}

fn saturate(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The `q` quantile of bucketed observations, in milliseconds, or NaN without any: linear
/// inside the bucket it falls in; in the `+Inf` bucket, the highest finite bound.
pub(crate) fn quantile_ms(buckets: &[u64; BUCKETS], q: f64) -> f32 {
    let total: u64 = buckets.iter().sum();
    if total == 0 {
        return f32::NAN;
    }
    let rank = q * total as f64;
    let mut below = 0u64;
    for (i, &n) in buckets.iter().enumerate() {
        if n > 0 && (below + n) as f64 >= rank {
            let Some(&upper) = BOUNDS_NANOS.get(i) else {
                break;
            };
            let lower = i.checked_sub(1).map_or(0, |j| BOUNDS_NANOS[j]) as f64;
            let within = (rank - below as f64) / n as f64;
            return ((lower + (upper as f64 - lower) * within) / 1e6) as f32;
        }
        below += n;
    }
    (BOUNDS_NANOS[BOUNDS_NANOS.len() - 1] as f64 / 1e6) as f32
}
