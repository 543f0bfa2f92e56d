//! Routes and listings: the Java capture byte for byte, cached routes following every
//! change, acting masters, zones, and the order of Java's hash tables.

use tokio::time::Instant;

use crate::protocol::body::Name;
use crate::protocol::json::JsonStyle;
use crate::state::route_table::RouteTable;
use crate::state::route_table::query::*;
use crate::state::route_table::testing::*;

fn route(t: &RouteTable, q: &RouteQuery<'_>) -> Option<String> {
    t.route(q).map(|b| String::from_utf8(b.to_vec()).unwrap())
}

/// Asserts that the route `q` finds contains `part`.
fn assert_route_has(t: &RouteTable, q: &RouteQuery<'_>, part: &str) {
    let route = route(t, q).expect("a route");
    assert!(route.contains(part), "{part} not in {route}");
}

#[test]
fn routes_match_the_java_capture_and_are_cached() {
    let mut t = RouteTable::new();
    let now = Instant::now();
    register_topics(
        &mut t,
        ("broker-a", "127.0.0.1:10911", 0, 1),
        &["TopicA", "TopicB"],
        now,
    );
    register_topics(
        &mut t,
        ("broker-a", "127.0.0.1:10921", 1, 2),
        &["TopicA", "TopicB"],
        now,
    );
    let expected = r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#;
    assert_eq!(route(&t, &query("TopicA")).as_deref(), Some(expected));
    let first = t.route(&query("TopicA")).unwrap();
    let second = t.route(&query("TopicA")).unwrap();
    assert_eq!(first.as_ptr(), second.as_ptr(), "served from the cache");
    assert!(route(&t, &query("Nope")).is_none());
    let counts = t.counts();
    assert_eq!((counts.cache_hits, counts.cache_misses), (2, 1));
}

#[test]
fn a_write_permission_change_is_visible_at_once() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["A", "B"]), Instant::now());
    assert_route_has(&t, &query("A"), r#""perm":6"#);
    t.wipe_write_perm("broker-a");
    assert_route_has(&t, &query("A"), r#""perm":4"#);
    t.add_write_perm("broker-a");
    assert_route_has(&t, &query("A"), r#""perm":6"#);
}

#[test]
fn a_new_member_is_visible_in_cached_routes() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["A", "B"]), Instant::now());
    assert!(!route(&t, &query("A")).unwrap().contains("a:2"));
    register(
        &mut t,
        &reg("broker-a", "a:2", 1, 2),
        &body(1, &["A", "B"]),
        Instant::now(),
    );
    assert!(route(&t, &query("A")).unwrap().contains("a:2"));
}

#[test]
fn order_conf_and_external_epoch() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["A", "B"]), Instant::now());
    let conf = || Some("broker-a:4".to_owned());
    let mut q = query("A");
    q.order_topic_conf = &conf;
    q.external_epoch = 1;
    assert_route_has(&t, &q, r#""orderTopicConf":"broker-a:4""#);
    let mut q = query("A");
    q.external_epoch = 2;
    assert!(!route(&t, &q).unwrap().contains("orderTopicConf"));
}

