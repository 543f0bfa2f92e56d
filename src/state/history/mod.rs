//! The in-process history behind the status page's trends and `/api/history`: a sample every
//! 10 s (`SAMPLE_EVERY`) kept for the last ten minutes, and a sample every minute kept for the
//! last hour, in two fixed-size rings.
//!
//! Each tier keeps the reading of the counters at its last sample, so a sample is the
//! difference of two readings over the span actually elapsed: a late tick or an extra
//! [`sample_now`] only changes a span, never a rate. Memory is fixed when the rings are made
//! (`History::memory_bytes`: 120 samples of 200 bytes plus two readings, about 26 KiB),
//! whatever the traffic; of the clusters, only the first eight seen get a series of their own
//! (names of up to eight clusters are kept besides).
//!
//! The sampler (`run`) is a background service of the server, on only with the HTTP side
//! door that shows it. It reads the metrics and the route table's counts (the route lock for
//! a count of live brokers), nothing else; `crate::http` renders what it kept.

mod ring;
pub(crate) mod sample;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

use super::Namesrv;
use crate::protocol::body::Name;
use ring::Ring;
use sample::{CLUSTERS_CHARTED, Gauges, Reading, Sample};

/// How often the sampler samples: the fine tier's resolution.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(10);
/// Fine samples kept: ten minutes' worth.
pub(crate) const FINE_KEPT: usize = 60;
/// The coarse tier's resolution.
pub(crate) const COARSE_EVERY: Duration = Duration::from_secs(60);
/// Coarse samples kept: an hour's worth.
pub(crate) const COARSE_KEPT: usize = 60;

/// The two tiers, behind a short lock (a push or a copy, never held across an `.await`).
#[derive(Debug)]
pub(crate) struct History {
    tiers: Mutex<Tiers>,
}

#[derive(Debug)]
struct Tiers {
    fine: Tier,
    coarse: Tier,
    /// The charted clusters, by slot of [`Gauges::live`]: the first ones seen, kept for life
    /// so that a slot's series always means one cluster.
    clusters: Vec<Name>,
}

#[derive(Debug)]
struct Tier {
    samples: Ring<Sample>,
    /// The counters at the last sample (or at the first reading).
    last: Option<Reading>,
    /// The shortest span a sample of this tier covers.
    every: Duration,
}

impl Tier {
    fn new(kept: usize, every: Duration) -> Tier {
        Tier {
            samples: Ring::new(kept),
            last: None,
            every,
        }
    }

    /// Adds the sample since the last reading if `every` has passed (less a second, so that
    /// a tick a little early is not skipped), or if `force`; the first reading is only the
    /// baseline.
    fn offer(&mut self, reading: &Reading, gauges: Gauges, end: Duration, force: bool) {
        let Some(last) = &self.last else {
            self.last = Some(reading.clone());
            return;
        };
        let elapsed = reading.at.saturating_duration_since(last.at);
        let due = elapsed + Duration::from_secs(1) >= self.every;
        if force || due {
            self.samples
                .push(Sample::between(last, reading, gauges, end));
            self.last = Some(reading.clone());
        }
    }
}

/// A copy of the history, for rendering.
#[derive(Debug, Clone)]
pub(crate) struct HistoryView {
    /// The fine tier, oldest first.
    pub(crate) fine: Vec<Sample>,
    /// The coarse tier, oldest first.
    pub(crate) coarse: Vec<Sample>,
    /// The charted clusters, by slot.
    pub(crate) clusters: Vec<Name>,
}

impl HistoryView {
    /// The last hour at the best resolution kept: the coarse samples from before the fine
    /// tier begins, then the fine ones.
    pub(crate) fn timeline(&self) -> Vec<Sample> {
        let fine_start = self.fine.first().map(|s| s.end.saturating_sub(s.span));
        let older = self
            .coarse
            .iter()
            .filter(|s| fine_start.is_none_or(|start| s.end <= start));
        older.chain(&self.fine).copied().collect()
    }
}

