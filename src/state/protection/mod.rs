//! Mass-eviction protection: the rule that keeps brokers' routes when too many of them fall
//! silent at once, which is how a healthy cluster looks to a name server that has lost its
//! own network or stalled (Nacos' protection threshold, Eureka's self-preservation).
//!
//! This module owns the decision — a pure function of the time, the live brokers' last
//! heartbeats and timeouts, and the [`Policy`] — and the record of holds shown to operators
//! ([`ProtectionStatus`]). It knows the route table only by its broker keys: the expiry scan
//! and the idle timeout (`route_table::expiry`) feed it the live set, act on its
//! `Decision` and keep its `Holds`.
//!
//! The rule:
//! - a broker is **due** for eviction when Java would evict it: silent for longer than its
//!   timeout, or cut off by the idle timeout;
//! - a broker is **silent** when it is due or has missed half its timeout. Brokers heartbeat
//!   at staggered moments, so a network loss makes them come due over a whole heartbeat
//!   period (several scans); counting the ones already halfway there lets the first scan see
//!   the mass expiry before it has evicted a third of the cluster;
//! - only brokers with **history** count, because a registration is all it takes to appear
//!   in the live set: a silent broker counts if it had been heard from over at least
//!   `history` (two scans) before it fell silent, and a broker still heartbeating counts if
//!   it had been heard from over at least `history` before the silence began (the earliest
//!   last heartbeat among the silent brokers that count). So brokers registered once and
//!   left silent neither raise a hold nor are held, and brokers that appear while the
//!   cluster is silent cannot dilute the silence into a normal expiry;
//! - when at least `min_brokers` count and more than `threshold_percent` of them are
//!   silent, the due brokers that count are **held** (kept, routes served) instead of
//!   evicted — except those silent past their timeout plus `max_hold`, which go anyway. A
//!   hold keeps only brokers that count: registering more adds none to it;
//! - otherwise every due broker is evicted, exactly as Java does.
//!
//! Every input is a broker's own heartbeat time, never "when this process first saw it", so
//! brokers restored from elsewhere are judged the same way (a restored broker's history
//! starts at its restored heartbeat), and no broker is ever kept longer than its timeout
//! plus `max_hold` (checked at every scan).

#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use tokio::time::Instant;

use super::liveness::{BrokerAddr, DEFAULT_BROKER_TIMEOUT};
use crate::config::Settings;

/// A live broker as the route table hands it to [`decide`]: its key and its last heartbeat.
pub(crate) type Judged = (BrokerAddr, Instant);

/// GET_NAMESRV_CONFIG lists this key, with the number of held brokers, while a hold lasts.
pub(crate) const HELD_BROKERS_KEY: &str = "evictionProtectionHeldBrokers";

/// The protection settings in force for one decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// `evictionProtection`: off means Java's rule, every due broker evicted.
    pub enabled: bool,
    /// `evictionProtectionThresholdPercent`: hold when more than this share is silent.
    pub threshold_percent: u32,
    /// `evictionProtectionMinBrokers`: fewer live brokers than this are never held.
    pub min_brokers: usize,
    /// `evictionProtectionMaxHoldMillis`: the longest a broker is kept past its timeout.
    pub max_hold: Duration,
    /// How long a broker must have been heard from to count: two scan intervals, at most the
    /// default broker timeout.
    pub history: Duration,
}

impl Policy {
    /// Java's behaviour: no protection.
    pub const OFF: Policy = Policy {
        enabled: false,
        threshold_percent: 50,
        min_brokers: 3,
        max_hold: Duration::ZERO,
        history: Duration::ZERO,
    };

    /// The policy the settings describe (they are validated, so every value is in range).
    pub(crate) fn from_settings(s: &Settings) -> Policy {
        Policy {
            enabled: s.eviction_protection,
            threshold_percent: s.eviction_protection_threshold_percent.clamp(1, 99) as u32,
            min_brokers: s.eviction_protection_min_brokers.max(1) as usize,
            max_hold: s.eviction_protection_max_hold_millis.duration(),
            history: s
                .scan_not_active_broker_interval
                .duration()
                .saturating_mul(2)
                .min(DEFAULT_BROKER_TIMEOUT),
        }
    }

    /// Whether `silent` of `live` brokers being silent at once is a mass expiry to hold.
    pub(crate) fn holds(&self, live: usize, silent: usize) -> bool {
        self.enabled
            && live >= self.min_brokers
            && silent as u128 * 100 > self.threshold_percent as u128 * live as u128
    }
}

