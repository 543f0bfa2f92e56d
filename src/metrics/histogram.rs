//! A latency histogram that records without locking: one relaxed increment of a bucket and
//! one of the sum per observation.
//!
//! prometheus-client's own histogram takes a lock per observation; this one keeps fixed
//! bucket bounds in a constant table, so recording is a short search and two atomic adds.
//! Buckets hold per-bucket counts; [`Histogram::snapshot`] makes them cumulative, as the
//! exposition format wants, and derives the total count from them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in nanoseconds: 50 µs to 1 s, then `+Inf`. They cover a
/// cached route lookup (tens of microseconds) up to a slow fsync of the KV file.
pub(crate) const BOUNDS_NANOS: [u64; 13] = [
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    1_000_000_000,
];

/// Number of buckets, the `+Inf` one included.
pub(crate) const BUCKETS: usize = BOUNDS_NANOS.len() + 1;

/// Durations, bucketed.
#[derive(Debug, Default)]
pub(crate) struct Histogram {
    counts: [AtomicU64; BUCKETS],
    sum_nanos: AtomicU64,
}

/// A histogram's values at one moment, in the exposition's units.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistogramSnapshot {
    /// Sum of all observations, in seconds.
    pub(crate) sum_seconds: f64,
    /// Number of observations.
    pub(crate) count: u64,
    /// `(upper bound in seconds, observations at or below it)`, ending with `+Inf`.
    pub(crate) buckets: Vec<(f64, u64)>,
}

impl Histogram {
    /// Records one duration.
    pub(crate) fn observe(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let bucket = BOUNDS_NANOS.partition_point(|&bound| bound < nanos);
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Observations per bucket (not cumulative) since start, `+Inf` last.
    pub(crate) fn counts(&self) -> [u64; BUCKETS] {
        self.counts.each_ref().map(|c| c.load(Ordering::Relaxed))
    }

    /// The cumulative buckets, count and sum.
    pub(crate) fn snapshot(&self) -> HistogramSnapshot {
        let mut cumulative = 0;
        let buckets = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, count)| {
                cumulative += count.load(Ordering::Relaxed);
                let bound = BOUNDS_NANOS
                    .get(i)
                    .map_or(f64::INFINITY, |&n| n as f64 / 1e9);
                (bound, cumulative)
            })
            .collect();
        HistogramSnapshot {
            sum_seconds: self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9,
            count: cumulative,
            buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_whose_bound_they_do_not_exceed() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(50)); // exactly on the first bound: le="5e-05"
        h.observe(Duration::from_micros(51));
        h.observe(Duration::from_millis(3));
        h.observe(Duration::from_secs(5)); // beyond the last bound: only +Inf
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.buckets.len(), BUCKETS);
        assert_eq!(s.buckets[0], (50e-6, 1));
        assert_eq!(s.buckets[1], (100e-6, 2));
        assert_eq!(s.buckets[5].1, 2); // le 2.5 ms
        assert_eq!(s.buckets[6], (5e-3, 3));
        assert_eq!(s.buckets[12], (1.0, 3));
        assert_eq!(s.buckets[13], (f64::INFINITY, 4));
        assert!((s.sum_seconds - 5.003101).abs() < 1e-9);
    }

    #[test]
    fn an_empty_histogram_has_zero_everywhere() {
        let s = Histogram::default().snapshot();
        assert_eq!(s.count, 0);
        assert_eq!(s.sum_seconds, 0.0);
        assert!(s.buckets.iter().all(|&(_, c)| c == 0));
    }
}
