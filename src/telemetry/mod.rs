//! Logging setup: `tracing` filtered by `--log-level`, else `RUST_LOG`, else `info`; written
//! to stderr, or with `--log-dir` to a log file that rotates (daily or hourly, keeping a
//! bounded number of files, `CURRENT_LOG` always linking to the current one, each file at
//! most `--log-max-size` bytes: past it lines are dropped until the next rotation, with a
//! note); as text or, for log shippers, as one JSON object per line (`--log-format json`).
//! The audit log of admin requests (target `AUDIT_TARGET`, written by [`crate::auth`]) goes
//! to its own file when `authAuditLog` names one, and with everything else otherwise.
//!
//! Every event is one line: control characters in what it echoes are escaped on the way to
//! any of these outputs (`writer`), so no client's value can forge a line.
//!
//! The files are named `namesrv-rs.<date>.log` so that they can share a directory with a
//! Java name server's `namesrv.log` and `namesrv.<n>.log`: rotation deletes only its own.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::writer::BoxMakeWriter;
use tracing_subscriber::prelude::*;

use writer::{CapOptions, Capped, OneLine};

mod writer;

pub(crate) use writer::parse_size;

/// The `tracing` target of audit lines: defined here, where the logs are routed, and used by
/// `auth`, which writes them.
pub(crate) const AUDIT_TARGET: &str = "namesrv::audit";

/// The default of `--log-max-size`: 256 MiB per file.
pub(crate) const DEFAULT_MAX_SIZE: u64 = 256 << 20;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `fields` (with `message`), `span`s.
    Json,
}

/// When the log file is rotated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogRotation {
    /// A new file every day (UTC).
    #[default]
    Daily,
    /// A new file every hour.
    Hourly,
}

/// Where and how to log.
#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    /// The filter (`--log-level`); `RUST_LOG`, else `info`, when `None`.
    pub level: Option<String>,
    /// Text or JSON.
    pub format: LogFormat,
    /// Write rotating files in this directory instead of stderr.
    pub dir: Option<PathBuf>,
    /// When to start a new file.
    pub rotation: LogRotation,
    /// How many files to keep (older ones are deleted).
    pub max_files: usize,
    /// Most bytes one file gets (`--log-max-size`); 0 is read as `DEFAULT_MAX_SIZE`.
    pub max_size: u64,
    /// The audit log's own file (`authAuditLog`), if any.
    pub audit_log: Option<PathBuf>,
}

/// Keeps the file writer's background thread alive; dropping it flushes what is queued.
#[must_use = "logs written to a file are flushed when the guard is dropped"]
pub struct LogGuard {
    _writer: Option<WorkerGuard>,
}

/// What log files start with.
const PREFIX: &str = "namesrv-rs";

/// The name of the link to the current log file.
pub(crate) const CURRENT_LOG: &str = "namesrv-rs.log";

/// The filter without `--log-level` or `RUST_LOG`: openraft narrates every vote and append
/// at info; the controller logs what an operator needs (leaders, elections) itself.
const DEFAULT_FILTER: &str = "info,openraft=warn";

/// Installs the global subscriber. An unparsable filter, a log directory that cannot be used
/// or an audit file that cannot be opened is an error naming it.
pub fn init(opts: &LogOptions) -> Result<LogGuard, String> {
    let mut filter = match &opts.level {
        Some(l) => EnvFilter::try_new(l).map_err(|e| format!("invalid --log-level {l:?}: {e}"))?,
        None => {
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER))
        }
    };
    let audit = match &opts.audit_log {
        Some(path) => {
            let file = open_append(path)
                .map_err(|e| format!("cannot open authAuditLog {}: {e}", path.display()))?;
            // Audit lines go to the file only, whatever the main filter says.
            filter = filter.add_directive(
                format!("{AUDIT_TARGET}=off")
                    .parse()
                    .map_err(|e| format!("{e}"))?,
            );
            let layer = tracing_subscriber::fmt::layer()
                .with_writer(OneLine::new(Arc::new(file), false))
                .with_ansi(false)
                .with_target(false)
                .with_filter(Targets::new().with_target(AUDIT_TARGET, LevelFilter::INFO));
            Some(layer)
        }
        None => None,
    };
    let (writer, guard, ansi) = match &opts.dir {
        None => {
            let ansi = std::io::stderr().is_terminal() && opts.format == LogFormat::Text;
            (
                BoxMakeWriter::new(OneLine::new(std::io::stderr, ansi)),
                None,
                ansi,
            )
        }
        Some(dir) => {
            let (writer, guard) = rotating(dir, opts)?;
            (
                BoxMakeWriter::new(OneLine::new(writer, false)),
                Some(guard),
                false,
            )
        }
    };
    let main = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi)
        .with_target(false);
    let main = match opts.format {
        LogFormat::Text => main.with_filter(filter).boxed(),
        LogFormat::Json => main.json().flatten_event(false).with_filter(filter).boxed(),
    };
    tracing_subscriber::registry()
        .with(main)
        .with(audit)
        .try_init()
        .map_err(|e| e.to_string())?;
    Ok(LogGuard { _writer: guard })
}

/// The rotating file writer of `--log-dir`, capped at `--log-max-size` per file, behind a
/// thread that never drops a line below the cap (a full queue waits).
fn rotating(
    dir: &Path,
    opts: &LogOptions,
) -> Result<(tracing_appender::non_blocking::NonBlocking, WorkerGuard), String> {
    let (rotation, period) = match opts.rotation {
        LogRotation::Daily => (Rotation::DAILY, 86_400),
        LogRotation::Hourly => (Rotation::HOURLY, 3_600),
    };
    let appender = RollingFileAppender::builder()
        .rotation(rotation)
        .filename_prefix(PREFIX)
        .filename_suffix("log")
        .max_log_files(opts.max_files.max(1))
        .latest_symlink(CURRENT_LOG)
        .build(dir)
        .map_err(|e| format!("cannot write logs in --log-dir {}: {e}", dir.display()))?;
    // A restart within the period appends to the same file: what it holds counts.
    let already = std::fs::metadata(dir.join(CURRENT_LOG)).map_or(0, |m| m.len());
    let cap = CapOptions {
        max: match opts.max_size {
            0 => DEFAULT_MAX_SIZE,
            n => n,
        },
        period,
        already,
        json: opts.format == LogFormat::Json,
    };
    let appender = Capped::new(appender, cap, writer::wall_clock);
    Ok(
        tracing_appender::non_blocking::NonBlockingBuilder::default()
            .lossy(false)
            .thread_name("namesrv-log")
            .finish(appender),
    )
}

/// Opens `path` for appending, creating it readable by its owner only.
fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}
