//! The soak phase itself: open every connection, register every broker, warm up, then hold
//! the load for the measured duration in windows, printing one table row per window, while
//! the server's RSS, open files and CPU time are sampled. Returns everything the summary
//! needs; the verdict is the caller's.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::load::{self, Load, Shared};
use crate::stats::{Acc, Lat, ms};
use crate::sys;
use crate::wire::{self, BrokerSpec};

/// Timing of the phase.
#[derive(Debug, Clone)]
pub struct Timing {
    /// Load before measuring (not judged).
    pub warmup: Duration,
    /// Measured time.
    pub duration: Duration,
    /// Length of one reported window.
    pub window: Duration,
    /// Between two RSS samples.
    pub rss_every: Duration,
    /// Longest set-up allowed.
    pub setup_timeout: Duration,
}

/// One server sample.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sample {
    /// Seconds since the start of the measured duration (negative before it).
    pub t_s: f64,
    /// VmRSS in KiB.
    pub rss_kb: u64,
    /// Open file descriptors.
    pub fds: usize,
}

/// One reported window.
#[derive(Debug, Clone, Serialize)]
pub struct Window {
    /// `warm-up` or the window's number from 1.
    pub label: String,
    /// Seconds since the start of the measured duration at the window's end.
    pub end_s: f64,
    /// Route lookups of the measuring clients.
    pub route: Lat,
    /// Route lookups per second.
    pub route_rps: f64,
    /// Route failures (code, timeout, wrong body).
    pub route_err: u64,
    /// Route bodies checked.
    pub route_checked: u64,
    /// Paced lookups skipped because the previous answer came late.
    pub route_skipped: u64,
    /// Full re-registrations.
    pub register: Lat,
    /// Of which with a new data version.
    pub register_changed: u64,
    /// Registration failures.
    pub register_err: u64,
    /// Keep-alive lookups of the idle connections.
    pub idle: Lat,
    /// Their failures.
    pub idle_err: u64,
    /// Connections the server closed.
    pub closed: u64,
    /// The server's RSS at the window's end, KiB.
    pub rss_kb: Option<u64>,
    /// The server's open files at the window's end.
    pub fds: Option<usize>,
    /// Server CPU use over the window, percent of one core.
    pub server_cpu_pct: Option<f64>,
    /// This tool's CPU use over the window, percent of one core.
    pub tool_cpu_pct: Option<f64>,
    /// CPU use of everything else on the machine over the window, percent of one core (other
    /// engineers' builds, ...): latency spikes that come with a high value are not the server's.
    pub other_cpu_pct: Option<f64>,
    /// First few error messages.
    pub errors: Vec<String>,
}

/// Everything the phase measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Connections up after set-up (idle + brokers + route).
    pub connections_up: usize,
    /// Connections that failed to set up.
    pub setup_failed: usize,
    /// Seconds spent opening connections and registering brokers.
    pub setup_s: f64,
    /// Distinct topics registered.
    pub distinct_topics: usize,
    /// The windows, warm-up first.
    pub windows: Vec<Window>,
    /// Route latency over the measured duration.
    pub route: Lat,
    /// Registration latency over the measured duration.
    pub register: Lat,
    /// Idle keep-alive latency over the measured duration.
    pub idle: Lat,
    /// Failures over the measured duration (and set-up).
    pub failures: u64,
    /// RSS samples.
    pub samples: Vec<Sample>,
    /// Whether the run was cut short (Ctrl-C, or the server exited).
    pub interrupted: Option<String>,
    /// Set-up errors.
    pub setup_errors: Vec<String>,
}

const HEADER: &str = "window    end_s   route_n   p50_ms   p99_ms  p999_ms   max_ms r_err | reg_n reg_p99 dv_chg reg_err | idle_n idle_p99 i_err | closed  rss_MB    fds srv_cpu tool_cpu other_cpu";

fn row(w: &Window) -> String {
    let opt = |v: Option<f64>, p: usize| v.map_or("-".into(), |v| format!("{v:.p$}"));
    format!(
        "{:<8} {:>6.0} {:>9} {:>8} {:>8} {:>8} {:>8} {:>5} | {:>5} {:>7} {:>6} {:>7} | {:>6} {:>8} {:>5} | {:>6} {:>7} {:>6} {:>6}% {:>7}% {:>8}%",
        w.label,
        w.end_s,
        w.route.n,
        ms(w.route.p50_us),
        ms(w.route.p99_us),
        ms(w.route.p999_us),
        ms(w.route.max_us),
        w.route_err,
        w.register.n,
        ms(w.register.p99_us),
        w.register_changed,
        w.register_err,
        w.idle.n,
        ms(w.idle.p99_us),
        w.idle_err,
        w.closed,
        opt(w.rss_kb.map(|k| k as f64 / 1024.0), 1),
        w.fds.map_or("-".into(), |f| f.to_string()),
        opt(w.server_cpu_pct, 0),
        opt(w.tool_cpu_pct, 0),
        opt(w.other_cpu_pct, 0)
    )
}

