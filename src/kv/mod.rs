//! The KV config store (Java's `KVConfigManager`): namespace → key → value, persisted to `kvConfigPath`
//! in Java's file format so files move freely between Java and this server.
//!
//! Changes are durable before they are visible: a PUT or DELETE returns once it is on disk,
//! and only then do readers see it, so an acknowledged change survives a crash and a failed
//! write changes nothing. Writers that arrive together share one commit (one write, one
//! sync: `group_commit`). A small table is rewritten whole on each commit, as Java does; a
//! large one (`Tuning`) appends the changes to a journal beside the file (`journal`) and
//! folds them into the file once the journal is as large as the file, at start-up after a
//! crash, and at shutdown ([`KvStore::flush`]) — so a stopped server leaves only Java's file.
//! Loading never silently starts empty over a damaged file: it falls back to `<file>.bak`,
//! and refuses to start if that is unusable too.
//!
//! The store blocks on disk I/O: the server calls it from the blocking pool, never from a
//! runtime worker.

mod file;
mod group_commit;
mod java_map;
mod journal;
mod load;
mod write;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use crate::protocol::body::lists::kv_table;
use group_commit::GroupCommit;
pub(crate) use java_map::JavaHashMap;
use journal::Edit;
pub(crate) use load::LoadError;

/// The namespace whose values feed REGISTER_BROKER responses and `orderTopicConf`.
pub(crate) const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

/// Java's `configTable`: namespace → key → value, each a `HashMap`.
type Namespaces = JavaHashMap<JavaHashMap<String>>;

/// What the store may hold (`maxKvValueBytes`, `maxKvTotalBytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvLimits {
    /// The largest value, in UTF-8 bytes.
    pub(crate) max_value_bytes: usize,
    /// The most the table may hold: every namespace, key and value, in UTF-8 bytes.
    pub(crate) max_total_bytes: usize,
}

impl KvLimits {
    /// The limits `settings` configure.
    pub fn from_settings(settings: &crate::config::Settings) -> KvLimits {
        KvLimits {
            max_value_bytes: settings.max_kv_value_bytes as usize,
            max_total_bytes: settings.max_kv_total_bytes as usize,
        }
    }
}

impl Default for KvLimits {
    fn default() -> Self {
        KvLimits {
            max_value_bytes: 1024 * 1024,
            max_total_bytes: 64 * 1024 * 1024,
        }
    }
}

/// When the store keeps a journal instead of rewriting its file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tuning {
    /// Tables holding more bytes than this are journaled.
    pub(crate) write_through_max: usize,
    /// The journal is folded into the file once it is larger than this and than the file.
    pub(crate) compact_min: u64,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            write_through_max: 256 * 1024,
            compact_min: 4 * 1024 * 1024,
        }
    }
}

/// Why a change was refused or failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KvError {
    /// The value is larger than `maxKvValueBytes`.
    #[error("the value is {len} bytes, more than maxKvValueBytes={max}")]
    ValueTooLarge {
        /// The value's size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The change would take the table past `maxKvTotalBytes`.
    #[error(
        "the KV store is full: this change would bring it to {would} bytes, more than maxKvTotalBytes={max}"
    )]
    Full {
        /// What the table would hold.
        would: usize,
        /// The limit.
        max: usize,
    },
    /// Writing the change to disk failed; nothing changed.
    #[error("cannot persist the KV config: {0}")]
    Io(#[from] std::io::Error),
}

impl KvError {
    /// Whether the client's request, not the server, is at fault.
    #[cfg(test)]
    pub(crate) fn is_refusal(&self) -> bool {
        !matches!(self, KvError::Io(_))
    }
}

/// The store.
#[derive(Debug)]
pub struct KvStore {
    path: PathBuf,
    limits: KvLimits,
    tuning: Tuning,
    /// The table readers see. Changed only after the change is on disk.
    table: RwLock<Namespaces>,
    /// Bumped on every change; part of the route cache's stamp.
    epoch: AtomicU64,
    commits: GroupCommit<Edit, Result<(), KvError>>,
    /// What is on disk; held by the committing writer.
    disk: Mutex<write::Disk>,
}

impl KvStore {
    /// Loads the store from `path` (a missing file is an empty table) with default limits.
    pub fn open(path: impl Into<PathBuf>) -> Result<KvStore, LoadError> {
        Self::open_with(path, KvLimits::default())
    }

