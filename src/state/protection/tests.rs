//! The protection rule as a pure function: no table, no runtime.

use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::config::{Env, Settings};

const MIN: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(120);

fn on() -> Policy {
    Policy::from_settings(&Settings::defaults(&Env::for_tests()))
}

/// Brokers `0..n`, heard `ago` seconds before `now`, 120 s timeouts.
fn heard(now: Instant, ago: &[u64]) -> Vec<(usize, Heard)> {
    ago.iter()
        .enumerate()
        .map(|(i, &secs)| {
            (
                i,
                Heard {
                    first: now - 60 * MIN,
                    last: now - Duration::from_secs(secs),
                    timeout: TIMEOUT,
                    idled_out: false,
                },
            )
        })
        .collect()
}

/// The default policy's decision at `now` about brokers heard `ago` seconds before.
fn decide_on(now: Instant, ago: &[u64]) -> Decision<usize> {
    decide(&on(), now, heard(now, ago))
}

#[test]
fn defaults_are_on_half_three_brokers_and_ten_minutes() {
    assert_eq!(
        on(),
        Policy {
            enabled: true,
            threshold_percent: 50,
            min_brokers: 3,
            max_hold: 10 * MIN,
            history: Duration::from_secs(20),
        }
    );
}

#[test]
fn holds_only_more_than_the_share_of_enough_brokers() {
    let p = on();
    assert!(p.holds(10, 6));
    assert!(!p.holds(10, 5), "exactly half is not more than half");
    assert!(p.holds(3, 2));
    assert!(
        !p.holds(2, 2),
        "fewer brokers than the minimum behave as Java"
    );
    assert!(!p.holds(1, 1));
    assert!(!Policy::OFF.holds(10, 10));
    let strict = Policy {
        threshold_percent: 99,
        ..on()
    };
    assert!(strict.holds(1000, 991) && !strict.holds(1000, 990));
    // No overflow with absurd counts.
    assert!(p.holds(usize::MAX, usize::MAX));
}

#[test]
fn due_silent_and_overdue_are_strictly_after_their_deadlines() {
    let now = Instant::now() + 3 * 60 * MIN;
    let at = |ago: u64| Heard {
        first: now - 60 * MIN,
        last: now - Duration::from_secs(ago),
        timeout: TIMEOUT,
        idled_out: false,
    };
    assert!(
        !at(120).due(now) && at(121).due(now),
        "Java: last + timeout < now"
    );
    assert!(
        !at(60).silent(now) && at(61).silent(now),
        "half the timeout"
    );
    assert!(!at(720).overdue(now, 10 * MIN) && at(721).overdue(now, 10 * MIN));
    let idle = Heard {
        idled_out: true,
        ..at(0)
    };
    assert!(idle.due(now) && idle.silent(now) && !idle.overdue(now, 10 * MIN));
    // The largest timeout a broker can declare, and one the clock cannot even add.
    for timeout in [Duration::from_millis(i64::MAX as u64), Duration::MAX] {
        let forever = Heard {
            timeout,
            ..at(1_000)
        };
        assert!(!forever.due(now) && !forever.silent(now));
        assert!(!forever.overdue(now, 10 * MIN) && !forever.overdue(now, Duration::MAX));
    }
}

#[test]
fn a_whole_cluster_silent_at_once_is_held() {
    let now = Instant::now() + 60 * MIN;
    let d = decide_on(now, &[130; 10]);
    assert!(d.protecting);
    assert!(d.evict.is_empty());
    assert_eq!(d.hold, (0..10).collect::<Vec<_>>());
    assert_eq!((d.silent.len(), d.live), (10, 10));
}

#[test]
fn a_few_silent_brokers_are_evicted_as_java_evicts_them() {
    let now = Instant::now() + 60 * MIN;
    let d = decide_on(now, &[5, 130, 10, 20, 125, 1, 2, 3, 4, 5]);
    assert!(!d.protecting);
    assert_eq!(d.evict, vec![1, 4]);
    assert!(d.hold.is_empty());
}

