//! The cost of metrics: recording one request on the hot path (what `dispatch` does per
//! request, the clock read included), and a `/metrics` scrape: rendering the exposition of a
//! server holding 8 brokers × 20 k topics, process figures from `/proc` included.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use namesrv::auth::Gate;
use namesrv::config::{Config, Env};
use namesrv::kv::KvStore;
use namesrv::metrics::Metrics;
use namesrv::state::Namesrv;
use tokio::time::Instant;

mod support;

fn scrape(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let env = Env {
        home: dir.path().display().to_string(),
        rocketmq_home: None,
    };
    let kv = KvStore::open(dir.path().join("kvConfig.json")).unwrap();
    let state = Namesrv::new(Config::defaults(&env), kv);
    *state.routes_mut() = support::table(8, 20_000);
    let body = namesrv::http::exposition::render(&state, &Gate::off());
    let series = body.lines().filter(|l| !l.starts_with('#')).count();
    assert!(series < 500, "{series} series");
    eprintln!(
        "/metrics at 8 brokers x 20 k topics: {series} series, {} bytes",
        body.len()
    );
    c.bench_function("metrics/render/8x20k", |b| {
        b.iter(|| namesrv::http::exposition::render(&state, &Gate::off()))
    });
}

fn record(c: &mut Criterion) {
    let metrics = Metrics::default();
    // GET_ROUTEINFO_BY_TOPIC's series, as its request table row gives it.
    let series = namesrv::dispatch::NAMESRV.route(105).unwrap().metric;
    let started = Instant::now();
    c.bench_function("metrics/record_request", |b| {
        b.iter(|| metrics.request(black_box(series), black_box(0), started.elapsed()))
    });
    c.bench_function("metrics/clock_read", |b| b.iter(|| started.elapsed()));
    let elapsed = started.elapsed();
    c.bench_function("metrics/record_request_without_clock", |b| {
        b.iter(|| metrics.request(black_box(series), black_box(0), black_box(elapsed)))
    });
}

criterion_group!(benches, record, scrape);
criterion_main!(benches);
