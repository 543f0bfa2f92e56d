//! Binding the listening socket, and taking it over from a running server: an upgrade that
//! refuses no connection.
//!
//! Every server listens with `SO_REUSEPORT`, so that a new one can listen on the same port
//! while the old one still runs. An ordinary start first checks that nothing else listens
//! on the port (a probe bound without `SO_REUSEPORT` fails if anything does), so starting a
//! second server by mistake still fails with "address in use" as it always did.
//!
//! A takeover (`namesrv --takeover PID`) goes:
//! 0. the new process checks that PID is a running `namesrv` that listens on the port
//!    ([`check_target`]), and loads or checks everything it can before the old one goes —
//!    accounts, TLS material, that the KV file reads, the HTTP port — so that a failure
//!    leaves the old one serving;
//! 1. the new process listens beside the old one and attaches a classic BPF program to the
//!    port's `SO_REUSEPORT` group that sends every new connection to the newest socket (its
//!    own): from then on the kernel queues new connections for the new process, which does
//!    not accept them yet;
//! 2. it sends the old process SIGUSR2: the old one (skipping the GO_AWAY wait of
//!    `enableShutdownGracefully`, whose clients would only wait in the new one's queue)
//!    accepts what was already queued for it, closes its listener, answers what its
//!    connections had sent, writes its final route snapshot and KV file, and exits;
//! 3. once the old process is gone, the new one loads the KV store and the snapshot (and
//!    binds the HTTP port, if the old one held it) and starts accepting. Clients waited in
//!    the queue; none was refused. A request sent on an old connection after the old
//!    server's last read finds the connection closed, and the client sends it again on a
//!    new one.
//!
//! Linux only (the steering program); elsewhere a takeover is refused.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket};

use crate::config::Settings;

/// At shutdown, the listener closes once no queued connection arrived for this long…
pub(crate) const QUEUE_QUIET: Duration = Duration::from_millis(50);
/// …or this long after shutdown began, whichever is first.
pub(crate) const QUEUE_DRAIN_MAX: Duration = Duration::from_secs(1);

/// Why a takeover could not be done.
#[derive(Debug, thiserror::Error)]
pub enum TakeoverError {
    /// The pid does not name a running `namesrv`.
    #[error("process {0} is not a running namesrv")]
    NotNamesrv(u32),
    /// The process does not listen on the port to take over: another server.
    #[error(
        "process {pid} does not listen on port {port}: it is not the server to take over (left alone)"
    )]
    NotOnPort {
        /// The process.
        pid: u32,
        /// The port to take over.
        port: u16,
    },
    /// Whether the process listens on the port could not be told.
    #[error("cannot tell whether process {pid} listens on port {port}")]
    Inspect {
        /// The process.
        pid: u32,
        /// The port to take over.
        port: u16,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// `listenPort=0` picks a new port, so there is nothing to take over.
    #[error("a takeover needs a fixed listenPort (listenPort=0 picks a free port)")]
    NoFixedPort,
    /// Binding or steering failed.
    #[error("cannot listen beside the running server on {addr}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The old process could not be signalled.
    #[error("cannot signal process {pid}")]
    Signal {
        /// The old process.
        pid: u32,
        /// What failed.
        #[source]
        source: std::io::Error,
    },
    /// The old process did not exit in time; it keeps serving.
    #[error("process {pid} still runs after {patience:?}; it keeps the port")]
    StillRunning {
        /// The old process.
        pid: u32,
        /// How long the new one waited.
        patience: Duration,
    },
}

async fn addresses(s: &Settings) -> std::io::Result<Vec<SocketAddr>> {
    Ok(
        tokio::net::lookup_host((s.bind_address.as_str(), s.listen_port as u16))
            .await?
            .collect(),
    )
}

fn socket(addr: SocketAddr, s: &Settings, reuse_port: bool) -> std::io::Result<TcpSocket> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    #[cfg(unix)]
    socket.set_reuseport(reuse_port)?;
    if s.server_socket_snd_buf_size > 0 {
        socket.set_send_buffer_size(s.server_socket_snd_buf_size as u32)?;
    }
    if s.server_socket_rcv_buf_size > 0 {
        socket.set_recv_buffer_size(s.server_socket_rcv_buf_size as u32)?;
    }
    Ok(socket)
}

