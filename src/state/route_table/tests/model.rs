//! Property test: the route table against a simple model, under random sequences of
//! registrations (new, changed and unchanged data versions), heartbeats, unregistrations,
//! expiry, write-permission changes and topic deletions. After every step each topic's route
//! must match the model, and the cached route must equal a freshly encoded one.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use bytes::Bytes;
use proptest::prelude::*;
use tokio::time::Instant;

use crate::protocol::body::{DecodeOptions, RegisterBody};
use crate::state::ConnId;
use crate::state::route_table::RouteTable;
use crate::state::route_table::register::{BodyInput, RegisterSettings, Registration};
use crate::state::route_table::unregister::Unregistration;

const BROKERS: [&str; 3] = ["b0", "b1", "b2"];
const TOPICS: [&str; 5] = ["t0", "t1", "t2", "t3", "t4"];

#[derive(Debug, Clone)]
enum Op {
    /// Broker, data-version counter, topics (index, perm).
    Register(usize, i64, Vec<(usize, i32)>),
    Heartbeat(usize),
    Unregister(usize),
    Advance(u64),
    Wipe(usize),
    Add(usize),
    Delete(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize, 1..4i64, proptest::collection::btree_map(0..5usize, prop_oneof![Just(6), Just(7), Just(4)], 2..5))
            .prop_map(|(b, v, t)| Op::Register(b, v, t.into_iter().collect())),
        1 => (0..3usize).prop_map(Op::Heartbeat),
        1 => (0..3usize).prop_map(Op::Unregister),
        1 => prop_oneof![Just(30u64), Just(100), Just(121)].prop_map(Op::Advance),
        1 => (0..3usize).prop_map(Op::Wipe),
        1 => (0..3usize).prop_map(Op::Add),
        1 => (0..5usize).prop_map(Op::Delete),
    ]
}

#[derive(Debug, Default)]
struct ModelBroker {
    version: i64,
    last_heartbeat: u64,
    perms: BTreeMap<usize, i32>,
}

#[derive(Debug, Default)]
struct Model {
    now: u64,
    brokers: BTreeMap<usize, ModelBroker>,
}

impl Model {
    fn route(&self, topic: usize) -> BTreeSet<(String, i32)> {
        self.brokers
            .iter()
            .filter_map(|(b, m)| m.perms.get(&topic).map(|p| (BROKERS[*b].to_owned(), *p)))
            .collect()
    }
}

fn body(
    version: i64,
    topics: &[(usize, i32)],
    hint: Option<crate::protocol::body::TableHint>,
) -> RegisterBody {
    let table: Vec<String> = topics
        .iter()
        .map(|(t, p)| {
            format!(
                r#""{0}":{{"topicName":"{0}","perm":{p},"readQueueNums":4,"writeQueueNums":4}}"#,
                TOPICS[*t]
            )
        })
        .collect();
    let json = format!(
        r#"{{"filterServerList":[],"topicConfigSerializeWrapper":{{"dataVersion":{{"counter":{version},"stateVersion":0,"timestamp":1}},"topicConfigTable":{{{}}}}}}}"#,
        table.join(",")
    );
    let opts = DecodeOptions {
        compressed: false,
        version: 479,
        max_inflated: 1 << 20,
    };
    // As the handler does: the broker's previous table is recognised by its digest.
    RegisterBody::decode_with_hint(Bytes::from(json), opts, hint).unwrap()
}

fn route_of(t: &RouteTable, topic: &str, cached: bool) -> Option<BTreeSet<(String, i32)>> {
    let query = crate::state::route_table::testing::query(topic);
    let body = if cached {
        t.route(&query)?
    } else {
        t.route_uncached(&query)?
    };
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    Some(
        v["queueDatas"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                (
                    q["brokerName"].as_str().unwrap().to_owned(),
                    q["perm"].as_i64().unwrap() as i32,
                )
            })
            .collect(),
    )
}

fn apply(t: &mut RouteTable, m: &mut Model, op: &Op, start: Instant) {
    let now = start + Duration::from_secs(m.now);
    let addr = |b: usize| format!("10.0.0.{b}:10911");
    match op {
        Op::Register(b, version, topics) => {
            let addr = addr(*b);
            let reg = Registration {
                cluster: "C",
                broker_addr: &addr,
                broker_name: BROKERS[*b],
                broker_id: 0,
                ha_server_addr: None,
                zone_name: None,
                heartbeat_timeout_millis: None,
                enable_acting_master: Some(false),
                conn: ConnId(*b as u64),
                version: 479,
            };
            let body = body(*version, topics, t.table_hint("C", &addr));
            let digest = xxhash_rust::xxh3::xxh3_64(format!("{version}{topics:?}").as_bytes());
            t.register(
                &reg,
                BodyInput::Decoded {
                    body: &body,
                    digest,
                },
                &RegisterSettings::default(),
                now,
            )
            .unwrap();
            let mb = m.brokers.entry(*b).or_default();
            let fresh = mb.perms.is_empty() && mb.version == 0;
            for (topic, perm) in topics {
                if fresh || mb.version != *version || !mb.perms.contains_key(topic) {
                    mb.perms.insert(*topic, *perm);
                }
            }
            mb.version = *version;
            mb.last_heartbeat = m.now;
        }
        Op::Heartbeat(b) => {
            if t.touch_broker("C", &addr(*b), now) {
                m.brokers.get_mut(b).unwrap().last_heartbeat = m.now;
            }
        }
        Op::Unregister(b) => {
            t.unregister(&[Unregistration {
                cluster: "C".into(),
                broker_addr: addr(*b),
                broker_name: BROKERS[*b].into(),
                broker_id: 0,
            }]);
            m.brokers.remove(b);
        }
        Op::Advance(secs) => {
            m.now += secs;
            t.expire(start + Duration::from_secs(m.now));
            let now = m.now;
            m.brokers.retain(|_, mb| now - mb.last_heartbeat <= 120);
        }
        Op::Wipe(b) => {
            t.wipe_write_perm(BROKERS[*b]);
            if let Some(mb) = m.brokers.get_mut(b) {
                mb.perms.values_mut().for_each(|p| *p &= !2);
            }
        }
        Op::Add(b) => {
            t.add_write_perm(BROKERS[*b]);
            if let Some(mb) = m.brokers.get_mut(b) {
                mb.perms.values_mut().for_each(|p| *p = 6);
            }
        }
        Op::Delete(topic) => {
            t.delete_topic(TOPICS[*topic], None);
            for mb in m.brokers.values_mut() {
                mb.perms.remove(topic);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn route_table_matches_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let mut t = RouteTable::new();
        let mut m = Model::default();
        let start = Instant::now();
        for op in &ops {
            apply(&mut t, &mut m, op, start);
            for (i, topic) in TOPICS.iter().enumerate() {
                let expected = m.route(i);
                let cached = route_of(&t, topic, true);
                let fresh = route_of(&t, topic, false);
                prop_assert_eq!(&cached, &fresh, "cached route of {} after {:?}", topic, op);
                let got = cached.unwrap_or_default();
                prop_assert_eq!(got, expected, "route of {} after {:?}", topic, op);
            }
        }
    }
}
