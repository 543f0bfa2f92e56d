//! Random sequences of route-table operations: registrations (JSON and compressed bodies,
//! masters and slaves, acting-master brokers, custom heartbeat timeouts, filter servers,
//! static-topic mappings, `deleteTopicWithBrokerRegistration`), heartbeats, unregistrations,
//! closed connections, expiry, write-permission changes, topic deletion and
//! REGISTER_TOPIC_IN_NAMESRV.
//!
//! Two tables receive the same operations: `fast` registers the way the REGISTER_BROKER
//! handler does (first `BodyInput::Unchanged` with the body's digest, and only on
//! `NeedsBody` the decoded body), `plain` always passes the decoded body. After every step:
//!
//! * nothing panicked and no valid body was refused;
//! * both tables answer the same outcome and the same routes, topic lists and cluster
//!   tables (the unchanged-body shortcut changes nothing);
//! * in each table the cached route equals a freshly encoded one, for both JSON styles.
//!   `supportActingMaster` is chosen once per input: it is server configuration, and the
//!   server folds configuration changes into the cache stamp's external epoch. The fresh route is obtained through the public API
//!   by asking with a zone filter, which bypasses the cache; every broker registers in that
//!   zone, so the filter keeps everything. (`RouteTable::route_uncached` would be more direct
//!   but is `#[cfg(test)]`.)
#![no_main]

use std::io::Write;
use std::time::Duration;

use arbitrary::Arbitrary;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use namesrv::protocol::body::route::QueueDataInput;
use namesrv::protocol::body::{DecodeOptions, RegisterBody};
use namesrv::protocol::json::JsonStyle;
use namesrv::state::route_table::query::{RouteQuery, UnitFilter};
use namesrv::state::route_table::register::{
    BodyInput, RegisterError, RegisterSettings, Registration,
};
use namesrv::state::route_table::unregister::Unregistration;
use namesrv::state::{ConnId, RouteTable};
use tokio::time::Instant;

const CLUSTERS: [&str; 2] = ["C0", "C1"];
const BROKERS: [&str; 4] = ["b0", "b1", "b2", "b3"];
const ADDRS: [&str; 4] = [
    "127.0.0.1:10911",
    "127.0.0.1:10921",
    "127.0.0.2:10911",
    "h:1",
];
const TOPICS: [&str; 7] = [
    "t0",
    "t1",
    "t2",
    "TBW102",
    "C0",
    "b0",
    "rmq_sys_SYNC_BROKER_MEMBER_b0",
];
const ZONE: &str = "Z";

#[derive(Arbitrary, Debug)]
struct TopicRow {
    topic: u8,
    read: u8,
    write: u8,
    perm: u8,
    sys_flag: u8,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Register {
        cluster: u8,
        broker: u8,
        addr: u8,
        id: u8,
        conn: u8,
        counter: u8,
        state_version: u8,
        acting_master: Option<bool>,
        timeout_secs: Option<u8>,
        delete_with_registration: bool,
        compressed: bool,
        topics: Vec<TopicRow>,
        filter_servers: u8,
        mapping: Option<u8>,
    },
    Heartbeat {
        cluster: u8,
        addr: u8,
    },
    Unregister {
        cluster: u8,
        addr: u8,
        broker: u8,
        id: u8,
    },
    ConnectionClosed(u8),
    Advance(u8),
    Wipe(u8),
    Add(u8),
    Delete {
        topic: u8,
        cluster: Option<u8>,
    },
    RegisterTopic {
        topic: u8,
        queues: Vec<(Option<u8>, u8, u8, u8, u8)>,
    },
}

fn pick<T: Copy>(list: &[T], i: u8) -> T {
    list[i as usize % list.len()]
}

