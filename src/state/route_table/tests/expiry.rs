//! The expiry scan and idle timeouts under eviction protection, on the plain table: holds,
//! releases and evictions case by case, the one warning per hold, and a property test over random heartbeat
//! schedules against a model of the rule.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;
use tokio::time::Instant;

use crate::state::protection::{Policy, ProtectionStatus};
use crate::state::route_table::testing::*;
use crate::state::route_table::*;

const SEC: Duration = Duration::from_secs(1);

/// Protection on, counting every broker from its registration (no history needed), as the
/// hold and eviction cases here assume; history is the subject of the `history_is_what_counts` tests.
fn on() -> Policy {
    Policy {
        enabled: true,
        threshold_percent: 50,
        min_brokers: 3,
        max_hold: Duration::from_secs(600),
        history: Duration::ZERO,
    }
}

fn addr(b: usize) -> String {
    format!("10.0.0.{b}:10911")
}

fn cluster(b: usize) -> &'static str {
    ["ClusterA", "ClusterB"][b % 2]
}

fn topic(b: usize) -> String {
    format!("Topic{b}")
}

/// Registers broker `b` (its own group, cluster A or B, topic `Topic<b>` plus a shared one)
/// on connection `conn`, with the given timeout.
fn register_broker(t: &mut RouteTable, b: usize, conn: u64, timeout_ms: Option<i64>, now: Instant) {
    let (name, addr, topic) = (format!("broker-{b}"), addr(b), topic(b));
    let mut r = reg(&name, &addr, 0, conn);
    r.cluster = cluster(b);
    r.heartbeat_timeout_millis = timeout_ms;
    register(t, &r, &body(1, &[&topic, "Shared"]), now);
}

/// A table of `n` brokers registered at `start`, each on its own connection `b`.
fn cluster_of(n: usize, start: Instant) -> RouteTable {
    let mut t = RouteTable::new();
    for b in 0..n {
        register_broker(&mut t, b, b as u64, None, start);
    }
    t
}

fn heartbeat(t: &mut RouteTable, b: usize, now: Instant) {
    assert!(t.touch_broker(cluster(b), &addr(b), now));
}

/// Heartbeats of brokers `range` at `now`.
fn heartbeats(t: &mut RouteTable, range: std::ops::Range<usize>, now: Instant) {
    for b in range {
        heartbeat(t, b, now);
    }
}

fn serves(t: &RouteTable, b: usize) -> bool {
    t.topic(&topic(b)).is_some() && t.live(cluster(b), &addr(b)).is_some()
}

#[test]
fn ten_brokers_silent_past_their_timeout_are_held_and_served() {
    let start = Instant::now();
    let mut t = cluster_of(10, start);
    assert!(t.scan(start + 121 * SEC, &on()).is_empty());
    assert!((0..10).all(|b| serves(&t, b)));
    let status = t.protection_status();
    assert_eq!(status.held, 10);
    assert_eq!(status.clusters, ["ClusterA", "ClusterB"]);
    assert_eq!(status.since, Some(start + 121 * SEC));
    assert_eq!(status.holds, 1);
    // Later scans keep holding, without starting a new hold.
    assert!(t.scan(start + 300 * SEC, &on()).is_empty());
    assert_eq!(t.protection_status().holds, 1);
    assert_eq!(t.topic("Shared").unwrap().queues.len(), 10);
}

#[test]
fn two_of_ten_silent_are_evicted_normally() {
    let start = Instant::now();
    let mut t = cluster_of(10, start);
    heartbeats(&mut t, 2..10, start + 100 * SEC);
    let gone = t.scan(start + 121 * SEC, &on());
    let mut gone: Vec<(String, ConnId)> = gone
        .into_iter()
        .map(|(k, c)| (k.addr.to_string(), c))
        .collect();
    gone.sort();
    assert_eq!(gone, [(addr(0), ConnId(0)), (addr(1), ConnId(1))]);
    assert!(!serves(&t, 0) && !serves(&t, 1) && serves(&t, 2));
    assert_eq!(t.protection_status(), ProtectionStatus::default());
}

