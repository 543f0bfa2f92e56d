//! Background services: the shape every long-running task of the process has, and the one
//! place that starts them on the server's task tracker.
//!
//! A [`Service`] is a value with a name that runs until its cancellation token fires, as
//! Pingora's `BackgroundService` and mini-redis's `Listener` do. The server builds its list
//! once ([`super::services`]) and [`start`]s it; each service gets a child of the server's
//! token, so one cancel stops them all and the tracker's wait (bounded by the grace period)
//! sees each of them finish. Nothing here knows what a service does.

use std::future::Future;
use std::pin::Pin;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// What [`Service::run`] returns: the service's work, to be spawned on the tracker.
pub type ServiceFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// One background task of the process: the expiry scan, a file watch, the HTTP side door…
/// `Sync` as Pingora's services are: a value waiting to be started may sit in something
/// shared (the [`super::Server`] its connections share).
pub trait Service: Send + Sync + 'static {
    /// A short name for the logs (`expiry-scan`, `route-snapshots`, …).
    fn name(&self) -> &'static str;

    /// The service's work, which ends soon after `cancel` fires.
    fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture;
}

/// Spawns every service of `services` on `tracker`, each with a child token of `cancel`.
pub(super) fn start(
    services: Vec<Box<dyn Service>>,
    tracker: &TaskTracker,
    cancel: &CancellationToken,
) {
    for service in services {
        let name = service.name();
        let work = service.run(cancel.child_token());
        tracker.spawn(async move {
            tracing::debug!(service = name, "service started");
            work.await;
            tracing::debug!(service = name, "service stopped");
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Counts how many of its kind stopped.
    struct Waiter(Arc<AtomicUsize>);

    impl Service for Waiter {
        fn name(&self) -> &'static str {
            "waiter"
        }

        fn run(self: Box<Self>, cancel: CancellationToken) -> ServiceFuture {
            Box::pin(async move {
                cancel.cancelled().await;
                self.0.fetch_add(1, Ordering::SeqCst);
            })
        }
    }

    #[tokio::test]
    async fn started_services_run_on_the_tracker_until_cancelled() {
        let stopped = Arc::new(AtomicUsize::new(0));
        let (tracker, cancel) = (TaskTracker::new(), CancellationToken::new());
        let services: Vec<Box<dyn Service>> = vec![
            Box::new(Waiter(stopped.clone())),
            Box::new(Waiter(stopped.clone())),
        ];
        start(services, &tracker, &cancel);
        tracker.close();
        assert_eq!(tracker.len(), 2);
        tokio::task::yield_now().await;
        assert_eq!(stopped.load(Ordering::SeqCst), 0);
        cancel.cancel();
        tracker.wait().await;
        assert_eq!(stopped.load(Ordering::SeqCst), 2);
    }
}