/// A registration body and its raw bytes.
fn body(
    counter: u8,
    state_version: u8,
    topics: &[TopicRow],
    filter_servers: u8,
    mapping: Option<u8>,
    compressed: bool,
) -> (Bytes, DecodeOptions) {
    let dv = format!(
        r#"{{"counter":{counter},"stateVersion":{state_version},"timestamp":1700000000000}}"#
    );
    let fs: Vec<String> = (0..filter_servers % 3)
        .map(|i| format!("\"127.0.0.1:4000{i}\""))
        .collect();
    let fs = format!("[{}]", fs.join(","));
    let mappings: Vec<(String, String)> = mapping
        .map(|m| {
            let topic = pick(&TOPICS, m);
            let json = format!(
                r#"{{"bname":"b{}","currIdMap":{{0:{}}},"dirty":false,"epoch":{m},"scope":"__global__","topic":"{topic}","totalQueues":1}}"#,
                m % 4,
                m % 3
            );
            (topic.to_owned(), json)
        })
        .into_iter()
        .collect();
    let mut seen = std::collections::HashSet::new();
    let rows: Vec<&TopicRow> = topics
        .iter()
        .take(8)
        .filter(|r| seen.insert(pick(&TOPICS, r.topic)))
        .collect();
    let opts = DecodeOptions {
        compressed,
        version: 479,
        max_inflated: 1 << 20,
    };
    if compressed {
        let mut raw = Vec::new();
        let chunk = |raw: &mut Vec<u8>, b: &[u8]| {
            raw.extend_from_slice(&(b.len() as i32).to_be_bytes());
            raw.extend_from_slice(b);
        };
        chunk(&mut raw, dv.as_bytes());
        raw.extend_from_slice(&(rows.len() as i32).to_be_bytes());
        for r in &rows {
            let text = format!(
                "{} {} {} {} SINGLE_TAG {{}}",
                pick(&TOPICS, r.topic),
                r.read % 9,
                r.write % 9,
                r.perm % 8
            );
            chunk(&mut raw, text.as_bytes());
        }
        chunk(&mut raw, fs.as_bytes());
        raw.extend_from_slice(&(mappings.len() as i32).to_be_bytes());
        for (_, m) in &mappings {
            chunk(&mut raw, m.as_bytes());
        }
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&raw).unwrap();
        (Bytes::from(enc.finish().unwrap()), opts)
    } else {
        let table: Vec<String> = rows
            .iter()
            .map(|r| {
                let t = pick(&TOPICS, r.topic);
                format!(
                    r#""{t}":{{"attributes":{{}},"order":false,"perm":{},"readQueueNums":{},"topicFilterType":"SINGLE_TAG","topicName":"{t}","topicSysFlag":{},"writeQueueNums":{}}}"#,
                    r.perm % 8,
                    r.read % 9,
                    r.sys_flag % 4,
                    r.write % 9
                )
            })
            .collect();
        let maps: Vec<String> = mappings
            .iter()
            .map(|(t, m)| format!("\"{t}\":{m}"))
            .collect();
        let json = format!(
            r#"{{"filterServerList":{fs},"topicConfigSerializeWrapper":{{"dataVersion":{dv},"mappingDataVersion":{dv},"topicConfigTable":{{{}}},"topicQueueMappingDetailMap":{{}},"topicQueueMappingInfoMap":{{{}}}}}}}"#,
            table.join(","),
            maps.join(",")
        );
        (Bytes::from(json), opts)
    }
}

fn route(
    t: &RouteTable,
    topic: &str,
    style: JsonStyle,
    acting: bool,
    zone: Option<&str>,
) -> Option<Bytes> {
    t.route(&RouteQuery {
        topic,
        style,
        support_acting_master: acting,
        zone,
        external_epoch: 0,
        order_topic_conf: &|| None,
    })
}

