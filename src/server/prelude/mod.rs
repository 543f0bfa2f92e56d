//! The prelude of every connection, before any frame: an optional PROXY protocol header, then
//! the TLS decision on the next byte (`0x16` ⇒ TLS, as `NettyRemotingServer.HandshakeHandler` decides), then the TLS handshake. It
//! turns an accepted [`TcpStream`] into a `Transport` (plain or TLS) and the client's address
//! (the one a PROXY header carries, else the socket's).
//!
//! The prelude *reads* the bytes it judges, waiting on the socket's readiness like any reader,
//! and hands them on in front of the socket ([`Started`]): the frame layer or rustls reads them
//! first, so it sees exactly what the client sent after any PROXY header. A connection whose
//! bytes so far are a prefix of a PROXY signature is therefore woken only by new bytes.
//!
//! Time limits: waiting for a connection's first byte (or the first byte after a PROXY header)
//! is ordinary idleness, bounded by the idle timeout as for any connection; once a PROXY header
//! or a TLS ClientHello has begun, it must be complete within `handshakeTimeoutMillis`. Each
//! connection runs its prelude on its own task, so a stalled one delays nobody else.
//!
//! Memory: what a prelude holds — a PROXY header being read, a TLS handshake's state and the
//! bytes rustls has read — is reported to the buffer budget (`maxBufferedBytes`, see
//! `super::budget`) under the connection's account, so stalled handshakes are closed by the
//! budget like any connection that holds too much.

pub mod proxy;
mod read;
mod stream;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::server::TlsStream;

use super::budget::Holding;
use crate::addr::AllowList;
use crate::config::Settings;
use crate::log_limit::LogLimit;
use crate::metrics::{Metrics, PreludeOutcome};
use crate::tls::{ServerMode, ServerTls, TlsError, TlsSettings};
use proxy::{Detect, ProxyError};
use read::{detect, read_more, read_proxy};
pub use stream::Started;

/// How often each kind of refusal or failure is logged at most.
const LOG_INTERVAL: Duration = Duration::from_secs(10);

/// The first byte of a TLS record carrying a handshake message.
const TLS_HANDSHAKE: u8 = 0x16;

/// Bytes read at first: enough for either PROXY signature, so one read usually decides.
const FIRST_READ: usize = proxy::V2_SIGNATURE.len();

/// What a TLS handshake waiting for its client is counted for in the buffer budget besides
/// the buffer of what rustls has read: its connection state (about 14 KB were measured for a
/// stalled handshake with a small ClientHello).
const HANDSHAKE_STATE: usize = 16 * 1024;

/// What a handshake that has read `taken` bytes is counted for. rustls keeps a partial
/// handshake message in a buffer that grows by doubling, so what it has allocated is up to
/// the next power of two of what it has read.
fn handshake_cost(taken: usize) -> usize {
    HANDSHAKE_STATE + taken.next_power_of_two()
}

/// A connection after its prelude.
#[derive(Debug)]
pub(crate) enum Transport {
    /// Plaintext frames on the socket, after the bytes the prelude read.
    Plain(Started),
    /// Frames inside TLS.
    Tls(Box<TlsStream<Started>>),
}

