//! Reload requests: one shared way to tell background tasks "re-read your files now".
//!
//! A [`Reload`] handle holds a generation number in a [`tokio::sync::watch`] channel. SIGHUP
//! (see `Reload::listen_for_sighup`, one of the server's services) or a direct
//! [`Reload::request`] bumps it; every task that keeps something re-readable (the auth
//! accounts file, the TLS material, the config file) holds a `Reload::subscribe` receiver
//! and re-reads when it changes. Requests that arrive while a task is busy coalesce into one.
//! Nothing here knows what is reloaded.

use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// A cheap, cloneable handle for requesting and observing reloads.
#[derive(Clone)]
pub struct Reload {
    generation: Arc<watch::Sender<u64>>,
}

impl std::fmt::Debug for Reload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reload")
            .field("generation", &*self.generation.borrow())
            .finish()
    }
}

impl Default for Reload {
    fn default() -> Self {
        Self::new()
    }
}

impl Reload {
    /// A handle with no reload requested yet.
    pub(crate) fn new() -> Reload {
        let (generation, _) = watch::channel(0);
        Reload {
            generation: Arc::new(generation),
        }
    }

    /// Asks every subscriber to reload.
    pub fn request(&self) {
        self.generation.send_modify(|g| *g += 1);
    }

    /// A receiver that sees every later [`Reload::request`] (`changed()` completes once per
    /// burst of requests).
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Turns each SIGHUP into a reload request until `cancel` fires. Without a usable signal
    /// handler (not Unix, or registration failed) it only waits for `cancel`.
    pub(crate) async fn listen_for_sighup(self, cancel: CancellationToken) {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            match signal(SignalKind::hangup()) {
                Ok(mut hangup) => loop {
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        received = hangup.recv() => {
                            if received.is_none() {
                                break;
                            }
                            tracing::info!("SIGHUP: reloading");
                            self.request();
                        }
                    }
                },
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGHUP; reload on signal is off")
                }
            }
        }
        cancel.cancelled().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_reach_subscribers_and_coalesce() {
        let reload = Reload::new();
        let mut rx = reload.subscribe();
        assert!(!rx.has_changed().unwrap());
        reload.request();
        reload.request();
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow_and_update(), 2);
        assert!(!rx.has_changed().unwrap());
        // A clone drives the same channel.
        reload.clone().request();
        assert!(rx.has_changed().unwrap());
    }

    #[tokio::test]
    async fn the_sighup_listener_stops_on_cancel() {
        let cancel = CancellationToken::new();
        let task = tokio::spawn(Reload::new().listen_for_sighup(cancel.clone()));
        cancel.cancel();
        task.await.unwrap();
    }
}