#[test]
fn brokers_halfway_to_their_timeout_count_towards_a_mass_expiry() {
    // A network loss: heartbeats stopped at staggered moments, so only the first three are
    // past their timeout at this scan; the other seven are late. Counting only the due
    // ones (3 of 10) would evict them, and the next scans the rest.
    let now = Instant::now() + 60 * MIN;
    let d = decide_on(now, &[125, 123, 121, 118, 110, 105, 100, 97, 95, 92]);
    assert!(d.protecting);
    assert_eq!(d.hold, vec![0, 1, 2]);
    assert!(d.evict.is_empty());
}

#[test]
fn overdue_brokers_go_even_while_the_rest_are_held() {
    let now = Instant::now() + 60 * MIN;
    let d = decide_on(now, &[721, 720, 300, 130, 130]);
    assert!(d.protecting);
    assert_eq!(d.evict, vec![0]);
    assert_eq!(d.hold, vec![1, 2, 3, 4]);
}

#[test]
fn brokers_without_history_neither_count_nor_are_held() {
    let now = Instant::now() + 60 * MIN;
    // Three brokers heard from for an hour, one of them silent; ten registered once, 130 s
    // ago, and silent since.
    let mut live = heard(now, &[0, 0, 130]);
    for i in 3..13 {
        let last = now - Duration::from_secs(130);
        let once = Heard {
            first: last,
            last,
            timeout: TIMEOUT,
            idled_out: false,
        };
        live.push((i, once));
    }
    let d = decide(&on(), now, live.clone());
    assert!(!d.protecting, "1 of 3 with history is silent");
    assert_eq!((d.silent, d.live), (vec![2], 3));
    assert_eq!(d.evict, (2..13).collect::<Vec<_>>());
    // Newcomers heartbeating since the silence began do not count either: 1 of 1 silent.
    let mut newcomers = heard(now, &[130]);
    for i in 1..11 {
        let fresh = Heard {
            first: now - Duration::from_secs(100),
            last: now,
            timeout: TIMEOUT,
            idled_out: false,
        };
        newcomers.push((i, fresh));
    }
    let small = Policy {
        min_brokers: 1,
        ..on()
    };
    let d = decide(&small, now, newcomers);
    assert!(d.protecting);
    assert_eq!((d.hold, d.live), (vec![0], 1));
}

#[test]
fn protection_off_or_a_small_cluster_is_java() {
    let now = Instant::now() + 60 * MIN;
    let d = decide(&Policy::OFF, now, heard(now, &[130; 10]));
    assert!(!d.protecting);
    assert_eq!(d.evict.len(), 10);
    let d = decide_on(now, &[130, 130]);
    assert!(!d.protecting);
    assert_eq!(d.evict, vec![0, 1]);
}

#[test]
fn nothing_due_means_nothing_to_protect() {
    let now = Instant::now() + 60 * MIN;
    let d = decide_on(now, &[100; 10]);
    assert!(!d.protecting && d.evict.is_empty() && d.hold.is_empty());
    assert_eq!(d.silent.len(), 10);
    let d = decide(&on(), now, Vec::<(usize, Heard)>::new());
    assert_eq!(d.live, 0);
}

#[test]
fn settings_out_of_range_are_refused_and_off_is_off() {
    let env = Env {
        home: "/tmp".into(),
        rocketmq_home: None,
    };
    let load = |text: &str| {
        let props = crate::config::properties::parse(text).unwrap();
        crate::config::Config::from_properties(&props, "test", &env)
    };
    for bad in [
        "evictionProtectionThresholdPercent=0",
        "evictionProtectionThresholdPercent=100",
        "evictionProtectionMinBrokers=0",
        "evictionProtectionMaxHoldMillis=0",
        "evictionProtectionMaxHoldMillis=-1",
        "evictionProtection=yes",
    ] {
        let err = load(bad).unwrap_err().to_string();
        let key = bad.split('=').next().unwrap();
        assert!(err.contains(key), "{bad}: {err}");
    }
    let c = load("evictionProtection=false\nevictionProtectionThresholdPercent=75\nevictionProtectionMinBrokers=5\nevictionProtectionMaxHoldMillis=30000").unwrap();
    let p = Policy::from_settings(&c.settings);
    assert_eq!(
        p,
        Policy {
            enabled: false,
            threshold_percent: 75,
            min_brokers: 5,
            max_hold: Duration::from_secs(30),
            history: Duration::from_secs(20),
        }
    );
    assert!(!p.holds(10, 10));
}