/// Why a connection ended during its prelude.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PreludeError {
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
    /// The buffer budget closed the connection (it logs its closings).
    #[error("closed for the buffer budget")]
    Evicted,
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
    /// headers from peers `proxy_from` allows (`proxyProtocolAllowedAddresses`).
    pub(crate) fn new(
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
    /// (which `ServerTls::load` reads, and every reload re-reads). Material is loaded unless
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
        Ok(Prelude::new(
            base.mode,
            tls,
            s.proxy_protocol_allowed_addresses.value().clone(),
            s.handshake_timeout_millis.duration(),
        ))
    }

    /// The TLS material, unless `disabled`.
    pub fn tls(&self) -> Option<&ServerTls> {
        self.0.tls.as_ref()
    }

    /// Runs the prelude of `stream` from `peer`; `idle` bounds the waits for a first byte, and
    /// what the prelude buffers is reported to `holding`, the connection's share of the buffer
    /// budget. The outcome is counted in `metrics`, and failures are logged (each kind at most
    /// once per interval) before returning.
    pub(super) async fn run(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
        idle: Option<Duration>,
        holding: &Holding,
        metrics: &Metrics,
    ) -> Result<(Transport, SocketAddr), PreludeError> {
        let result = tokio::select! {
            done = self.decide(stream, peer, idle, holding, metrics) => done,
            _ = holding.closed() => Err(PreludeError::Evicted),
        };
        match &result {
            Ok((Transport::Tls(_), _)) => metrics.prelude(PreludeOutcome::TlsHandshake),
            Ok(_) => {}
            Err(e) => self.record(e, peer, metrics),
        }
        result
    }

    fn record(&self, e: &PreludeError, peer: SocketAddr, metrics: &Metrics) {
        let (outcome, throttle) = match e {
            PreludeError::Eof
            | PreludeError::Idle
            | PreludeError::Io(_)
            | PreludeError::Evicted => return,
            PreludeError::TlsRefused => (PreludeOutcome::TlsRefused, &self.0.refusals),
            PreludeError::PlainRefused => (PreludeOutcome::PlainRefused, &self.0.refusals),
            PreludeError::ProxyNotAllowed => (PreludeOutcome::ProxyNotAllowed, &self.0.failures),
            PreludeError::Proxy(_) => (PreludeOutcome::ProxyMalformed, &self.0.failures),
            PreludeError::Timeout(_) => (PreludeOutcome::Timeout, &self.0.failures),
            PreludeError::Handshake(_) => (PreludeOutcome::TlsError, &self.0.failures),
        };
        metrics.prelude(outcome);
        if let Some(left_out) = throttle.lock().ready() {
            tracing::warn!(%peer, left_out, "closing the connection: {e}");
        }
    }

    async fn decide(
        &self,
        socket: TcpStream,
        peer: SocketAddr,
        idle: Option<Duration>,
        holding: &Holding,
        metrics: &Metrics,
    ) -> Result<(Transport, SocketAddr), PreludeError> {
        let limit = self.0.handshake_timeout;
        let mut client = peer;
        let mut head = Vec::new();
        idle_wait(idle, read_more(&socket, &mut head, FIRST_READ)).await?;
        let deadline = Instant::now() + limit;
        let detected = within(deadline, limit, detect(&socket, &mut head)).await??;
        if detected != Detect::NotProxy {
            if !self.0.proxy_from.allows(peer.ip()) {
                return Err(PreludeError::ProxyNotAllowed);
            }
            let header = within(deadline, limit, read_proxy(&socket, &mut head, holding)).await??;
            metrics.prelude(PreludeOutcome::ProxyHeader);
            if let Some(source) = header.source {
                tracing::debug!(%peer, client = %source, "PROXY header");
                client = source;
                holding.relabel(source);
            }
            head.drain(..header.len);
            if head.is_empty() {
                idle_wait(idle, read_more(&socket, &mut head, FIRST_READ)).await?;
            }
        }
        let tls = head[0] == TLS_HANDSHAKE;
        let started = Started::new(Bytes::from(head), socket);
        match (self.0.mode, tls, &self.0.tls) {
            (ServerMode::Disabled, true, _) => Err(PreludeError::TlsRefused),
            (ServerMode::Enforcing, false, _) => Err(PreludeError::PlainRefused),
            (_, false, _) => Ok((Transport::Plain(started), client)),
            (_, true, None) => Err(PreludeError::TlsRefused),
            (_, true, Some(material)) => {
                let accepted = self.handshake(material, started, holding).await?;
                Ok((Transport::Tls(Box::new(accepted)), client))
            }
        }
    }

    /// The TLS handshake, within the handshake timeout. While it waits for the client, what
    /// rustls may hold — its state plus every byte it has read — is reported to the buffer
    /// budget, which closes the heaviest connections when it is exceeded.
    async fn handshake(
        &self,
        material: &ServerTls,
        started: Started,
        holding: &Holding,
    ) -> Result<TlsStream<Started>, PreludeError> {
        let mut accept = material.acceptor().accept(started);
        // Bytes are read only while the handshake is polled, so reporting after each poll
        // that must wait keeps the count current.
        let counted = std::future::poll_fn(|cx| {
            let polled = Pin::new(&mut accept).poll(cx);
            if polled.is_pending() {
                let taken = accept.get_ref().map_or(0, Started::taken);
                if !holding.report(handshake_cost(taken)) {
                    return Poll::Ready(Err(PreludeError::Evicted));
                }
            }
            polled.map(|done| done.map_err(PreludeError::Handshake))
        });
        let limit = self.0.handshake_timeout;
        within(Instant::now() + limit, limit, counted).await?
    }
}

/// Runs `f`, giving up after `idle` (if set) with [`PreludeError::Idle`].
async fn idle_wait<T>(
    idle: Option<Duration>,
    f: impl Future<Output = Result<T, PreludeError>>,
) -> Result<T, PreludeError> {
    match idle {
        Some(idle) => tokio::time::timeout(idle, f)
            .await
            .map_err(|_| PreludeError::Idle)?,
        None => f.await,
    }
}

/// Runs `f` until `deadline`, mapping expiry to [`PreludeError::Timeout`].
async fn within<T>(
    deadline: Instant,
    limit: Duration,
    f: impl Future<Output = T>,
) -> Result<T, PreludeError> {
    tokio::time::timeout_at(deadline, f)
        .await
        .map_err(|_| PreludeError::Timeout(limit))
}

#[cfg(test)]
mod tests;
