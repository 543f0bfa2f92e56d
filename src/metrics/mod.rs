//! Metrics: the counters the server records as it works, and the Prometheus text of their
//! families (`exposition`).
//!
//! [`Metrics`] is the one set of typed handles. It lives in the shared state
//! ([`crate::state::Namesrv::metrics`]); the server (connections, bytes, TLS reloads), the
//! dispatcher (requests, latency, registrations, KV and config writes) and the state's own
//! operations (evictions) record into it, and nothing else does. Recording is a few relaxed
//! atomic increments on fixed arrays — no lock, no allocation, no map lookup — so the request
//! path stays at the machine's ceiling.
//!
//! Everything that is *state* rather than an event (live brokers, topics, KV entries, route
//! cache hits, process figures) is read when `/metrics` is scraped (the body is put together
//! by `crate::http::exposition`, which reads the state; this module reads nothing above
//! [`crate::protocol`], so the state can hold it), so it costs
//! nothing between scrapes. No label grows with topics, KV keys or clients: request and
//! response codes outside fixed tables share an `other` series, and the per-cluster series
//! are capped.

pub(crate) mod codes;
pub(crate) mod exposition;
pub(crate) mod histogram;
mod process;

use std::collections::BTreeSet;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::protocol::body::Name;

pub use codes::LatencyClass;
pub(crate) use codes::RequestSeries;
pub(crate) use histogram::Histogram;

/// Why a broker left the live table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eviction {
    /// The expiry scan found it silent for longer than its timeout.
    Scan,
    /// The connection it registered on closed or failed.
    ConnectionClosed,
    /// The connection it registered on idled out (`serverChannelMaxIdleTimeSeconds`).
    Idle,
    /// It sent UNREGISTER_BROKER.
    Unregister,
}

impl Eviction {
    pub(crate) const ALL: [Eviction; 4] = [
        Eviction::Scan,
        Eviction::ConnectionClosed,
        Eviction::Idle,
        Eviction::Unregister,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Eviction::Scan => "scan",
            Eviction::ConnectionClosed => "connection_closed",
            Eviction::Idle => "idle",
            Eviction::Unregister => "unregister",
        }
    }
}

/// How a REGISTER_BROKER ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegistrationOutcome {
    /// The body was read and applied.
    Full,
    /// The body was recognised as the one already applied and skipped.
    Unchanged,
    /// The registration was refused (bad body, CRC mismatch, stale version…).
    Refused,
}

impl RegistrationOutcome {
    pub(crate) const ALL: [RegistrationOutcome; 3] = [
        RegistrationOutcome::Full,
        RegistrationOutcome::Unchanged,
        RegistrationOutcome::Refused,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            RegistrationOutcome::Full => "full",
            RegistrationOutcome::Unchanged => "unchanged",
            RegistrationOutcome::Refused => "refused",
        }
    }
}

/// Why a connection was closed as soon as it was accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `maxConnections` were already open.
    MaxConnections,
}

impl Refusal {
    const ALL: [Refusal; 1] = [Refusal::MaxConnections];

    fn name(self) -> &'static str {
        match self {
            Refusal::MaxConnections => "max_connections",
        }
    }
}

// --- TLS and the PROXY protocol: what connections' preludes ended with ---

/// How a connection's prelude (PROXY header, TLS decision, handshake) ended, when it was not
/// simply a plaintext connection or one that closed or idled before sending anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreludeOutcome {
    /// A TLS handshake completed.
    TlsHandshake,
    /// A TLS handshake failed (garbage ClientHello, no shared cipher, refused certificate…).
    TlsError,
    /// A PROXY header or TLS handshake did not complete within `handshakeTimeoutMillis`.
    Timeout,
    /// A TLS client closed because `tls.server.mode=disabled`.
    TlsRefused,
    /// A plaintext client closed because `tls.server.mode=enforcing`.
    PlainRefused,
    /// A PROXY header was accepted.
    ProxyHeader,
    /// A malformed or over-long PROXY header.
    ProxyMalformed,
    /// A PROXY header from a peer `proxyProtocolAllowedAddresses` does not list.
    ProxyNotAllowed,
}