/// Samples taken so far, with the time each was taken.
type Samples = Arc<parking_lot::Mutex<Vec<(Instant, Sample)>>>;

/// Latencies and failures of the measured windows together.
#[derive(Default)]
struct Totals {
    route: Vec<u32>,
    register: Vec<u32>,
    idle: Vec<u32>,
    failures: u64,
}

/// CPU tick counters at the start of the current window.
struct Cpu {
    at: Instant,
    server: Option<u64>,
    tool: Option<u64>,
    machine: Option<u64>,
}

/// Runs the phase against `load.addr`; `server_pid` is sampled when given.
pub async fn run(
    load: Load,
    timing: Timing,
    server_pid: Option<u32>,
    cancel: CancellationToken,
) -> Report {
    let (epoch_tx, epoch_rx) = watch::channel(None);
    let shared = Arc::new(Shared::new(load.clone(), cancel.child_token(), epoch_rx));
    let samples: Samples = Arc::default();
    let sampler = server_pid.map(|pid| {
        tokio::spawn(sample_loop(
            pid,
            timing.rss_every,
            samples.clone(),
            shared.cancel.clone(),
        ))
    });
    let tracker = TaskTracker::new();
    let t_setup = Instant::now();
    spawn_load(&shared, &tracker);
    let mut interrupted = wait_setup(&shared, &timing, &cancel).await;
    let setup_s = t_setup.elapsed().as_secs_f64();
    let setup_failed = shared.failed.load(Ordering::Relaxed);
    let connections_up = shared.up.load(Ordering::Relaxed);
    eprintln!(
        "soak: set-up took {setup_s:.1} s: {connections_up} connections up, {setup_failed} failed; {} brokers x {} topics",
        load.brokers, load.topics
    );
    let setup_errors = std::mem::take(&mut shared.acc.lock().errors);
    // Everything is up: lay the schedules out from now, warm up, then measure.
    let _ = epoch_tx.send(Some(Instant::now()));
    let start = Instant::now() + timing.warmup;
    let end = start + timing.duration;
    let mut windows = Vec::new();
    let mut totals = Totals {
        failures: setup_failed as u64,
        ..Totals::default()
    };
    let mut cpu = Cpu {
        at: Instant::now(),
        server: server_pid.and_then(sys::cpu_ticks),
        tool: sys::cpu_ticks(std::process::id()),
        machine: sys::machine_busy_ticks(),
    };
    let mut w_end = None::<Instant>;
    while interrupted.is_none() && w_end.is_none_or(|t| t < end) {
        let stop_at = w_end.map_or(start, |t| (t + timing.window).min(end));
        tokio::select! {
            _ = cancel.cancelled() => interrupted = Some("interrupted (Ctrl-C)".into()),
            _ = tokio::time::sleep_until(stop_at) => {}
        }
        let sample = server_pid.and_then(take_sample);
        if server_pid.is_some() && sample.is_none() {
            interrupted = Some("the server exited during the run".into());
        }
        if let Some(s) = sample {
            samples.lock().push((Instant::now(), s));
        }
        let acc = std::mem::take(&mut *shared.acc.lock());
        let label = match w_end {
            None => "warm-up".to_owned(),
            Some(_) => windows.len().to_string(),
        };
        let w = window(
            label,
            start,
            acc,
            &mut cpu,
            sample,
            server_pid,
            w_end.map(|_| &mut totals),
        );
        if windows.is_empty() {
            println!("{HEADER}");
        }
        println!("{}", row(&w));
        windows.push(w);
        w_end = Some(stop_at);
    }
    shared.cancel.cancel();
    tracker.close();
    if tokio::time::timeout(Duration::from_secs(30), tracker.wait())
        .await
        .is_err()
    {
        eprintln!("soak: some load tasks did not stop within 30 s");
    }
    if let Some(s) = sampler {
        let _ = s.await;
    }
    let mut samples: Vec<(Instant, Sample)> = samples.lock().clone();
    samples.sort_by_key(|(at, _)| *at);
    let samples = samples
        .into_iter()
        .map(|(at, mut s)| {
            s.t_s = signed_secs(at, start);
            s
        })
        .collect();
    Report {
        connections_up,
        setup_failed,
        setup_s,
        distinct_topics: load.groups() * load.topics,
        windows,
        route: Lat::of(&mut totals.route),
        register: Lat::of(&mut totals.register),
        idle: Lat::of(&mut totals.idle),
        failures: totals.failures,
        samples,
        interrupted,
        setup_errors,
    }
}