#[test]
fn legacy_style_quotes_nothing() {
    let mut t = RouteTable::new();
    register_broker_a(&mut t, &body(1, &["A", "B"]), Instant::now());
    let mut q = query("A");
    q.style = JsonStyle::Legacy;
    assert_route_has(&t, &q, r#""brokerAddrs":{0:"a:1"}"#);
    assert_route_has(&t, &query("A"), r#""brokerAddrs":{"0":"a:1"}"#);
}

#[test]
fn acting_master_is_presented_for_read_only_groups_without_master() {
    let mut t = RouteTable::new();
    let mut s = reg("broker-a", "a:2", 1, 2);
    s.enable_acting_master = Some(true);
    register(&mut t, &s, &body(1, &["A", "B"]), Instant::now());
    let mut q = query("A");
    assert_route_has(&t, &q, r#""brokerAddrs":{"1":"a:2"}"#);
    q.support_acting_master = true;
    q.external_epoch = 1;
    assert_route_has(&t, &q, r#""brokerAddrs":{"0":"a:2"}"#);
    let mut sync = query("rmq_sys_SYNC_BROKER_MEMBER_broker-a");
    sync.support_acting_master = true;
    register(
        &mut t,
        &s,
        &body(2, &["rmq_sys_SYNC_BROKER_MEMBER_broker-a", "B"]),
        Instant::now(),
    );
    assert_route_has(&t, &sync, r#""brokerAddrs":{"1":"a:2"}"#);
}

#[test]
fn zone_filter_keeps_masterless_and_same_zone_groups() {
    let mut t = RouteTable::new();
    let mut a = reg("broker-a", "a:1", 0, 1);
    a.zone_name = Some("zone1");
    let mut b = reg("broker-b", "b:1", 0, 2);
    b.zone_name = Some("zone2");
    let c = reg("broker-c", "c:2", 1, 3);
    register(&mut t, &a, &body(1, &["T", "X"]), Instant::now());
    register(&mut t, &b, &body(1, &["T", "X"]), Instant::now());
    register(&mut t, &c, &body(1, &["T", "X"]), Instant::now());
    let mut q = query("T");
    q.zone = Some("ZONE1");
    let json = route(&t, &q).unwrap();
    assert!(
        json.contains("broker-a") && json.contains("broker-c"),
        "{json}"
    );
    assert!(!json.contains("broker-b"), "{json}");
    // The filtered body is not cached.
    assert!(route(&t, &query("T")).unwrap().contains("broker-b"));
}

#[test]
fn a_zone_change_is_visible_in_cached_routes() {
    let mut t = RouteTable::new();
    let mut a = reg("broker-a", "a:1", 0, 1);
    a.zone_name = Some("z1");
    register(&mut t, &a, &body(1, &["A", "B"]), Instant::now());
    assert_route_has(&t, &query("A"), r#""zoneName":"z1""#);
    a.zone_name = Some("z2");
    register(&mut t, &a, &body(1, &["A", "B"]), Instant::now());
    assert_route_has(&t, &query("A"), r#""zoneName":"z2""#);
}

#[test]
fn lists() {
    let mut t = RouteTable::new();
    let now = Instant::now();
    register_broker_a(
        &mut t,
        &body_with(
            1,
            0,
            &[("A", 1, 1, 6, 1), ("B", 1, 1, 6, 2), ("C", 1, 1, 6, 3)],
        ),
        now,
    );
    register_topics_in(&mut t, "Other", ("broker-b", "b:1", 0, 2), &["D", "E"], now);
    let sorted = |mut v: Vec<Name>| {
        v.sort();
        v.iter().map(|n| n.to_string()).collect::<Vec<_>>()
    };
    assert_eq!(sorted(t.all_topics()), vec!["A", "B", "C", "D", "E"]);
    assert_eq!(
        sorted(t.topics_by_cluster("DefaultCluster")),
        vec!["A", "B", "C"]
    );
    assert!(t.topics_by_cluster("Nope").is_empty());
    assert_eq!(sorted(t.unit_topics(UnitFilter::Unit)), vec!["A", "C"]);
    assert_eq!(sorted(t.unit_topics(UnitFilter::UnitSub)), vec!["B", "C"]);
    assert_eq!(sorted(t.unit_topics(UnitFilter::UnitSubNotUnit)), vec!["B"]);
    let (sys, addr) = t.system_topics();
    assert_eq!(
        sorted(sys),
        vec!["DefaultCluster", "Other", "broker-a", "broker-b"]
    );
    assert!(addr.is_some());
    assert_eq!(t.member_group("broker-a").len(), 1);
    assert!(t.member_group("nope").is_empty());
    let snap = t.cluster_snapshot();
    assert_eq!((snap.brokers.len(), snap.clusters.len()), (2, 2));
}

#[test]
fn same_bucket_entries_list_in_the_order_they_entered_javas_tables() {
    let now = Instant::now();
    let names = |v: Vec<Name>| v.iter().map(|n| n.to_string()).collect::<Vec<_>>();
    for (first, second) in [("BB", "Aa"), ("Aa", "BB")] {
        // "Aa" and "BB" have the same Java hash; so do broker names "broker-5" and
        // "broker-30" in a 256-bucket table.
        let (b1, b2) = match first {
            "BB" => ("broker-30", "broker-5"),
            _ => ("broker-5", "broker-30"),
        };
        let mut t = RouteTable::new();
        register(&mut t, &reg(b1, "a:1", 0, 1), &body(1, &[first, "X"]), now);
        register(&mut t, &reg(b2, "b:1", 0, 2), &body(1, &[second, "X"]), now);
        let topics = names(t.all_topics());
        let pos = |n: &str| topics.iter().position(|t| t == n).unwrap();
        assert!(pos(first) < pos(second), "{topics:?}");
        let brokers: Vec<_> = t
            .cluster_snapshot()
            .brokers
            .iter()
            .map(|b| b.broker_name.to_string())
            .collect();
        assert_eq!(brokers, [b1, b2]);
    }
}

#[test]
fn the_system_topic_list_address_is_the_first_id_in_java_hash_order() {
    let now = Instant::now();
    let mut t = RouteTable::new();
    register_topics(&mut t, ("broker-a", "a:1", 1, 1), &["A", "B"], now);
    register_topics(&mut t, ("broker-a", "a:16", 16, 2), &["A", "B"], now);
    // Id 16 is in bucket 0 of Java's HashMap<Long, String>, ahead of id 1.
    assert_eq!(t.system_topics().1.as_deref(), Some("a:16"));
}