impl PreludeOutcome {
    const ALL: [PreludeOutcome; 8] = [
        PreludeOutcome::TlsHandshake,
        PreludeOutcome::TlsError,
        PreludeOutcome::Timeout,
        PreludeOutcome::TlsRefused,
        PreludeOutcome::PlainRefused,
        PreludeOutcome::ProxyHeader,
        PreludeOutcome::ProxyMalformed,
        PreludeOutcome::ProxyNotAllowed,
    ];
    /// The handshake failures, with their `reason` label.
    const FAILURES: [(PreludeOutcome, &'static str); 4] = [
        (PreludeOutcome::TlsError, "tls_error"),
        (PreludeOutcome::Timeout, "timeout"),
        (PreludeOutcome::ProxyMalformed, "proxy_malformed"),
        (PreludeOutcome::ProxyNotAllowed, "proxy_not_allowed"),
    ];
    /// The mode rejections, with their `reason` label.
    const MODE_REJECTIONS: [(PreludeOutcome, &'static str); 2] = [
        (PreludeOutcome::TlsRefused, "tls_while_disabled"),
        (PreludeOutcome::PlainRefused, "plaintext_while_enforcing"),
    ];
}

/// A durable write of the KV store or the configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// PUT_KV_CONFIG / DELETE_KV_CONFIG.
    Kv,
    /// UPDATE_NAMESRV_CONFIG.
    Config,
}

/// Latency and failures of one kind of durable write.
#[derive(Debug, Default)]
struct WriteStats {
    latency: Histogram,
    failures: AtomicU64,
}

/// Reloads of the TLS material, and whether the last one failed: a failed reload is
/// attempted once per change of the files, so only this flag, not a counter's recent increase,
/// says that the files on disk are still broken.
#[derive(Debug, Default)]
struct TlsReloads {
    ok: AtomicU64,
    failed: AtomicU64,
    last_failed: AtomicBool,
}

impl TlsReloads {
    /// Whether the last reload failed.
    fn failing(&self) -> bool {
        self.last_failed.load(Ordering::Relaxed)
    }
}

/// The counters recorded on the request path.
#[derive(Debug)]
pub struct Metrics {
    /// Requests by request slot and response slot (see [`codes`]).
    requests: [[AtomicU64; codes::RESPONSE_SLOTS]; codes::REQUEST_SLOTS],
    /// The `request_code` label of each request slot, noted when the slot is first counted:
    /// the request tables, not the metrics, know which codes exist.
    request_labels: [OnceLock<&'static str>; codes::REQUEST_SLOTS],
    /// Request latency by [`LatencyClass`], in `LatencyClass::ALL` order.
    latency: [Histogram; LatencyClass::ALL.len()],
    received_bytes: AtomicU64,
    sent_bytes: AtomicU64,
    connections_open: AtomicI64,
    connections_accepted: AtomicU64,
    connections_refused: [AtomicU64; Refusal::ALL.len()],
    registrations: [AtomicU64; RegistrationOutcome::ALL.len()],
    evictions: [AtomicU64; Eviction::ALL.len()],
    preludes: [AtomicU64; PreludeOutcome::ALL.len()],
    tls_reloads: TlsReloads,
    kv_writes: WriteStats,
    config_writes: WriteStats,
    /// Clusters that have had a series (read and written only when scraped).
    clusters_seen: Mutex<BTreeSet<Name>>,
}

/// At most this many clusters get their own `cluster` series; the rest are summed under
/// `cluster="_other"`, so brokers registering arbitrary cluster names cannot grow the
/// exposition without bound.
pub(crate) const MAX_CLUSTER_SERIES: usize = 100;

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
            request_labels: std::array::from_fn(|_| OnceLock::new()),
            latency: Default::default(),
            received_bytes: AtomicU64::new(0),
            sent_bytes: AtomicU64::new(0),
            connections_open: AtomicI64::new(0),
            connections_accepted: AtomicU64::new(0),
            connections_refused: Default::default(),
            registrations: Default::default(),
            evictions: Default::default(),
            preludes: Default::default(),
            tls_reloads: TlsReloads::default(),
            kv_writes: WriteStats::default(),
            config_writes: WriteStats::default(),
            clusters_seen: Mutex::default(),
        }
    }
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

