//! `abuse`: a bounded load test of what one hostile or heavy client can do to everyone else,
//! `cargo run --release --example abuse` (results in `tests/SOAK.md`).
//!
//! Each scenario starts a fresh release server, registers a broker, and measures a
//! well-behaved client's route lookups (one every 2 ms) while attackers run for `--seconds`:
//!
//! - `ext-fields`: two clients sending 2.3 MB route requests of 200 000 ext fields in a loop;
//! - `zlib`: two clients sending registrations whose zlib body inflates past the cap;
//! - `kv-writes`: 30 MB of KV data, two clients PUTting 16 KiB values in a loop (PUTs/s);
//! - `unread`: 1 000 connections pipelining 40 requests for a 1 MiB KV list, never reading;
//! - `partial`: 100 connections each sending all but the last byte of a 15 MB frame;
//! - `prox`: 8 000 connections that send only `PROX` (a strict prefix of a PROXY signature),
//!   reconnecting when the handshake timeout closes them; its control `tls-prefix` sends only
//!   the first three bytes of a TLS record instead. Both report the server's CPU use;
//! - `hellos`: 5 000 connections that send 48 KiB of a ClientHello claiming 60 000 bytes and
//!   stall (TLS handshakes the buffer budget must count), reconnecting when closed.
//!
//! It samples the server's RSS, reports lookup p50/p99/max per scenario, the RSS peak and the
//! lowest RSS within ten seconds after the attackers are gone, and ends with one JSON line. It exits 0 when
//! every target holds (lookup p99 under 10 ms, and under 5 ms while KV writes
//! run; at least 100 KV PUTs/s; RSS within `maxBufferedBytes` + 64 MB), 1 otherwise, and 2
//! when it could not run.

#[allow(dead_code)] // shared with the soak tool, which uses more of it
#[path = "../tests/support/client_hello.rs"]
mod client_hello;

#[path = "soak/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "soak/stats.rs"]
mod stats;
#[allow(dead_code)]
#[path = "soak/sys.rs"]
mod sys;
#[allow(dead_code)]
#[path = "soak/wire.rs"]
mod wire;

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use clap::Parser;
use client_hello::partial_client_hello;
use namesrv::protocol::code::request;
use namesrv::protocol::{ExtFields, RemotingCommand, SerializeType, encode_frame};
use serde_json::json;
use stats::{Lat, ms};
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;
use wire::Conn;

const MIB: u64 = 1024 * 1024;
/// The server's default `maxBufferedBytes`.
const BUDGET: u64 = 256 * MIB;

#[derive(Parser, Debug)]
#[command(about = "What one hostile client can do to everyone else: lookup latency and RSS")]
struct Args {
    /// Seconds each scenario's attack runs.
    #[arg(long, default_value_t = 15)]
    seconds: u64,
    /// Scenarios to run (default all): ext-fields, zlib, kv-writes, unread, partial.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Server binary (default: build and use this checkout's release binary).
    #[arg(long)]
    server_bin: Option<std::path::PathBuf>,
}

/// What one scenario measured.
#[derive(Debug, serde::Serialize)]
struct Outcome {
    scenario: &'static str,
    lookups: Lat,
    lookup_failures: u64,
    rss_before_mb: u64,
    rss_peak_mb: u64,
    rss_after_mb: u64,
    /// KV PUTs acknowledged per second (kv-writes only).
    puts_per_s: Option<f64>,
    /// The server's CPU use during the attack, in % of one core.
    cpu_pct: f64,
    /// The lookup p99 target, in ms.
    p99_target_ms: u32,
    ok: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(e) = sys::ensure_nofile(9000) {
        eprintln!("abuse: {e}");
        return ExitCode::from(2);
    }
    let bin = match args.server_bin.clone() {
        Some(b) => b,
        None => match server::release_binary(true) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("abuse: {e}");
                return ExitCode::from(2);
            }
        },
    };
    eprintln!(
        "abuse: {} CPUs, load average {:?}",
        sys::cpus(),
        sys::loadavg()
    );
    let all = [
        "ext-fields",
        "zlib",
        "kv-writes",
        "unread",
        "partial",
        "prox",
        "tls-prefix",
        "hellos",
    ];
    let mut outcomes = Vec::new();
    for name in all {
        if !args.only.is_empty() && !args.only.iter().any(|o| o == name) {
            continue;
        }
        match run(&bin, name, Duration::from_secs(args.seconds)).await {
            Ok(o) => outcomes.push(o),
            Err(e) => {
                eprintln!("abuse: {name}: {e}");
                return ExitCode::from(2);
            }
        }
    }
    println!(
        "| scenario | lookups | p50 ms | p99 ms | max ms | failed | RSS before / peak / after MB | PUT/s | CPU % | ok |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for o in &outcomes {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} / {} / {} | {} | {:.0} | {} |",
            o.scenario,
            o.lookups.n,
            ms(o.lookups.p50_us),
            ms(o.lookups.p99_us),
            ms(o.lookups.max_us),
            o.lookup_failures,
            o.rss_before_mb,
            o.rss_peak_mb,
            o.rss_after_mb,
            o.puts_per_s.map_or("-".into(), |p| format!("{p:.0}")),
            o.cpu_pct,
            if o.ok { "yes" } else { "NO" }
        );
    }
    let ok = outcomes.iter().all(|o| o.ok);
    println!(
        "{}",
        json!({ "abuse": outcomes, "ok": ok, "loadavg": sys::loadavg() })
    );
    let _ = std::io::stdout().flush();
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