#[test]
fn when_eight_return_the_two_still_silent_are_evicted() {
    let start = Instant::now();
    let mut t = cluster_of(10, start);
    assert!(t.scan(start + 121 * SEC, &on()).is_empty());
    heartbeats(&mut t, 2..10, start + 125 * SEC);
    // Returned brokers are no longer held, even before the next scan.
    assert_eq!(t.protection_status().held, 2);
    let gone = t.scan(start + 131 * SEC, &on());
    assert_eq!(gone.len(), 2);
    assert!(!serves(&t, 0) && !serves(&t, 1));
    assert!((2..10).all(|b| serves(&t, b)));
    let status = t.protection_status();
    assert_eq!((status.held, status.since, status.holds), (0, None, 1));
}

#[test]
fn all_silent_past_the_maximum_hold_are_evicted() {
    let start = Instant::now();
    let mut t = cluster_of(10, start);
    assert!(t.scan(start + 121 * SEC, &on()).is_empty());
    assert!(
        t.scan(start + 720 * SEC, &on()).is_empty(),
        "exactly at the limit"
    );
    assert_eq!(t.scan(start + 721 * SEC, &on()).len(), 10);
    assert_eq!(t.live_count(), 0);
    assert_eq!(t.topic_count(), 0);
    let status = t.protection_status();
    assert_eq!((status.held, status.overdue_evictions), (0, 10));
}

#[test]
fn a_connection_closing_during_a_hold_removes_its_broker_at_once() {
    let start = Instant::now();
    let mut t = cluster_of(10, start);
    assert!(t.scan(start + 121 * SEC, &on()).is_empty());
    assert_eq!(t.connection_closed(ConnId(3)).len(), 1);
    assert!(!serves(&t, 3));
    assert_eq!(t.protection_status().held, 9);
    // So does UNREGISTER_BROKER.
    t.unregister(&[unregister::Unregistration {
        cluster: cluster(4).into(),
        broker_addr: addr(4),
        broker_name: "broker-4".into(),
        broker_id: 0,
    }]);
    assert!(!serves(&t, 4));
    assert_eq!(t.protection_status().held, 8);
}

#[test]
fn protection_off_is_java_expiry() {
    let start = Instant::now();
    let (mut a, mut b) = (cluster_of(10, start), cluster_of(10, start));
    let mut java: Vec<String> = a
        .expire(start + 121 * SEC)
        .iter()
        .map(|x| format!("{x:?}"))
        .collect();
    let mut off: Vec<String> = b
        .scan(start + 121 * SEC, &Policy::OFF)
        .iter()
        .map(|x| format!("{x:?}"))
        .collect();
    java.sort();
    off.sort();
    assert_eq!(java.len(), 10);
    assert_eq!(java, off);
    assert_eq!(b.live_count(), 0);
}

#[test]
fn a_small_cluster_is_never_held() {
    let start = Instant::now();
    let mut t = cluster_of(2, start);
    assert_eq!(t.scan(start + 121 * SEC, &on()).len(), 2);
}

#[test]
fn an_idle_connection_unregisters_at_once_unless_the_cluster_is_silent() {
    let start = Instant::now();
    let mut t = cluster_of(10, start);
    heartbeats(&mut t, 1..10, start + 100 * SEC);
    // One broker went quiet: its idle connection removes it, as in Java.
    assert_eq!(
        t.connection_idled_out(ConnId(0), start + 120 * SEC, &on())
            .len(),
        1
    );
    assert!(!serves(&t, 0));
    // Now all fall silent; their connections idle out one by one, before any scan.
    for b in 1..10 {
        let now = start + Duration::from_secs(220 + b as u64);
        assert!(
            t.connection_idled_out(ConnId(b as u64), now, &on())
                .is_empty()
        );
    }
    assert!((1..10).all(|b| serves(&t, b)));
    assert_eq!(t.protection_status().held, 9);
    // The first five come back (on new connections); the others are still due.
    for b in 1..6 {
        register_broker(&mut t, b, 100 + b as u64, None, start + 240 * SEC);
    }
    let gone = t.scan(start + 241 * SEC, &on());
    assert_eq!(gone.len(), 4);
    assert!((1..6).all(|b| serves(&t, b)) && (6..10).all(|b| !serves(&t, b)));
}

