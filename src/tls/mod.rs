//! TLS settings and material: the `tls.*` keys and where they come from ([`settings`]), the
//! certificates and keys they name ([`material`]), Java's lenient certificate checks
//! ([`verify`]), the client side for `nsadmin` ([`client`]), and [`ServerTls`], the server's
//! current rustls configuration, swapped as a whole when its files change or on SIGHUP.
//!
//! Nothing here touches a socket: `server::prelude` decides per connection whether to use TLS
//! and takes the acceptor from [`ServerTls::acceptor`] once per handshake.

pub mod client;
pub mod material;
pub mod settings;
pub mod verify;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use material::TlsError;
pub use settings::{ClientAuth, ServerMode, TlsSettings};

use crate::auth::watch::{Fingerprint, POLL_INTERVAL, fingerprint};

/// The server's TLS configuration, reloadable. Cheap to clone.
#[derive(Clone)]
pub struct ServerTls(Arc<Shared>);

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("settings", &*self.0.effective.lock())
            .finish()
    }
}

struct Shared {
    /// Read once per handshake; replaced whole by a successful reload.
    current: ArcSwap<rustls::ServerConfig>,
    /// The settings before `tls.config.file` is read (it is re-read by every reload).
    base: TlsSettings,
    /// The settings the current configuration was built from.
    effective: Mutex<TlsSettings>,
    /// Test mode's certificate, made once at start.
    generated: (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>),
    /// The watched files as they were at the last reload attempt (successful or not, so a
    /// broken file is reported once, not at every poll).
    seen: Mutex<Vec<(PathBuf, Option<Fingerprint>)>>,
    reloads: AtomicU64,
    failed_reloads: AtomicU64,
}

/// Counters of certificate reloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReloadStats {
    /// Reloads that installed new material.
    pub reloads: u64,
    /// Reloads that failed and kept the previous material.
    pub failed_reloads: u64,
}

fn fingerprints(s: &TlsSettings) -> Vec<(PathBuf, Option<Fingerprint>)> {
    s.watched_files()
        .into_iter()
        .map(|p| {
            let f = fingerprint(&p);
            (p, f)
        })
        .collect()
}

impl ServerTls {
    /// Builds the configuration from `base` plus `tls.config.file`; a missing or unusable
    /// certificate or key is an error naming the key and the file.
    pub fn load(base: &TlsSettings) -> Result<ServerTls, TlsError> {
        let effective = TlsSettings::reread(base);
        let generated = material::self_signed();
        let seen = fingerprints(&effective);
        let config = material::server_config(&effective, &generated)?;
        Ok(ServerTls(Arc::new(Shared {
            current: ArcSwap::from_pointee(config),
            base: base.clone(),
            effective: Mutex::new(effective),
            generated,
            seen: Mutex::new(seen),
            reloads: AtomicU64::new(0),
            failed_reloads: AtomicU64::new(0),
        })))
    }

    /// The acceptor for one handshake, with the material current at this moment.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.0.current.load_full())
    }

    /// The settings in force (after the last successful reload).
    pub fn settings(&self) -> TlsSettings {
        self.0.effective.lock().clone()
    }

    /// Reload counters.
    pub fn stats(&self) -> ReloadStats {
        ReloadStats {
            reloads: self.0.reloads.load(Ordering::Relaxed),
            failed_reloads: self.0.failed_reloads.load(Ordering::Relaxed),
        }
    }

    /// Re-reads `tls.config.file` and the material; on success new handshakes use it, on
    /// failure the previous material stays and the error (naming the key and file) is logged.
    /// Returns whether new material was installed.
    pub fn reload(&self, why: &str) -> bool {
        let effective = TlsSettings::reread(&self.0.base);
        *self.0.seen.lock() = fingerprints(&effective);
        match material::server_config(&effective, &self.0.generated) {
            Ok(config) => {
                self.0.current.store(Arc::new(config));
                *self.0.effective.lock() = effective;
                self.0.reloads.fetch_add(1, Ordering::Relaxed);
                tracing::info!(why, "TLS material reloaded: new connections use it");
                true
            }
            Err(e) => {
                self.0.failed_reloads.fetch_add(1, Ordering::Relaxed);
                tracing::error!(why, error = %e, "TLS reload failed: keeping the previous certificate and key");
                false
            }
        }
    }

    /// Whether a watched file differs from what the last reload saw.
    fn changed(&self) -> Option<Vec<(PathBuf, Option<Fingerprint>)>> {
        let now = fingerprints(&self.0.effective.lock());
        (now != *self.0.seen.lock()).then_some(now)
    }

    /// [`ServerTls::reload`] on the blocking pool: the files are read and parsed off the
    /// runtime's workers. `false` if the runtime is shutting down.
    async fn reload_off_workers(&self, why: &'static str) -> bool {
        let tls = self.clone();
        tokio::task::spawn_blocking(move || tls.reload(why))
            .await
            .unwrap_or(false)
    }

    /// [`ServerTls::changed`] on the blocking pool (a `stat` can wait on a slow file system).
    async fn changed_off_workers(&self) -> Option<Vec<(PathBuf, Option<Fingerprint>)>> {
        let tls = self.clone();
        tokio::task::spawn_blocking(move || tls.changed())
            .await
            .unwrap_or(None)
    }

    /// Reloads on every reload request (SIGHUP) and when a watched file changes, until
    /// `cancel` fires. A change is acted on once the files have looked the same for one poll
    /// interval, so a certificate and key written one after the other are loaded together.
    /// Files are read on the blocking pool, never on a runtime worker.
    pub async fn watch(self, mut reloads: watch::Receiver<u64>, cancel: CancellationToken) {
        let mut poll = tokio::time::interval(POLL_INTERVAL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        poll.tick().await;
        let mut requests_open = true;
        let mut pending: Option<Vec<(PathBuf, Option<Fingerprint>)>> = None;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                changed = reloads.changed(), if requests_open => match changed {
                    Ok(()) => {
                        pending = None;
                        self.reload_off_workers("reload requested").await;
                    }
                    Err(_) => requests_open = false,
                },
                _ = poll.tick() => {
                    let now = self.changed_off_workers().await;
                    match (now, pending.take()) {
                        (Some(now), Some(before)) if now == before => {
                            self.reload_off_workers("a certificate, key, trust or TLS config file changed").await;
                        }
                        (now, _) => pending = now,
                    }
                }
            }
        }
    }
}
