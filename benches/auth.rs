//! Auth gate benchmarks: what `dispatch` pays per request before its `match` — nothing when
//! auth is off, one signature check for a signed route lookup under `enforce`.

use std::net::SocketAddr;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use namesrv::auth::Gate;
use namesrv::config::{AuthMode, Env, Settings};
use namesrv::protocol::{ExtFields, RemotingCommand, signature};

const ACCOUNTS: &str = "signatureRequired: [read, broker, admin]\n\
    accounts:\n  - {accessKey: nsbench-client, secretKey: nsbench-secret, broker: true}\n";

fn gate(mode: AuthMode, dir: &tempfile::TempDir) -> Gate {
    let path = dir.path().join("acl.yml");
    std::fs::write(&path, ACCOUNTS).unwrap();
    let mut s = Settings::defaults(&Env {
        home: dir.path().display().to_string(),
        rocketmq_home: None,
    });
    s.auth_mode = mode;
    s.auth_config_path = path.display().to_string();
    Gate::load(&s).unwrap()
}

/// A route lookup as nsbench signs it.
fn signed_route() -> RemotingCommand {
    let mut cmd = RemotingCommand::request(105, 1);
    let mut fields: ExtFields = [
        ("topic", "BenchTopic_000042"),
        ("AccessKey", "nsbench-client"),
    ]
    .into_iter()
    .collect();
    let content = signature::content(fields.iter(), b"", &[]);
    fields.insert("Signature", signature::sign("nsbench-secret", &content));
    cmd.ext_fields = Some(fields);
    cmd
}

fn admit(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let req = signed_route();
    // What dispatch hands the gate: the route lookup's row facts.
    let access = namesrv::dispatch::NAMESRV.route(105).unwrap().access;
    let mut g = c.benchmark_group("auth_admit");
    g.throughput(Throughput::Elements(1));
    for (name, mode) in [
        ("off", AuthMode::Off),
        ("enforce_signed_route", AuthMode::Enforce),
    ] {
        let gate = gate(mode, &dir);
        g.bench_function(name, |b| {
            b.iter(|| {
                gate.admit(std::hint::black_box(&req), peer, &access)
                    .is_ok()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, admit);
criterion_main!(benches);