async fn run(bin: &std::path::Path, name: &'static str, secs: Duration) -> Result<Outcome, String> {
    let srv = server::ServerProc::start(bin, name, &[]).await?;
    let addr = srv.addr;
    let mut admin = Conn::connect(addr).await.map_err(|e| e.to_string())?;
    let broker = wire::BrokerSpec::new(0, wire::topic_table(0, 8));
    let reg = broker.register(&mut admin, 1, wire::now_ms());
    call_ok(&mut admin, &reg).await?;
    let mut setup = Setup::default();
    match name {
        "kv-writes" => fill_kv(&mut admin, "bulk", 30, 1_000_000).await?,
        "unread" => fill_kv(&mut admin, "big", 1, 1_000_000).await?,
        _ => {}
    }
    let rss_before = sys::rss_kb(srv.pid).unwrap_or(0) / 1024;
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let sampler = {
        let (stop, peak, pid) = (stop.clone(), peak.clone(), srv.pid);
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(sys::rss_kb(pid).unwrap_or(0), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    // On a runtime of its own, so that the attackers' tasks in this process cannot delay it.
    let lookups = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the lookups")
                .block_on(lookups(addr, stop))
        })
    };
    let ticks_before = sys::cpu_ticks(srv.pid).unwrap_or(0);
    let attack = attack(name, addr, secs, &mut setup);
    let attackers = attack.await;
    let elapsed = secs.as_secs_f64();
    let ticks = sys::cpu_ticks(srv.pid).unwrap_or(0) - ticks_before;
    // Clock ticks are 1/100 s.
    let cpu_pct = ticks as f64 / elapsed;
    stop.store(true, Ordering::Relaxed);
    let (lat, failures) = lookups.join().map_err(|_| "the lookup thread panicked")?;
    let _ = sampler.await;
    drop(attackers);
    // The server finishes what the closed connections had queued, then frees it.
    let mut rss_after = u64::MAX;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        rss_after = rss_after.min(sys::rss_kb(srv.pid).unwrap_or(0) / 1024);
    }
    let rss_peak = peak.load(Ordering::Relaxed) / 1024;
    let puts = (name == "kv-writes").then(|| setup.puts.load(Ordering::Relaxed) as f64 / elapsed);
    let p99_target_ms = if name == "kv-writes" { 5 } else { 10 };
    let ok = lat.p99_us < p99_target_ms * 1000
        && failures == 0
        && rss_peak * MIB <= BUDGET + 64 * MIB
        && puts.is_none_or(|p| p >= 100.0);
    let mut srv = srv;
    srv.stop(Duration::from_secs(15)).await;
    eprintln!(
        "abuse: {name}: lookups p50 {} p99 {} max {} ms ({} failed), RSS {rss_before}/{rss_peak}/{rss_after} MB, CPU {cpu_pct:.0} %{}",
        ms(lat.p50_us),
        ms(lat.p99_us),
        ms(lat.max_us),
        failures,
        puts.map_or(String::new(), |p| format!(", {p:.0} PUT/s"))
    );
    Ok(Outcome {
        scenario: name,
        lookups: lat,
        lookup_failures: failures,
        rss_before_mb: rss_before,
        rss_peak_mb: rss_peak,
        rss_after_mb: rss_after,
        puts_per_s: puts,
        cpu_pct,
        p99_target_ms,
        ok,
    })
}

