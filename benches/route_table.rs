//! Route-table benchmarks: route lookups (cached and encoded afresh) and registrations (first,
//! changed data version, unchanged body) at 1 k, 10 k and 100 k topics; the expiry scan over
//! 1 000 brokers with and without eviction protection; the all-topic listing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use namesrv::protocol::body::RegisterBody;
use namesrv::protocol::body::lists::topic_list;
use namesrv::protocol::json::JsonStyle;
use namesrv::state::protection::Policy;
use namesrv::state::route_table::RouteTable;
use namesrv::state::route_table::query::RouteQuery;
use namesrv::state::route_table::register::{BodyInput, RegisterSettings};
use tokio::time::Instant;

mod support;

fn query(topic: &str, epoch: u64) -> RouteQuery<'_> {
    RouteQuery {
        topic,
        style: JsonStyle::Standard,
        support_acting_master: false,
        zone: None,
        external_epoch: epoch,
        order_topic_conf: &|| None,
    }
}

fn routes(c: &mut Criterion) {
    let mut g = c.benchmark_group("route");
    for topics in [1_000usize, 10_000, 100_000] {
        let table = support::table(4, topics);
        let names: Vec<String> = (0..topics).map(|i| format!("BenchTopic_{i:06}")).collect();
        let mut i = 0;
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(BenchmarkId::new("cached", topics), &table, |b, t| {
            b.iter(|| {
                i = (i + 7919) % topics;
                t.route(&query(&names[i], 0)).unwrap()
            })
        });
        let epoch = AtomicU64::new(1);
        g.bench_with_input(BenchmarkId::new("encoded", topics), &table, |b, t| {
            b.iter(|| {
                i = (i + 7919) % topics;
                // A new external epoch defeats the cache: this measures a full encode.
                t.route(&query(&names[i], epoch.fetch_add(1, Ordering::Relaxed)))
                    .unwrap()
            })
        });
    }
    g.finish();
}

fn registrations(c: &mut Criterion) {
    let mut g = c.benchmark_group("register");
    g.sample_size(10);
    let settings = RegisterSettings::default();
    for topics in [1_000usize, 10_000, 100_000] {
        let first = support::decode(&support::register_json(topics, 1));
        let reg = support::registration("bench-broker-x", "127.0.0.1:29999");
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::new("first", topics), |b| {
            b.iter_batched(
                RouteTable::new,
                |mut t| {
                    support::register_decoded(&mut t, &reg, &first, 1, &settings);
                    t
                },
                BatchSize::LargeInput,
            )
        });
        let mut table = support::table(4, topics);
        support::register_decoded(&mut table, &reg, &first, 1, &settings);
        let mut counter = 1u64;
        g.bench_function(
            BenchmarkId::new("changed_version_decode_and_apply", topics),
            |b| {
                b.iter_batched(
                    || {
                        counter += 1;
                        support::register_json(topics, counter)
                    },
                    |raw| {
                        // As the handler does: the previous table is recognised by digest.
                        let hint = table.table_hint("BenchCluster", "127.0.0.1:29999");
                        let body = RegisterBody::decode_with_hint(raw.clone(), support::OPTS, hint)
                            .unwrap();
                        let digest = xxhash_rust::xxh3::xxh3_64(&raw);
                        support::register_decoded(&mut table, &reg, &body, digest, &settings)
                    },
                    BatchSize::LargeInput,
                )
            },
        );
        let raw = support::register_json(topics, 1);
        let body = support::decode(&raw);
        let digest = xxhash_rust::xxh3::xxh3_64(&raw);
        support::register_decoded(&mut table, &reg, &body, digest, &settings);
        g.bench_function(BenchmarkId::new("unchanged_body", topics), |b| {
            b.iter(|| {
                let digest = xxhash_rust::xxh3::xxh3_64(&raw);
                table
                    .register(
                        &reg,
                        BodyInput::Unchanged { digest },
                        &settings,
                        Instant::now(),
                    )
                    .unwrap()
            })
        });
    }
    g.finish();
}

/// The expiry scan holds the table's write lock: its cost over 1 000 live brokers when nothing
/// is due (every scan of a healthy cluster), Java's rule against protection's, and when all
/// are due and held.
fn scans(c: &mut Criterion) {
    let mut g = c.benchmark_group("scan_1000_brokers");
    let start = Instant::now();
    let mut table = support::table(1_000, 2);
    let protection = Policy {
        enabled: true,
        threshold_percent: 50,
        min_brokers: 3,
        max_hold: Duration::from_secs(600),
        // The brokers registered once: count them all, so that `all_held` measures a hold.
        history: Duration::ZERO,
    };
    g.bench_function("healthy_java", |b| {
        b.iter(|| table.scan(start, &Policy::OFF))
    });
    g.bench_function("healthy_protected", |b| {
        b.iter(|| table.scan(start, &protection))
    });
    let silent = start + Duration::from_secs(200);
    g.bench_function("all_held", |b| b.iter(|| table.scan(silent, &protection)));
    g.finish();
}

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER's work (the topics in Java's order, encoded), which
/// decides whether a listing is handled inline or on the blocking pool.
fn listings(c: &mut Criterion) {
    let mut g = c.benchmark_group("all_topic_list");
    for topics in [1_000usize, 4_096, 10_000, 100_000] {
        let table = support::table(4, topics);
        g.bench_with_input(BenchmarkId::from_parameter(topics), &table, |b, t| {
            b.iter(|| topic_list(t.all_topics(), None))
        });
    }
    g.finish();
}

criterion_group!(benches, routes, registrations, scans, listings);
criterion_main!(benches);
