//! The prelude of every connection, before any frame: an optional PROXY protocol header, then
//! the TLS decision on the next byte (`0x16` ⇒ TLS, TLS.md §4), then the TLS handshake. It
//! turns an accepted [`TcpStream`] into a [`Transport`] (plain or TLS) and the client's address
//! (the one a PROXY header carries, else the socket's).
//!
//! Bytes are only *peeked* until the decision is made, and a PROXY header is read exactly, so a
//! plaintext connection reaches the frame layer as the untouched `TcpStream` it was: permissive
//! mode costs a plaintext client one `recv(MSG_PEEK)`.
//!
//! Time limits: waiting for a connection's first byte (or the first byte after a PROXY header)
//! is ordinary idleness, bounded by the idle timeout as for any connection; once a PROXY header
//! or a TLS ClientHello has begun, it must be complete within `handshakeTimeoutMillis`. Each
//! connection runs its prelude on its own task, so a stalled one delays nobody else.

pub mod proxy;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::server::TlsStream;

use super::log_limit::LogLimit;
use crate::auth::address::{AddressPattern, PatternError};
use crate::config::Settings;
use crate::metrics::{Metrics, Prelude as Outcome};
use crate::tls::{ServerMode, ServerTls, TlsError, TlsSettings};
use proxy::{Detect, ProxyError};

/// How often each kind of refusal or failure is logged at most.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The first byte of a TLS record carrying a handshake message.
const TLS_HANDSHAKE: u8 = 0x16;

/// A connection after its prelude.
pub enum Transport {
    /// Plaintext frames on the socket itself.
    Plain(TcpStream),
    /// Frames inside TLS.
    Tls(Box<TlsStream<TcpStream>>),
}

/// Why a connection ended during its prelude.
#[derive(Debug, thiserror::Error)]
pub enum PreludeError {
    /// The peer closed before sending anything that needs an answer.
    #[error("closed by the peer")]
    Eof,
    /// Nothing arrived within the idle timeout.
    #[error("idle")]
    Idle,
    /// A socket error.
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    /// A TLS client while `tls.server.mode=disabled`.
    #[error(
        "Clients intend to establish an SSL connection while this server is running in SSL disabled mode"
    )]
    TlsRefused,
    /// A plaintext client while `tls.server.mode=enforcing`.
    #[error(
        "Clients intend to establish an insecure connection while this server is running in SSL enforcing mode"
    )]
    PlainRefused,
    /// A PROXY header from a peer `proxyProtocolAllowedAddresses` does not list.
    #[error("PROXY header from a peer not in proxyProtocolAllowedAddresses")]
    ProxyNotAllowed,
    /// A malformed or over-long PROXY header.
    #[error("{0}")]
    Proxy(ProxyError),
    /// The PROXY header or TLS handshake did not complete in time.
    #[error("handshake not complete within {0:?}")]
    Timeout(Duration),
    /// The TLS handshake failed.
    #[error("TLS handshake failed: {0}")]
    Handshake(std::io::Error),
}

/// The peers allowed to send a PROXY header (`proxyProtocolAllowedAddresses`): address
/// patterns as in the auth file (`10.0.1.*`, `10.0.0.1-9`, `fe80::*`), separated by `;`.
/// Empty: nobody.
#[derive(Debug, Clone)]
pub struct AllowList(Vec<AddressPattern>);

impl AllowList {
    /// Parses the key's value.
    pub fn parse(text: &str) -> Result<AllowList, PatternError> {
        let patterns = text
            .split(';')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(AddressPattern::parse)
            .collect::<Result<_, _>>()?;
        Ok(AllowList(patterns))
    }

    /// Whether `ip` may send a PROXY header.
    pub fn allows(&self, ip: std::net::IpAddr) -> bool {
        self.0.iter().any(|p| p.matches(ip))
    }

    /// Whether every peer may send a PROXY header (a `*` pattern).
    pub fn admits_everyone(&self) -> bool {
        self.0.iter().any(AddressPattern::is_any)
    }
}

/// Decides, per connection, PROXY and TLS. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Prelude(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    mode: ServerMode,
    /// `None` in `disabled` mode (no material is loaded, as in Java).
    tls: Option<ServerTls>,
    proxy_from: AllowList,
    handshake_timeout: Duration,
    /// Refusals by mode, and failed handshakes, are each logged at most once per interval.
    refusals: Mutex<LogLimit>,
    failures: Mutex<LogLimit>,
}

