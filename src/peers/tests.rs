use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::protocol::body::DataVersion;
use crate::state::peering::Difference;

fn version(counter: i64) -> DataVersion {
    DataVersion {
        state_version: 0,
        timestamp: 1_700_000_000_000 + counter,
        counter: Some(counter),
        timestamp_defaulted: false,
    }
}

fn broker(name: &str, addr: &str, counter: i64) -> LiveBroker {
    LiveBroker {
        cluster: "DefaultCluster".into(),
        name: name.into(),
        id: 0,
        addr: addr.into(),
        data_version: version(counter),
    }
}

fn view(brokers: &[(&str, &str)], versions: Option<&[(&str, &str, i64)]>) -> PeerView {
    PeerView {
        is_self: false,
        brokers: brokers
            .iter()
            .map(|(n, a)| ((*n).to_owned(), (*a).to_owned()))
            .collect::<HashSet<_>>(),
        versions: versions.map(|v| {
            v.iter()
                .map(|(n, a, c)| (((*n).to_owned(), (*a).to_owned()), version(*c)))
                .collect::<HashMap<_, _>>()
        }),
    }
}

#[test]
fn missing_and_older_brokers_differ_newer_and_equal_ones_do_not() {
    let ours = [
        broker("a", "1:1", 3),
        broker("b", "2:2", 3),
        broker("c", "3:3", 3),
    ];
    let peer = view(
        &[("a", "1:1"), ("b", "2:2")],
        Some(&[("a", "1:1", 2), ("b", "2:2", 4)]),
    );
    assert_eq!(
        differences(&ours, &peer),
        [
            ("a".to_owned(), "1:1".to_owned(), Difference::OlderVersion),
            ("c".to_owned(), "3:3".to_owned(), Difference::Missing),
        ]
    );
    // A peer whose versions are not compared (not one of ours) only shows what it lacks.
    let java = view(&[("a", "1:1"), ("b", "2:2")], None);
    assert_eq!(differences(&ours, &java).len(), 1);
}

#[test]
fn a_difference_is_reported_once_it_lasted_and_forgotten_when_it_ends() {
    let mut t = Tracker::default();
    let start = Instant::now();
    let after = Duration::from_secs(30);
    let missing = || vec![("a".to_owned(), "1:1".to_owned(), Difference::Missing)];
    t.observe("p1", missing(), start);
    assert!(t.report(start + Duration::from_secs(29), after).is_empty());
    t.observe("p1", missing(), start + Duration::from_secs(30));
    let report = t.report(start + Duration::from_secs(30), after);
    assert_eq!(report.len(), 1);
    assert_eq!(
        report[0].since, start,
        "counted from when it was first seen"
    );
    // Another peer's round does not touch p1's differences.
    t.observe("p2", Vec::new(), start + Duration::from_secs(31));
    assert_eq!(t.report(start + Duration::from_secs(31), after).len(), 1);
    // It ends, then starts again: counted afresh.
    t.observe("p1", Vec::new(), start + Duration::from_secs(40));
    t.observe("p1", missing(), start + Duration::from_secs(50));
    assert!(t.report(start + Duration::from_secs(60), after).is_empty());
    t.forget("p1");
    assert!(t.report(start + Duration::from_secs(90), after).is_empty());
}

#[test]
fn a_failing_peer_is_asked_again_later_and_later_up_to_a_bound() {
    use super::checks::retry_after;
    let short = Duration::from_millis(100);
    let waits: Vec<u64> = (1..=8).map(|n| retry_after(short, n).as_secs()).collect();
    assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30, 30]);
    assert_eq!(retry_after(short, u32::MAX), Duration::from_secs(30));
    // An interval longer than the bounds is never shortened.
    let long = Duration::from_secs(60);
    assert_eq!(retry_after(long, 1), long);
    assert_eq!(retry_after(long, 5), long);
}

#[test]
fn a_peer_listed_twice_is_checked_once() {
    let mut s = crate::config::Settings::defaults(&crate::config::Env {
        home: "/nonexistent".into(),
        rocketmq_home: None,
    });
    s.namesrv_peers = "10.0.0.1:9876; 10.0.0.2:9876;10.0.0.1:9876".into();
    let settings = PeerSettings::from_settings(&s);
    assert_eq!(settings.peers, ["10.0.0.1:9876", "10.0.0.2:9876"]);
    assert_eq!(settings.max_answer_bytes, 4 * 1024 * 1024);
}
