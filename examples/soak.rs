//! `soak`: a bounded load/soak test of the name server that anyone can run with one command,
//! `cargo run --release --example soak` (see `tests/SOAK.md`).
//!
//! It builds and starts the release server itself (or targets `--addr`), first checks the
//! connection cap and the per-connection response queue cap on a small server of its own, then
//! holds a flood on a fresh server — 10 000 idle client connections, 1 000 brokers re-registering
//! 100 topics each every 30 s, and 32 route-lookup clients — for 10 minutes, printing one table
//! row per 30 s window, and ends with one JSON line. It exits 0 when every route p99 window is
//! within `--max-p99-ms`, the server's RSS grew by at most `--max-rss-growth-pct` after the
//! warm-up, no request failed and the limits held; 1 otherwise; 2 when it could not run.

#[path = "soak/cli.rs"]
mod cli;
#[path = "soak/limits.rs"]
mod limits;
#[path = "soak/load.rs"]
mod load;
#[path = "soak/phase.rs"]
mod phase;
#[path = "soak/server.rs"]
mod server;
#[path = "soak/stats.rs"]
mod stats;
#[path = "soak/sys.rs"]
mod sys;
#[path = "soak/wire.rs"]
mod wire;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use cli::Args;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.brokers == 0 || args.topics == 0 || args.brokers_per_topic == 0 || args.route_conns == 0
    {
        eprintln!(
            "soak: --brokers, --topics, --brokers-per-topic and --route-conns must be positive"
        );
        return ExitCode::from(2);
    }
    if cfg!(debug_assertions) {
        eprintln!("soak: warning: this is a debug build of the load tool; use --release");
    }
    let sockets = (args.idle_conns + args.brokers + args.route_conns) as u64;
    let nofile = match sys::ensure_nofile(sockets + sys::FD_SLACK) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some((lo, hi)) = sys::ephemeral_ports()
        && u64::from(hi.saturating_sub(lo) + 1) < sockets + 200
    {
        eprintln!(
            "soak: {sockets} connections to one address need as many local ports, but ip_local_port_range is {lo}-{hi}"
        );
        return ExitCode::from(2);
    }
    eprintln!(
        "soak: open-file limit {} (was {}, hard {}); each process needs about {}; {} CPUs, load average {:?}",
        nofile.soft,
        nofile.soft_before,
        nofile.hard,
        sockets + sys::FD_SLACK,
        sys::cpus(),
        sys::loadavg()
    );
    let cancel = CancellationToken::new();
    {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("soak: Ctrl-C: stopping");
                cancel.cancel();
            }
        });
    }
    let bin = match (&args.addr, &args.server_bin) {
        (Some(_), _) => None,
        (None, Some(b)) => Some(b.clone()),
        (None, None) => match server::release_binary(!args.no_build) {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!("soak: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let mut failures = Vec::new();
    let mut summary = json!({
        "args": format!("{args:?}"),
        "machine": {"cpus": sys::cpus(), "loadavg_start": sys::loadavg(), "nofile": nofile},
    });
    if let (Some(bin), false) = (&bin, args.skip_limits) {
        let report = limits::run(bin, &limits_plan(&args)).await;
        print_limits(&report);
        failures.extend(report.failures.iter().map(|f| format!("limits: {f}")));
        summary["limits"] = json!(report);
    } else if args.limits_only {
        eprintln!("soak: --limits-only needs a server binary to start (not --addr)");
        return ExitCode::from(2);
    } else if !args.skip_limits {
        eprintln!("soak: limits check skipped: it needs a server of its own (not --addr)");
    }
    if !args.limits_only && !cancel.is_cancelled() {
        match soak(&args, bin.as_deref(), &cancel).await {
            Ok((report, f)) => {
                failures.extend(f);
                summary["soak"] = report;
            }
            Err(e) => {
                eprintln!("soak: {e}");
                return ExitCode::from(2);
            }
        }
    }
    summary["machine"]["loadavg_end"] = json!(sys::loadavg());
    summary["pass"] = json!(failures.is_empty());
    summary["failures"] = json!(failures);
    for f in &failures {
        eprintln!("soak: FAIL: {f}");
    }
    eprintln!(
        "soak: {}",
        if failures.is_empty() { "PASS" } else { "FAIL" }
    );
    println!("{summary}");
    match (failures.is_empty(), cancel.is_cancelled()) {
        (_, true) => ExitCode::from(130),
        (true, _) => ExitCode::SUCCESS,
        (false, _) => ExitCode::FAILURE,
    }
}

fn limits_plan(a: &Args) -> limits::Plan {
    limits::Plan {
        max_conns: a.limits_max_conns,
        extra: a.limits_extra,
        pipelined: a.limits_pipelined,
        queued_bytes: a.limits_queued_bytes,
        max_rss_growth_mb: a.limits_max_rss_growth_mb,
        request_timeout: a.request_timeout,
    }
}

fn print_limits(r: &limits::Report) {
    let mb = |kb: u64| kb as f64 / 1024.0;
    eprintln!(
        "limits: connections: {} served, {} refused (EOF {}, reset {}), {} hung, {} out of place; refusals logged in {} line(s); freed slots reused: {}",
        r.served,
        r.refused_eof + r.refused_reset,
        r.refused_eof,
        r.refused_reset,
        r.hung,
        r.misplaced,
        r.refusal_log_lines,
        r.slots_reused
    );
    eprintln!(
        "limits: non-reading client: wrote {} of {} request bytes; server RSS {:.1} -> max {:.1} MiB (+{:.1}) while stuck, {:.1} MiB after; \
         other client served {} times (p99 {} ms, max {} ms, {} failed); read back {} responses ({} bytes)",
        r.stuck_bytes_written,
        r.stuck_bytes_total,
        mb(r.rss_before_kb),
        mb(r.rss_stuck_max_kb),
        mb(r.rss_stuck_max_kb.saturating_sub(r.rss_before_kb)),
        mb(r.rss_after_kb),
        r.others.n,
        stats::ms(r.others.p99_us),
        stats::ms(r.others.max_us),
        r.others_failed,
        r.read_back,
        r.stuck_response_bytes
    );
}

/// The soak phase on a fresh server (or `--addr`): its JSON report and its failures.
async fn soak(
    a: &Args,
    bin: Option<&std::path::Path>,
    cancel: &CancellationToken,
) -> Result<(serde_json::Value, Vec<String>), String> {
    let sockets = a.idle_conns + a.brokers + a.route_conns;
    let idle_ping = (!a.idle_ping_every.is_zero()).then_some(a.idle_ping_every);
    let mut server = match bin {
        Some(bin) => {
            let mut props = vec![("maxConnections", (sockets + 1000).to_string())];
            if idle_ping.is_none() {
                props.push(("serverChannelMaxIdleTimeSeconds", "0".into()));
            }
            let s = server::ServerProc::start(bin, "soak", &props).await?;
            eprintln!(
                "soak: server pid {} on {} (log {})",
                s.pid,
                s.addr,
                s.dir.path().join("server.log").display()
            );
            Some(s)
        }
        None => None,
    };
    let addr = server
        .as_ref()
        .map_or_else(|| a.addr.expect("--addr"), |s| s.addr);
    let pid = server.as_ref().map(|s| s.pid).or(a.server_pid);
    let load = load::Load {
        addr,
        idle_conns: a.idle_conns,
        idle_ping_every: idle_ping,
        brokers: a.brokers,
        topics: a.topics,
        brokers_per_topic: a.brokers_per_topic,
        register_every: a.register_every,
        version_change_every: a.version_change_every,
        route_conns: a.route_conns,
        route_rate: a.route_rate,
        verify_every: a.verify_every,
        request_timeout: a.request_timeout,
        connect_concurrency: a.connect_concurrency,
        seed: a.seed,
    };
    let timing = phase::Timing {
        warmup: a.warmup,
        duration: a.duration,
        window: a.window,
        rss_every: a.rss_every,
        setup_timeout: a.setup_timeout,
    };
    let report = phase::run(load, timing, pid, cancel.clone()).await;
    let stopped = match server.as_mut() {
        Some(s) => Some(s.stop(Duration::from_secs(20)).await),
        None => None,
    };
    let mut failures = Vec::new();
    if let Some(why) = &report.interrupted {
        failures.push(format!("run cut short: {why}"));
    }
    failures.extend(report.setup_errors.iter().map(|e| format!("set-up: {e}")));
    if report.failures > 0 {
        let first: Vec<&String> = report
            .windows
            .iter()
            .flat_map(|w| &w.errors)
            .take(5)
            .collect();
        failures.push(format!(
            "{} requests or connections failed, e.g. {first:?}",
            report.failures
        ));
    }
    for w in report.windows.iter().skip(1) {
        let p99 = f64::from(w.route.p99_us) / 1000.0;
        if p99 > a.max_p99_ms {
            failures.push(format!(
                "window {}: route p99 {p99:.3} ms > {} ms",
                w.label, a.max_p99_ms
            ));
        }
        if w.route.n == 0 {
            failures.push(format!("window {}: no route lookup completed", w.label));
        }
    }
    let rss = rss_summary(&report.samples);
    if let Some(g) = rss.get("growth_pct").and_then(|g| g.as_f64())
        && g > a.max_rss_growth_pct
    {
        failures.push(format!(
            "server RSS grew {g:.1} % after the warm-up (limit {} %)",
            a.max_rss_growth_pct
        ));
    }
    if let Some(s) = &stopped
        && !s.clean
    {
        failures.push(format!(
            "server did not stop cleanly on SIGTERM: {}",
            s.status
        ));
    }
    let kb = |k: Option<&serde_json::Value>| {
        k.and_then(|v| v.as_u64())
            .map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0))
    };
    eprintln!(
        "soak: route over the measured {:?}: {} lookups, p50 {} ms, p99 {} ms, p99.9 {} ms, max {} ms; {} re-registrations (p99 {} ms); {} idle keep-alives; {} failures",
        a.duration,
        report.route.n,
        stats::ms(report.route.p50_us),
        stats::ms(report.route.p99_us),
        stats::ms(report.route.p999_us),
        stats::ms(report.route.max_us),
        report.register.n,
        stats::ms(report.register.p99_us),
        report.idle.n,
        report.failures
    );
    eprintln!(
        "soak: server RSS first {} MiB, after warm-up {} MiB, end {} MiB, max {} MiB, growth {} %; stopped: {:?}",
        kb(rss.get("first_kb")),
        kb(rss.get("baseline_kb")),
        kb(rss.get("last_kb")),
        kb(rss.get("max_kb")),
        rss.get("growth_pct")
            .and_then(|g| g.as_f64())
            .map_or("-".into(), |g| format!("{g:.1}")),
        stopped
    );
    let mut value = json!(report);
    value["rss"] = rss;
    value["server_stop"] = json!(stopped);
    value["distinct_topics"] = json!(report.distinct_topics);
    Ok((value, failures))
}

/// First, post-warm-up, last and largest RSS, and the growth from post-warm-up to the end.
fn rss_summary(samples: &[phase::Sample]) -> serde_json::Value {
    let Some(first) = samples.first() else {
        return json!({});
    };
    let base = samples.iter().find(|s| s.t_s >= 0.0).unwrap_or(first);
    let last = samples.last().unwrap_or(first);
    let max = samples.iter().map(|s| s.rss_kb).max().unwrap_or(0);
    let max_after = samples
        .iter()
        .filter(|s| s.t_s >= base.t_s)
        .map(|s| s.rss_kb)
        .max()
        .unwrap_or(0);
    let pct = |v: u64| (v as f64 - base.rss_kb as f64) / base.rss_kb.max(1) as f64 * 100.0;
    json!({
        "first_kb": first.rss_kb, "baseline_kb": base.rss_kb, "baseline_t_s": base.t_s,
        "last_kb": last.rss_kb, "last_t_s": last.t_s, "max_kb": max,
        "growth_pct": pct(last.rss_kb), "max_growth_pct": pct(max_after),
        "fds_max": samples.iter().map(|s| s.fds).max(),
    })
}