impl Prelude {
    /// A prelude for `mode` with `tls` material (needed unless `disabled`), accepting PROXY
    /// headers from peers matching `proxy_from`.
    pub fn new(
        mode: ServerMode,
        tls: Option<ServerTls>,
        proxy_from: AllowList,
        handshake_timeout: Duration,
    ) -> Prelude {
        let tls = if mode == ServerMode::Disabled {
            None
        } else {
            tls
        };
        Prelude(Arc::new(Inner {
            mode,
            tls,
            proxy_from,
            handshake_timeout,
            refusals: Mutex::new(LogLimit::new(LOG_INTERVAL)),
            failures: Mutex::new(LogLimit::new(LOG_INTERVAL)),
        }))
    }

    /// The prelude the settings ask for: `base` holds the `tls.*` keys before `tls.config.file`
    /// (which [`ServerTls::load`] reads, and every reload re-reads). Material is loaded unless
    /// the mode is `disabled`; a missing or unusable file is an error naming key and file.
    pub fn load(base: &TlsSettings, s: &Settings) -> Result<Prelude, TlsError> {
        tracing::info!("Server is running in TLS {} mode", base.mode.name());
        let tls = match base.mode {
            ServerMode::Disabled => None,
            _ => {
                let tls = ServerTls::load(base)?;
                tracing::info!(
                    test_mode = tls.settings().test_mode,
                    "SSLContext created for server"
                );
                Some(tls)
            }
        };
        let proxy_from = AllowList::parse(&s.proxy_protocol_allowed_addresses)
            .expect("validated with the settings");
        Ok(Prelude::new(
            base.mode,
            tls,
            proxy_from,
            Duration::from_millis(s.handshake_timeout_millis as u64),
        ))
    }

    /// The mode.
    pub fn mode(&self) -> ServerMode {
        self.0.mode
    }

    /// The TLS material, unless `disabled`.
    pub fn tls(&self) -> Option<&ServerTls> {
        self.0.tls.as_ref()
    }

    /// Runs the prelude of `stream` from `peer`; `idle` bounds the waits for a first byte.
    /// The outcome is counted in `metrics`, and failures are logged (each kind at most once per
    /// interval) before returning.
    pub async fn run(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        idle: Option<Duration>,
        metrics: &Metrics,
    ) -> Result<(Transport, SocketAddr), PreludeError> {
        let result = self.decide(stream, peer, idle, metrics).await;
        match &result {
            Ok((Transport::Tls(_), _)) => metrics.prelude(Outcome::TlsHandshake),
            Ok(_) => {}
            Err(e) => self.record(e, peer, metrics),
        }
        result
    }

    fn record(&self, e: &PreludeError, peer: SocketAddr, metrics: &Metrics) {
        let (outcome, throttle) = match e {
            PreludeError::Eof | PreludeError::Idle | PreludeError::Io(_) => return,
            PreludeError::TlsRefused => (Outcome::TlsRefused, &self.0.refusals),
            PreludeError::PlainRefused => (Outcome::PlainRefused, &self.0.refusals),
            PreludeError::ProxyNotAllowed => (Outcome::ProxyNotAllowed, &self.0.failures),
            PreludeError::Proxy(_) => (Outcome::ProxyMalformed, &self.0.failures),
            PreludeError::Timeout(_) => (Outcome::Timeout, &self.0.failures),
            PreludeError::Handshake(_) => (Outcome::TlsError, &self.0.failures),
        };
        metrics.prelude(outcome);
        if let Some(left_out) = throttle.lock().ready() {
            tracing::warn!(%peer, left_out, "closing the connection: {e}");
        }
    }

    async fn decide(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        idle: Option<Duration>,
        metrics: &Metrics,
    ) -> Result<(Transport, SocketAddr), PreludeError> {
        let mut client = peer;
        let mut start = [0u8; proxy::V2_SIGNATURE.len()];
        let (n, deadline) = self.first_bytes(&stream, &mut start, idle).await?;
        let detected = self.detect(&stream, &mut start, n, deadline).await?;
        let first = if detected == Detect::NotProxy {
            start[0]
        } else {
            if !self.0.proxy_from.allows(peer.ip()) {
                return Err(PreludeError::ProxyNotAllowed);
            }
            let header = within(
                deadline,
                self.0.handshake_timeout,
                read_proxy(&stream, detected),
            )
            .await??;
            metrics.prelude(Outcome::ProxyHeader);
            if let Some(source) = header.source {
                tracing::debug!(%peer, client = %source, "PROXY header");
                client = source;
            }
            let mut next = [0u8; 1];
            self.first_bytes(&stream, &mut next, idle).await?;
            next[0]
        };
        let tls = first == TLS_HANDSHAKE;
        match (self.0.mode, tls, &self.0.tls) {
            (ServerMode::Disabled, true, _) => Err(PreludeError::TlsRefused),
            (ServerMode::Enforcing, false, _) => Err(PreludeError::PlainRefused),
            (_, false, _) => Ok((Transport::Plain(stream), client)),
            (_, true, None) => Err(PreludeError::TlsRefused),
            (_, true, Some(material)) => {
                let deadline = Instant::now() + self.0.handshake_timeout;
                let accepted = within(
                    deadline,
                    self.0.handshake_timeout,
                    material.acceptor().accept(stream),
                )
                .await?
                .map_err(PreludeError::Handshake)?;
                Ok((Transport::Tls(Box::new(accepted)), client))
            }
        }
    }