/// Everything observable through the read API, in a canonical order; checks cache
/// coherence on the way.
fn observe(t: &RouteTable, acting: bool, label: &str) -> Vec<String> {
    let mut out = Vec::new();
    for topic in TOPICS {
        for style in [JsonStyle::Legacy, JsonStyle::Standard] {
            {
                let cached = route(t, topic, style, acting, None);
                let again = route(t, topic, style, acting, None);
                let fresh = route(t, topic, style, acting, Some(ZONE));
                assert_eq!(
                    cached, again,
                    "{label}: second lookup of {topic} {style:?} {acting}"
                );
                assert_eq!(
                    cached, fresh,
                    "{label}: cached route of {topic} ({style:?}, acting {acting}) is stale"
                );
                out.push(format!("{topic} {style:?} {acting} {cached:?}"));
            }
        }
    }
    let mut topics: Vec<String> = t.all_topics().iter().map(|n| n.to_string()).collect();
    topics.sort();
    out.push(format!("topics {topics:?} count {}", t.topic_count()));
    assert_eq!(topics.len(), t.topic_count(), "{label}: topic_count");
    for c in CLUSTERS {
        let mut by = t.topics_by_cluster(c);
        by.sort();
        out.push(format!("{c}: {by:?} {:?}", t.cluster(c)));
    }
    let (mut sys, _addr) = t.system_topics();
    sys.sort();
    out.push(format!("system {sys:?}"));
    for f in [
        UnitFilter::Unit,
        UnitFilter::UnitSub,
        UnitFilter::UnitSubNotUnit,
    ] {
        let mut u = t.unit_topics(f);
        u.sort();
        out.push(format!("unit {f:?} {u:?}"));
    }
    let snap = t.cluster_snapshot();
    let mut brokers: Vec<String> = snap.brokers.iter().map(|b| format!("{b:?}")).collect();
    brokers.sort();
    out.push(format!("brokers {brokers:?}"));
    for b in BROKERS {
        out.push(format!("members {b} {:?}", t.member_group(b)));
        for c in CLUSTERS {
            for a in ADDRS {
                out.push(format!(
                    "live {c} {a} {:?} {:?} {:?}",
                    t.live(c, a).is_some(),
                    t.data_version(c, a),
                    t.filter_servers(c, a)
                ));
            }
        }
    }
    out.push(format!("live {}", t.live_count()));
    out
}

