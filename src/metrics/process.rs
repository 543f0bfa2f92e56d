//! Figures about the process itself, read from `/proc` when `/metrics` is scraped: resident
//! and virtual memory, CPU time, open and permitted file descriptors, threads, start time.
//!
//! On systems without `/proc` every figure is simply absent from the exposition.

use std::fs;

/// Linux reports CPU times in `/proc` in USER_HZ ticks, which the kernel ABI fixes at 100
/// per second on every architecture it supports today.
const TICKS_PER_SECOND: f64 = 100.0;

/// What `/proc` says about this process.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct ProcessStats {
    /// User plus system CPU time, in seconds.
    pub(crate) cpu_seconds: Option<f64>,
    /// Resident set size, in bytes.
    pub(crate) resident_bytes: Option<u64>,
    /// Virtual memory size, in bytes.
    pub(crate) virtual_bytes: Option<u64>,
    /// Open file descriptors.
    pub(crate) open_fds: Option<u64>,
    /// The soft limit on open file descriptors.
    pub(crate) max_fds: Option<u64>,
    /// OS threads.
    pub(crate) threads: Option<u64>,
    /// Start time, in seconds since the Unix epoch.
    pub(crate) start_time_seconds: Option<f64>,
}

impl ProcessStats {
    /// Reads the current figures.
    pub(super) fn read() -> ProcessStats {
        let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
        let stat = fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let stat = parse_stat(&stat);
        let boot_time = fs::read_to_string("/proc/stat")
            .ok()
            .and_then(|s| field(&s, "btime").and_then(|v| v.parse::<f64>().ok()));
        ProcessStats {
            cpu_seconds: stat.map(|s| (s.utime + s.stime) as f64 / TICKS_PER_SECOND),
            resident_bytes: kib(&status, "VmRSS:"),
            virtual_bytes: kib(&status, "VmSize:"),
            open_fds: fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as u64),
            max_fds: fs::read_to_string("/proc/self/limits")
                .ok()
                .and_then(|l| max_open_files(&l)),
            threads: field(&status, "Threads:").and_then(|v| v.parse().ok()),
            start_time_seconds: stat
                .zip(boot_time)
                .map(|(s, boot)| boot + s.start_ticks as f64 / TICKS_PER_SECOND),
        }
    }
}

/// The resident set size alone, for the history's samples (one small file read).
pub(super) fn resident_bytes() -> Option<u64> {
    kib(&fs::read_to_string("/proc/self/status").ok()?, "VmRSS:")
}

/// The fields of `/proc/self/stat` that are used.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stat {
    utime: u64,
    stime: u64,
    start_ticks: u64,
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) may contain spaces and parentheses,
/// so fields are counted from its closing parenthesis.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state): field N is fields[N - 3].
    let at = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some(Stat {
        utime: at(14)?,
        stime: at(15)?,
        start_ticks: at(22)?,
    })
}

/// The value after `name` on the line that starts with it.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
}

/// A `/proc/self/status` figure given in kB, in bytes.
fn kib(status: &str, name: &str) -> Option<u64> {
    field(status, name)?.parse::<u64>().ok().map(|k| k * 1024)
}

/// The soft limit of the "Max open files" line of `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line =
            "4242 (name with) (parens) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 7 0 123456 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                utime: 250,
                stime: 50,
                start_ticks: 123456
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn limits_and_status_lines() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n";
        assert_eq!(max_open_files(limits), Some(1024));
        let status = "Name:\tnamesrv\nVmSize:\t  123 kB\nVmRSS:\t   10 kB\nThreads:\t3\n";
        assert_eq!(kib(status, "VmRSS:"), Some(10 * 1024));
        assert_eq!(kib(status, "VmSize:"), Some(123 * 1024));
        assert_eq!(field(status, "Threads:"), Some("3"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_memory_cpu_and_descriptors() {
        let s = ProcessStats::read();
        assert!(s.resident_bytes.unwrap() > 0);
        assert!(s.open_fds.unwrap() > 0);
        assert!(s.max_fds.unwrap() > 0);
        assert!(s.threads.unwrap() >= 1);
        assert!(s.cpu_seconds.unwrap() >= 0.0);
        assert!(s.start_time_seconds.unwrap() > 1.5e9);
    }
}
