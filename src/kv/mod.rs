//! The KV config store (NAMESRV.md §7): namespace → key → value, persisted to `kvConfigPath`
//! in Java's file format so files move freely between Java and this server.
//!
//! Changes are durable before they are visible: each PUT or DELETE writes the whole table
//! with [`crate::durable::replace`] and only then updates memory, so an acknowledged change
//! survives a crash and a failed write changes nothing. Loading never silently starts empty
//! over a damaged file: it falls back to `<file>.bak`, and refuses to start if that is
//! unusable too.

mod java_map;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

use crate::durable;
use crate::protocol::body::lists::kv_table;
use crate::protocol::json::{JsonStyle, JsonWriter};
pub use java_map::JavaHashMap;

/// The namespace whose values feed REGISTER_BROKER responses and `orderTopicConf`.
pub const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

/// Java's `configTable`: namespace → key → value, each a `HashMap`.
type Namespaces = JavaHashMap<JavaHashMap<String>>;

/// Why the store could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file and its backup are both unusable.
    #[error(
        "KV config file {path} is unreadable ({reason}) and its backup {backup} cannot replace it ({backup_reason}); refusing to start rather than lose the table"
    )]
    Unusable {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
        /// The backup.
        backup: String,
        /// What is wrong with the backup.
        backup_reason: String,
    },
}

/// The store.
#[derive(Debug)]
pub struct KvStore {
    path: PathBuf,
    /// The table readers see. Replaced only after the new content is on disk.
    table: RwLock<Namespaces>,
    /// Serializes writers, so that disk and memory change in the same order.
    writer: Mutex<()>,
    /// Bumped on every change; part of the route cache's stamp.
    epoch: AtomicU64,
}

/// A JSON object's members in document order (`serde_json::Map` sorts them).
struct Ordered<V>(Vec<(String, V)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Members<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(member) = map.next_entry()? {
                    out.push(member);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// Reads `{"configTable":{ns:{k:v}}}` as Java's `KVConfigManager.load` does: fastjson fills
/// `HashMap`s in document order, then `putAll` copies the namespaces into the live table.
fn parse_file(bytes: &[u8]) -> Result<Namespaces, String> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err("the file is empty".into());
    }
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(rename = "configTable", default)]
        config_table: Option<Ordered<Option<Ordered<serde_json::Value>>>>,
    }
    let file: File = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    let mut parsed = JavaHashMap::new();
    for (ns, entries) in file.config_table.map_or(Vec::new(), |c| c.0) {
        let Some(entries) = entries else { continue };
        let mut map = JavaHashMap::new();
        for (k, v) in entries.0 {
            let text = match v {
                serde_json::Value::Null => continue,
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            map.put(k, text);
        }
        parsed.put(ns, map);
    }
    let mut table = Namespaces::for_put_all(parsed.len());
    for (ns, entries) in parsed.iter() {
        table.put(ns.to_owned(), entries.clone());
    }
    Ok(table)
}

/// `{"configTable":{ns:{k:v}}}` in Java `HashMap` order, as `KVConfigManager.persist`.
fn render_file(table: &Namespaces) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    let mut w = JsonWriter::new(&mut out, JsonStyle::Legacy);
    w.raw(b"{\"configTable\":{");
    for (i, (ns, entries)) in table.iter().enumerate() {
        if i > 0 {
            w.punct(b',');
        }
        w.str_key(ns);
        w.punct(b'{');
        for (j, (k, v)) in entries.iter().enumerate() {
            if j > 0 {
                w.punct(b',');
            }
            w.str_key(k);
            w.string(v);
        }
        w.punct(b'}');
    }
    w.raw(b"}}");
    out
}

