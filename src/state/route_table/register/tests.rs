//! Registration on the plain table: each step of `RouteInfoManager#registerBroker`, the
//! shortcuts for unchanged bodies and configs, and refused or stale registrations.

use std::time::Duration;

use super::super::testing::*;
use super::*;
use crate::protocol::body::{QueueData, RegisterBody};

/// A registration body given as JSON, decoded as a 5.x broker's would be.
fn decoded(json: &'static str) -> RegisterBody {
    let options = crate::protocol::body::DecodeOptions {
        compressed: false,
        version: 479,
        max_inflated: 1 << 20,
    };
    RegisterBody::decode(bytes::Bytes::from(json), options).unwrap()
}

fn now() -> Instant {
    Instant::now()
}

fn queue(t: &RouteTable, topic: &str, broker: &str) -> Option<QueueData> {
    t.topic(topic)?.queue(broker).map(|q| q.data.clone())
}

#[test]
fn master_registration_creates_every_table_entry() {
    let mut t = RouteTable::new();
    let out = register_broker_a(&mut t, &body(1, &["TopicA", "TopicB"]), now());
    assert_eq!(out, RegisterOutcome::without_master());
    assert_eq!(
        t.cluster("DefaultCluster").unwrap(),
        &[Name::from("broker-a")]
    );
    let group = t.broker("broker-a").unwrap();
    assert_eq!(group.data.addrs.get(&0).map(|a| &**a), Some("a:1"));
    assert_eq!(queue(&t, "TopicA", "broker-a").unwrap().perm, 6);
    assert!(t.live("DefaultCluster", "a:1").is_some());
    assert_eq!(t.filter_servers("DefaultCluster", "a:1"), None);
}

#[test]
fn slave_gets_master_and_does_not_feed_topics() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["TopicA", "TopicB"]), now());
    let slave_body = body_with(1, 0, &[("TopicA", 1, 1, 2, 0), ("TopicC", 1, 1, 6, 0)]);
    let out = register(&mut t, &reg("broker-a", "a:2", 1, 2), &slave_body, now());
    assert_eq!(
        out,
        RegisterOutcome::Registered {
            master_addr: Some("a:1".into()),
            ha_server_addr: Some("ha:1".into())
        }
    );
    assert_eq!(queue(&t, "TopicA", "broker-a").unwrap().perm, 6);
    assert!(t.topic("TopicC").is_none());
    assert_eq!(t.broker("broker-a").unwrap().data.addrs.len(), 2);
}

#[test]
fn prime_slave_feeds_topics_and_wipes_write_perm_when_acting_master() {
    let mut t = RouteTable::new();
    let mut r = reg("broker-a", "a:2", 1, 2);
    r.enable_acting_master = Some(true);
    register(&mut t, &r, &body(1, &["TopicA", "TopicB"]), now());
    assert_eq!(queue(&t, "TopicA", "broker-a").unwrap().perm, 4);
    // A pre-5.0 slave (no enableActingMaster) never feeds topics.
    let mut old = RouteTable::new();
    let mut r = reg("broker-b", "b:2", 1, 2);
    r.enable_acting_master = None;
    register(&mut old, &r, &body(1, &["TopicA", "TopicB"]), now());
    assert!(old.topic("TopicA").is_none());
}

#[test]
fn single_topic_first_registration_is_rejected_with_side_effects() {
    let mut t = RouteTable::new();
    let out = register_broker_a(&mut t, &body(1, &["OnlyOne"]), now());
    assert_eq!(out, RegisterOutcome::Rejected);
    assert!(t.broker("broker-a").unwrap().data.addrs.is_empty());
    assert!(t.cluster("DefaultCluster").is_some());
    assert!(t.topic("OnlyOne").is_none());
    assert!(t.live("DefaultCluster", "a:1").is_none());
    // After a full registration, single-topic registrations are fine.
    register_broker_a(&mut t, &body(1, &["A", "B"]), now());
    let out = register_broker_a(&mut t, &body(2, &["C"]), now());
    assert!(matches!(out, RegisterOutcome::Registered { .. }));
    assert!(t.topic("C").is_some());
}

#[test]
fn one_address_never_has_two_ids() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["A", "B"]), now());
    register(
        &mut t,
        &reg("broker-a", "a:2", 1, 2),
        &body(1, &["A", "B"]),
        now(),
    );
    // The slave at a:2 is promoted: it re-registers as id 0.
    register(
        &mut t,
        &reg("broker-a", "a:2", 0, 2),
        &body(2, &["A", "B"]),
        now(),
    );
    let addrs: Vec<_> = t
        .broker("broker-a")
        .unwrap()
        .data
        .addrs
        .iter()
        .map(|(k, v)| (*k, v.to_string()))
        .collect();
    assert_eq!(addrs, vec![(0, "a:2".to_owned())]);
}

