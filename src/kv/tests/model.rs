//! Property test: the KV store against a `BTreeMap` model, across restarts and damaged
//! files. Random sequences of PUT, DELETE, restart (drop the store and open the same path
//! again) and corrupt-then-restart (truncate, empty, zero-fill, NUL-garble, delete or
//! replace the file with wrong JSON, sometimes damaging the `.bak` too) run against a real
//! store in a temporary directory, and after every step the store's table must equal the
//! model. A damaged or missing file must bring back exactly the table before the last change
//! (the `.bak`), with the damaged bytes kept as `.corrupt` and a file that loads on its own;
//! with no usable `.bak`, opening must fail with an error naming the file and saying it
//! refuses to start (the test then restores the files, as an operator would, and carries
//! on). A missing file with no backup at all is a fresh, empty start. Keys, values and
//! namespaces include unicode, quotes, backslashes, control characters and empty strings.
//!
//! Outcomes depend only on the generated sequence: a failure prints the minimal failing
//! sequence, which reproduces it. `PROPTEST_CASES` raises the case count for longer runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, TestCaseError};

use crate::durable;
use crate::kv::KvStore;

type Table = BTreeMap<String, BTreeMap<String, String>>;

/// How a file is damaged. Every variant yields content that must not load.
#[derive(Debug, Clone)]
enum Damage {
    /// A strict prefix (a write cut short).
    Truncate(Index),
    /// Zero length (a crash after create, before write).
    Empty,
    /// Same length, all NUL bytes (metadata written, data not).
    ZeroFill,
    /// One byte replaced by NUL, which JSON allows nowhere.
    Nul(Index),
    /// Not JSON at all.
    Garbage,
    /// JSON, but not a KV file.
    WrongShape,
    /// The file is gone (deleted by hand, or lost).
    Missing,
}

#[derive(Debug, Clone)]
enum Op {
    Put(String, String, String),
    Delete(String, String),
    Restart,
    /// Damage the file (and, if given, the `.bak`), then open again.
    Corrupt(Damage, Option<Damage>),
}

fn namespace() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["ns", "ORDER_TOPIC_CONFIG", "", "ñs \"q\" \\"]).prop_map(String::from)
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "",
            "a",
            "b",
            "TopicA",
            "say \"hi\"",
            "back\\slash\\",
            "\\u0041 not an escape",
            "ünïcødé 中文",
            "emoji 🚀",
            "tab\tnewline\ncr\r",
            "\u{0}\u{1}\u{1f}\u{7f}\u{80}\u{9f}",
            "\u{2028}\u{2029}\u{feff}",
            "broker-a:4;broker-b:4",
        ])
        .prop_map(String::from),
        1 => any::<String>().prop_map(|s| s.chars().take(12).collect()),
    ]
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        3 => any::<Index>().prop_map(Damage::Truncate),
        1 => Just(Damage::Empty),
        1 => Just(Damage::ZeroFill),
        2 => any::<Index>().prop_map(Damage::Nul),
        1 => Just(Damage::Garbage),
        1 => Just(Damage::WrongShape),
        1 => Just(Damage::Missing),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (namespace(), text(), text()).prop_map(|(n, k, v)| Op::Put(n, k, v)),
        2 => (namespace(), text()).prop_map(|(n, k)| Op::Delete(n, k)),
        1 => Just(Op::Restart),
        1 => (damage(), prop::option::weighted(0.3, damage()))
            .prop_map(|(f, b)| Op::Corrupt(f, b)),
    ]
}

fn damaged(original: &[u8], how: &Damage) -> Vec<u8> {
    match how {
        Damage::Truncate(at) if !original.is_empty() => {
            original[..at.index(original.len())].to_vec()
        }
        Damage::Nul(at) if !original.is_empty() => {
            let mut out = original.to_vec();
            out[at.index(original.len())] = 0;
            out
        }
        Damage::Truncate(_) | Damage::Nul(_) | Damage::Empty | Damage::Missing => Vec::new(),
        Damage::ZeroFill => vec![0; original.len().max(1)],
        Damage::Garbage => b"garbage \xff\xfe not json".to_vec(),
        Damage::WrongShape => br#"{"configTable":["ns"]}"#.to_vec(),
    }
}

/// What the files and the store should hold.
#[derive(Debug, Default)]
struct Model {
    /// The table the store shows.
    live: Table,
    /// The content of the file, `None` while it does not exist.
    file: Option<Table>,
    /// The content of `.bak`, `None` while it does not exist.
    bak: Option<Table>,
}

impl Model {
    /// A PUT or DELETE: the whole table is written, the old file becoming `.bak`.
    fn write(&mut self, next: Table) {
        if let Some(old) = self.file.take() {
            self.bak = Some(old);
        }
        self.file = Some(next.clone());
        self.live = next;
    }
}

fn read(path: &Path) -> Option<Vec<u8>> {
    match std::fs::read(path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("cannot read {}: {e}", path.display()),
    }
}

