//! Shared server state: the route table, the KV store and the live configuration, behind one
//! cheap-to-clone handle, [`Namesrv`].
//!
//! Locks are `parking_lot` (no poisoning), held only for synchronous work and never across
//! an `.await`. Lock order, where two are taken: routes, then KV, then config. Nothing here
//! knows about sockets; connections appear only as [`ConnId`]s.

pub mod history;
pub(crate) mod housekeeping;
pub(crate) mod liveness;
pub mod peering;
mod phase;
pub mod protection;
pub(crate) mod readiness;
pub(crate) mod route_cache;
pub mod route_table;
pub mod snapshot;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use tokio::time::Instant;

use crate::config::Config;
use crate::kv::KvStore;
use crate::metrics::{Eviction, Metrics};
pub(crate) use phase::Phase;
use phase::{AtomicPhase, Event};
use route_table::unregister::Unregistration;
pub use route_table::{ConnId, RouteTable};

/// The handle every handler and background task shares.
#[derive(Clone, Debug)]
pub struct Namesrv {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// One read-write lock over all route tables, like Java's `RouteInfoManager`: reads
    /// (routes, listings) share it, and writes are short because registrations decide what
    /// to change before taking it.
    routes: RwLock<RouteTable>,
    kv: KvStore,
    /// The live configuration; UPDATE_NAMESRV_CONFIG replaces it whole.
    config: RwLock<Config>,
    /// Serializes configuration updates, so that the file and memory change in the same
    /// order and no update is lost to a concurrent one.
    config_writer: Mutex<()>,
    /// Bumped on every configuration update; part of the route cache's stamp.
    config_epoch: AtomicU64,
    /// When the server started, for `needWaitForService`.
    started: Instant,
    next_conn: AtomicU64,
    /// What the server has done so far (`/metrics`).
    metrics: Metrics,
    /// Serving, handing over, shutting down or frozen: read by readiness, dispatch
    /// (`GO_AWAY`) and closing connections.
    phase: AtomicPhase,
    /// This node among its peers, and the last report of the peer checks.
    peering: peering::Peering,
    /// Recent samples of the metrics, for the status page's trends.
    history: history::History,
}

impl Namesrv {
    /// A name server with the default configuration, homed in `dir`, its KV file there.
    #[cfg(test)]
    pub(crate) fn in_dir(dir: &std::path::Path) -> Namesrv {
        let env = crate::config::Env {
            home: dir.display().to_string(),
            rocketmq_home: None,
        };
        let kv = crate::kv::KvStore::open(dir.join("kv.json")).unwrap();
        Namesrv::new(crate::config::Config::defaults(&env), kv)
    }
    /// State for a server starting now.
    pub fn new(config: Config, kv: KvStore) -> Namesrv {
        Namesrv {
            inner: Arc::new(Shared {
                routes: RwLock::new(RouteTable::new()),
                kv,
                config: RwLock::new(config),
                config_writer: Mutex::new(()),
                config_epoch: AtomicU64::new(0),
                started: Instant::now(),
                next_conn: AtomicU64::new(1),
                metrics: Metrics::default(),
                phase: AtomicPhase::new(),
                peering: peering::Peering::new(),
                history: history::History::default(),
            }),
        }
    }