    /// Peeks the first bytes, waiting at most `idle`; returns how many and the deadline the
    /// handshake that begins with them must meet.
    async fn first_bytes(
        &self,
        stream: &TcpStream,
        buf: &mut [u8],
        idle: Option<Duration>,
    ) -> Result<(usize, Instant), PreludeError> {
        let n = match idle {
            Some(idle) => tokio::time::timeout(idle, stream.peek(buf))
                .await
                .map_err(|_| PreludeError::Idle)??,
            None => stream.peek(buf).await?,
        };
        if n == 0 {
            return Err(PreludeError::Eof);
        }
        Ok((n, Instant::now() + self.0.handshake_timeout))
    }

    /// Classifies the start; while the bytes so far are a prefix of a PROXY signature, peeks
    /// again (briefly sleeping: peeking does not consume, so readiness cannot be awaited).
    async fn detect(
        &self,
        stream: &TcpStream,
        start: &mut [u8],
        mut n: usize,
        deadline: Instant,
    ) -> Result<Detect, PreludeError> {
        loop {
            match proxy::detect(&start[..n]) {
                Detect::NeedMore => {}
                decided => return Ok(decided),
            }
            // A peer that closes after a partial signature is seen only here, at the deadline:
            // peeking keeps returning the bytes it left behind.
            if Instant::now() >= deadline {
                return Err(PreludeError::Timeout(self.0.handshake_timeout));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            n = stream.peek(start).await?;
        }
    }
}

/// Runs `f` until `deadline`, mapping expiry to [`PreludeError::Timeout`].
async fn within<T>(
    deadline: Instant,
    limit: Duration,
    f: impl std::future::Future<Output = T>,
) -> Result<T, PreludeError> {
    tokio::time::timeout_at(deadline, f)
        .await
        .map_err(|_| PreludeError::Timeout(limit))
}

/// Reads exactly the PROXY header at the start of `stream` (nothing after it) and parses it.
async fn read_proxy(stream: &TcpStream, detected: Detect) -> Result<proxy::Header, PreludeError> {
    let mut header = Vec::with_capacity(proxy::V1_MAX_LEN + 1);
    let needed = if detected == Detect::V2 {
        proxy::V2_FIXED_LEN
    } else {
        0
    };
    if needed > 0 {
        header.resize(needed, 0);
        read_exact(stream, &mut header).await?;
        let len = proxy::v2_len(&header);
        if len > proxy::V2_MAX_LEN {
            return Err(PreludeError::Proxy(ProxyError::TooLong));
        }
        header.resize(len, 0);
        read_exact(stream, &mut header[needed..]).await?;
        return proxy::parse(&header).map_err(PreludeError::Proxy);
    }
    // v1: peek for the CRLF and consume up to it; bytes peeked without one are consumed
    // (they are part of the header) before waiting for more.
    loop {
        let mut chunk = [0u8; proxy::V1_MAX_LEN + 1];
        let room = proxy::V1_MAX_LEN + 1 - header.len();
        let n = stream.peek(&mut chunk[..room]).await?;
        if n == 0 {
            return Err(PreludeError::Eof);
        }
        let before = header.len();
        header.extend_from_slice(&chunk[..n]);
        match proxy::parse(&header) {
            Ok(parsed) => {
                let mut rest = vec![0u8; parsed.len - before];
                read_exact(stream, &mut rest).await?;
                return Ok(parsed);
            }
            Err(ProxyError::Incomplete) => {
                read_exact(stream, &mut chunk[..n]).await?;
            }
            Err(e) => return Err(PreludeError::Proxy(e)),
        }
    }
}

async fn read_exact(stream: &TcpStream, buf: &mut [u8]) -> Result<(), PreludeError> {
    let mut done = 0;
    while done < buf.len() {
        stream.readable().await?;
        match stream.try_read(&mut buf[done..]) {
            Ok(0) => return Err(PreludeError::Eof),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