/// Controller mode: the state version is the master epoch. A slave of epoch 2 registering
/// while the deposed master of epoch 1 still holds id 0 is not pointed at it (its HA client
/// would stay attached to the old master); a slave of the master's own epoch is.
#[test]
fn a_slave_is_not_pointed_at_a_master_of_an_older_epoch() {
    let mut t = RouteTable::new();
    register_broker_a(
        &mut t,
        &body_with(1, 1, &[("A", 4, 4, 6, 0), ("B", 4, 4, 6, 0)]),
        now(),
    );
    let newer = body_with(1, 2, &[("A", 4, 4, 6, 0), ("B", 4, 4, 6, 0)]);
    let out = register(&mut t, &reg("broker-a", "a:2", 1, 2), &newer, now());
    assert_eq!(out, RegisterOutcome::without_master());
    let same = body_with(1, 1, &[("A", 4, 4, 6, 0), ("B", 4, 4, 6, 0)]);
    let out = register(&mut t, &reg("broker-a", "a:3", 2, 3), &same, now());
    assert_eq!(
        out,
        RegisterOutcome::Registered {
            master_addr: Some("a:1".into()),
            ha_server_addr: Some("ha:1".into())
        }
    );
}

#[test]
fn older_state_version_at_a_new_address_is_ignored() {
    let mut t = RouteTable::new();
    register_broker_a(
        &mut t,
        &body_with(1, 5, &[("A", 4, 4, 6, 0), ("B", 4, 4, 6, 0)]),
        now(),
    );
    let out = register(
        &mut t,
        &reg("broker-a", "a:9", 0, 2),
        &body_with(1, 3, &[("A", 8, 8, 6, 0), ("B", 8, 8, 6, 0)]),
        now(),
    );
    assert_eq!(out, RegisterOutcome::without_master());
    assert_eq!(
        t.broker("broker-a")
            .unwrap()
            .data
            .addrs
            .get(&0)
            .map(|a| &**a),
        Some("a:1")
    );
    assert!(t.live("DefaultCluster", "a:9").is_none());
    assert_eq!(queue(&t, "A", "broker-a").unwrap().read_queue_nums, 4);
}

#[test]
fn unchanged_data_version_only_restores_missing_topics() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["A", "B"]), now());
    // Same version, different content: Java does not re-read known topics.
    let same_version = body_with(
        1,
        0,
        &[("A", 9, 9, 6, 0), ("B", 4, 4, 6, 0), ("C", 1, 1, 6, 0)],
    );
    register_broker_a(&mut t, &same_version, now());
    assert_eq!(queue(&t, "A", "broker-a").unwrap().read_queue_nums, 4);
    assert_eq!(queue(&t, "C", "broker-a").unwrap().read_queue_nums, 1);
    // A new version re-reads everything.
    let new_version = body_with(2, 0, &[("A", 9, 9, 6, 0), ("B", 4, 4, 6, 0)]);
    register_broker_a(&mut t, &new_version, now());
    assert_eq!(queue(&t, "A", "broker-a").unwrap().read_queue_nums, 9);
}

#[test]
fn a_table_applied_only_in_part_is_re_read_when_the_version_changes() {
    // Found by the model test: an unchanged version only adds missing topics, so the
    // next new version must re-read the very same table.
    let mut t = RouteTable::new();
    register(
        &mut t,
        &reg("b", "a:1", 0, 1),
        &body_with(2, 0, &[("A", 4, 4, 6, 0), ("T", 4, 4, 7, 0)]),
        now(),
    );
    let same_version = body_with(2, 0, &[("B", 4, 4, 7, 0), ("T", 4, 4, 4, 0)]);
    register(&mut t, &reg("b", "a:1", 0, 1), &same_version, now());
    assert_eq!(queue(&t, "T", "b").unwrap().perm, 7);
    let new_version = body_with(1, 0, &[("B", 4, 4, 7, 0), ("T", 4, 4, 4, 0)]);
    register(&mut t, &reg("b", "a:1", 0, 1), &new_version, now());
    assert_eq!(queue(&t, "T", "b").unwrap().perm, 4);
}

#[test]
fn changed_version_restores_a_wiped_permission() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["A", "B"]), now());
    assert_eq!(t.wipe_write_perm("broker-a"), 2);
    assert_eq!(queue(&t, "A", "broker-a").unwrap().perm, 4);
    register_broker_a(&mut t, &body(2, &["A", "B"]), now());
    assert_eq!(queue(&t, "A", "broker-a").unwrap().perm, 6);
}

#[test]
fn unchanged_body_skips_decoding_until_something_changes() {
    let mut t = RouteTable::new();
    let b = body(1, &["A", "B"]);
    let r = reg("broker-a", "a:1", 0, 1);
    let settings = RegisterSettings::default();
    let unchanged = BodyInput::Unchanged { digest: b.digest() };
    assert!(matches!(
        t.register(&r, unchanged, &settings, now()),
        Err(RegisterError::NeedsBody)
    ));
    t.register(
        &r,
        BodyInput::Decoded {
            body: &b,
            digest: b.digest(),
        },
        &settings,
        now(),
    )
    .unwrap();
    let before = t.live("DefaultCluster", "a:1").unwrap().last_update;
    let later = before + Duration::from_secs(5);
    assert!(t.register(&r, unchanged, &settings, later).is_ok());
    assert_eq!(t.live("DefaultCluster", "a:1").unwrap().last_update, later);
    // A permission change means the next registration must be read in full.
    t.wipe_write_perm("broker-a");
    assert!(matches!(
        t.register(&r, unchanged, &settings, now()),
        Err(RegisterError::NeedsBody)
    ));
}

