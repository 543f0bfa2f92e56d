//! The built `namesrv` binary as a child process, for tests that need a real process (kill -9,
//! signals, resident memory, exit codes, two servers on one port): the binary's path, its
//! hermetic command line, the boot line and the address it names, waiting with a bound, and
//! killing by pid. [`Server`] reads the boot line from stdout and keeps stderr; the log-reading
//! variant is [`super::spawned::Spawned`].

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_namesrv");
pub const BOOT_LINE: &str = "The Name Server boot success.";
/// Bound on anything a test waits for; reaching it is a failure, not a timing assertion.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The binary with `-c conf`, `HOME=home` and nothing inherited that changes its behaviour.
pub fn command(conf: &Path, home: &Path) -> Command {
    let mut cmd = namesrv(home);
    cmd.arg("-c").arg(conf).stdin(Stdio::null());
    cmd
}

/// A child process that is killed and reaped when the guard goes away.
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether `pid` is running (an exited process nobody has reaped yet does not count).
pub fn alive(pid: u32) -> bool {
    let out = Command::new("ps")
        .args(["-p", &pid.to_string(), "-o", "stat="])
        .output()
        .expect("ps runs");
    let stat = String::from_utf8_lossy(&out.stdout);
    let stat = stat.trim();
    !stat.is_empty() && !stat.starts_with('Z')
}

/// The binary with a hermetic environment: `HOME` is `home`, nothing inherited that
/// changes its behaviour.
pub fn namesrv(home: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env("HOME", home)
        .env_remove("ROCKETMQ_HOME")
        .env_remove("ROCKETMQ_SERIALIZE_TYPE")
        .env_remove("RUST_LOG");
    cmd
}

/// Collects everything `from` yields, on a thread of its own.
fn read_all(mut from: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = from.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// Waits for `child` to exit, at most `limit`.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `cmd` to completion with its output captured; fails the test if it takes longer
/// than [`PATIENCE`] or leaves its output pipes open (a background process holding them).
pub fn run(mut cmd: Command) -> Output {
    let shown = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = Reaped(cmd.spawn().unwrap());
    let stdout = read_all(child.0.stdout.take().unwrap());
    let stderr = read_all(child.0.stderr.take().unwrap());
    let status = wait_exit(&mut child.0, PATIENCE)
        .unwrap_or_else(|| panic!("{shown} still running after {PATIENCE:?}"));
    let collect = |rx: mpsc::Receiver<Vec<u8>>| {
        rx.recv_timeout(PATIENCE)
            .unwrap_or_else(|_| panic!("{shown}: output still open after exit"))
    };
    Output {
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
    }
}

/// Asserts that the process behind `out` exited successfully, showing its output if not.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}: {}{}",
        out.status,
        stderr(out),
        stdout(out)
    );
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the binary (hermetic, `HOME=home`) with `args`, then `-c conf` when given, to
/// completion as [`run`] does.
pub fn run_namesrv(home: &Path, args: &[&str], conf: Option<&Path>) -> Output {
    let mut cmd = namesrv(home);
    cmd.args(args);
    if let Some(conf) = conf {
        cmd.arg("-c").arg(conf);
    }
    run(cmd)
}

/// Writes `namesrv.conf` in `dir`: loopback, any free port, files under `dir/store`, plus
/// `extra` properties lines.
pub fn config(dir: &Path, extra: &str) -> PathBuf {
    let conf = dir.join("namesrv.conf");
    let text = format!(
        "bindAddress=127.0.0.1\nlistenPort=0\nkvConfigPath={}\nshutdownGracePeriodMillis=2000\n{extra}\n",
        dir.join("store").join("kvConfig.json").display()
    );
    std::fs::write(&conf, text).unwrap();
    conf
}

/// [`config`] with nothing extra: a private server.
pub fn private_config(dir: &Path) -> PathBuf {
    config(dir, "")
}

/// The listening address announced by a boot line.
pub fn boot_addr(line: &str) -> SocketAddr {
    let at = line
        .find("address ")
        .expect("the boot line names the address");
    line[at + "address ".len()..].trim().parse().unwrap()
}

/// Sends SIGTERM to `pid` with kill(1).
pub fn terminate(pid: u32) {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -TERM {pid}");
}

/// The `namesrv` binary as a child process; killed and reaped when dropped.
pub struct Server {
    child: Child,
    addr: Option<SocketAddr>,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How a start ended: listening, or exited before the boot line.
pub enum Started {
    Up(Server),
    Exited(ExitStatus, String),
}

impl Server {
    /// Starts the binary with `-c conf` and `HOME=home`, and waits for the boot line or
    /// for the process to exit.
    pub fn start(conf: &Path, home: &Path) -> Started {
        let mut child = command(conf, home)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the namesrv binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr_pipe = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr_pipe.read_to_end(&mut buf);
            buf
        });
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref() {
                let Ok(line) = line else { break };
                if line.contains(BOOT_LINE) {
                    let _ = tx.send(line);
                    break;
                }
            }
            // Keep draining so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let mut server = Server {
            child,
            addr: None,
            stderr: Some(stderr),
        };
        match rx.recv_timeout(PATIENCE) {
            Ok(line) => {
                server.addr = Some(boot_addr(&line));
                Started::Up(server)
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = server.wait_exit();
                let text = server.take_stderr();
                Started::Exited(status, text)
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no boot line within {PATIENCE:?}: {}", server.take_stderr())
            }
        }
    }

    /// Starts the binary and requires it to come up.
    pub fn start_up(conf: &Path, home: &Path) -> Server {
        match Self::start(conf, home) {
            Started::Up(server) => server,
            Started::Exited(status, stderr) => {
                panic!("the server did not start ({status}):\n{stderr}")
            }
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr.expect("the server is up")
    }

    /// Waits for the process to exit, at most [`PATIENCE`].
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "still running after {PATIENCE:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL (`Child::kill` on Unix), then reap.
    pub fn kill9(&mut self) {
        self.child.kill().expect("SIGKILL the server");
        self.child.wait().expect("reap the server");
    }

    /// Kills the process if it is still running; returns everything it wrote to stderr.
    pub fn take_stderr(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let bytes = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// A loopback port the system just handed out, free again (the binary binds it right after).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// At most the last `n` bytes of `text` (whole characters), for failure messages.
pub fn tail(text: &str, n: usize) -> &str {
    let mut start = text.len().saturating_sub(n);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

impl Server {
    /// Starts the binary with its output discarded, without waiting for it to listen.
    pub fn spawn_quiet(conf: &Path, home: &Path) -> Server {
        Server {
            child: command(conf, home)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("the namesrv binary starts"),
            addr: None,
            stderr: None,
        }
    }

    /// Whether the process has exited.
    pub fn has_exited(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_some()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Resident set size of `pid` in bytes; `None` once it has exited.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}