fn read_table(path: &Path) -> Result<Option<Namespaces>, String> {
    match std::fs::read(path) {
        Ok(bytes) => parse_file(&bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

impl KvStore {
    /// Loads the store from `path` (a missing file is an empty table).
    pub fn open(path: impl Into<PathBuf>) -> Result<KvStore, LoadError> {
        let path = path.into();
        durable::remove_stale_temp(&path);
        let table = match read_table(&path) {
            Ok(Some(table)) => table,
            // Our writes never remove the file; a backup without it means the file was lost
            // (deleted, or an interrupted older version): the backup is the best copy there is.
            Ok(None) if durable::backup_path(&path).exists() => {
                Self::recover(&path, "the file is missing but its backup exists".into())?
            }
            Ok(None) => Namespaces::new(),
            Err(reason) => Self::recover(&path, reason)?,
        };
        Ok(KvStore {
            path,
            table: RwLock::new(table),
            writer: Mutex::new(()),
            epoch: AtomicU64::new(0),
        })
    }

    fn recover(path: &Path, reason: String) -> Result<Namespaces, LoadError> {
        let backup = durable::backup_path(path);
        let unusable = |backup_reason: String| LoadError::Unusable {
            path: path.display().to_string(),
            reason: reason.clone(),
            backup: backup.display().to_string(),
            backup_reason,
        };
        let table = match read_table(&backup) {
            Ok(Some(table)) => table,
            Ok(None) => return Err(unusable("it does not exist".into())),
            Err(e) => return Err(unusable(e)),
        };
        tracing::warn!(
            file = %path.display(),
            %reason,
            backup = %backup.display(),
            "KV config file is damaged: recovered the table from its backup; the damaged file is kept as .corrupt"
        );
        // Keep a copy of the damaged file for the operator, then replace it atomically: until
        // the restored file is in place, a crash leaves the damaged file and the backup as
        // they were, and the next start recovers again.
        let mut corrupt = path.as_os_str().to_owned();
        corrupt.push(".corrupt");
        if path.exists() {
            let _ = std::fs::copy(path, PathBuf::from(corrupt));
        }
        durable::replace_keeping_backup(path, &render_file(&table))
            .map_err(|e| unusable(format!("restoring it failed: {e}")))?;
        Ok(table)
    }

    /// The file the store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bumped on every change.
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    fn change(&self, edit: impl FnOnce(&mut Namespaces)) -> std::io::Result<()> {
        let _writer = self.writer.lock();
        let mut next = self.table.read().clone();
        edit(&mut next);
        durable::replace(&self.path, &render_file(&next))?;
        *self.table.write() = next;
        self.epoch.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// PUT_KV_CONFIG: durable when this returns `Ok`.
    pub fn put(&self, namespace: &str, key: &str, value: &str) -> std::io::Result<()> {
        self.change(|t| {
            t.get_or_put_with(namespace, JavaHashMap::new)
                .put(key.to_owned(), value.to_owned());
        })
    }

    /// DELETE_KV_CONFIG: removes the key if present (an emptied namespace stays) and
    /// persists in any case, as Java does.
    pub fn delete(&self, namespace: &str, key: &str) -> std::io::Result<()> {
        self.change(|t| {
            if let Some(entries) = t.get_mut(namespace) {
                entries.remove(key);
            }
        })
    }

    /// GET_KV_CONFIG.
    pub fn get(&self, namespace: &str, key: &str) -> Option<String> {
        self.table.read().get(namespace)?.get(key).cloned()
    }

    /// GET_KVLIST_BY_NAMESPACE: the namespace as a `KVTable` body, if it exists.
    pub fn list(&self, namespace: &str) -> Option<Vec<u8>> {
        let table = self.table.read();
        let entries = table.get(namespace)?;
        Some(kv_table(entries.iter().map(|(k, v)| (k, v.as_str()))))
    }

    /// The number of namespaces and of keys over all of them.
    pub fn counts(&self) -> (usize, usize) {
        let table = self.table.read();
        let keys = table.iter().map(|(_, entries)| entries.len()).sum();
        (table.len(), keys)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_delete_list_and_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("namesrv/kvConfig.json");
        let kv = KvStore::open(&path).unwrap();
        assert_eq!(kv.list(ORDER_TOPIC_CONFIG), None);
        kv.put(ORDER_TOPIC_CONFIG, "TopicA", "broker-a:4").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4"}}}"#
        );
        assert_eq!(
            kv.get(ORDER_TOPIC_CONFIG, "TopicA").as_deref(),
            Some("broker-a:4")
        );
        assert_eq!(
            kv.list(ORDER_TOPIC_CONFIG).unwrap(),
            br#"{"table":{"TopicA":"broker-a:4"}}"#.to_vec()
        );
        kv.delete(ORDER_TOPIC_CONFIG, "TopicA").unwrap();
        assert_eq!(
            kv.list(ORDER_TOPIC_CONFIG).unwrap(),
            br#"{"table":{}}"#.to_vec()
        );
        kv.delete("nope", "x").unwrap();
        kv.put("ns", "k", "v").unwrap();
        let again = KvStore::open(&path).unwrap();
        assert_eq!(again.snapshot(), kv.snapshot());
        assert!(kv.epoch() >= 4);
    }

    #[test]
    fn java_files_load_and_odd_shapes_are_tolerated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.json");
        std::fs::write(
            &path,
            r#"{"configTable":{"a":{"x":"1","n":2,"z":null},"b":null}}"#,
        )
        .unwrap();
        let kv = KvStore::open(&path).unwrap();
        assert_eq!(kv.get("a", "n").as_deref(), Some("2"));
        assert_eq!(kv.get("a", "z"), None);
        std::fs::write(&path, "{}").unwrap();
        assert!(KvStore::open(&path).unwrap().snapshot().is_empty());
    }

    #[test]
    fn orders_follow_javas_hash_maps_across_puts_deletes_and_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.json");
        let kv = KvStore::open(&path).unwrap();
        // "Aa" and "BB" share a bucket: insertion order, whatever our own maps do.
        kv.put("B", "BB", "1").unwrap();
        kv.put("B", "Aa", "2").unwrap();
        assert_eq!(kv.list("B").unwrap(), br#"{"table":{"BB":"1","Aa":"2"}}"#);
        // Namespaces "B" then "5" live in a 16-bucket table: B (bucket 2) before 5 (bucket 5).
        kv.put("5", "k", "v").unwrap();
        let file = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            file,
            r#"{"configTable":{"B":{"BB":"1","Aa":"2"},"5":{"k":"v"}}}"#
        );
        // After a restart Java copies the loaded namespaces into a table sized for them
        // (4 buckets for 2): now 5 (bucket 1) comes before B (bucket 2). Keys keep the
        // file's order within a bucket.
        let again = KvStore::open(&path).unwrap();
        again.put("5", "k", "w").unwrap();
        let file = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            file,
            r#"{"configTable":{"5":{"k":"w"},"B":{"BB":"1","Aa":"2"}}}"#
        );
    }

    #[test]
    fn a_damaged_file_falls_back_to_the_backup_or_refuses_to_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.json");
        let kv = KvStore::open(&path).unwrap();
        kv.put("ns", "a", "1").unwrap();
        kv.put("ns", "b", "2").unwrap();
        // Truncate the current file: the backup holds the table before the last put.
        std::fs::write(&path, r#"{"configTable":{"ns":{"a":"1","#).unwrap();
        let recovered = KvStore::open(&path).unwrap();
        assert_eq!(recovered.get("ns", "a").as_deref(), Some("1"));
        assert_eq!(recovered.get("ns", "b"), None);
        assert!(dir.path().join("kv.json.corrupt").exists());
        // The restored file loads on its own now.
        assert_eq!(
            KvStore::open(&path).unwrap().get("ns", "a").as_deref(),
            Some("1")
        );
        std::fs::write(&path, "").unwrap();
        std::fs::write(durable::backup_path(&path), "garbage").unwrap();
        let err = KvStore::open(&path).unwrap_err().to_string();
        assert!(
            err.contains("kv.json") && err.contains("refusing to start"),
            "{err}"
        );
    }

    #[test]
    fn a_failed_write_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should be makes every write fail.
        let path = dir.path().join("kv.json");
        let kv = KvStore::open(&path).unwrap();
        std::fs::create_dir_all(durable::temp_path(&path)).unwrap();
        assert!(kv.put("ns", "a", "1").is_err());
        assert_eq!(kv.get("ns", "a"), None);
    }
}

#[cfg(test)]
mod model_tests;