#[test]
fn a_bad_topic_config_changes_nothing() {
    let mut t = RouteTable::new();
    let json = r#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"A":{"topicName":"A"},"B":{"topicName":"B","perm":"bad"}}}}"#;
    let b = decoded(json);
    let r = reg("broker-a", "a:1", 0, 1);
    let res = t.register(
        &r,
        BodyInput::Decoded {
            body: &b,
            digest: 1,
        },
        &RegisterSettings::default(),
        now(),
    );
    assert!(matches!(res, Err(RegisterError::BadBody(_))));
    assert!(t.broker("broker-a").is_none());
    assert_eq!(t.topic_count(), 0);
}

#[test]
fn delete_topic_with_broker_registration_drops_missing_topics() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["A", "B", "C"]), now());
    let settings = RegisterSettings {
        delete_topic_with_broker_registration: true,
    };
    let b = body(2, &["A", "B"]);
    t.register(
        &reg("broker-a", "a:1", 0, 1),
        BodyInput::Decoded {
            body: &b,
            digest: 2,
        },
        &settings,
        now(),
    )
    .unwrap();
    assert!(t.topic("C").is_none());
    assert!(t.topic("A").is_some());
}

#[test]
fn a_first_registration_repeating_one_topic_is_refused_like_a_single_topic() {
    let mut t = RouteTable::new();
    let b = body(1, &["A", "A"]);
    let outcome = register_broker_a(&mut t, &b, now());
    assert!(matches!(outcome, RegisterOutcome::Rejected));
    let b = body(1, &["A", "B"]);
    let outcome = register_broker_a(&mut t, &b, now());
    assert!(matches!(outcome, RegisterOutcome::Registered { .. }));
}

#[test]
fn switching_delete_topic_with_broker_registration_on_prunes_at_the_next_heartbeat() {
    let mut t = RouteTable::new();
    let r = reg("broker-a", "a:1", 0, 1);
    register(&mut t, &r, &body(1, &["A", "B", "C"]), now());
    let b = body(2, &["A", "B"]);
    register(&mut t, &r, &b, now());
    assert!(t.topic("C").is_some(), "kept while the flag is off");
    // The broker re-sends the very same body after the operator switched the flag on:
    // Java drops C then, so the unchanged-body shortcuts must not apply.
    let settings = RegisterSettings {
        delete_topic_with_broker_registration: true,
    };
    let unchanged = BodyInput::Unchanged { digest: b.digest() };
    assert!(matches!(
        t.register(&r, unchanged, &settings, now()),
        Err(RegisterError::NeedsBody)
    ));
    let decoded = BodyInput::Decoded {
        body: &b,
        digest: b.digest(),
    };
    t.register(&r, decoded, &settings, now()).unwrap();
    assert!(t.topic("C").is_none());
    assert!(t.topic("A").is_some());
    // Pruned once, the same body is again recognised without being read.
    assert!(t.register(&r, unchanged, &settings, now()).is_ok());
}

#[test]
fn zone_flag_and_filter_servers_follow_the_latest_registration() {
    let mut t = RouteTable::new();
    let mut r = reg("broker-a", "a:1", 0, 1);
    r.zone_name = Some("z1");
    r.heartbeat_timeout_millis = Some(10_000);
    let json = r#"{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"A":{"topicName":"A"},"B":{"topicName":"B"}}}}"#;
    let b = decoded(json);
    register(&mut t, &r, &b, now());
    assert_eq!(
        t.broker("broker-a").unwrap().data.zone_name.as_deref(),
        Some("z1")
    );
    assert_eq!(
        t.filter_servers("DefaultCluster", "a:1"),
        Some(&["f:1".to_owned()][..])
    );
    assert_eq!(
        t.live("DefaultCluster", "a:1").unwrap().timeout,
        Duration::from_secs(10)
    );
    r.zone_name = None;
    register(&mut t, &r, &body(2, &["A", "B"]), now());
    assert_eq!(t.broker("broker-a").unwrap().data.zone_name, None);
    assert_eq!(t.filter_servers("DefaultCluster", "a:1"), None);
}

#[test]
fn revisions_change_only_for_changed_topics() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["A", "B"]), now());
    let (ra, rb) = (
        t.topic("A").unwrap().revision,
        t.topic("B").unwrap().revision,
    );
    let epoch = t.broker_epoch;
    register_broker_a(
        &mut t,
        &body_with(2, 0, &[("A", 8, 8, 6, 0), ("B", 4, 4, 6, 0)]),
        now(),
    );
    assert_ne!(t.topic("A").unwrap().revision, ra);
    assert_eq!(t.topic("B").unwrap().revision, rb);
    assert_eq!(t.broker_epoch, epoch);
}
