//! Where the status page and the JSON API get the route table's overview, and where they do
//! their heavier work: off the runtime workers, and from a view at most [`FRESH_FOR`] old.
//!
//! Building the overview walks every topic's queues under the route table's read lock; done
//! per request, a few browsers or scripts polling the page at tens of thousands of topics held
//! the lock often enough to slow route lookups and registrations (a waiting writer stops new
//! readers). Here one build at a time runs on the blocking pool, concurrent requests share
//! its result, and the result serves every request for [`FRESH_FOR`]. Rendering and topic
//! searches run on the blocking pool too, a bounded number at once, so that no runtime worker
//! waits for the lock or formats a large page.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::offload::{Lane, Offload};
use crate::protocol::body::Name;
use crate::state::Namesrv;
use crate::state::route_table::overview::ClusterView;

/// How long one overview serves requests.
pub(super) const FRESH_FOR: Duration = Duration::from_secs(1);

/// The route table as the views show it, copied out of the table.
#[derive(Debug)]
pub(super) struct Overview {
    /// When it was taken.
    pub(crate) at: Instant,
    /// Clusters → groups → brokers, with per-group topic counts.
    pub(crate) clusters: Vec<ClusterView>,
    /// Every topic name, sorted.
    pub(crate) topics: Vec<Name>,
    /// Live-table entries.
    pub(crate) live: usize,
}

impl Overview {
    fn take(state: &Namesrv, now: Instant) -> Overview {
        let (clusters, mut topics, live) = {
            let routes = state.routes();
            (
                routes.clusters_view(now),
                routes.topic_names(),
                routes.live_count(),
            )
        };
        topics.sort_unstable();
        Overview {
            at: now,
            clusters,
            topics,
            live,
        }
    }
}

/// The cached overview and the lane the views' work runs in.
#[derive(Debug)]
pub(super) struct Views {
    /// The last overview; a short lock, never held while one is built.
    last: Mutex<Option<Arc<Overview>>>,
    /// One build at a time: an async lock, held across the build on purpose, so that the
    /// requests that find the overview stale wait for that build instead of starting theirs.
    building: tokio::sync::Mutex<()>,
    /// The views' jobs run in a CPU lane of the blocking pool of their own, shaped like the
    /// remoting port's (the same [`Offload`]): one core fewer than the machine has at once.
    offload: Offload,
    builds: AtomicU64,
}

impl Default for Views {
    fn default() -> Views {
        Views {
            last: Mutex::new(None),
            building: tokio::sync::Mutex::new(()),
            offload: Offload::new(),
            builds: AtomicU64::new(0),
        }
    }
}

impl Views {
    /// An overview at most [`FRESH_FOR`] old; `None` if the runtime is shutting down.
    pub(super) async fn overview(&self, state: &Namesrv) -> Option<Arc<Overview>> {
        if let Some(fresh) = self.fresh() {
            return Some(fresh);
        }
        let _one = self.building.lock().await;
        // Built while this request waited for the one before?
        if let Some(fresh) = self.fresh() {
            return Some(fresh);
        }
        let state = state.clone();
        let overview = Arc::new(
            self.run(move || Overview::take(&state, Instant::now()))
                .await?,
        );
        self.builds.fetch_add(1, Ordering::Relaxed);
        *self.last.lock() = Some(overview.clone());
        Some(overview)
    }

    fn fresh(&self) -> Option<Arc<Overview>> {
        let last = self.last.lock();
        last.as_ref()
            .filter(|o| o.at.elapsed() < FRESH_FOR)
            .cloned()
    }

    /// Runs `job` in the CPU lane; `None` if the runtime is shutting down. A panic in the
    /// job resumes here.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        self.offload.run(Lane::Cpu, |_| job()).await
    }

    /// Overviews built so far.
    #[cfg(test)]
    fn builds(&self) -> u64 {
        self.builds.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(dir: &tempfile::TempDir) -> Namesrv {
        Namesrv::in_dir(dir.path())
    }

    #[tokio::test(start_paused = true)]
    async fn requests_share_an_overview_for_a_second() {
        let dir = tempfile::tempdir().unwrap();
        let (state, views) = (state(&dir), Arc::new(Views::default()));
        let first = views.overview(&state).await.unwrap();
        // Concurrent requests within the second share the one overview.
        let together: Vec<_> = (0..8)
            .map(|_| {
                let (views, state) = (views.clone(), state.clone());
                tokio::spawn(async move { views.overview(&state).await.unwrap() })
            })
            .collect();
        for request in together {
            assert!(Arc::ptr_eq(&request.await.unwrap(), &first));
        }
        assert_eq!(views.builds(), 1);
        tokio::time::advance(FRESH_FOR).await;
        let second = views.overview(&state).await.unwrap();
        assert!(!Arc::ptr_eq(&second, &first));
        assert_eq!(views.builds(), 2);
    }
}
