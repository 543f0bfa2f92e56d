//! The soak tool's command line: every count, duration and threshold is a flag whose default
//! is the figure the soak test must hold (10 000 idle connections, 1 000 brokers x 100 topics
//! re-registering every 30 s, 10 minutes, route p99 <= 2 ms, RSS growth <= 10 %).

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// Parses `250ms`, `90s`, `10m`, `1h` or a bare number of seconds.
fn duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len()));
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("not a duration: {text:?}"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("unknown unit in {text:?} (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{text:?}: {e}"))
}

/// A bounded load/soak test of the name server (see tests/SOAK.md).
#[derive(Parser, Debug, Clone)]
#[command(name = "soak")]
pub struct Args {
    /// Server binary to start [default: <target>/release/namesrv, built first].
    #[arg(long)]
    pub server_bin: Option<PathBuf>,
    /// Do not run `cargo build --release --bin namesrv` before starting the default binary.
    #[arg(long)]
    pub no_build: bool,
    /// Load an already running server instead of starting one (no limits check).
    #[arg(long)]
    pub addr: Option<std::net::SocketAddr>,
    /// Pid of the server at --addr, to sample its RSS.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Idle client connections (each looks a route up every --idle-ping-every).
    #[arg(long, default_value_t = 10_000)]
    pub idle_conns: usize,
    /// Between two lookups of one idle connection (0: never, and the server's idle timeout
    /// is then switched off).
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub idle_ping_every: Duration,
    /// Brokers, each on its own connection with its own name and address.
    #[arg(long, default_value_t = 1000)]
    pub brokers: usize,
    /// Topics per broker.
    #[arg(long, default_value_t = 100)]
    pub topics: usize,
    /// Brokers sharing one set of topics (a route then lists this many brokers).
    #[arg(long, default_value_t = 4)]
    pub brokers_per_topic: usize,
    /// Period of each broker's full re-registration.
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub register_every: Duration,
    /// One re-registration in this many carries a new data version.
    #[arg(long, default_value_t = 10)]
    pub version_change_every: usize,
    /// Route-lookup connections whose latency is judged.
    #[arg(long, default_value_t = 32)]
    pub route_conns: usize,
    /// Route lookups per second over all route connections (0: as fast as answered, one in
    /// flight per connection).
    #[arg(long, default_value_t = 2000.0)]
    pub route_rate: f64,
    /// Check the body of every Nth route lookup of a connection (0: never).
    #[arg(long, default_value_t = 50)]
    pub verify_every: u64,
    /// Measured duration (after the warm-up).
    #[arg(long, default_value = "600s", value_parser = duration)]
    pub duration: Duration,
    /// Load before measuring, not judged (includes one full registration period by default).
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub warmup: Duration,
    /// Length of one reported window.
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub window: Duration,
    /// Between two samples of the server's RSS.
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub rss_every: Duration,
    /// Deadline of one request.
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub request_timeout: Duration,
    /// Connections opened at once during set-up.
    #[arg(long, default_value_t = 256)]
    pub connect_concurrency: usize,
    /// Longest set-up allowed.
    #[arg(long, default_value = "300s", value_parser = duration)]
    pub setup_timeout: Duration,
    /// Fail when any measured window's route p99 exceeds this many milliseconds.
    #[arg(long, default_value_t = 2.0)]
    pub max_p99_ms: f64,
    /// Fail when the server's RSS at the end exceeds the first post-warm-up sample by more
    /// than this many percent.
    #[arg(long, default_value_t = 10.0)]
    pub max_rss_growth_pct: f64,
    /// Run only the limits check.
    #[arg(long, conflicts_with = "skip_limits")]
    pub limits_only: bool,
    /// Skip the limits check.
    #[arg(long)]
    pub skip_limits: bool,
    /// maxConnections of the limits check's server.
    #[arg(long, default_value_t = 100)]
    pub limits_max_conns: usize,
    /// Connections the limits check opens beyond the cap.
    #[arg(long, default_value_t = 50)]
    pub limits_extra: usize,
    /// GET_NAMESRV_CONFIG requests the non-reading client pipelines.
    #[arg(long, default_value_t = 5000)]
    pub limits_pipelined: usize,
    /// maxQueuedResponseBytes of the limits check's server.
    #[arg(long, default_value_t = 1 << 20)]
    pub limits_queued_bytes: u64,
    /// Most server RSS growth (MiB) allowed while the client does not read.
    #[arg(long, default_value_t = 4.0)]
    pub limits_max_rss_growth_mb: f64,
    /// Seed of the random topic choices.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}