impl Default for History {
    fn default() -> History {
        History {
            tiers: Mutex::new(Tiers {
                fine: Tier::new(FINE_KEPT, SAMPLE_EVERY),
                coarse: Tier::new(COARSE_KEPT, COARSE_EVERY),
                clusters: Vec::with_capacity(CLUSTERS_CHARTED),
            }),
        }
    }
}

/// What one sampling saw.
#[derive(Debug)]
pub(crate) struct Observation<'a> {
    pub(crate) reading: Reading,
    /// Live brokers by cluster.
    pub(crate) live: &'a BTreeMap<Name, usize>,
    /// Broker groups by cluster (a cluster may have groups and no live broker).
    pub(crate) groups: &'a BTreeMap<Name, usize>,
    pub(crate) connections: i64,
    pub(crate) rss_bytes: Option<u64>,
    /// When it was made, as time since the server started.
    pub(crate) end: Duration,
}

impl History {
    /// Adds what `seen` shows to the tiers whose sample is due; `force` adds a fine sample
    /// however short its span.
    pub(crate) fn record(&self, seen: Observation<'_>, force: bool) {
        let mut tiers = self.tiers.lock();
        let Tiers {
            fine,
            coarse,
            clusters,
        } = &mut *tiers;
        for name in seen.groups.keys().chain(seen.live.keys()) {
            if clusters.len() < CLUSTERS_CHARTED && !clusters.contains(name) {
                clusters.push(name.clone());
            }
        }
        let mut gauges = Gauges {
            live_total: clamp(seen.live.values().sum::<usize>() as u64),
            connections: clamp(seen.connections.max(0) as u64),
            rss_kib: seen.rss_bytes.map_or(0, |b| clamp(b / 1024)),
            ..Gauges::default()
        };
        for (slot, name) in clusters.iter().enumerate() {
            gauges.live[slot] = clamp(seen.live.get(name).copied().unwrap_or(0) as u64);
        }
        fine.offer(&seen.reading, gauges, seen.end, force);
        coarse.offer(&seen.reading, gauges, seen.end, false);
    }

    /// A copy of both tiers.
    pub(crate) fn view(&self) -> HistoryView {
        let tiers = self.tiers.lock();
        HistoryView {
            fine: tiers.fine.samples.iter().copied().collect(),
            coarse: tiers.coarse.samples.iter().copied().collect(),
            clusters: tiers.clusters.clone(),
        }
    }

    /// The memory the history holds at most: both rings full, the tiers' readings, and the
    /// charted clusters' names (shared with the route table while those clusters exist).
    pub(crate) fn memory_bytes(&self) -> usize {
        let tiers = self.tiers.lock();
        let rings =
            (tiers.fine.samples.capacity() + tiers.coarse.samples.capacity()) * size_of::<Sample>();
        let names: usize = tiers.clusters.iter().map(|n| n.len()).sum();
        // The tiers' last readings are inside `History` itself.
        size_of::<History>() + rings + CLUSTERS_CHARTED * size_of::<Name>() + names
    }
}

fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Takes a sample of `state` now (the sampler does every [`SAMPLE_EVERY`]; tests call it to
/// have samples without waiting). The first call of a server only sets the baseline.
pub fn sample_now(state: &Namesrv) {
    sample(state, true);
}

fn sample(state: &Namesrv, force: bool) {
    let now = Instant::now();
    let reading = Reading::take(state.metrics(), now);
    let counts = state.routes().counts();
    let seen = Observation {
        reading,
        live: &counts.live_brokers,
        groups: &counts.broker_groups,
        connections: state.metrics().connections_open(),
        rss_bytes: crate::metrics::resident_bytes(),
        end: now.saturating_duration_since(state.started()),
    };
    state.history().record(seen, force);
}

/// The sampler: a sample every [`SAMPLE_EVERY`] (the first at once, as the baseline) until
/// `cancel` fires.
pub(crate) async fn run(state: Namesrv, cancel: CancellationToken) {
    let mut every = tokio::time::interval(SAMPLE_EVERY);
    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = every.tick() => sample(&state, false),
        }
    }
}