fn restore(path: &Path, bytes: Option<&[u8]>) {
    match bytes {
        Some(b) => std::fs::write(path, b).expect("restore a file"),
        None => {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn open(path: &Path) -> Result<KvStore, TestCaseError> {
    KvStore::open(path)
        .map_err(|e| TestCaseError::fail(format!("open {} failed: {e}", path.display())))
}

/// Applies `op` to the store (re-opening it when the op says so) and to the model.
fn apply(
    store: &mut Option<KvStore>,
    model: &mut Model,
    path: &Path,
    op: &Op,
) -> Result<(), TestCaseError> {
    match op {
        Op::Put(ns, key, value) => {
            let kv = store.as_ref().expect("the store is open");
            kv.put(ns, key, value)
                .map_err(|e| TestCaseError::fail(format!("put failed: {e}")))?;
            let mut next = model.live.clone();
            next.entry(ns.clone())
                .or_default()
                .insert(key.clone(), value.clone());
            model.write(next);
        }
        Op::Delete(ns, key) => {
            let kv = store.as_ref().expect("the store is open");
            kv.delete(ns, key)
                .map_err(|e| TestCaseError::fail(format!("delete failed: {e}")))?;
            let mut next = model.live.clone();
            if let Some(entries) = next.get_mut(ns) {
                entries.remove(key);
            }
            model.write(next);
        }
        Op::Restart => {
            *store = None;
            *store = Some(open(path)?);
        }
        Op::Corrupt(file_damage, bak_damage) => {
            *store = None;
            let bak_path = durable::backup_path(path);
            let saved_file = read(path);
            let saved_bak = read(&bak_path);
            let bad = damaged(saved_file.as_deref().unwrap_or_default(), file_damage);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).expect("create the store directory");
            }
            let missing = matches!(file_damage, Damage::Missing);
            if missing {
                restore(path, None);
            } else {
                std::fs::write(path, &bad).expect("damage the file");
            }
            if let Some(how) = bak_damage {
                let bad_bak = damaged(saved_bak.as_deref().unwrap_or_default(), how);
                std::fs::write(&bak_path, bad_bak).expect("damage the backup");
            }
            let backup_usable = bak_damage.is_none() && model.bak.is_some();
            match KvStore::open(path) {
                // No file and no backup at all: a fresh start, not damage.
                Ok(kv) if missing && bak_damage.is_none() && model.bak.is_none() => {
                    prop_assert_eq!(kv.snapshot(), Table::new(), "a fresh start is empty");
                    *model = Model::default();
                    *store = Some(kv);
                }
                Ok(kv) if backup_usable => {
                    let expected = model.bak.clone().unwrap_or_default();
                    prop_assert_eq!(
                        kv.snapshot(),
                        expected.clone(),
                        "recovered table is the one before the last change"
                    );
                    if !missing {
                        prop_assert_eq!(
                            read(&with_suffix(path, ".corrupt")),
                            Some(bad),
                            "the damaged file is kept as .corrupt"
                        );
                    }
                    prop_assert_eq!(
                        open(path)?.snapshot(),
                        expected.clone(),
                        "the restored file loads on its own"
                    );
                    model.live = expected.clone();
                    model.file = Some(expected);
                    *store = Some(kv);
                }
                Ok(kv) => {
                    return Err(TestCaseError::fail(format!(
                        "opened a damaged file without a usable backup, table {:?}",
                        kv.snapshot()
                    )));
                }
                Err(e) if backup_usable => {
                    return Err(TestCaseError::fail(format!(
                        "a usable backup was not used: {e}"
                    )));
                }
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(
                        msg.contains(&path.display().to_string())
                            && msg.contains("refusing to start"),
                        "the error names the file and refuses to start: {}",
                        msg
                    );
                    // The operator puts the good files back; nothing was lost meanwhile.
                    restore(path, saved_file.as_deref());
                    restore(&bak_path, saved_bak.as_deref());
                    *store = Some(open(path)?);
                }
            }
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

proptest! {
    #![proptest_config(Config {
        cases: cases(),
        // Failures print the minimal sequence; write nothing into the source tree.
        failure_persistence: None,
        ..Config::default()
    })]
    #[test]
    fn kv_store_matches_the_model(ops in prop::collection::vec(op(), 1..32)) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("store").join("kvConfig.json");
        let mut store = Some(open(&path)?);
        let mut model = Model::default();
        for (step, op) in ops.iter().enumerate() {
            apply(&mut store, &mut model, &path, op)?;
            let kv = store.as_ref().expect("the store is open");
            prop_assert_eq!(kv.snapshot(), model.live.clone(), "table after step {} {:?}", step, op);
            for (ns, entries) in &model.live {
                for (key, value) in entries {
                    prop_assert_eq!(kv.get(ns, key), Some(value.clone()));
                }
            }
            prop_assert!(durable::temp_files(&path).is_empty(), "no temporary file is left behind");
        }
        // Whatever the sequence, the file on disk holds the model's table.
        drop(store);
        prop_assert_eq!(open(&path)?.snapshot(), model.file.unwrap_or_default());
    }
}
