//! Command-line flags: those of Java's `mqnamesrv` (and, with `--controller`, of its
//! `mqcontroller`) plus logging (`--log-*`) and `--version`. No logic lives here; `main` turns
//! the flags into a configuration.

use std::path::PathBuf;

use clap::Parser;

use crate::telemetry::{LogFormat, LogRotation};

/// A standalone Apache RocketMQ NameServer.
#[derive(Debug, Parser)]
#[command(name = "namesrv", version, about, long_about = None)]
pub struct Args {
    /// Name server config properties file (Java properties syntax, Java key names); with
    /// `--controller`, the controller's (Java's `controller.conf`).
    #[arg(short = 'c', long = "configFile", value_name = "FILE")]
    pub config_file: Option<PathBuf>,

    /// Run only the RocketMQ 5 controller, as Java's `mqcontroller` (`bin/mqcontroller`):
    /// its requests on the port of this node's `controllerDLegerPeers` entry, no name server.
    #[arg(long = "controller")]
    pub controller: bool,

    /// Print every effective config item as key=value and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    pub print_config_item: bool,

    /// Name server address list; accepted for compatibility with mqnamesrv and ignored.
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDRS")]
    pub(crate) namesrv_addr: Option<String>,

    /// A Java system property, e.g. `-Dtls.server.mode=enforcing` (bin/mqnamesrv passes those of
    /// JAVA_OPT and JAVA_OPT_EXT). Only `tls.*` keys are used; others are accepted and ignored.
    #[arg(short = 'D', value_name = "KEY=VALUE", action = clap::ArgAction::Append)]
    pub system_properties: Vec<String>,

    /// Log filter, e.g. `info`, `debug`, `namesrv=trace`; RUST_LOG is used when absent.
    #[arg(long = "log-level", value_name = "FILTER")]
    pub log_level: Option<String>,

    /// Take the listening port over from the running server PID (an upgrade with no
    /// refused connection): listen beside it, have it hand over and exit, then serve.
    #[arg(long = "takeover", value_name = "PID")]
    pub takeover: Option<u32>,

    /// Log line format.
    #[arg(long = "log-format", value_name = "FORMAT", default_value = "text")]
    pub log_format: LogFormat,

    /// Write the log to rotating files `namesrv-rs.<date>.log` in DIR (with
    /// `namesrv-rs.log` linking to the current one) instead of stderr.
    #[arg(long = "log-dir", value_name = "DIR")]
    pub log_dir: Option<PathBuf>,

    /// When `--log-dir` files rotate.
    #[arg(long = "log-rotation", value_name = "WHEN", default_value = "daily")]
    pub log_rotation: LogRotation,

    /// How many `--log-dir` files to keep; older ones are deleted.
    #[arg(long = "log-max-files", value_name = "N", default_value_t = 14,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub log_max_files: u16,

    /// Most bytes one `--log-dir` file may hold (e.g. 256M, 1G): past it, lines are dropped
    /// until the next rotation, with a note saying so. At most N files of this size are kept.
    #[arg(long = "log-max-size", value_name = "SIZE", default_value = "256M",
          value_parser = crate::telemetry::parse_size)]
    pub log_max_size: u64,
}
