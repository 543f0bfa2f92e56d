//! Work that may take long — waiting for the disk, inflating or parsing a large body,
//! building a large listing — runs on tokio's blocking pool, so that a runtime worker never
//! waits on it and other connections keep being served. Used by the remoting connections
//! (`server`) and the HTTP side door (`http`) alike.
//!
//! Two lanes bound how much runs at once: disk waits (KV and configuration writes, which
//! share their syncs when they run together) and CPU work, which gets one thread fewer than
//! the machine has cores, so a core stays free for the runtime's workers. Waiting for a lane
//! is asynchronous.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::time::Instant;

/// Disk waits allowed at once (they mostly sleep in `fsync`; more of them share each sync).
const DISK_LANE: usize = 32;

/// Which lane a job runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lane {
    /// The job mostly waits for the disk.
    Disk,
    /// The job keeps a core busy.
    Cpu,
}

/// The two lanes.
#[derive(Debug, Clone)]
pub(crate) struct Offload {
    disk: Arc<Semaphore>,
    cpu: Arc<Semaphore>,
}

impl Offload {
    /// Lanes sized for this machine.
    pub(crate) fn new() -> Offload {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Offload {
            disk: Arc::new(Semaphore::new(DISK_LANE)),
            cpu: Arc::new(Semaphore::new(cores.saturating_sub(1).max(1))),
        }
    }

    /// Runs `job` on the blocking pool once its lane has room, passing it the time it
    /// starts at. `None` if the runtime is shutting down before it could run; a panic in
    /// the job resumes here.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        lane: Lane,
        job: impl FnOnce(Instant) -> T + Send + 'static,
    ) -> Option<T> {
        let lane = match lane {
            Lane::Disk => &self.disk,
            Lane::Cpu => &self.cpu,
        };
        let _permit = lane.acquire().await.ok()?;
        let now = Instant::now();
        match tokio::task::spawn_blocking(move || job(now)).await {
            Ok(out) => Some(out),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => None,
        }
    }
}
