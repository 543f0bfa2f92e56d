//! Property test of the journaled store: with thresholds so small that the store switches
//! between rewriting its file and journaling, and folds the journal often, random sequences
//! of PUT, DELETE, crash (drop the store without flushing and open again), clean stop
//! (flush, then open again), a torn last record and a stale journal must always show the
//! model's table; after a clean stop the file alone holds it, as Java's would.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError};

use crate::kv::journal::{self, Edit};
use crate::kv::{KvLimits, KvStore, Tuning, file};

type Table = BTreeMap<String, BTreeMap<String, String>>;

#[derive(Debug, Clone)]
enum Op {
    Put(String, String, String),
    Delete(String, String),
    /// Drop the store without flushing (what kill -9 leaves) and open again.
    Crash,
    /// Flush, check the file alone holds the table, and open again.
    Stop,
    /// Crash with half a record appended to the journal (a write cut short).
    TornCrash,
    /// Stop, then leave a journal naming another file as its base, and open again.
    StaleJournal,
}

fn op() -> impl Strategy<Value = Op> {
    let name = prop::sample::select(vec!["a", "b", "ñ \"q\"", ""]).prop_map(String::from);
    let value = prop_oneof![
        prop::sample::select(vec!["", "v", "ünï 🚀", "x\\y\n"]).prop_map(String::from),
        (0usize..80).prop_map(|n| "z".repeat(n)),
    ];
    prop_oneof![
        8 => (name.clone(), name.clone(), value).prop_map(|(n, k, v)| Op::Put(n, k, v)),
        3 => (name.clone(), name).prop_map(|(n, k)| Op::Delete(n, k)),
        1 => Just(Op::Crash),
        1 => Just(Op::Stop),
        1 => Just(Op::TornCrash),
        1 => Just(Op::StaleJournal),
    ]
}

const TINY: Tuning = Tuning {
    write_through_max: 64,
    compact_min: 200,
};

fn open(path: &Path) -> Result<KvStore, TestCaseError> {
    KvStore::open_tuned(path.to_path_buf(), KvLimits::default(), TINY)
        .map_err(|e| TestCaseError::fail(format!("open failed: {e}")))
}

fn append_to_journal(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(journal::path_of(path))
        .expect("open the journal");
    f.write_all(bytes).expect("append");
}

fn step(store: &mut KvStore, model: &mut Table, path: &Path, op: &Op) -> Result<(), TestCaseError> {
    match op {
        Op::Put(ns, k, v) => {
            store
                .put(ns, k, v)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            model
                .entry(ns.clone())
                .or_default()
                .insert(k.clone(), v.clone());
        }
        Op::Delete(ns, k) => {
            store
                .delete(ns, k)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            if let Some(e) = model.get_mut(ns) {
                e.remove(k);
            }
        }
        Op::Crash => *store = open(path)?,
        Op::TornCrash => {
            if journal::path_of(path).exists() {
                let mut record = Vec::new();
                journal::encode(
                    &Edit::Delete {
                        namespace: "a".into(),
                        key: "a".into(),
                    },
                    &mut record,
                );
                append_to_journal(path, &record[..record.len() - 1]);
            }
            *store = open(path)?;
        }
        Op::Stop | Op::StaleJournal => {
            store
                .flush()
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert!(
                !journal::path_of(path).exists(),
                "a flushed store leaves no journal"
            );
            let on_disk = match std::fs::read(path) {
                Ok(bytes) => file::parse_file(&bytes).map_err(TestCaseError::fail)?,
                Err(_) => Default::default(),
            };
            let on_disk: Table = on_disk
                .iter()
                .map(|(ns, e)| {
                    (
                        ns.to_owned(),
                        e.iter().map(|(k, v)| (k.to_owned(), v.clone())).collect(),
                    )
                })
                .collect();
            prop_assert_eq!(
                &on_disk,
                model,
                "after a flush the file alone holds the table"
            );
            if matches!(op, Op::StaleJournal) {
                let mut w = journal::Writer::create(path, 12345).expect("a journal");
                let mut record = Vec::new();
                journal::encode(
                    &Edit::Put {
                        namespace: "stale".into(),
                        key: "k".into(),
                        value: "v".into(),
                    },
                    &mut record,
                );
                w.append(&record)
                    .map_err(|e| TestCaseError::fail(e.into_io().to_string()))?;
            }
            *store = open(path)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 48, failure_persistence: None, ..Config::default() })]
    #[test]
    fn journaled_store_matches_the_model(ops in prop::collection::vec(op(), 1..40)) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("kv").join("kvConfig.json");
        let mut store = open(&path)?;
        let mut model = Table::new();
        for (i, op) in ops.iter().enumerate() {
            step(&mut store, &mut model, &path, op)?;
            prop_assert_eq!(store.snapshot(), model.clone(), "after step {} {:?}", i, op);
        }
        drop(store);
        prop_assert_eq!(open(&path)?.snapshot(), model);
    }
}
