//! The server under test as a child process: built if needed, started with a temporary home
//! and configuration (`listenPort=0`, loopback only), its address read from the boot line,
//! its log kept in the temporary directory, and stopped with SIGTERM (then SIGKILL) at the end.
//! Dropping a [`ServerProc`] that was not stopped kills the process, so a panicking tool does
//! not leave a server behind.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tokio::time::Instant;

/// The release server binary next to this example's build (`<target>/release/namesrv`),
/// built first with `cargo build --release --bin namesrv` unless `build` is false.
pub fn release_binary(build: bool) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    // <target>/<profile>/examples/soak
    let target = exe
        .ancestors()
        .nth(3)
        .ok_or("cannot locate the target directory from the example's path")?;
    if build {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
        eprintln!("soak: building the release server (cargo build --release --bin namesrv)");
        let status = Command::new(cargo)
            .args([
                "build",
                "--release",
                "--quiet",
                "--bin",
                "namesrv",
                "--manifest-path",
            ])
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", target)
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !status.success() {
            return Err(format!(
                "cargo build --release --bin namesrv failed ({status})"
            ));
        }
    }
    let bin = target.join("release").join("namesrv");
    if !bin.exists() {
        return Err(format!(
            "{} does not exist (build it or pass --server-bin)",
            bin.display()
        ));
    }
    Ok(bin)
}

/// A running server process.
pub struct ServerProc {
    child: Option<Child>,
    /// Its process id.
    pub pid: u32,
    /// The address it listens on.
    pub addr: SocketAddr,
    /// Its temporary home (config, KV file, logs).
    pub dir: tempfile::TempDir,
}

/// How the server stopped.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stopped {
    /// Exit status as text (`exit status: 0`, `signal: 9 (SIGKILL)`, ...).
    pub status: String,
    /// Whether it exited with status 0 after SIGTERM.
    pub clean: bool,
    /// Milliseconds from SIGTERM to exit.
    pub stop_ms: u64,
}

impl ServerProc {
    /// Starts `bin` with the given extra properties and waits for its boot line.
    pub async fn start(
        bin: &Path,
        label: &str,
        props: &[(&str, String)],
    ) -> Result<ServerProc, String> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("namesrv-soak-{label}-"))
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let d = dir.path();
        let mut conf = format!(
            "listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath={}\nconfigStorePath={}\n",
            d.join("kvConfig.json").display(),
            d.join("namesrv.conf").display()
        );
        for (k, v) in props {
            conf.push_str(&format!("{k}={v}\n"));
        }
        std::fs::write(d.join("namesrv.conf"), conf).map_err(|e| format!("write config: {e}"))?;
        let stderr = std::fs::File::create(d.join("server.log")).map_err(|e| e.to_string())?;
        let mut child = Command::new(bin)
            .arg("-c")
            .arg(d.join("namesrv.conf"))
            .env("HOME", d)
            .env_remove("RUST_LOG")
            .env_remove("ROCKETMQ_SERIALIZE_TYPE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            // Its own process group: Ctrl-C reaches the tool only, which then stops the
            // server in order.
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let pid = child.id();
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let out_path = d.join("server.out");
        std::thread::spawn(move || {
            let mut out = std::fs::File::create(out_path).ok();
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("boot success.").nth(1)
                    && let Some(addr) = rest.rsplit("address ").next()
                {
                    let _ = tx.send(addr.trim().to_owned());
                }
                if let Some(f) = out.as_mut() {
                    let _ = writeln!(f, "{line}");
                }
            }
        });
        let mut proc = ServerProc {
            child: Some(child),
            pid,
            addr: "127.0.0.1:0".parse().unwrap(),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
                Ok(Some(text)) => {
                    proc.addr = text
                        .parse()
                        .map_err(|e| format!("boot line address {text:?}: {e}"))?;
                    return Ok(proc);
                }
                _ if Instant::now() > deadline => {
                    return Err(format!(
                        "no boot line within 30 s; log:\n{}",
                        proc.log_tail()
                    ));
                }
                _ => {
                    if let Some(status) = proc
                        .child
                        .as_mut()
                        .and_then(|c| c.try_wait().ok().flatten())
                    {
                        return Err(format!(
                            "server exited at start ({status}); log:\n{}",
                            proc.log_tail()
                        ));
                    }
                }
            }
        }
    }

    /// The server's log (stderr) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// The last lines of the log, for error messages.
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// SIGTERM, wait up to `grace`, then SIGKILL.
    pub async fn stop(&mut self, grace: Duration) -> Stopped {
        let Some(mut child) = self.child.take() else {
            return Stopped {
                status: "already stopped".into(),
                clean: false,
                stop_ms: 0,
            };
        };
        let t0 = Instant::now();
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Stopped {
                    status: status.to_string(),
                    clean: status.success(),
                    stop_ms: t0.elapsed().as_millis() as u64,
                };
            }
            if t0.elapsed() > grace {
                let _ = child.kill();
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                return Stopped {
                    status: format!("{status} (killed after {} s)", grace.as_secs()),
                    clean: false,
                    stop_ms: t0.elapsed().as_millis() as u64,
                };
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