/// Binds the listening socket as `bindAddress`/`listenPort`/`serverSocketBacklog` and the
/// socket buffer sizes say, failing if anything already listens there.
pub async fn bind(s: &Settings) -> std::io::Result<TcpListener> {
    let mut last = None;
    for addr in addresses(s).await? {
        // The probe has no SO_REUSEPORT, so it fails where anything listens; its address
        // also fixes the port when listenPort=0.
        let bound = socket(addr, s, false)
            .and_then(|probe| probe.bind(addr).and_then(|()| probe.local_addr()))
            .and_then(|at| {
                let real = socket(at, s, true)?;
                real.bind(at)?;
                real.listen(s.server_socket_backlog as u32)
            });
        match bound {
            Ok(listener) => return Ok(listener),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::AddrNotAvailable, "no address to bind")
    }))
}

/// Listens beside the server already on the port and steers every new connection to this
/// socket (step 1 of a takeover). Nothing is accepted until the caller starts serving.
pub async fn bind_beside(s: &Settings) -> Result<TcpListener, TakeoverError> {
    if s.listen_port == 0 {
        return Err(TakeoverError::NoFixedPort);
    }
    let addrs = addresses(s).await.map_err(|source| TakeoverError::Listen {
        addr: SocketAddr::from(([0, 0, 0, 0], s.listen_port as u16)),
        source,
    })?;
    let mut last = None;
    for addr in addrs {
        let listening = socket(addr, s, true)
            .and_then(|socket| {
                socket.bind(addr)?;
                socket.listen(s.server_socket_backlog as u32)
            })
            .and_then(|listener| steer_new_connections_here(&listener).map(|()| listener));
        match listening {
            Ok(listener) => return Ok(listener),
            Err(source) => last = Some(TakeoverError::Listen { addr, source }),
        }
    }
    Err(last.unwrap_or(TakeoverError::NoFixedPort))
}

/// Attaches to the port's `SO_REUSEPORT` group a program that picks its second socket, this
/// one: the old server joined first, and when it leaves, this socket takes its place and the
/// program's choice no longer exists, so the kernel falls back to its usual pick.
#[cfg(target_os = "linux")]
fn steer_new_connections_here(listener: &TcpListener) -> std::io::Result<()> {
    use nix::libc::{sock_filter, sock_fprog};
    use nix::sys::socket::{setsockopt, sockopt::AttachReusePortCbpf};
    // BPF_RET | BPF_K: return the constant 1, the index of the socket to use.
    let program = [sock_filter {
        code: 0x06,
        jt: 0,
        jf: 0,
        k: 1,
    }];
    let fprog = sock_fprog {
        len: program.len() as u16,
        filter: program.as_ptr().cast_mut(),
    };
    setsockopt(listener, AttachReusePortCbpf, &fprog).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn steer_new_connections_here(_listener: &TcpListener) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "a takeover needs Linux (SO_ATTACH_REUSEPORT_CBPF)",
    ))
}

/// Whether `pid` is a running (not exited, not zombie) `namesrv` process.
fn running_namesrv(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // "<pid> (<comm>) <state> …"; the name may itself contain parentheses.
    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
        return false;
    };
    let state = stat[close + 1..].trim_start().chars().next();
    &stat[open + 1..close] == "namesrv" && !matches!(state, Some('Z' | 'X') | None)
}

/// Checks that `pid` is the server to take over: a running `namesrv` with a socket listening
/// on `port` (step 0 of a takeover).
pub fn check_target(pid: u32, port: u16) -> Result<(), TakeoverError> {
    if port == 0 {
        return Err(TakeoverError::NoFixedPort);
    }
    if !running_namesrv(pid) {
        return Err(TakeoverError::NotNamesrv(pid));
    }
    match super::port_owner::listens_on(pid, port) {
        Ok(true) => Ok(()),
        Ok(false) => Err(TakeoverError::NotOnPort { pid, port }),
        Err(source) => Err(TakeoverError::Inspect { pid, port, source }),
    }
}

