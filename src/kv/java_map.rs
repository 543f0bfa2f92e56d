//! A map that iterates exactly as a `java.util.HashMap` holding the same history would, so
//! that KV bodies and `kvConfig.json` list keys in the Java name server's order.
//!
//! Java iterates bucket by bucket; a bucket's entries are in insertion order (a re-put keeps
//! the entry's place, a removed key that comes back goes last), and the table only ever grows:
//! it doubles when the size passes 0.75 × capacity, and `putAll` into an empty map first sizes
//! it for the incoming entries. This models those rules (JDK 8–17 `HashMap`), not the
//! red-black bins Java builds for eight or more keys in one bucket.

use std::collections::HashMap;

use crate::protocol::java_hash::{bucket, string_hash};

/// The default table size of the first `put`.
const DEFAULT_CAPACITY: usize = 16;

/// A `HashMap<String, V>` with Java's iteration order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JavaHashMap<V> {
    /// Key → (insertion sequence, value).
    entries: HashMap<String, (u64, V)>,
    next_seq: u64,
    /// Table size; 0 before the first insertion.
    capacity: usize,
    /// Java's `threshold`: before the first insertion, the capacity to allocate (0: default).
    threshold: usize,
}

impl<V> JavaHashMap<V> {
    /// `new HashMap<>()`.
    pub(crate) fn new() -> Self {
        JavaHashMap {
            entries: HashMap::new(),
            next_seq: 0,
            capacity: 0,
            threshold: 0,
        }
    }

    /// An empty `new HashMap<>()` about to receive `putAll` of a map with `len` entries,
    /// which sizes the table for them first.
    pub(crate) fn for_put_all(len: usize) -> Self {
        let mut map = Self::new();
        if len > 0 {
            // JDK 8–17: `tableSizeFor((int) (s / 0.75f + 1.0f))`.
            let wanted = (len as f32 / 0.75 + 1.0) as usize;
            map.threshold = wanted.next_power_of_two();
        }
        map
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&V> {
        self.entries.get(key).map(|(_, v)| v)
    }

    /// The value of `key`, mutably.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.entries.get_mut(key).map(|(_, v)| v)
    }

    /// `put`: a new key goes last in its bucket and may grow the table; an existing one keeps
    /// its place.
    pub(crate) fn put(&mut self, key: String, value: V) {
        if let Some(slot) = self.entries.get_mut(&key) {
            slot.1 = value;
            return;
        }
        if self.capacity == 0 {
            self.capacity = match self.threshold {
                0 => DEFAULT_CAPACITY,
                initial => initial,
            };
            self.threshold = threshold_of(self.capacity);
        }
        self.entries.insert(key, (self.next_seq, value));
        self.next_seq += 1;
        if self.entries.len() > self.threshold {
            let small = self.capacity < DEFAULT_CAPACITY;
            self.capacity *= 2;
            self.threshold = match small {
                true => threshold_of(self.capacity),
                false => self.threshold * 2,
            };
        }
    }

    /// The value of `key`, inserting `make()` first if it is absent.
    pub(crate) fn get_or_put_with(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        if !self.entries.contains_key(key) {
            self.put(key.to_owned(), make());
        }
        self.get_mut(key).expect("just inserted")
    }

    /// `remove`: the table keeps its size.
    pub(crate) fn remove(&mut self, key: &str) -> Option<V> {
        self.entries.remove(key).map(|(_, v)| v)
    }

    /// The entries in Java's iteration order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        let mut all: Vec<_> = self.entries.iter().collect();
        let cap = self.capacity.max(1);
        all.sort_by_key(|(k, (seq, _))| (bucket(string_hash(k), cap), *seq));
        all.into_iter().map(|(k, (_, v))| (k.as_str(), v))
    }
}

/// `(int) (capacity * 0.75f)`.
fn threshold_of(capacity: usize) -> usize {
    capacity * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys<V>(m: &JavaHashMap<V>) -> Vec<&str> {
        m.iter().map(|(k, _)| k).collect()
    }

    fn map(keys: &[&str]) -> JavaHashMap<()> {
        let mut m = JavaHashMap::new();
        for k in keys {
            m.put(k.to_string(), ());
        }
        m
    }

    #[test]
    fn colliding_keys_keep_insertion_order() {
        // "Aa" and "BB" have the same Java hash.
        assert_eq!(keys(&map(&["Aa", "BB"])), ["Aa", "BB"]);
        assert_eq!(keys(&map(&["BB", "Aa"])), ["BB", "Aa"]);
        let mut m = map(&["Aa", "BB"]);
        m.put("Aa".into(), ());
        assert_eq!(keys(&m), ["Aa", "BB"], "a re-put keeps its place");
        m.remove("Aa");
        m.put("Aa".into(), ());
        assert_eq!(keys(&m), ["BB", "Aa"], "a returning key goes last");
    }

    #[test]
    fn thirteen_keys_iterate_as_on_jdk_17() {
        // HashMap of k0..k12 inserted in order (capacity 32 after the 13th).
        let names: Vec<String> = (0..13).map(|i| format!("k{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            keys(&map(&refs)),
            [
                "k0", "k1", "k2", "k3", "k4", "k5", "k11", "k6", "k10", "k7", "k8", "k12", "k9"
            ]
        );
    }

    #[test]
    fn the_table_never_shrinks() {
        // "5" and "F" are in different orders in tables of 16 and 32.
        let mut m = map(&["5", "F"]);
        assert_eq!(keys(&m), ["5", "F"]);
        for i in 0..11 {
            m.put(format!("x{i}"), ());
        }
        for i in 0..11 {
            m.remove(&format!("x{i}"));
        }
        assert_eq!(keys(&m), ["F", "5"]);
    }

    #[test]
    fn put_all_sizes_the_table_for_the_incoming_entries() {
        // One entry: a table of 2; two: 4; six: 16 (JDK 8–17).
        assert_eq!(JavaHashMap::<()>::for_put_all(1).threshold, 2);
        assert_eq!(JavaHashMap::<()>::for_put_all(2).threshold, 4);
        assert_eq!(JavaHashMap::<()>::for_put_all(6).threshold, 16);
        let mut m = JavaHashMap::for_put_all(1);
        m.put("a".into(), ());
        assert_eq!((m.capacity, m.threshold), (2, 1));
        m.put("b".into(), ());
        assert_eq!((m.capacity, m.threshold), (4, 3));
    }
}
