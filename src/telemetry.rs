//! Logging setup: `tracing` to stderr, filtered by `--log-level`, else `RUST_LOG`, else
//! `info`.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. An unparsable filter is an error naming it.
pub fn init(level: Option<&str>) -> Result<(), String> {
    let filter = match level {
        Some(l) => EnvFilter::try_new(l).map_err(|e| format!("invalid --log-level {l:?}: {e}"))?,
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init()
        .map_err(|e| e.to_string())
}
