//! TLS settings and material: the `tls.*` keys and where they come from ([`settings`]), the
//! certificates and keys they name (`material`), Java's lenient certificate checks
//! (`verify`), the client side for `nsadmin` ([`client`]), and [`ServerTls`], the server's
//! current rustls configuration, swapped as a whole when its files change or on SIGHUP.
//!
//! Nothing here touches a socket: `server::prelude` decides per connection whether to use TLS
//! and takes the acceptor from `ServerTls::acceptor` once per handshake.

pub mod client;
pub(crate) mod material;
pub mod settings;
pub(crate) mod verify;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use material::TlsError;
pub(crate) use settings::ServerMode;
pub use settings::TlsSettings;

use crate::file_watch::{Fingerprint, Trigger, fingerprint, reload_on_request_or_change};

/// The watched files' fingerprints when they differ from what the last reload saw.
type Changed = Option<Vec<(PathBuf, Option<Fingerprint>)>>;

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

/// What a reload by the watcher logs as its cause.
fn why(trigger: Trigger) -> &'static str {
    match trigger {
        Trigger::Request => "reload requested",
        Trigger::FileChange => "a certificate, key, trust or TLS config file changed",
    }
}

impl ServerTls {
    /// Builds the configuration from `base` plus `tls.config.file`; a missing or unusable
    /// certificate or key is an error naming the key and the file.
    pub(crate) fn load(base: &TlsSettings) -> Result<ServerTls, TlsError> {
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
    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
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
    pub(crate) fn reload(&self, why: &str) -> bool {
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
    fn changed(&self) -> Changed {
        let now = fingerprints(&self.0.effective.lock());
        (now != *self.0.seen.lock()).then_some(now)
    }

    /// Reloads on every reload request (SIGHUP) and when a watched file changes, until
    /// `cancel` fires. A change is acted on once the files have looked the same for one poll
    /// interval, so a certificate and key written one after the other are loaded together.
    /// Files are read on the blocking pool, never on a runtime worker. Each reload's outcome
    /// (installed or not) is passed to `reloaded`, for the metrics.
    pub(crate) async fn watch(
        self,
        reloads: watch::Receiver<u64>,
        cancel: CancellationToken,
        reloaded: impl Fn(bool) + Clone + Send + 'static,
    ) {
        let watched = self.clone();
        reload_on_request_or_change(
            reloads,
            cancel,
            move || watched.changed(),
            move |trigger| reloaded(self.reload(why(trigger))),
        )
        .await;
    }
}