    /// Read access to the route table.
    pub fn routes(&self) -> RwLockReadGuard<'_, RouteTable> {
        self.inner.routes.read()
    }

    /// Write access to the route table.
    pub fn routes_mut(&self) -> RwLockWriteGuard<'_, RouteTable> {
        self.inner.routes.write()
    }

    /// The KV store.
    pub fn kv(&self) -> &KvStore {
        &self.inner.kv
    }

    /// Read access to the configuration.
    pub fn config(&self) -> RwLockReadGuard<'_, Config> {
        self.inner.config.read()
    }

    /// Applies an update to a copy of the configuration, persists the copy with `persist`,
    /// and only then makes it current. Updates are serialized.
    pub fn update_config<T, E>(
        &self,
        update: impl FnOnce(&mut Config) -> Result<T, E>,
        persist: impl FnOnce(&Config) -> Result<(), E>,
    ) -> Result<T, E> {
        let _writer = self.inner.config_writer.lock();
        let mut next = self.config().clone();
        let out = update(&mut next)?;
        persist(&next)?;
        *self.inner.config.write() = next;
        self.inner.config_epoch.fetch_add(1, Ordering::AcqRel);
        Ok(out)
    }

    /// An epoch that changes whenever configuration or KV content that routes depend on
    /// changes.
    pub(crate) fn external_epoch(&self) -> u64 {
        self.inner.config_epoch.load(Ordering::Acquire) + self.inner.kv.epoch()
    }

    /// When the server started.
    pub(crate) fn started(&self) -> Instant {
        self.inner.started
    }

    /// A fresh connection id.
    pub(crate) fn next_conn_id(&self) -> ConnId {
        ConnId(self.inner.next_conn.fetch_add(1, Ordering::Relaxed))
    }

    /// A connection closed: unregister brokers it still owned.
    pub(crate) fn connection_closed(&self, conn: ConnId) {
        if self.routes_frozen() {
            return;
        }
        let removed = self.routes_mut().connection_closed(conn);
        self.metrics()
            .evicted(Eviction::ConnectionClosed, removed.len());
    }

    /// UNREGISTER_BROKER.
    pub(crate) fn unregister(&self, requests: &[Unregistration]) {
        let removed = self.routes_mut().unregister(requests);
        self.metrics().evicted(Eviction::Unregister, removed);
    }

    /// The server's counters.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// Recent samples of the metrics (`history::run` takes them).
    pub(crate) fn history(&self) -> &history::History {
        &self.inner.history
    }

    /// Counts an accepted connection as open until the returned guard is dropped.
    pub(crate) fn connection_opened(&self) -> OpenConnection {
        self.metrics().accepted();
        OpenConnection(self.clone())
    }

    /// Where the server is in its life.
    pub(crate) fn phase(&self) -> Phase {
        self.inner.phase.load()
    }

    /// Marks the server as shutting down (draining its connections).
    pub(crate) fn begin_shutdown(&self) {
        self.inner.phase.apply(Event::BeginShutdown);
    }

    /// Whether shutdown has begun.
    pub(crate) fn shutting_down(&self) -> bool {
        self.phase().shutting_down()
    }

    /// A connection idled out: unregister brokers it still owned, unless eviction protection
    /// holds them.
    pub(crate) fn connection_idled_out(&self, conn: ConnId) {
        if self.routes_frozen() {
            return;
        }
        let policy = self.protection_policy();
        let removed = self
            .routes_mut()
            .connection_idled_out(conn, Instant::now(), &policy);
        self.metrics().evicted(Eviction::Idle, removed.len());
    }

    /// Shutdown is closing every connection: their brokers stay registered from now on (the
    /// process is about to exit, and the last route snapshot should show them).
    pub(crate) fn freeze_routes(&self) {
        self.inner.phase.apply(Event::Freeze);
    }

    /// Whether [`Namesrv::freeze_routes`] was called.
    pub(crate) fn routes_frozen(&self) -> bool {
        self.phase().routes_frozen()
    }

    /// From now on (the shutdown having begun), requests of clients newer than 5.3.1 are
    /// answered `GO_AWAY`.
    pub(crate) fn go_away(&self) {
        self.inner.phase.apply(Event::GoAway);
    }

    /// Whether [`Namesrv::go_away`] was called.
    pub(crate) fn going_away(&self) -> bool {
        self.phase().going_away()
    }

    /// A new server process takes over: the coming shutdown hands over at once.
    pub fn hand_over(&self) {
        self.inner.phase.apply(Event::HandOver);
    }

    /// The eviction-protection settings in force now.
    pub(crate) fn protection_policy(&self) -> protection::Policy {
        protection::Policy::from_settings(&self.config().settings)
    }

    /// What eviction protection is doing (for GET_NAMESRV_CONFIG and metrics).
    pub fn eviction_protection(&self) -> protection::ProtectionStatus {
        self.routes().protection_status()
    }
}

/// Keeps a connection counted in `namesrv_connections_open`; see
/// [`Namesrv::connection_opened`].
#[derive(Debug)]
pub(crate) struct OpenConnection(Namesrv);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.metrics().closed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_connection_is_counted_until_its_guard_drops() {
        let dir = tempfile::tempdir().unwrap();
        let env = crate::config::Env {
            home: dir.path().display().to_string(),
            rocketmq_home: None,
        };
        let kv = KvStore::open(dir.path().join("kv.json")).unwrap();
        let state = Namesrv::new(Config::defaults(&env), kv);
        let a = state.connection_opened();
        let b = state.connection_opened();
        assert_eq!(state.metrics().connections_open(), 2);
        drop(a);
        assert_eq!(state.metrics().connections_open(), 1);
        drop(b);
        let m = state.metrics();
        assert_eq!((m.connections_open(), m.connections_accepted()), (0, 2));
    }
}