fn read(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

impl Metrics {
    /// A request of `series` was answered with `response_code` after `elapsed`.
    pub fn request(&self, series: RequestSeries, response_code: i32, elapsed: Duration) {
        let slot = usize::from(series.slot).min(codes::REQUEST_SLOTS - 1);
        let label = &self.request_labels[slot];
        if label.get().is_none() {
            let _ = label.set(series.label);
        }
        add(&self.requests[slot][codes::response_slot(response_code)], 1);
        self.latency[series.class as usize].observe(elapsed);
    }

    /// The `request_code` label of a request slot counted so far.
    fn request_label(&self, slot: usize) -> Option<&'static str> {
        self.request_labels[slot].get().copied()
    }

    /// A durable write finished (or failed) after `elapsed`.
    pub(crate) fn write(&self, kind: Write, elapsed: Duration, ok: bool) {
        let stats = match kind {
            Write::Kv => &self.kv_writes,
            Write::Config => &self.config_writes,
        };
        stats.latency.observe(elapsed);
        if !ok {
            add(&stats.failures, 1);
        }
    }

    /// A REGISTER_BROKER ended as `outcome`.
    pub(crate) fn registration(&self, outcome: RegistrationOutcome) {
        add(&self.registrations[outcome as usize], 1);
    }

    /// `brokers` left the live table for `reason`.
    pub(crate) fn evicted(&self, reason: Eviction, brokers: usize) {
        if brokers > 0 {
            add(&self.evictions[reason as usize], brokers as u64);
        }
    }

    /// Bytes read from clients.
    pub(crate) fn received(&self, bytes: usize) {
        add(&self.received_bytes, bytes as u64);
    }

    /// Bytes written to clients.
    pub(crate) fn sent(&self, bytes: usize) {
        add(&self.sent_bytes, bytes as u64);
    }

    /// A connection was refused at accept.
    pub(crate) fn refused(&self, reason: Refusal) {
        add(&self.connections_refused[reason as usize], 1);
    }

    /// A connection was accepted; it counts as open until [`Metrics::closed`].
    pub(crate) fn accepted(&self) {
        add(&self.connections_accepted, 1);
        self.connections_open.fetch_add(1, Ordering::Relaxed);
    }

    /// An accepted connection ended.
    pub(crate) fn closed(&self) {
        self.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    /// Connections open now.
    pub(crate) fn connections_open(&self) -> i64 {
        self.connections_open.load(Ordering::Relaxed)
    }

    /// Connections accepted since start.
    pub(crate) fn connections_accepted(&self) -> u64 {
        read(&self.connections_accepted)
    }

    /// Connections refused since start, over all reasons.
    pub(crate) fn connections_refused(&self) -> u64 {
        self.connections_refused.iter().map(read).sum()
    }

    /// Observations per latency bucket of `class` since start (the history's deltas).
    pub(crate) fn latency_counts(&self, class: LatencyClass) -> [u64; histogram::BUCKETS] {
        self.latency[class as usize].counts()
    }

    /// REGISTER_BROKERs since start, in [`RegistrationOutcome::ALL`] order.
    pub(crate) fn registration_counts(&self) -> [u64; RegistrationOutcome::ALL.len()] {
        self.registrations.each_ref().map(read)
    }

    /// Brokers evicted since start, in [`Eviction::ALL`] order.
    pub(crate) fn eviction_counts(&self) -> [u64; Eviction::ALL.len()] {
        self.evictions.each_ref().map(read)
    }

    /// Requests counted in `series` with `response_code` (response codes outside the fixed
    /// table count together as `other`).
    #[cfg(test)]
    pub(crate) fn requests(&self, series: RequestSeries, response_code: i32) -> u64 {
        read(&self.requests[usize::from(series.slot)][codes::response_slot(response_code)])
    }

    /// The clusters to report: those with a series so far plus `current`, sorted, at most
    /// [`MAX_CLUSTER_SERIES`]. A cluster keeps its series after its last broker leaves, so
    /// that "no live brokers" reads as 0 instead of as a missing series.
    pub(crate) fn clusters_to_report<'a>(
        &self,
        current: impl IntoIterator<Item = &'a Name>,
    ) -> Vec<Name> {
        self.note_clusters(current.into_iter().map(|c| &**c));
        self.clusters_seen.lock().iter().cloned().collect()
    }

    /// Gives `clusters` a series from now on (up to [`MAX_CLUSTER_SERIES`]). Registrations
    /// and a restored route table call it, so that a cluster whose brokers all leave before
    /// the next scrape still reads 0 rather than vanishing.
    pub(crate) fn note_clusters<'a>(&self, clusters: impl IntoIterator<Item = &'a str>) {
        let mut seen = self.clusters_seen.lock();
        for cluster in clusters {
            if seen.len() >= MAX_CLUSTER_SERIES {
                break;
            }
            if !seen.contains(cluster) {
                seen.insert(Name::from(cluster));
            }
        }
    }

    /// A connection's prelude ended as `outcome`.
    pub(crate) fn prelude(&self, outcome: PreludeOutcome) {
        add(&self.preludes[outcome as usize], 1);
    }

    /// A reload of the TLS material installed it (`ok`) or kept the previous one.
    pub(crate) fn tls_reloaded(&self, ok: bool) {
        let r = &self.tls_reloads;
        add(if ok { &r.ok } else { &r.failed }, 1);
        r.last_failed.store(!ok, Ordering::Relaxed);
    }

    /// Preludes that ended as `outcome` since start.
    pub fn preludes(&self, outcome: PreludeOutcome) -> u64 {
        read(&self.preludes[outcome as usize])
    }
}

