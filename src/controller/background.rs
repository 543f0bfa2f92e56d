//! The controller's background work as values the server runs: each [`Background`] has a
//! name and a future that ends soon after its cancellation token fires. The server wraps them
//! in its `Service` (the controller does not depend on the server, which depends on it), so
//! they start on the server's one tracker and stop with it.

use std::future::Future;
use std::pin::Pin;

use tokio_util::sync::CancellationToken;

/// A background future.
pub type BackgroundFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

type Work = Box<dyn FnOnce(CancellationToken) -> BackgroundFuture + Send + Sync>;

/// One long-running task of the controller (a scan, the elector, the notifications…).
pub struct Background {
    name: &'static str,
    work: Work,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background")
            .field("name", &self.name)
            .finish()
    }
}

impl Background {
    /// The task `name` doing `work` until its token is cancelled.
    pub(crate) fn new<F, Fut>(name: &'static str, work: F) -> Background
    where
        F: FnOnce(CancellationToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Background {
            name,
            work: Box::new(move |cancel| Box::pin(work(cancel))),
        }
    }

    /// A short name for the logs.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The task's work, which ends soon after `cancel` fires.
    pub fn run(self, cancel: CancellationToken) -> BackgroundFuture {
        (self.work)(cancel)
    }
}
