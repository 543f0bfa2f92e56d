//! Codec benchmarks: frame decoding and response encoding with JSON and binary headers, small
//! requests and a large registration; and hostile headers of 100 k ext fields, which must be
//! refused at once (and whose dedup is linear when built directly).

use bytes::BytesMut;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use namesrv::protocol::{
    ExtFields, FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, split_frame,
};

mod support;

fn route_request(st: SerializeType) -> BytesMut {
    let mut cmd = RemotingCommand::request(105, 1);
    cmd.ext_fields = Some([("topic", "BenchTopic_000042")].into_iter().collect());
    let mut out = BytesMut::new();
    encode_frame(&cmd, st, &mut out);
    out
}

/// Splits and decodes one whole frame, as the connection's codec does.
fn decode_wire(wire: &BytesMut) -> RemotingCommand {
    let mut buf = wire.clone();
    let frame = split_frame(&mut buf, FrameLimits::default())
        .unwrap()
        .unwrap();
    decode_frame(frame).unwrap().0
}

fn decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let wire = route_request(st);
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(
            BenchmarkId::new("route_request", st.name()),
            &wire,
            |b, wire| b.iter(|| decode_wire(wire)),
        );
    }
    let mut reg = RemotingCommand::request(103, 1);
    reg.body = Some(support::register_json(10_000, 1));
    let mut wire = BytesMut::new();
    encode_frame(&reg, SerializeType::Json, &mut wire);
    g.throughput(Throughput::Bytes(wire.len() as u64));
    g.bench_function("register_frame_10k_topics", |b| {
        b.iter(|| decode_wire(&wire))
    });
    g.finish();
}

fn encode(c: &mut Criterion) {
    let mut g = c.benchmark_group("encode");
    let body = bytes::Bytes::from(vec![b'x'; 900]);
    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let mut resp = RemotingCommand::success().with_body(body.clone());
        resp.opaque = 123_456;
        g.throughput(Throughput::Elements(1));
        g.bench_with_input(
            BenchmarkId::new("route_response", st.name()),
            &resp,
            |b, resp| {
                let mut out = BytesMut::with_capacity(4096);
                b.iter(|| {
                    out.clear();
                    encode_frame(resp, st, &mut out);
                })
            },
        );
    }
    g.finish();
}

fn register_body(c: &mut Criterion) {
    let mut g = c.benchmark_group("register_body");
    g.sample_size(20);
    for topics in [1_000usize, 10_000, 100_000] {
        let body = support::register_json(topics, 1);
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_with_input(BenchmarkId::new("scan", topics), &body, |b, body| {
            b.iter(|| support::decode(body))
        });
        g.bench_with_input(BenchmarkId::new("digest", topics), &body, |b, body| {
            b.iter(|| xxhash_rust::xxh3::xxh3_64(body))
        });
    }
    g.finish();
}

/// `n` distinct ext-field pairs.
fn pairs(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| (format!("field{i}"), "v".to_owned()))
        .collect()
}

fn ext_fields(c: &mut Criterion) {
    const FIELDS: usize = 100_000;
    let mut g = c.benchmark_group("ext_fields_100k");
    g.sample_size(20);
    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let mut cmd = RemotingCommand::request(105, 1);
        cmd.ext_fields = Some(ExtFields::from_pairs(pairs(FIELDS)));
        let mut wire = BytesMut::new();
        encode_frame(&cmd, st, &mut wire);
        g.throughput(Throughput::Bytes(wire.len() as u64));
        // Over the cap: the decoder stops at the first field past it.
        g.bench_with_input(BenchmarkId::new("refused", st.name()), &wire, |b, wire| {
            b.iter(|| {
                let mut buf = wire.clone();
                let frame = split_frame(&mut buf, FrameLimits::default())
                    .unwrap()
                    .unwrap();
                assert!(decode_frame(frame).is_err());
            })
        });
    }
    let input = pairs(FIELDS);
    g.throughput(Throughput::Elements(FIELDS as u64));
    g.bench_function("from_pairs", |b| {
        b.iter(|| ExtFields::from_pairs(input.clone()).len())
    });
    g.finish();
}

criterion_group!(benches, decode, encode, register_body, ext_fields);
criterion_main!(benches);