/// The process's resident set size in bytes, if `/proc` tells.
pub(crate) fn resident_bytes() -> Option<u64> {
    process::resident_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::code::response;

    const ROUTE: RequestSeries = RequestSeries {
        slot: 5,
        label: "get_routeinfo_by_topic",
        class: LatencyClass::Route,
    };

    #[test]
    fn requests_are_counted_by_series_and_response_and_timed_by_class() {
        let m = Metrics::default();
        m.request(ROUTE, response::SUCCESS, Duration::from_micros(30));
        m.request(ROUTE, response::TOPIC_NOT_EXIST, Duration::ZERO);
        m.request(RequestSeries::OTHER, 1500, Duration::ZERO);
        m.request(RequestSeries::OTHER, 1501, Duration::ZERO);
        assert_eq!(m.requests(ROUTE, response::SUCCESS), 1);
        assert_eq!(m.requests(ROUTE, response::TOPIC_NOT_EXIST), 1);
        assert_eq!(
            m.requests(RequestSeries::OTHER, 9999),
            2,
            "unknown codes share one series"
        );
        assert_eq!(m.request_label(5), Some("get_routeinfo_by_topic"));
        assert_eq!(
            m.request_label(codes::REQUEST_SLOTS - 1),
            Some(codes::OTHER)
        );
        assert_eq!(m.request_label(6), None);
        assert_eq!(m.latency[LatencyClass::Route as usize].snapshot().count, 2);
        assert_eq!(m.latency[LatencyClass::Other as usize].snapshot().count, 2);
    }

    #[test]
    fn writes_record_latency_and_failures() {
        let m = Metrics::default();
        m.write(Write::Kv, Duration::from_millis(2), true);
        m.write(Write::Kv, Duration::from_millis(2), false);
        m.write(Write::Config, Duration::from_millis(2), true);
        assert_eq!(m.kv_writes.latency.snapshot().count, 2);
        assert_eq!(read(&m.kv_writes.failures), 1);
        assert_eq!(read(&m.config_writes.failures), 0);
    }

    #[test]
    fn tls_reloads_are_counted_and_a_good_one_clears_the_failure() {
        let m = Metrics::default();
        m.tls_reloaded(false);
        assert!(m.tls_reloads.failing());
        m.tls_reloaded(true);
        let r = &m.tls_reloads;
        assert_eq!((read(&r.ok), read(&r.failed)), (1, 1));
        assert!(!r.failing());
    }
}
