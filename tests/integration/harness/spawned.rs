//! The built `namesrv` binary as a child process whose log tests read: started on a config file, its boot line
//! read for the address, its log (stderr) collected line by line, signalled and killed by
//! pid. For the tests that need a real process: kill -9, signals, two servers on one port.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

pub use super::process::{BIN, PATIENCE, config};
use super::process::{BOOT_LINE, boot_addr, namesrv};

/// A running `namesrv` process, killed and reaped when dropped.
pub struct Spawned {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Spawned {
    /// Starts the binary with `-c conf` and `args`, `HOME` set to `home`, and waits for its
    /// boot line.
    pub fn start(conf: &Path, home: &Path, args: &[&str]) -> Spawned {
        let mut cmd = namesrv(home);
        cmd.arg("-c")
            .arg(conf)
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    log.lock().push(line);
                }
            });
        }
        let mut spawned = Spawned {
            child,
            addr: "0.0.0.0:0".parse().unwrap(),
            log,
        };
        // The console's boot line (a log line may repeat it in another form).
        let line = spawned
            .wait_for(|l| l.starts_with(BOOT_LINE))
            .unwrap_or_else(|| panic!("no boot line; log:\n{}", spawned.log_text()));
        spawned.addr = boot_addr(&line);
        spawned
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the process printed so far.
    pub fn log_text(&self) -> String {
        self.log.lock().join("\n")
    }

    /// The first line containing `needle`, waiting for it at most [`PATIENCE`] (and not at
    /// all once the process has exited and its output has been read).
    pub fn wait_for_log(&mut self, needle: &str) -> Option<String> {
        self.wait_for(|l| l.contains(needle))
    }

    /// The first line `matches` accepts, waiting as [`Spawned::wait_for_log`] does.
    pub fn wait_for(&mut self, matches: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = Instant::now() + PATIENCE;
        let mut exited_at = None;
        loop {
            if let Some(line) = self.log.lock().iter().find(|l| matches(l)) {
                return Some(line.clone());
            }
            if exited_at.is_none() && self.child.try_wait().unwrap().is_some() {
                exited_at = Some(Instant::now());
            }
            let drained = exited_at.is_some_and(|t| t.elapsed() > Duration::from_millis(500));
            if drained || Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends `signal` (`TERM`, `HUP`, `KILL`…) with kill(1).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {}", self.pid());
    }

    /// Waits for the process to exit, at most [`PATIENCE`].
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "still running after {PATIENCE:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
