//! What the soak tool reads from and asks of the operating system: the open-file limit (raised
//! to what the run needs, or a clear refusal), and the server's memory, CPU time and open file
//! descriptors from `/proc`.

use std::path::Path;

/// File descriptors one side of the run holds besides its sockets (stdio, epoll, logs, ...).
pub const FD_SLACK: u64 = 128;

/// The open-file limits after [`ensure_nofile`].
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct NoFile {
    /// The soft limit before the tool touched it.
    pub soft_before: u64,
    /// The soft limit now (inherited by the server this process starts).
    pub soft: u64,
    /// The hard limit.
    pub hard: u64,
}

/// Makes sure this process (and the server it starts, which inherits the limit) may open
/// `need` files: raises the soft limit up to the hard one when it is lower, and explains what
/// to do when even the hard limit is too low.
pub fn ensure_nofile(need: u64) -> Result<NoFile, String> {
    let (soft, hard) = rlimit::Resource::NOFILE
        .get()
        .map_err(|e| format!("getrlimit(RLIMIT_NOFILE): {e}"))?;
    let mut now = soft;
    if soft < need {
        if hard < need {
            return Err(format!(
                "this run needs about {need} open files per process (the tool and the server \
                 each hold one end of every connection) but the hard limit is {hard}: raise it \
                 (e.g. `ulimit -Hn {need}` as root, or LimitNOFILE= in systemd) or lower \
                 --idle-conns / --brokers"
            ));
        }
        rlimit::Resource::NOFILE
            .set(hard, hard)
            .map_err(|e| format!("setrlimit(RLIMIT_NOFILE, {hard}): {e}"))?;
        now = hard;
    }
    Ok(NoFile {
        soft_before: soft,
        soft: now,
        hard,
    })
}

/// The local port range connections to one address can use, and how many ports that is.
pub fn ephemeral_ports() -> Option<(u32, u32)> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = text.split_whitespace().map(|v| v.parse::<u32>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    Some((lo, hi))
}

/// Resident set size of `pid` in KiB; `None` once the process has exited (or is a zombie).
pub fn rss_kb(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// User plus system CPU time of `pid`, in clock ticks (1/100 s on Linux).
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// CPU time used by the whole machine (every process, all CPUs, steal included), in ticks.
pub fn machine_busy_ticks() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<u64> = s
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal
    Some(f.iter().sum::<u64>() - f.get(3)? - f.get(4)?)
}

/// Clock ticks per second of [`cpu_ticks`] (`USER_HZ`, 100 on every Linux platform).
pub const TICKS_PER_SEC: f64 = 100.0;

/// Open file descriptors of `pid` (sockets included).
pub fn fd_count(pid: u32) -> Option<usize> {
    Some(
        std::fs::read_dir(Path::new("/proc").join(pid.to_string()).join("fd"))
            .ok()?
            .count(),
    )
}

/// The 1-minute load average, to report how busy the machine was.
pub fn loadavg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Number of CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
