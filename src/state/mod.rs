//! Shared server state: the route table, the KV store and the live configuration, behind one
//! cheap-to-clone handle, [`Namesrv`].
//!
//! Locks are `parking_lot` (no poisoning), held only for synchronous work and never across
//! an `.await`. Lock order, where two are taken: routes, then KV, then config. Nothing here
//! knows about sockets; connections appear only as [`ConnId`]s.

pub mod housekeeping;
pub mod protection;
pub mod route_cache;
pub mod route_table;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use tokio::time::Instant;

use crate::config::Config;
use crate::kv::KvStore;
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
}

impl Namesrv {
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
    pub fn external_epoch(&self) -> u64 {
        self.inner.config_epoch.load(Ordering::Acquire) + self.inner.kv.epoch()
    }

    /// When the server started.
    pub fn started(&self) -> Instant {
        self.inner.started
    }

    /// A fresh connection id.
    pub fn next_conn_id(&self) -> ConnId {
        ConnId(self.inner.next_conn.fetch_add(1, Ordering::Relaxed))
    }

    /// A connection closed: unregister brokers it still owned.
    pub fn connection_closed(&self, conn: ConnId) {
        self.routes_mut().connection_closed(conn);
    }

    /// A connection idled out: unregister brokers it still owned, unless eviction protection
    /// holds them.
    pub fn connection_idled_out(&self, conn: ConnId) {
        let policy = self.protection_policy();
        self.routes_mut()
            .connection_idled_out(conn, Instant::now(), &policy);
    }

    /// The eviction-protection settings in force now.
    pub fn protection_policy(&self) -> protection::Policy {
        protection::Policy::from_settings(&self.config().settings)
    }

    /// What eviction protection is doing (for GET_NAMESRV_CONFIG and metrics).
    pub fn eviction_protection(&self) -> protection::ProtectionStatus {
        self.routes().protection_status()
    }
}