#[test]
fn a_heartbeat_after_an_idle_hold_makes_the_broker_healthy_again() {
    let start = Instant::now();
    let mut t = cluster_of(4, start);
    let now = start + 100 * SEC;
    assert!(t.connection_idled_out(ConnId(0), now, &on()).is_empty());
    assert!(t.live(cluster(0), &addr(0)).unwrap().idled_out);
    heartbeat(&mut t, 0, now + SEC);
    heartbeats(&mut t, 1..4, now + SEC);
    assert!(t.scan(now + 2 * SEC, &on()).is_empty());
    assert!(serves(&t, 0));
}

#[test]
fn the_first_scan_judges_brokers_by_their_own_heartbeats() {
    // Brokers restored with old heartbeat times (a warm restart) are never assumed fresh:
    // long past the maximum hold they go at once, within it they are held.
    let start = Instant::now();
    let mut old = cluster_of(5, start);
    assert_eq!(old.scan(start + 3600 * SEC, &on()).len(), 5);
    let mut recent = cluster_of(5, start);
    assert!(recent.scan(start + 200 * SEC, &on()).is_empty());
    assert_eq!(recent.protection_status().held, 5);
}

#[test]
fn a_hold_is_announced_once_naming_the_count_and_the_clusters() {
    let start = Instant::now();
    let mut t = cluster_of(10, start);
    let decision = t.decide(start + 121 * SEC, &on());
    assert_eq!(
        crate::state::protection::announcement(&on(), &decision),
        "EVICTION PROTECTION: 10 of 10 brokers fell silent at once (clusters: ClusterA, \
         ClusterB); keeping their routes instead of evicting them. This name server has \
         probably lost its network or stalled. Held brokers are evicted once no more than 50% \
         are silent, or at the latest 600 s after their own timeout."
    );
    // A hold is announced when it begins (the only place `holds` counts), not at each scan
    // or idle timeout that continues it.
    for secs in [121, 131, 141, 300] {
        assert!(t.scan(start + secs * SEC, &on()).is_empty());
    }
    assert!(
        t.connection_idled_out(ConnId(1), start + 301 * SEC, &on())
            .is_empty()
    );
    assert_eq!(t.protection_status().holds, 1);
    // After it ends, the next mass silence is a new hold.
    heartbeats(&mut t, 0..10, start + 302 * SEC);
    assert!(t.scan(start + 303 * SEC, &on()).is_empty());
    assert_eq!(t.protection_status().since, None);
    assert!(t.scan(start + 500 * SEC, &on()).is_empty());
    assert_eq!(t.protection_status().holds, 2);
}

// ---- property test -------------------------------------------------------------------

const BROKERS: usize = 6;

#[derive(Debug, Clone)]
enum Op {
    /// Broker, timeout index.
    Register(usize, usize),
    Heartbeat(usize),
    Close(usize),
    Idle(usize),
    Unregister(usize),
    Advance(u64),
    Scan,
}

const TIMEOUTS: [u64; 3] = [10, 60, 120];

/// Protection with the history two 10-second scans give (the defaults).
fn with_history() -> Policy {
    Policy {
        history: 20 * SEC,
        ..on()
    }
}

/// Scans every 10 s over `from..=to` (seconds after `start`), with `each` run before every
/// scan; returns the brokers evicted, with the second of the scan that evicted them.
fn scans(
    t: &mut RouteTable,
    start: Instant,
    (from, to): (u64, u64),
    mut each: impl FnMut(&mut RouteTable, u64),
) -> Vec<(String, u64)> {
    let mut gone = Vec::new();
    for at in (from..=to).step_by(10) {
        each(t, at);
        for (key, _) in t.scan(start + Duration::from_secs(at), &with_history()) {
            gone.push((key.addr.to_string(), at));
        }
    }
    gone
}

#[test]
fn history_is_what_counts_registered_and_silent_fakes_hold_nothing() {
    // Five real brokers heartbeat every 30 s; broker 0 dies after its heartbeat at 30 s; ten
    // fakes register once at 60 s and say nothing more.
    let start = Instant::now();
    let mut t = cluster_of(5, start);
    let gone = scans(&mut t, start, (10, 200), |t, at| {
        if at % 30 == 0 {
            let from = if at <= 30 { 0 } else { 1 };
            (from..5).for_each(|b| heartbeat(t, b, start + Duration::from_secs(at)));
        }
        if at == 60 {
            (5..15).for_each(|b| {
                register_broker(t, b, b as u64, None, start + Duration::from_secs(at))
            });
        }
    });
    // The dead broker goes at the first scan past its timeout, as in Java, not 10 min later.
    assert_eq!(gone[0], (addr(0), 160));
    let fakes: Vec<_> = gone.iter().filter(|(_, at)| *at == 190).collect();
    assert_eq!(fakes.len(), 10, "{gone:?}");
    assert_eq!(t.protection_status().holds, 0, "no false hold");
}