/// What the rule needs to know about one live broker.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Heard {
    /// When it was first heard from (the registration that put it in the live set).
    pub(crate) first: Instant,
    /// Its last heartbeat (registration, data-version query or heartbeat).
    pub(crate) last: Instant,
    /// How long it may stay silent.
    pub(crate) timeout: Duration,
    /// Its connection was closed by the idle timeout after its last heartbeat.
    pub(crate) idled_out: bool,
}

impl Heard {
    /// Whether Java would evict it now: past its timeout, or cut off by the idle timeout.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.idled_out || self.past(now, self.timeout)
    }

    /// Whether it is due, or has been silent for more than half its timeout.
    pub(crate) fn silent(&self, now: Instant) -> bool {
        self.due(now) || self.past(now, self.timeout / 2)
    }

    /// Whether it has been silent past its timeout plus `max_hold`: no hold keeps it.
    pub(crate) fn overdue(&self, now: Instant, max_hold: Duration) -> bool {
        self.timeout
            .checked_add(max_hold)
            .is_some_and(|limit| self.past(now, limit))
    }

    /// Whether it had been heard from over at least `span` by its last heartbeat.
    pub(crate) fn has_history(&self, span: Duration) -> bool {
        self.last.saturating_duration_since(self.first) >= span
    }

    /// Whether it had been heard from over at least `span` by `then`.
    fn heard_over_by(&self, span: Duration, then: Instant) -> bool {
        self.first.checked_add(span).is_some_and(|t| t <= then)
    }

    /// `last + span < now`; a span too large for the clock never passes (as Java's timeout).
    fn past(&self, now: Instant, span: Duration) -> bool {
        self.last
            .checked_add(span)
            .is_some_and(|deadline| deadline < now)
    }
}

/// What to do with the due brokers of one live set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision<K> {
    /// Brokers to evict now, in the order the live set listed them.
    pub(crate) evict: Vec<K>,
    /// Due brokers kept because a mass expiry is under way.
    pub(crate) hold: Vec<K>,
    /// Every silent broker that counts (due ones included).
    pub(crate) silent: Vec<K>,
    /// How many brokers of the live set count (see the module's rule).
    pub(crate) live: usize,
    /// Whether the mass-expiry rule was in force (then `evict` holds only overdue brokers).
    pub(crate) protecting: bool,
}

impl<K> Decision<K> {
    /// The same decision over other keys (e.g. owned ones for borrowed ones).
    pub(crate) fn map<U>(self, mut f: impl FnMut(K) -> U) -> Decision<U> {
        Decision {
            evict: self.evict.into_iter().map(&mut f).collect(),
            hold: self.hold.into_iter().map(&mut f).collect(),
            silent: self.silent.into_iter().map(&mut f).collect(),
            live: self.live,
            protecting: self.protecting,
        }
    }
}

/// Decides, at `now`, which brokers of the whole `live` set are evicted and which are held.
pub(crate) fn decide<K: Clone>(
    policy: &Policy,
    now: Instant,
    live: impl IntoIterator<Item = (K, Heard)>,
) -> Decision<K> {
    let brokers: Vec<(K, Heard)> = live.into_iter().collect();
    let counted_silent = |h: &Heard| h.silent(now) && h.has_history(policy.history);
    // When the silence began: the earliest last heartbeat of a silent broker that counts.
    let began = brokers
        .iter()
        .filter(|(_, h)| counted_silent(h))
        .map(|(_, h)| h.last)
        .min();
    let mut due = Vec::new();
    let mut silent = Vec::new();
    let mut count = 0;
    for (key, heard) in brokers {
        let counts = if heard.silent(now) {
            counted_silent(&heard)
        } else {
            began.is_some_and(|b| heard.heard_over_by(policy.history, b))
        };
        if counts {
            count += 1;
            if heard.silent(now) {
                silent.push(key.clone());
            }
        }
        if heard.due(now) {
            due.push((key, heard, counts));
        }
    }
    let protecting = !due.is_empty() && policy.holds(count, silent.len());
    let (mut evict, mut hold) = (Vec::new(), Vec::new());
    for (key, heard, counts) in due {
        if protecting && counts && !heard.overdue(now, policy.max_hold) {
            hold.push(key);
        } else {
            evict.push(key);
        }
    }
    Decision {
        evict,
        hold,
        silent,
        live: count,
        protecting,
    }
}