#[derive(Default)]
struct Setup {
    puts: Arc<AtomicU64>,
}

async fn call_ok(conn: &mut Conn, cmd: &RemotingCommand) -> Result<RemotingCommand, String> {
    let resp = conn
        .call(cmd, Duration::from_secs(30))
        .await
        .map_err(|e| format!("{e:?}"))?;
    if resp.code != 0 {
        return Err(format!("code {} {:?}", resp.code, resp.remark));
    }
    Ok(resp)
}

/// `count` values of `size` bytes in namespace `ns`.
async fn fill_kv(conn: &mut Conn, ns: &str, count: usize, size: usize) -> Result<(), String> {
    let value = "v".repeat(size);
    for i in 0..count {
        let key = format!("k{i}");
        let cmd = conn.request(
            request::PUT_KV_CONFIG,
            &[("namespace", ns), ("key", &key), ("value", &value)],
            None,
        );
        call_ok(conn, &cmd).await?;
    }
    Ok(())
}

/// One route lookup every 2 ms until `stop`: their latencies, and how many failed.
async fn lookups(addr: SocketAddr, stop: Arc<AtomicBool>) -> (Lat, u64) {
    let Ok(mut conn) = Conn::connect(addr).await else {
        return (Lat::default(), 1);
    };
    let topic = wire::topic_name(0, 0);
    let (mut samples, mut failures) = (Vec::new(), 0);
    let mut tick = tokio::time::interval(Duration::from_millis(2));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let cmd = wire::route_request(&mut conn, &topic);
        let t0 = Instant::now();
        match conn.call(&cmd, Duration::from_secs(30)).await {
            Ok(r) if r.code == 0 => samples.push(t0.elapsed().as_micros() as u32),
            _ => failures += 1,
        }
    }
    (Lat::of(&mut samples), failures)
}