#[test]
fn history_is_what_counts_heartbeating_newcomers_do_not_dilute_a_mass_silence() {
    // Five real brokers heartbeat every 30 s until 300 s, then fall silent together; ten
    // fakes register at 300 s and heartbeat every 10 s from then on.
    let start = Instant::now();
    let mut t = cluster_of(5, start);
    let gone = scans(&mut t, start, (10, 900), |t, at| {
        if at % 30 == 0 && at <= 300 {
            (0..5).for_each(|b| heartbeat(t, b, start + Duration::from_secs(at)));
        }
        if at == 300 {
            (5..15).for_each(|b| {
                register_broker(t, b, b as u64, None, start + Duration::from_secs(at))
            });
        } else if at > 300 {
            (5..15).for_each(|b| heartbeat(t, b, start + Duration::from_secs(at)));
        }
    });
    assert!(gone.is_empty(), "{gone:?}");
    assert!((0..5).all(|b| serves(&t, b)), "the silent brokers are held");
    let status = t.protection_status();
    assert_eq!((status.held, status.holds), (5, 1));
    // The hold still ends: at their timeout plus the maximum hold.
    let gone = scans(&mut t, start, (910, 1030), |t, at| {
        (5..15).for_each(|b| heartbeat(t, b, start + Duration::from_secs(at)));
    });
    assert_eq!(gone.len(), 5, "{gone:?}");
    assert!(gone.iter().all(|(_, at)| *at == 1030));
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..BROKERS, 0..3usize).prop_map(|(b, t)| Op::Register(b, t)),
        4 => (0..BROKERS).prop_map(Op::Heartbeat),
        1 => (0..BROKERS).prop_map(Op::Close),
        1 => (0..BROKERS).prop_map(Op::Idle),
        1 => (0..BROKERS).prop_map(Op::Unregister),
        4 => prop_oneof![Just(1u64), Just(5), Just(10), Just(31), Just(61), Just(121), Just(400)]
            .prop_map(Op::Advance),
        4 => Just(Op::Scan),
    ]
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        prop_oneof![4 => Just(true), 1 => Just(false)],
        prop_oneof![Just(25u32), Just(50), Just(75)],
        1..6usize,
        prop_oneof![Just(30u64), Just(120), Just(600)],
        prop_oneof![Just(0u64), Just(20), Just(60)],
    )
        .prop_map(
            |(enabled, threshold_percent, min_brokers, hold, history)| Policy {
                enabled,
                threshold_percent,
                min_brokers,
                max_hold: Duration::from_secs(hold),
                history: Duration::from_secs(history),
            },
        )
}

/// What the model knows of a registered broker, in whole seconds.
#[derive(Debug, Clone, Copy)]
struct Known {
    first: u64,
    last: u64,
    timeout: u64,
    idled: bool,
    conn: u64,
}

impl Known {
    fn due(&self, now: u64) -> bool {
        self.idled || now - self.last > self.timeout
    }
    fn silent(&self, now: u64) -> bool {
        self.due(now) || now - self.last > self.timeout / 2
    }
    fn overdue(&self, now: u64, p: &Policy) -> bool {
        now - self.last > self.timeout + p.max_hold.as_secs()
    }
    /// Silent, and heard from over the policy's history before it fell silent.
    fn counted_silent(&self, now: u64, p: &Policy) -> bool {
        self.silent(now) && self.last - self.first >= p.history.as_secs()
    }
    /// Whether a protecting scan holds it rather than evicting it.
    fn held(&self, now: u64, p: &Policy) -> bool {
        self.counted_silent(now, p) && !self.overdue(now, p)
    }
}