/// What protection is doing, for GET_NAMESRV_CONFIG and metrics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProtectionStatus {
    /// Brokers kept past their timeout, as of the last scan (or idle timeout since).
    pub held: usize,
    /// The clusters of the held brokers, sorted.
    pub clusters: Vec<String>,
    /// When the current hold began; `None` while nothing is held.
    pub since: Option<Instant>,
    /// Holds begun since the server started (each announced by one warning).
    pub holds: u64,
    /// Brokers evicted during a hold because they stayed silent past their timeout plus the
    /// maximum hold.
    pub overdue_evictions: u64,
}

/// The warning that announces a hold: how many brokers fell silent, in which clusters, and
/// how the hold ends.
pub(crate) fn announcement(policy: &Policy, decision: &Decision<Judged>) -> String {
    let clusters: BTreeSet<&str> = decision.silent.iter().map(|(k, _)| &*k.cluster).collect();
    format!(
        "EVICTION PROTECTION: {} of {} brokers fell silent at once (clusters: {}); keeping their \
         routes instead of evicting them. This name server has probably lost its network or \
         stalled. Held brokers are evicted once no more than {}% are silent, or at the latest \
         {} s after their own timeout.",
        decision.silent.len(),
        decision.live,
        clusters.into_iter().collect::<Vec<_>>().join(", "),
        policy.threshold_percent,
        policy.max_hold.as_secs(),
    )
}

/// The brokers held now, and the running record of holds. Lives in the route table, which
/// feeds it every decision.
#[derive(Debug, Default)]
pub(crate) struct Holds {
    /// Each held broker with its last heartbeat when it was held: a broker heard from since,
    /// or removed since, is no longer held.
    held: HashMap<BrokerAddr, Instant>,
    since: Option<Instant>,
    holds: u64,
    overdue_evictions: u64,
}

impl Holds {
    /// Records a scan's decision: the brokers it held replace the previous set.
    pub(crate) fn record_scan(
        &mut self,
        now: Instant,
        policy: &Policy,
        decision: &Decision<Judged>,
    ) {
        if decision.protecting {
            self.overdue_evictions += decision.evict.len() as u64;
            for (key, _) in &decision.evict {
                tracing::warn!(cluster = %key.cluster, addr = %key.addr, max_hold = ?policy.max_hold, "eviction protection: broker silent past its timeout plus the maximum hold; evicting it");
            }
        }
        if decision.hold.is_empty() {
            self.end(now);
        } else {
            self.begin(now, policy, decision);
        }
        self.held = decision.hold.iter().cloned().collect();
    }

    /// Records the brokers held when their connection idled out (other brokers wait for the
    /// next scan).
    pub(crate) fn record_idle(
        &mut self,
        now: Instant,
        policy: &Policy,
        decision: &Decision<Judged>,
    ) {
        if decision.hold.is_empty() {
            return;
        }
        self.begin(now, policy, decision);
        self.held.extend(decision.hold.iter().cloned());
    }

    /// A snapshot for operators; `heard_at` gives a broker's current last heartbeat, `None`
    /// once it is gone.
    pub(crate) fn status(
        &self,
        heard_at: impl Fn(&BrokerAddr) -> Option<Instant>,
    ) -> ProtectionStatus {
        let mut clusters = BTreeSet::new();
        let mut held = 0;
        for (key, last) in &self.held {
            if heard_at(key) == Some(*last) {
                held += 1;
                clusters.insert(key.cluster.to_string());
            }
        }
        ProtectionStatus {
            held,
            clusters: clusters.into_iter().collect(),
            since: self.since,
            holds: self.holds,
            overdue_evictions: self.overdue_evictions,
        }
    }

    /// Starts a hold if none is under way: the one loud warning of the hold.
    fn begin(&mut self, now: Instant, policy: &Policy, decision: &Decision<Judged>) {
        if self.since.is_some() {
            return;
        }
        self.since = Some(now);
        self.holds += 1;
        tracing::warn!(
            silent = decision.silent.len(),
            live = decision.live,
            held = decision.hold.len(),
            "{}",
            announcement(policy, decision)
        );
    }

    /// Ends the hold under way, if any.
    fn end(&mut self, now: Instant) {
        if let Some(since) = self.since.take() {
            tracing::warn!(
                lasted = ?now.saturating_duration_since(since),
                "eviction protection over: normal expiry resumes"
            );
        }
    }
}