/// Runs the scenario's attackers for `secs`; returns what must stay open until measured.
async fn attack(
    name: &str,
    addr: SocketAddr,
    secs: Duration,
    setup: &mut Setup,
) -> Vec<tokio::net::TcpStream> {
    let deadline = Instant::now() + secs;
    match name {
        "ext-fields" => {
            let frame = ext_fields_frame(200_000);
            repeat(2, deadline, move || {
                let frame = frame.clone();
                async move {
                    if let Ok(mut s) = tokio::net::TcpStream::connect(addr).await {
                        let _ = s.write_all(&frame).await;
                        let mut byte = [0u8; 1];
                        let _ = tokio::io::AsyncReadExt::read(&mut s, &mut byte).await;
                    }
                }
            })
            .await;
            Vec::new()
        }
        "zlib" => {
            let body = zlib_bomb();
            run_tasks(2, |_| {
                let body = body.clone();
                async move {
                    let Ok(mut c) = Conn::connect(addr).await else {
                        return;
                    };
                    let broker = wire::BrokerSpec::new(1, Arc::from(""));
                    while Instant::now() < deadline {
                        let mut cmd = broker.register(&mut c, 2, wire::now_ms());
                        cmd.body = Some(body.clone());
                        if let Some(f) = cmd.ext_fields.as_mut() {
                            f.insert("compressed", "true");
                        }
                        if c.call(&cmd, Duration::from_secs(60)).await.is_err() {
                            return;
                        }
                    }
                }
            })
            .await;
            Vec::new()
        }
        "kv-writes" => {
            run_tasks(2, |w| {
                let puts = setup.puts.clone();
                async move {
                    let Ok(mut c) = Conn::connect(addr).await else {
                        return;
                    };
                    let value = "w".repeat(16 * 1024);
                    let mut i = 0u64;
                    while Instant::now() < deadline {
                        let key = format!("w{w}-{}", i % 64);
                        let cmd = c.request(
                            request::PUT_KV_CONFIG,
                            &[("namespace", "writes"), ("key", &key), ("value", &value)],
                            None,
                        );
                        match c.call(&cmd, Duration::from_secs(30)).await {
                            Ok(r) if r.code == 0 => {
                                puts.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => return,
                        }
                        i += 1;
                    }
                }
            })
            .await;
            Vec::new()
        }
        "unread" => {
            let mut wire = BytesMut::new();
            for opaque in 0..40 {
                let mut cmd = RemotingCommand::request(request::GET_KVLIST_BY_NAMESPACE, opaque);
                cmd.ext_fields = Some([("namespace", "big")].into_iter().collect());
                encode_frame(&cmd, SerializeType::Json, &mut wire);
            }
            let mut held = Vec::new();
            for _ in 0..1000 {
                if let Ok(mut s) = tokio::net::TcpStream::connect(addr).await {
                    let _ = s.write_all(&wire).await;
                    held.push(s);
                }
            }
            tokio::time::sleep_until(deadline).await;
            held
        }
        "partial" => {
            const FRAME: usize = 15 * 1024 * 1024;
            let mut partial = vec![b'x'; FRAME - 1];
            partial[..4].copy_from_slice(&(FRAME as i32 - 4).to_be_bytes());
            partial[4..8].copy_from_slice(&16u32.to_be_bytes());
            let partial: Arc<[u8]> = partial.into();
            let tasks: Vec<_> = (0..100)
                .map(|_| {
                    let partial = partial.clone();
                    tokio::spawn(async move {
                        let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
                        let _ = s.write_all(&partial).await;
                        Some(s)
                    })
                })
                .collect();
            let mut held = Vec::new();
            for t in tasks {
                if let Ok(Some(s)) = t.await {
                    held.push(s);
                }
            }
            tokio::time::sleep_until(deadline).await;
            held
        }
        "prox" => {
            hold_prefixed(8000, addr, deadline, Arc::from(&b"PROX"[..])).await;
            Vec::new()
        }
        "tls-prefix" => {
            hold_prefixed(8000, addr, deadline, Arc::from(&[0x16, 0x03, 0x01][..])).await;
            Vec::new()
        }
        "hellos" => {
            hold_prefixed(5000, addr, deadline, partial_client_hello().into()).await;
            Vec::new()
        }
        other => unreachable!("unknown scenario {other}"),
    }
}

/// Keeps `n` connections open until `deadline` that each send `prefix` and then nothing,
/// opening a new one whenever the server closes one (after a pause, so that a closing server
/// is not met with a busy loop).
async fn hold_prefixed(n: usize, addr: SocketAddr, deadline: Instant, prefix: Arc<[u8]>) {
    run_tasks(n, |_| {
        let prefix = prefix.clone();
        async move {
            while Instant::now() < deadline {
                if let Ok(mut s) = tokio::net::TcpStream::connect(addr).await
                    && s.write_all(&prefix).await.is_ok()
                {
                    let mut byte = [0u8; 1];
                    let read = tokio::io::AsyncReadExt::read(&mut s, &mut byte);
                    let _ = tokio::time::timeout_at(deadline, read).await;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    })
    .await;
}

/// Runs `n` loops of `one` until `deadline`.
async fn repeat<F, Fut>(n: usize, deadline: Instant, one: F)
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    run_tasks(n, |_| {
        let one = one.clone();
        async move {
            while Instant::now() < deadline {
                one().await;
            }
        }
    })
    .await;
}

/// Spawns the `n` tasks `task(0)`, `task(1)`, … and waits for every one to end.
async fn run_tasks<F, Fut>(n: usize, task: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let tasks: Vec<_> = (0..n).map(|i| tokio::spawn(task(i))).collect();
    for t in tasks {
        let _ = t.await;
    }
}

/// A JSON route request of `n` ext fields (about 11.5 bytes each).
fn ext_fields_frame(n: usize) -> Bytes {
    let mut cmd = RemotingCommand::request(request::GET_ROUTEINFO_BY_TOPIC, 1);
    cmd.ext_fields = Some(ExtFields::from_pairs(
        (0..n).map(|i| (format!("{i}"), String::new())).collect(),
    ));
    let mut out = BytesMut::new();
    encode_frame(&cmd, SerializeType::Json, &mut out);
    out.freeze()
}

/// A compressed registration body whose topic section inflates to 300 MB of zeros.
fn zlib_bomb() -> Bytes {
    use std::io::Write;
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let dv = br#"{"counter":2,"stateVersion":0,"timestamp":1}"#;
    enc.write_all(&(dv.len() as i32).to_be_bytes()).unwrap();
    enc.write_all(dv).unwrap();
    enc.write_all(&1i32.to_be_bytes()).unwrap();
    let len: i32 = 300 * 1024 * 1024;
    enc.write_all(&len.to_be_bytes()).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..300 {
        enc.write_all(&zeros).unwrap();
    }
    Bytes::from(enc.finish().unwrap())
}
