//! Workload builders shared by the benches: registration bodies shaped like nsbench's and
//! real brokers', and pre-filled route tables.

#![allow(dead_code)] // each bench uses a part

use bytes::Bytes;
use namesrv::protocol::body::{DecodeOptions, RegisterBody, RegisterBroker};
use namesrv::state::ConnId;
use namesrv::state::route_table::RouteTable;
use namesrv::state::route_table::register::{
    BodyInput, RegisterOutcome, RegisterSettings, Registration,
};
use tokio::time::Instant;

/// A 5.x JSON registration body with `topics` topics (the shape nsbench sends: about 178 bytes
/// per topic, so 10 000 topics make a 1.78 MB body).
pub fn register_json(topics: usize, counter: u64) -> Bytes {
    let names = (0..topics).map(|i| format!("BenchTopic_{i:06}"));
    RegisterBroker::new("BenchCluster", "", "")
        .topics(names, 8)
        .data_version(counter as i64, 1_700_000_000_000)
        .mapping_timestamp(1_700_000_000_000)
        .body_json()
        .into()
}

/// Decode options for a 5.3.3 broker.
pub const OPTS: DecodeOptions = DecodeOptions {
    compressed: false,
    version: 479,
    max_inflated: 1 << 30,
};

/// Decodes a body.
pub fn decode(body: &Bytes) -> RegisterBody {
    RegisterBody::decode(body.clone(), OPTS).unwrap()
}

/// The registration header of bench broker `b`.
pub fn registration(name: &str, addr: &str) -> Registration<'static> {
    Registration {
        cluster: "BenchCluster",
        broker_addr: Box::leak(addr.to_owned().into_boxed_str()),
        broker_name: Box::leak(name.to_owned().into_boxed_str()),
        broker_id: 0,
        ha_server_addr: Some("127.0.0.1:30000"),
        zone_name: None,
        heartbeat_timeout_millis: Some(120_000),
        enable_acting_master: Some(false),
        conn: ConnId(1),
        version: 479,
    }
}

/// A table with `brokers` brokers each carrying the same `topics` topics.
pub fn table(brokers: usize, topics: usize) -> RouteTable {
    let mut t = RouteTable::new();
    let body = decode(&register_json(topics, 1));
    for b in 0..brokers {
        let reg = registration(
            &format!("bench-broker-{b}"),
            &format!("127.0.0.1:{}", 20000 + b),
        );
        register_decoded(&mut t, &reg, &body, b as u64, &RegisterSettings::default());
    }
    t
}

/// Registers `reg` with an already decoded `body` whose raw bytes hash to `digest`, as the
/// handler does after decoding, now.
pub fn register_decoded(
    t: &mut RouteTable,
    reg: &Registration<'_>,
    body: &RegisterBody,
    digest: u64,
    settings: &RegisterSettings,
) -> RegisterOutcome {
    t.register(
        reg,
        BodyInput::Decoded { body, digest },
        settings,
        Instant::now(),
    )
    .unwrap()
}
