//! The load of the soak phase, one task per connection: idle client connections that look a
//! route up now and then (as a real client polls its routes every 30 s), brokers that
//! re-register in full every period with their own name, address and topics (spread over the
//! period; one re-registration in N carries a new data version), and the route-lookup clients
//! whose latency is the run's headline figure. Every task writes what it saw into the shared
//! window accumulator and stops when the run's token is cancelled.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use std::time::Duration;

use tokio::sync::{Semaphore, watch};
use tokio::time::{Instant, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::stats::{Acc, Rng};
use crate::wire::{self, BrokerSpec, CallError, Conn};
use namesrv::protocol::RemotingCommand;

/// What the load consists of.
#[derive(Debug, Clone)]
pub struct Load {
    /// Server address.
    pub addr: SocketAddr,
    /// Idle client connections.
    pub idle_conns: usize,
    /// Between two keep-alive lookups of one idle connection; `None`: never.
    pub idle_ping_every: Option<Duration>,
    /// Brokers.
    pub brokers: usize,
    /// Topics per broker.
    pub topics: usize,
    /// Brokers sharing one topic set (so a route lists this many brokers).
    pub brokers_per_topic: usize,
    /// Period of the full re-registration.
    pub register_every: Duration,
    /// One re-registration in this many carries a new data version.
    pub version_change_every: usize,
    /// Route-lookup connections.
    pub route_conns: usize,
    /// Route lookups per second over all route connections; 0: as fast as answered.
    pub route_rate: f64,
    /// Check every Nth route body of a route connection; 0: never.
    pub verify_every: u64,
    /// Deadline of one request.
    pub request_timeout: Duration,
    /// Connections being opened at once during set-up.
    pub connect_concurrency: usize,
    /// Seed of the topic choices.
    pub seed: u64,
}

impl Load {
    /// Number of topic groups (brokers sharing a topic set).
    pub fn groups(&self) -> usize {
        self.brokers.div_ceil(self.brokers_per_topic).max(1)
    }

    /// Brokers listed by a route of a topic of `group`.
    fn group_size(&self, group: usize) -> usize {
        self.brokers_per_topic
            .min(self.brokers - group * self.brokers_per_topic)
    }

    /// A random registered topic and how many brokers its route lists.
    fn pick(&self, rng: &mut Rng) -> (String, usize) {
        let g = rng.below(self.groups());
        (
            wire::topic_name(g, rng.below(self.topics)),
            self.group_size(g),
        )
    }
}

/// State shared by the coordinator and every task.
pub struct Shared {
    /// The load.
    pub load: Load,
    /// This window's observations.
    pub acc: Mutex<Acc>,
    /// Stops every task.
    pub cancel: CancellationToken,
    /// Set once set-up is over: the time the schedules are laid out from.
    pub epoch: watch::Receiver<Option<Instant>>,
    /// Connections (of any kind) up and ready.
    pub up: AtomicUsize,
    /// Connections that failed to set up.
    pub failed: AtomicUsize,
    connect: Semaphore,
}

impl Shared {
    /// Shared state for `load`.
    pub fn new(
        load: Load,
        cancel: CancellationToken,
        epoch: watch::Receiver<Option<Instant>>,
    ) -> Shared {
        let connect = Semaphore::new(load.connect_concurrency.max(1));
        Shared {
            load,
            acc: Mutex::new(Acc::default()),
            cancel,
            epoch,
            up: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            connect,
        }
    }

    fn record(&self, f: impl FnOnce(&mut Acc)) {
        f(&mut self.acc.lock());
    }

    fn setup_failed(&self, what: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.record(|a| a.note(what));
    }

    /// Opens a connection, at most `connect_concurrency` at once.
    async fn open(&self, what: &str) -> Option<Conn> {
        let _permit = self.connect.acquire().await.ok()?;
        match tokio::time::timeout(self.load.request_timeout, Conn::connect(self.load.addr)).await {
            Ok(Ok(c)) => Some(c),
            Ok(Err(e)) => {
                self.setup_failed(format!("{what}: connect: {e}"));
                None
            }
            Err(_) => {
                self.setup_failed(format!("{what}: connect timed out"));
                None
            }
        }
    }

    /// Waits for the end of set-up; `None` if the run was cancelled first.
    async fn epoch(&self) -> Option<Instant> {
        let mut rx = self.epoch.clone();
        tokio::select! {
            _ = self.cancel.cancelled() => None,
            v = rx.wait_for(Option::is_some) => v.ok().and_then(|v| *v),
        }
    }
}

/// Waits for `at`: true when it is due; false at the end of the run, or when the server
/// closed `conn` (counted, and noted as `who`'s).
async fn due(shared: &Shared, conn: &mut Conn, at: Instant, who: &str) -> bool {
    tokio::select! {
        _ = shared.cancel.cancelled() => false,
        _ = sleep_until(at) => true,
        why = conn.closed_or_unexpected() => {
            shared.record(|a| {
                a.closed += 1;
                a.note(format!("{who}: {why}"));
            });
            false
        }
    }
}

/// A route request for `topic` and its latency in µs; `None` when the run ends first.
async fn timed_route(
    shared: &Shared,
    conn: &mut Conn,
    topic: &str,
) -> Option<(Result<RemotingCommand, CallError>, u32)> {
    let req = wire::route_request(conn, topic);
    let t0 = Instant::now();
    let res = tokio::select! {
        _ = shared.cancel.cancelled() => return None,
        r = conn.call(&req, shared.load.request_timeout) => r,
    };
    let us = t0.elapsed().as_micros().min(u32::MAX as u128) as u32;
    Some((res, us))
}

/// `period * i / n`: task `i`'s offset when `n` tasks spread over `period`.
fn spread(period: Duration, i: usize, n: usize) -> Duration {
    period.mul_f64(i as f64 / n.max(1) as f64)
}

/// An idle client connection: open, then one route lookup every `idle_ping_every`.
pub async fn idle(shared: Arc<Shared>, i: usize) {
    let Some(mut conn) = shared.open("idle connection").await else {
        return;
    };
    shared.up.fetch_add(1, Ordering::Relaxed);
    let Some(epoch) = shared.epoch().await else {
        return;
    };
    let load = &shared.load;
    let far = epoch + Duration::from_secs(86_400 * 365);
    let period = load.idle_ping_every;
    let mut next = period.map_or(far, |p| epoch + spread(p, i, load.idle_conns));
    let mut rng = Rng::new(load.seed ^ (i as u64).wrapping_mul(0x51_7cc1_b727_220a));
    let who = format!("idle connection {i}");
    loop {
        if !due(&shared, &mut conn, next, &who).await {
            return;
        }
        let (topic, _) = load.pick(&mut rng);
        let Some((res, us)) = timed_route(&shared, &mut conn, &topic).await else {
            return;
        };
        match res {
            Ok(r) if r.code == 0 => shared.record(|a| a.idle_us.push(us)),
            Ok(r) => shared.record(|a| {
                a.idle_err += 1;
                a.note(format!(
                    "idle lookup of {topic}: code {} {:?}",
                    r.code, r.remark
                ));
            }),
            Err(e) => {
                return shared.record(|a| {
                    a.idle_err += 1;
                    a.note(format!("idle lookup of {topic}: {e}"));
                });
            }
        }
        next += period.unwrap_or(Duration::from_secs(86_400));
    }
}

/// A broker: open, register in full, then re-register every `register_every`.
pub async fn broker(shared: Arc<Shared>, b: usize, spec: BrokerSpec) {
    let load = &shared.load;
    let Some(mut conn) = shared.open("broker connection").await else {
        return;
    };
    let (mut counter, mut timestamp) = (1u64, wire::now_ms());
    let req = spec.register(&mut conn, counter, timestamp);
    match conn.call(&req, load.request_timeout).await {
        Ok(r) if r.code == 0 => {
            shared.up.fetch_add(1, Ordering::Relaxed);
        }
        Ok(r) => {
            return shared.setup_failed(format!(
                "{}: first registration: code {} {:?}",
                spec.name, r.code, r.remark
            ));
        }
        Err(e) => return shared.setup_failed(format!("{}: first registration: {e}", spec.name)),
    }
    let Some(epoch) = shared.epoch().await else {
        return;
    };
    let mut next = epoch + spread(load.register_every, b, load.brokers);
    let mut rng = Rng::new(load.seed ^ 0xb0b ^ (b as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
    loop {
        if !due(&shared, &mut conn, next, &spec.name).await {
            return;
        }
        let changed = rng.below(load.version_change_every.max(1)) == 0;
        if changed {
            counter += 1;
            timestamp = wire::now_ms();
        }
        let req = spec.register(&mut conn, counter, timestamp);
        let t0 = Instant::now();
        let res = tokio::select! {
            _ = shared.cancel.cancelled() => return,
            r = conn.call(&req, load.request_timeout) => r,
        };
        let us = t0.elapsed().as_micros().min(u32::MAX as u128) as u32;
        match res {
            Ok(r) if r.code == 0 => shared.record(|a| {
                a.reg_us.push(us);
                a.reg_changed += u64::from(changed);
            }),
            Ok(r) => shared.record(|a| {
                a.reg_err += 1;
                a.note(format!(
                    "{}: registration: code {} {:?}",
                    spec.name, r.code, r.remark
                ));
            }),
            Err(e) => {
                return shared.record(|a| {
                    a.reg_err += 1;
                    a.note(format!("{}: registration: {e}", spec.name));
                });
            }
        }
        next += load.register_every;
    }
}

/// A route-lookup client: paced lookups of random registered topics, one in flight.
pub async fn router(shared: Arc<Shared>, k: usize) {
    let load = &shared.load;
    let Some(mut conn) = shared.open("route connection").await else {
        return;
    };
    shared.up.fetch_add(1, Ordering::Relaxed);
    let Some(epoch) = shared.epoch().await else {
        return;
    };
    let gap = (load.route_rate > 0.0)
        .then(|| Duration::from_secs_f64(load.route_conns as f64 / load.route_rate));
    let mut next = epoch + gap.map_or(Duration::ZERO, |g| spread(g, k, load.route_conns));
    let mut rng = Rng::new(load.seed ^ 0x7007e ^ (k as u64).wrapping_mul(0x9e37_79b9));
    let mut n = 0u64;
    let who = format!("route connection {k}");
    loop {
        if let Some(gap) = gap {
            if !due(&shared, &mut conn, next, &who).await {
                return;
            }
            // Behind schedule (a slow answer): skip the missed slots rather than burst, so
            // that the clients keep their spread instead of bunching up after a stall.
            next += gap;
            let now = Instant::now();
            if next < now {
                let missed = (now - next).as_nanos() / gap.as_nanos() + 1;
                next += gap * missed as u32;
                shared.record(|a| a.route_skipped += missed as u64);
            }
        } else if shared.cancel.is_cancelled() {
            return;
        }
        let (topic, brokers) = load.pick(&mut rng);
        let Some((res, us)) = timed_route(&shared, &mut conn, &topic).await else {
            return;
        };
        n += 1;
        let check = load.verify_every > 0 && n.is_multiple_of(load.verify_every);
        match res {
            Ok(r) if r.code == 0 => {
                let bad = check
                    .then(|| wire::check_route_body(r.body_bytes(), brokers).err())
                    .flatten();
                shared.record(|a| {
                    a.route_us.push(us);
                    a.route_checked += u64::from(check);
                    if let Some(why) = bad {
                        a.route_err += 1;
                        a.note(format!("route of {topic}: {why}"));
                    }
                });
            }
            Ok(r) => shared.record(|a| {
                a.route_err += 1;
                a.note(format!("route of {topic}: code {} {:?}", r.code, r.remark));
            }),
            Err(e) => {
                return shared.record(|a| {
                    a.route_err += 1;
                    a.note(format!("route of {topic}: {e}"));
                });
            }
        }
    }
}
