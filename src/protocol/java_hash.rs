//! Java hash-table iteration order, so that JSON built from Java `HashMap`s, `HashSet`s and
//! `ConcurrentHashMap`s lists entries in the order the Java name server would.
//!
//! Java iterates a hash table bucket by bucket; the bucket of a key is its spread hash masked
//! by the table size, and the table size follows from the entry count (tables double when
//! their load factor of 0.75 is reached and never shrink). Entries that share a bucket keep
//! their insertion order, which callers approximate with the order they pass in.
//! No client depends on this order; matching it makes our bodies byte-identical to Java's in
//! the common cases, which keeps golden-file comparisons meaningful.

/// Java's `String.hashCode()`: `s[0]*31^(n-1) + … + s[n-1]` over UTF-16 code units.
pub fn string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32))
}

/// Java's `Long.hashCode()`.
pub fn long_hash(v: i64) -> i32 {
    (v ^ ((v as u64) >> 32) as i64) as i32
}

/// Which Java table implementation a collection is, since they resize at slightly different
/// sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// `HashMap` / `HashSet` created with the given initial capacity (16 by default):
    /// resizes when the size exceeds 0.75 × capacity.
    HashMap(usize),
    /// `ConcurrentHashMap` / `ConcurrentHashMap.newKeySet()` whose initial table has the
    /// given size: resizes when the size reaches 0.75 × capacity.
    Concurrent(usize),
}

impl Table {
    /// A `HashMap` built by `new HashMap<>()` or `new HashSet<>()`.
    pub const DEFAULT: Table = Table::HashMap(16);

    /// The table size Java would have after inserting `len` entries.
    pub fn capacity(self, len: usize) -> usize {
        let (mut cap, concurrent) = match self {
            Table::HashMap(initial) => (initial.max(1).next_power_of_two(), false),
            Table::Concurrent(initial) => (initial.max(1).next_power_of_two(), true),
        };
        loop {
            let threshold = cap - cap / 4;
            let full = if concurrent {
                len >= threshold
            } else {
                len > threshold
            };
            if !full {
                return cap;
            }
            cap *= 2;
        }
    }

    /// The `ConcurrentHashMap(int)` constructor's table size for `initial_capacity`.
    pub fn concurrent_with_capacity(initial_capacity: usize) -> Table {
        let size = 1 + initial_capacity * 4 / 3;
        Table::Concurrent(size.next_power_of_two())
    }
}

/// The bucket of a key with Java hash `hash` in a table of `cap` (a power of two) buckets.
pub fn bucket(hash: i32, cap: usize) -> usize {
    let h = hash as u32;
    ((h ^ (h >> 16)) as usize) & (cap - 1)
}

/// Sorts `items` into the iteration order of a Java table of kind `table` holding them, keyed
/// by the Java hash of each item's key. The sort is stable, so same-bucket items keep the
/// caller's order.
pub fn sort_by_java_order<T>(items: &mut [T], table: Table, hash: impl Fn(&T) -> i32) {
    let cap = table.capacity(items.len());
    items.sort_by_cached_key(|item| bucket(hash(item), cap));
}

/// Sorts strings (or things keyed by one) into Java iteration order.
pub fn sort_strings_by_java_order<T>(items: &mut [T], table: Table, key: impl Fn(&T) -> &str) {
    sort_by_java_order(items, table, |item| string_hash(key(item)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_hash_matches_java() {
        assert_eq!(string_hash(""), 0);
        assert_eq!(string_hash("a"), 97);
        // "hello".hashCode() == 99162322 in Java.
        assert_eq!(string_hash("hello"), 99_162_322);
        // Overflowing hashes wrap like Java ints: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(string_hash("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn capacities_follow_java_resizing() {
        assert_eq!(Table::DEFAULT.capacity(0), 16);
        assert_eq!(Table::DEFAULT.capacity(12), 16);
        assert_eq!(Table::DEFAULT.capacity(13), 32);
        assert_eq!(Table::Concurrent(16).capacity(11), 16);
        assert_eq!(Table::Concurrent(16).capacity(12), 32);
        assert_eq!(Table::concurrent_with_capacity(128), Table::Concurrent(256));
        assert_eq!(
            Table::concurrent_with_capacity(1024),
            Table::Concurrent(2048)
        );
    }

    #[test]
    fn java_order_matches_captured_topic_lists() {
        // From the Java 5.3.3 captures: {"topicList":["TopicB","TopicA"]} and
        // ["broker-a","DefaultCluster"] (TopicList uses ConcurrentHashMap.newKeySet()).
        let mut topics = vec!["TopicA", "TopicB"];
        sort_strings_by_java_order(&mut topics, Table::Concurrent(16), |s| s);
        assert_eq!(topics, vec!["TopicB", "TopicA"]);
        let mut names = vec!["DefaultCluster", "broker-a"];
        sort_strings_by_java_order(&mut names, Table::Concurrent(16), |s| s);
        assert_eq!(names, vec!["broker-a", "DefaultCluster"]);
    }

    #[test]
    fn small_long_keys_iterate_ascending() {
        let mut ids = vec![3i64, 0, 1];
        sort_by_java_order(&mut ids, Table::DEFAULT, |v| long_hash(*v));
        assert_eq!(ids, vec![0, 1, 3]);
    }
}
