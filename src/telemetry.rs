//! Logging setup: `tracing` to stderr, filtered by `--log-level`, else `RUST_LOG`, else
//! `info`. The audit log of admin requests (target [`crate::auth::AUDIT_TARGET`]) goes to its
//! own file when `authAuditLog` names one, and to stderr with everything else otherwise.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

use crate::auth::AUDIT_TARGET;

/// Installs the global subscriber. An unparsable filter or an audit file that cannot be
/// opened is an error naming it.
pub fn init(level: Option<&str>, audit_log: Option<&Path>) -> Result<(), String> {
    let mut filter = match level {
        Some(l) => EnvFilter::try_new(l).map_err(|e| format!("invalid --log-level {l:?}: {e}"))?,
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
    };
    let audit = match audit_log {
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
                .with_writer(Arc::new(file))
                .with_ansi(false)
                .with_target(false)
                .with_filter(Targets::new().with_target(AUDIT_TARGET, LevelFilter::INFO));
            Some(layer)
        }
        None => None,
    };
    let main = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .with_filter(filter);
    tracing_subscriber::registry()
        .with(main)
        .with(audit)
        .try_init()
        .map_err(|e| e.to_string())
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