/// Spawns every load task: brokers first, so that the clients find their topics.
fn spawn_load(shared: &Arc<Shared>, tracker: &TaskTracker) {
    let load = &shared.load;
    let tables: Vec<Arc<str>> = (0..load.groups())
        .map(|g| wire::topic_table(g, load.topics))
        .collect();
    for b in 0..load.brokers {
        let spec = BrokerSpec::new(b, tables[b / load.brokers_per_topic].clone());
        tracker.spawn(load::broker(shared.clone(), b, spec));
    }
    for i in 0..load.idle_conns {
        tracker.spawn(load::idle(shared.clone(), i));
    }
    for k in 0..load.route_conns {
        tracker.spawn(load::router(shared.clone(), k));
    }
}

/// Waits until every connection is up (or one failed); `Some(reason)` if the run must stop.
async fn wait_setup(
    shared: &Shared,
    timing: &Timing,
    cancel: &CancellationToken,
) -> Option<String> {
    let load = &shared.load;
    let total = load.idle_conns + load.brokers + load.route_conns;
    let t0 = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let (up, failed) = (
            shared.up.load(Ordering::Relaxed),
            shared.failed.load(Ordering::Relaxed),
        );
        if failed > 0 {
            return Some(format!("{failed} connections failed to set up"));
        }
        if up >= total {
            return None;
        }
        if t0.elapsed() > timing.setup_timeout {
            return Some(format!(
                "set-up not finished after {:?} ({up}/{total} up)",
                timing.setup_timeout
            ));
        }
        if cancel.is_cancelled() {
            return Some("interrupted (Ctrl-C)".into());
        }
        if last_print.elapsed() > Duration::from_secs(2) {
            eprintln!("soak: set-up: {up}/{total} connections ready");
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Closes a window: its statistics, CPU use since the last one, and (when measured) the totals.
fn window(
    label: String,
    start: Instant,
    mut acc: Acc,
    cpu: &mut Cpu,
    sample: Option<Sample>,
    server_pid: Option<u32>,
    totals: Option<&mut Totals>,
) -> Window {
    let now = Instant::now();
    let secs = now.duration_since(cpu.at).as_secs_f64().max(1e-3);
    let server = server_pid.and_then(sys::cpu_ticks);
    let tool = sys::cpu_ticks(std::process::id());
    let pct = |a: Option<u64>, b: Option<u64>| {
        Some(b?.checked_sub(a?)? as f64 / sys::TICKS_PER_SEC / secs * 100.0)
    };
    let machine = sys::machine_busy_ticks();
    let (server_cpu_pct, tool_cpu_pct) = (pct(cpu.server, server), pct(cpu.tool, tool));
    let other_cpu_pct = pct(cpu.machine, machine)
        .map(|m| (m - server_cpu_pct.unwrap_or(0.0) - tool_cpu_pct.unwrap_or(0.0)).max(0.0));
    *cpu = Cpu {
        at: now,
        server,
        tool,
        machine,
    };
    if let Some(t) = totals {
        t.route.extend_from_slice(&acc.route_us);
        t.register.extend_from_slice(&acc.reg_us);
        t.idle.extend_from_slice(&acc.idle_us);
        t.failures += acc.failures();
    }
    let route_n = acc.route_us.len();
    Window {
        label,
        end_s: signed_secs(now, start),
        route: Lat::of(&mut acc.route_us),
        route_rps: route_n as f64 / secs,
        route_err: acc.route_err,
        route_checked: acc.route_checked,
        route_skipped: acc.route_skipped,
        register: Lat::of(&mut acc.reg_us),
        register_changed: acc.reg_changed,
        register_err: acc.reg_err,
        idle: Lat::of(&mut acc.idle_us),
        idle_err: acc.idle_err,
        closed: acc.closed,
        rss_kb: sample.map(|s| s.rss_kb),
        fds: sample.map(|s| s.fds),
        server_cpu_pct,
        tool_cpu_pct,
        other_cpu_pct,
        errors: acc.errors,
    }
}

/// `at - origin` in seconds, negative when `at` is earlier.
fn signed_secs(at: Instant, origin: Instant) -> f64 {
    match at.checked_duration_since(origin) {
        Some(d) => d.as_secs_f64(),
        None => -origin.duration_since(at).as_secs_f64(),
    }
}

/// The server's memory and open files now; `None` once it has exited.
fn take_sample(pid: u32) -> Option<Sample> {
    Some(Sample {
        t_s: 0.0,
        rss_kb: sys::rss_kb(pid)?,
        fds: sys::fd_count(pid).unwrap_or(0),
    })
}

/// Samples the server every `every` until cancelled.
async fn sample_loop(pid: u32, every: Duration, out: Samples, cancel: CancellationToken) {
    loop {
        if let Some(s) = take_sample(pid) {
            out.lock().push((Instant::now(), s));
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
    }
}
