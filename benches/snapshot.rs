//! What a warm-restart snapshot costs: copying the route table out under its read
//! lock (`to_parts`, the only part that holds the lock), encoding the file, and reading it back
//! at start, for the README's table sizes — 8 brokers × 20 000 topics (160 k queue entries) and
//! 50 brokers × 20 000 topics (1 M). The file's size is printed once per size.
//!
//! `cargo bench --bench snapshot`

mod support;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use namesrv::state::snapshot::{Meta, Reason, decode, encode};
use tokio::time::Instant;

fn snapshot(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot");
    group.sample_size(10);
    for (brokers, topics) in [(8, 20_000), (50, 20_000)] {
        let table = support::table(brokers, topics);
        let parts = table.to_parts(Instant::now());
        let meta = Meta {
            written_at_millis: 1_800_000_000_000,
            pid: 1,
            reason: Reason::Periodic,
        };
        let bytes = encode(&meta, &parts);
        let entries = brokers * topics;
        println!(
            "snapshot of {brokers} brokers x {topics} topics ({entries} queue entries): {} bytes ({:.1} bytes per entry)",
            bytes.len(),
            bytes.len() as f64 / entries as f64
        );
        let id = format!("{brokers}x{topics}");
        group.bench_with_input(
            BenchmarkId::new("to_parts (under the read lock)", &id),
            &table,
            |b, t| b.iter(|| t.to_parts(Instant::now())),
        );
        group.bench_with_input(BenchmarkId::new("encode", &id), &parts, |b, p| {
            b.iter(|| encode(&meta, p))
        });
        group.bench_with_input(BenchmarkId::new("decode", &id), &bytes, |b, bytes| {
            b.iter(|| decode(bytes).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, snapshot);
criterion_main!(benches);