/// The HTTP listener of a takeover, bound before the old server is asked to go if its port
/// is free (`Ok(Some)`); `Ok(None)` when HTTP is off or the old server `pid` holds the port,
/// which [`crate::http::bind`] then takes once it has exited. Anyone else on the port is an
/// error while the old server still serves; the caller says which address it was for, as
/// it does for a bind at start.
pub async fn bind_http_beside(s: &Settings, pid: u32) -> std::io::Result<Option<TcpListener>> {
    let port = s.http_listen_port as u16;
    match crate::http::bind(s).await {
        Err(e)
            if e.kind() == std::io::ErrorKind::AddrInUse
                && super::port_owner::listens_on(pid, port).unwrap_or(false) =>
        {
            Ok(None)
        }
        bound => bound,
    }
}

/// Asks the server `pid`, which [`check_target`] accepted, to hand over (SIGUSR2) and
/// waits, at most `patience`, until it has exited (steps 2 and 3 of a takeover).
pub async fn retire(pid: u32, patience: Duration) -> Result<(), TakeoverError> {
    if !running_namesrv(pid) {
        return Err(TakeoverError::NotNamesrv(pid));
    }
    let target = nix::unistd::Pid::from_raw(pid as i32);
    nix::sys::signal::kill(target, nix::sys::signal::Signal::SIGUSR2).map_err(|e| {
        TakeoverError::Signal {
            pid,
            source: e.into(),
        }
    })?;
    tracing::info!(
        pid,
        "takeover: asked the running server to hand over; waiting for it to exit"
    );
    let deadline = tokio::time::Instant::now() + patience;
    while running_namesrv(pid) {
        if tokio::time::Instant::now() >= deadline {
            return Err(TakeoverError::StillRunning { pid, patience });
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Env;

    fn settings(port: u16) -> Settings {
        let mut s = Settings::defaults(&Env {
            home: "/nonexistent".into(),
            rocketmq_home: None,
        });
        s.bind_address = "127.0.0.1".into();
        s.listen_port = port.into();
        s
    }

    async fn accepted_within(listener: &TcpListener, wait: Duration) -> usize {
        let mut n = 0;
        while let Ok(Ok(_)) = tokio::time::timeout(wait, listener.accept()).await {
            n += 1;
        }
        n
    }

    #[tokio::test]
    async fn an_ordinary_start_on_a_port_in_use_fails() {
        let first = bind(&settings(0)).await.unwrap();
        let port = first.local_addr().unwrap().port();
        let err = bind(&settings(port)).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_takeover_listener_receives_every_new_connection() {
        let old = bind(&settings(0)).await.unwrap();
        let addr = old.local_addr().unwrap();
        let new = bind_beside(&settings(addr.port())).await.unwrap();
        let mut clients = Vec::new();
        for _ in 0..32 {
            clients.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        }
        // Without the steering program the kernel would hash about half to the old one.
        assert_eq!(accepted_within(&old, Duration::from_millis(50)).await, 0);
        assert_eq!(accepted_within(&new, Duration::from_millis(50)).await, 32);
        // Once the old one is gone, the new one gets everything as the only socket left.
        drop(old);
        clients.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        assert_eq!(accepted_within(&new, Duration::from_millis(50)).await, 1);
    }

    #[tokio::test]
    async fn a_takeover_needs_a_fixed_port_and_a_running_namesrv() {
        assert!(matches!(
            bind_beside(&settings(0)).await,
            Err(TakeoverError::NoFixedPort)
        ));
        // This test process is not a namesrv.
        let me = std::process::id();
        assert!(matches!(
            check_target(me, 0),
            Err(TakeoverError::NoFixedPort)
        ));
        assert!(matches!(
            check_target(me, 9876),
            Err(TakeoverError::NotNamesrv(pid)) if pid == me
        ));
        assert!(matches!(
            retire(me, Duration::from_millis(10)).await,
            Err(TakeoverError::NotNamesrv(pid)) if pid == me
        ));
    }
}