/// The model's verdict on the whole set: whether the mass-expiry rule is in force.
fn protecting(m: &BTreeMap<usize, Known>, now: u64, p: &Policy) -> bool {
    let history = p.history.as_secs();
    let began = m
        .values()
        .filter(|k| k.counted_silent(now, p))
        .map(|k| k.last)
        .min();
    let silent = m.values().filter(|k| k.counted_silent(now, p)).count();
    let heartbeating = m
        .values()
        .filter(|k| !k.silent(now) && began.is_some_and(|b| k.first + history <= b))
        .count();
    let live = silent + heartbeating;
    let any_due = m.values().any(|k| k.due(now));
    any_due
        && p.enabled
        && live >= p.min_brokers
        && silent * 100 > p.threshold_percent as usize * live
}

fn step(
    t: &mut RouteTable,
    m: &mut BTreeMap<usize, Known>,
    (now, next_conn): (&mut u64, &mut u64),
    op: &Op,
    p: &Policy,
    start: Instant,
) -> Result<(), TestCaseError> {
    let at = start + Duration::from_secs(*now);
    match *op {
        Op::Register(b, ti) => {
            *next_conn += 1;
            let timeout = TIMEOUTS[ti];
            register_broker(t, b, *next_conn, Some(timeout as i64 * 1000), at);
            let first = m.get(&b).map_or(*now, |k| k.first);
            m.insert(
                b,
                Known {
                    first,
                    last: *now,
                    timeout,
                    idled: false,
                    conn: *next_conn,
                },
            );
        }
        Op::Heartbeat(b) => {
            let known = t.touch_broker(cluster(b), &addr(b), at);
            prop_assert_eq!(known, m.contains_key(&b));
            if let Some(k) = m.get_mut(&b) {
                k.last = *now;
                k.idled = false;
            }
        }
        Op::Close(b) => {
            if let Some(k) = m.get(&b).copied() {
                prop_assert_eq!(t.connection_closed(ConnId(k.conn)).len(), 1);
                m.remove(&b);
            }
        }
        Op::Idle(b) => {
            if let Some(k) = m.get_mut(&b) {
                let conn = k.conn;
                k.idled = true;
                let held = protecting(m, *now, p) && m[&b].held(*now, p);
                let removed = t.connection_idled_out(ConnId(conn), at, p);
                prop_assert_eq!(removed.is_empty(), held, "idle of {} at {}", b, now);
                if !held {
                    m.remove(&b);
                }
            }
        }
        Op::Unregister(b) => {
            t.unregister(&[unregister::Unregistration {
                cluster: cluster(b).into(),
                broker_addr: addr(b),
                broker_name: format!("broker-{b}"),
                broker_id: 0,
            }]);
            m.remove(&b);
        }
        Op::Advance(secs) => *now += secs,
        Op::Scan => {
            let protect = protecting(m, *now, p);
            let mut expected: Vec<String> = m
                .iter()
                .filter(|(_, k)| k.due(*now) && !(protect && k.held(*now, p)))
                .map(|(b, _)| addr(*b))
                .collect();
            let mut got: Vec<String> = t
                .scan(at, p)
                .into_iter()
                .map(|(k, _)| k.addr.to_string())
                .collect();
            expected.sort();
            got.sort();
            prop_assert_eq!(&got, &expected, "scan at {} (protecting: {})", now, protect);
            m.retain(|b, _| !expected.contains(&addr(*b)));
            // The property protection promises: no broker outlives its timeout plus the maximum
            // hold at any scan.
            for (b, k) in m.iter() {
                prop_assert!(
                    !k.overdue(*now, p),
                    "broker {} kept {} s after its last heartbeat",
                    b,
                    *now - k.last
                );
            }
            let held = m.values().filter(|k| k.due(*now)).count();
            prop_assert_eq!(t.protection_status().held, held);
        }
    }
    for b in 0..BROKERS {
        prop_assert_eq!(
            serves(t, b),
            m.contains_key(&b),
            "broker {} after {:?}",
            b,
            op
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn no_broker_is_held_past_its_timeout_plus_the_maximum_hold(
        p in policy(),
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let start = Instant::now();
        let mut t = RouteTable::new();
        let mut m = BTreeMap::new();
        let (mut now, mut next_conn) = (0u64, 0u64);
        for op in &ops {
            step(&mut t, &mut m, (&mut now, &mut next_conn), op, &p, start)?;
        }
    }
}