fuzz_target!(|input: (bool, Vec<Op>)| {
    let (acting, ops) = input;
    let start = Instant::now();
    let mut now_secs: u64 = 0;
    let mut fast = RouteTable::new();
    let mut plain = RouteTable::new();
    for (step, op) in ops.iter().take(64).enumerate() {
        let now = start + Duration::from_secs(now_secs);
        match op {
            Op::Register {
                cluster,
                broker,
                addr,
                id,
                conn,
                counter,
                state_version,
                acting_master,
                timeout_secs,
                delete_with_registration,
                compressed,
                topics,
                filter_servers,
                mapping,
            } => {
                let reg = Registration {
                    cluster: pick(&CLUSTERS, *cluster),
                    broker_addr: pick(&ADDRS, *addr),
                    broker_name: pick(&BROKERS, *broker),
                    broker_id: (*id % 3) as i64,
                    ha_server_addr: Some("127.0.0.1:10912"),
                    zone_name: Some(ZONE),
                    heartbeat_timeout_millis: timeout_secs.map(|s| s as i64 * 1000),
                    enable_acting_master: *acting_master,
                    conn: ConnId((*conn % 4) as u64),
                    version: 479,
                };
                let settings = RegisterSettings {
                    delete_topic_with_broker_registration: *delete_with_registration,
                };
                let (raw, opts) = body(
                    *counter % 4,
                    *state_version % 3,
                    topics,
                    *filter_servers,
                    *mapping,
                    *compressed,
                );
                // As the handler computes it for a 5.x body (format seed 3).
                let digest = xxhash_rust::xxh3::xxh3_64_with_seed(&raw, 3);
                let decoded = RegisterBody::decode(raw, opts).expect("a generated body decodes");
                let with_body = || BodyInput::Decoded {
                    body: &decoded,
                    digest,
                };
                let outcome_plain = plain
                    .register(&reg, with_body(), &settings, now)
                    .unwrap_or_else(|e| panic!("step {step}: plain registration failed: {e}"));
                let outcome_fast =
                    match fast.register(&reg, BodyInput::Unchanged { digest }, &settings, now) {
                        Ok(o) => o,
                        Err(RegisterError::NeedsBody) => fast
                            .register(&reg, with_body(), &settings, now)
                            .unwrap_or_else(|e| panic!("step {step}: registration failed: {e}")),
                        Err(e) => panic!("step {step}: unchanged registration failed: {e}"),
                    };
                assert_eq!(outcome_fast, outcome_plain, "step {step}: outcomes differ");
            }
            Op::Heartbeat { cluster, addr } => {
                let (c, a) = (pick(&CLUSTERS, *cluster), pick(&ADDRS, *addr));
                assert_eq!(fast.touch_broker(c, a, now), plain.touch_broker(c, a, now));
            }
            Op::Unregister {
                cluster,
                addr,
                broker,
                id,
            } => {
                let u = [Unregistration {
                    cluster: pick(&CLUSTERS, *cluster).into(),
                    broker_addr: pick(&ADDRS, *addr).into(),
                    broker_name: pick(&BROKERS, *broker).into(),
                    broker_id: (*id % 3) as i64,
                }];
                fast.unregister(&u);
                plain.unregister(&u);
            }
            Op::ConnectionClosed(c) => {
                let mut a = fast.connection_closed(ConnId((*c % 4) as u64));
                let mut b = plain.connection_closed(ConnId((*c % 4) as u64));
                a.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
                b.sort_by(|x, y| format!("{x:?}").cmp(&format!("{y:?}")));
                assert_eq!(
                    a, b,
                    "step {step}: closed connection removed different brokers"
                );
            }
            Op::Advance(secs) => {
                now_secs += *secs as u64;
                let now = start + Duration::from_secs(now_secs);
                let mut a: Vec<String> =
                    fast.expire(now).iter().map(|x| format!("{x:?}")).collect();
                let mut b: Vec<String> =
                    plain.expire(now).iter().map(|x| format!("{x:?}")).collect();
                a.sort();
                b.sort();
                assert_eq!(a, b, "step {step}: expiry removed different brokers");
            }
            Op::Wipe(b) => {
                let b = pick(&BROKERS, *b);
                assert_eq!(fast.wipe_write_perm(b), plain.wipe_write_perm(b));
            }
            Op::Add(b) => {
                let b = pick(&BROKERS, *b);
                assert_eq!(fast.add_write_perm(b), plain.add_write_perm(b));
            }
            Op::Delete { topic, cluster } => {
                let t = pick(&TOPICS, *topic);
                let c = cluster.map(|c| pick(&["C0", "C1", ""], c));
                fast.delete_topic(t, c);
                plain.delete_topic(t, c);
            }
            Op::RegisterTopic { topic, queues } => {
                let t = pick(&TOPICS, *topic);
                let q: Vec<QueueDataInput> = queues
                    .iter()
                    .take(6)
                    .map(|(b, r, w, p, f)| QueueDataInput {
                        broker_name: b.map(|b| pick(&["b0", "b1", "b2", "b3", "x"], b).to_owned()),
                        read_queue_nums: (*r % 9) as i32,
                        write_queue_nums: (*w % 9) as i32,
                        perm: (*p % 8) as i32,
                        topic_sys_flag: (*f % 4) as i32,
                    })
                    .collect();
                fast.register_topic(t, &q);
                plain.register_topic(t, &q);
            }
        }
        let a = observe(&fast, acting, &format!("step {step} (fast) after {op:?}"));
        let b = observe(&plain, acting, &format!("step {step} (plain) after {op:?}"));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                x, y,
                "step {step}: the unchanged-body shortcut changed the table after {op:?}"
            );
        }
    }
});