    /// Loads the store from `path` with `limits`.
    pub fn open_with(path: impl Into<PathBuf>, limits: KvLimits) -> Result<KvStore, LoadError> {
        Self::open_tuned(path.into(), limits, Tuning::default())
    }

    /// Bumped on every change.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// PUT_KV_CONFIG: durable when this returns `Ok`. Blocks on disk I/O.
    pub(crate) fn put(&self, namespace: &str, key: &str, value: &str) -> Result<(), KvError> {
        if value.len() > self.limits.max_value_bytes {
            return Err(KvError::ValueTooLarge {
                len: value.len(),
                max: self.limits.max_value_bytes,
            });
        }
        self.submit(Edit::Put {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
        })
    }

    /// DELETE_KV_CONFIG: removes the key if present (an emptied namespace stays) and
    /// persists in any case, as Java does. Blocks on disk I/O.
    pub(crate) fn delete(&self, namespace: &str, key: &str) -> Result<(), KvError> {
        self.submit(Edit::Delete {
            namespace: namespace.to_owned(),
            key: key.to_owned(),
        })
    }

    /// GET_KV_CONFIG.
    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        self.table.read().get(namespace)?.get(key).cloned()
    }

    /// GET_KVLIST_BY_NAMESPACE: the namespace as a `KVTable` body, if it exists.
    pub(crate) fn list(&self, namespace: &str) -> Option<Vec<u8>> {
        let table = self.table.read();
        let entries = table.get(namespace)?;
        Some(kv_table(entries.iter().map(|(k, v)| (k, v.as_str()))))
    }

    /// The number of namespaces and of keys over all of them.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let table = self.table.read();
        let keys = table.iter().map(|(_, entries)| entries.len()).sum();
        (table.len(), keys)
    }

    /// Every namespace in name order, with its number of keys and its first `limit` entries
    /// in key order: what a status page shows, without copying the rest of the table.
    pub(crate) fn overview(&self, limit: usize) -> Vec<NamespaceOverview> {
        let table = self.table.read();
        let mut out: Vec<NamespaceOverview> = table
            .iter()
            .map(|(ns, entries)| {
                let mut first: Vec<(&str, &String)> = entries.iter().collect();
                first.sort_unstable_by_key(|(k, _)| *k);
                first.truncate(limit);
                NamespaceOverview {
                    namespace: ns.to_owned(),
                    keys: entries.len(),
                    first: first
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v.clone()))
                        .collect(),
                }
            })
            .collect();
        out.sort_unstable_by(|a, b| a.namespace.cmp(&b.namespace));
        out
    }

    /// A copy of one namespace, in key order.
    pub(crate) fn namespace(
        &self,
        namespace: &str,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        let table = self.table.read();
        let entries = table.get(namespace)?;
        Some(
            entries
                .iter()
                .map(|(k, v)| (k.to_owned(), v.clone()))
                .collect(),
        )
    }

    /// A copy of the whole table, for tests and diagnostics.
    pub fn snapshot(
        &self,
    ) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> {
        self.table
            .read()
            .iter()
            .map(|(ns, e)| {
                (
                    ns.to_owned(),
                    e.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect(),
                )
            })
            .collect()
    }
}

/// One namespace as [`KvStore::overview`] describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NamespaceOverview {
    pub(crate) namespace: String,
    /// How many keys it has.
    pub(crate) keys: usize,
    /// Its first entries in key order.
    pub(crate) first: Vec<(String, String)>,
}

/// The bytes `maxKvTotalBytes` counts for a table: every namespace, key and value.
fn table_bytes(table: &Namespaces) -> usize {
    table
        .iter()
        .map(|(ns, e)| ns.len() + e.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>())
        .sum()
}

/// Applies one change to a table.
fn apply(table: &mut Namespaces, edit: &Edit) {
    match edit {
        Edit::Put {
            namespace,
            key,
            value,
        } => table
            .get_or_put_with(namespace, JavaHashMap::new)
            .put(key.clone(), value.clone()),
        Edit::Delete { namespace, key } => {
            if let Some(entries) = table.get_mut(namespace) {
                entries.remove(key);
            }
        }
    }
}

#[cfg(test)]
mod tests;
