//! Command-line flags: those of Java's `mqnamesrv` plus `--log-level` and `--version`. No
//! logic lives here; `main` turns the flags into a configuration.

use std::path::PathBuf;

use clap::Parser;

/// A standalone Apache RocketMQ NameServer.
#[derive(Debug, Parser)]
#[command(name = "namesrv", version, about, long_about = None)]
pub struct Args {
    /// Name server config properties file (Java properties syntax, Java key names).
    #[arg(short = 'c', long = "configFile", value_name = "FILE")]
    pub config_file: Option<PathBuf>,

    /// Print every effective config item as key=value and exit.
    #[arg(short = 'p', long = "printConfigItem")]
    pub print_config_item: bool,

    /// Name server address list; accepted for compatibility with mqnamesrv and ignored.
    #[arg(short = 'n', long = "namesrvAddr", value_name = "ADDRS")]
    pub namesrv_addr: Option<String>,

    /// Log filter, e.g. `info`, `debug`, `namesrv=trace`; RUST_LOG is used when absent.
    #[arg(long = "log-level", value_name = "FILTER")]
    pub log_level: Option<String>,
}
