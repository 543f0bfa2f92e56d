//! Unit tests of the KV store: the Java file format and order, recovery from the backup, and
//! failed writes.

use crate::durable;
use crate::kv::*;

/// An empty store in a fresh temporary directory, with the path of its file.
fn fresh_store() -> (tempfile::TempDir, std::path::PathBuf, KvStore) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kv.json");
    let kv = KvStore::open(&path).unwrap();
    (dir, path, kv)
}

#[test]
fn overview_and_namespace_read_in_order_without_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let kv = KvStore::open(dir.path().join("kv.json")).unwrap();
    for (ns, key) in [("b", "k3"), ("b", "k1"), ("b", "k2"), ("a", "x")] {
        kv.put(ns, key, &format!("{ns}-{key}")).unwrap();
    }
    let pair = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(
        kv.overview(2),
        [
            NamespaceOverview {
                namespace: "a".into(),
                keys: 1,
                first: vec![pair("x", "a-x")],
            },
            NamespaceOverview {
                namespace: "b".into(),
                keys: 3,
                first: vec![pair("k1", "b-k1"), pair("k2", "b-k2")],
            },
        ]
    );
    assert!(kv.overview(0).iter().all(|ns| ns.first.is_empty()));
    assert_eq!(kv.namespace("b"), kv.snapshot().remove("b"));
    assert_eq!(kv.namespace("c"), None);
}

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
    let (_dir, path) = crate::durable::temp_file(
        "kv.json",
        r#"{"configTable":{"a":{"x":"1","n":2,"z":null},"b":null}}"#,
    );
    let kv = KvStore::open(&path).unwrap();
    assert_eq!(kv.get("a", "n").as_deref(), Some("2"));
    assert_eq!(kv.get("a", "z"), None);
    std::fs::write(&path, "{}").unwrap();
    assert!(KvStore::open(&path).unwrap().snapshot().is_empty());
}

#[test]
fn orders_follow_javas_hash_maps_across_puts_deletes_and_restarts() {
    let (_dir, path, kv) = fresh_store();
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
    let (dir, path, kv) = fresh_store();
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
fn a_check_tells_whether_the_store_would_open_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kv.json");
    assert!(KvStore::check(&path).is_ok(), "a missing file opens empty");
    let kv = KvStore::open(&path).unwrap();
    kv.put("ns", "a", "1").unwrap();
    kv.put("ns", "b", "2").unwrap();
    drop(kv);
    assert!(KvStore::check(&path).is_ok());
    // Damaged, with a usable backup: it would open; the check repairs nothing.
    std::fs::write(&path, "{").unwrap();
    assert!(KvStore::check(&path).is_ok());
    assert_eq!(std::fs::read(&path).unwrap(), b"{");
    assert!(!dir.path().join("kv.json.corrupt").exists());
    std::fs::write(durable::backup_path(&path), "garbage").unwrap();
    let err = KvStore::check(&path).unwrap_err().to_string();
    assert!(err.contains("refusing to start"), "{err}");
    assert_eq!(KvStore::open(&path).unwrap_err().to_string(), err);
}

#[test]
fn a_failed_write_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the file should be makes every write fail.
    let path = dir.path().join("kv.json");
    let kv = KvStore::open(&path).unwrap();
    std::fs::create_dir_all(&path).unwrap();
    assert!(kv.put("ns", "a", "1").is_err());
    assert_eq!(kv.get("ns", "a"), None);
    assert!(durable::temp_files(&path).is_empty());
}

#[test]
fn limits_refuse_large_values_and_growth_past_the_total_but_never_shrinking() {
    let dir = tempfile::tempdir().unwrap();
    let limits = KvLimits {
        max_value_bytes: 10,
        max_total_bytes: 30,
    };
    let kv = KvStore::open_with(dir.path().join("kv.json"), limits).unwrap();
    let err = kv.put("ns", "k", "0123456789A").unwrap_err();
    assert!(matches!(err, KvError::ValueTooLarge { len: 11, max: 10 }));
    assert!(err.is_refusal());
    assert_eq!(
        err.to_string(),
        "the value is 11 bytes, more than maxKvValueBytes=10"
    );
    // "ns" + "k1" + 10 = 14, then + "k2" + 10 = 26: 30 bytes hold no third entry.
    kv.put("ns", "k1", "0123456789").unwrap();
    kv.put("ns", "k2", "0123456789").unwrap();
    let full = kv.put("ns", "k3", "012").unwrap_err();
    assert!(
        matches!(full, KvError::Full { would: 31, max: 30 }),
        "{full}"
    );
    assert!(full.to_string().contains("maxKvTotalBytes=30"));
    // Replacing a value with one no larger, and deleting, always work.
    kv.put("ns", "k2", "short").unwrap();
    kv.delete("ns", "k1").unwrap();
    kv.put("ns", "k3", "012").unwrap();
    assert_eq!(kv.get("ns", "k3").as_deref(), Some("012"));
    assert_eq!(kv.get("ns", "k1"), None);
}

#[test]
fn a_lowered_total_keeps_the_loaded_table_and_allows_shrinking() {
    let (_dir, path, kv) = fresh_store();
    kv.put("ns", "k", "a long value").unwrap();
    drop(kv);
    let limits = KvLimits {
        max_value_bytes: 100,
        max_total_bytes: 4,
    };
    let kv = KvStore::open_with(&path, limits).unwrap();
    assert_eq!(kv.get("ns", "k").as_deref(), Some("a long value"));
    assert!(matches!(
        kv.put("ns", "k", "a longer value"),
        Err(KvError::Full { .. })
    ));
    kv.put("ns", "k", "short").unwrap();
}

#[test]
fn a_large_table_is_journaled_and_a_flush_leaves_javas_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kv.json");
    let tuning = Tuning {
        write_through_max: 100,
        compact_min: 1 << 20,
    };
    let kv = KvStore::open_tuned(path.clone(), KvLimits::default(), tuning).unwrap();
    kv.put("ns", "small", "v").unwrap();
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(written, r#"{"configTable":{"ns":{"small":"v"}}}"#);
    kv.put("ns", "big", &"x".repeat(200)).unwrap();
    kv.put("ns", "small", "w").unwrap();
    // The file is as before; the changes are in the journal.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), written);
    assert!(journal::path_of(&path).exists());
    // A crash: the next start folds the journal in.
    drop(kv);
    let kv = KvStore::open_tuned(path.clone(), KvLimits::default(), tuning).unwrap();
    assert_eq!(kv.get("ns", "small").as_deref(), Some("w"));
    assert!(!journal::path_of(&path).exists());
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains(r#""small":"w""#)
    );
    // A clean stop folds it in too.
    kv.put("ns", "small", "after").unwrap();
    kv.flush().unwrap();
    assert!(!journal::path_of(&path).exists());
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(file.contains(r#""small":"after""#), "{file}");
}
