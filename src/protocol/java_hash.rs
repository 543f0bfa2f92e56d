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
pub(crate) fn string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32))
}

/// Java's `Long.hashCode()`.
pub(crate) fn long_hash(v: i64) -> i32 {
    (v ^ ((v as u64) >> 32) as i64) as i32
}

/// Which Java table implementation a collection is, since they resize at slightly different
/// sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    /// `HashMap` / `HashSet` created with the given initial capacity (16 by default):
    /// resizes when the size exceeds 0.75 × capacity.
    HashMap(usize),
    /// `ConcurrentHashMap` / `ConcurrentHashMap.newKeySet()` whose initial table has the
    /// given size: resizes when the size reaches 0.75 × capacity.
    Concurrent(usize),
}

impl Table {
    /// A `HashMap` built by `new HashMap<>()` or `new HashSet<>()`.
    pub(crate) const DEFAULT: Table = Table::HashMap(16);

    /// The table size Java would have after inserting `len` entries.
    pub(crate) fn capacity(self, len: usize) -> usize {
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
    #[cfg(test)]
    pub(crate) fn concurrent_with_capacity(initial_capacity: usize) -> Table {
        let size = 1 + initial_capacity * 4 / 3;
        Table::Concurrent(size.next_power_of_two())
    }
}

/// Java's hash spreading (`HashMap.hash`, `ConcurrentHashMap.spread`): the high half folded
/// into the low half, sign bit cleared (which no table size reaches).
fn spread(hash: i32) -> usize {
    let h = hash as u32;
    ((h ^ (h >> 16)) & 0x7fff_ffff) as usize
}

/// The bucket of a key with Java hash `hash` in a table of `cap` (a power of two) buckets.
pub(crate) fn bucket(hash: i32, cap: usize) -> usize {
    spread(hash) & (cap - 1)
}

/// Sorts `items` into the iteration order of a Java table of kind `table` holding them, keyed
/// by the Java hash of each item's key. The sort is stable, so same-bucket items keep the
/// caller's order.
pub(crate) fn sort_by_java_order<T>(items: &mut [T], table: Table, hash: impl Fn(&T) -> i32) {
    let cap = table.capacity(items.len());
    items.sort_by_cached_key(|item| bucket(hash(item), cap));
}

/// Sorts strings (or things keyed by one) into Java iteration order.
pub(crate) fn sort_strings_by_java_order<T>(
    items: &mut [T],
    table: Table,
    key: impl Fn(&T) -> &str,
) {
    sort_by_java_order(items, table, |item| string_hash(key(item)));
}

/// The iteration order of a `ConcurrentHashMap` (or `ConcurrentHashMap.newKeySet()`) whose
/// table starts with `initial` buckets, after `items` were added in the given order.
///
/// A bucket keeps its entries in insertion order, but when the table doubles (at 0.75 of its
/// size) each bucket is split in two: the run of entries at its end that all go the same way
/// keeps its order, and the entries before it are prepended one by one, so they come out
/// reversed. (Buckets of eight or more entries, which Java turns into trees, are not modelled.)
pub(crate) fn concurrent_order<T>(
    items: Vec<T>,
    initial: usize,
    hash: impl Fn(&T) -> i32,
) -> Vec<T> {
    let mut n = initial.max(1).next_power_of_two();
    if items.len() < n - n / 4 {
        // No resize: bucket order, insertion order within a bucket.
        let mut items = items;
        items.sort_by_cached_key(|item| bucket(hash(item), n));
        return items;
    }
    let mut bins: Vec<Vec<(usize, T)>> = (0..n).map(|_| Vec::new()).collect();
    let mut count = 0;
    for item in items {
        let h = spread(hash(&item));
        bins[h & (n - 1)].push((h, item));
        count += 1;
        while count >= n - n / 4 {
            let mut next: Vec<Vec<(usize, T)>> = (0..2 * n).map(|_| Vec::new()).collect();
            for (i, bin) in bins.into_iter().enumerate() {
                let goes_high = |h: usize| h & n != 0;
                // Start of the last run of entries bound for the same half.
                let run = bin
                    .iter()
                    .rposition(|(h, _)| goes_high(*h) != goes_high(bin.last().unwrap().0))
                    .map_or(0, |p| p + 1);
                let mut low = Vec::new();
                let mut high = Vec::new();
                let mut entries = bin.into_iter();
                let prefix: Vec<_> = entries.by_ref().take(run).collect();
                let tail: Vec<_> = entries.collect();
                let tail_high = tail.first().is_some_and(|(h, _)| goes_high(*h));
                for (h, item) in prefix.into_iter().rev() {
                    match goes_high(h) {
                        true => high.push((h, item)),
                        false => low.push((h, item)),
                    }
                }
                match tail_high {
                    true => high.extend(tail),
                    false => low.extend(tail),
                }
                next[i] = low;
                next[i + n] = high;
            }
            bins = next;
            n *= 2;
        }
    }
    bins.into_iter().flatten().map(|(_, item)| item).collect()
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
    fn concurrent_resizes_reverse_the_head_of_a_split_bucket() {
        // Hashes 0, 16, 32, 48 share bucket 0 of 16. Adding 12 entries doubles the table:
        // bit 16 sends 16 and 48 high. The last run is [48]; before it, 0 and 32 go low and
        // 16 high, prepended: low = [32, 0], high = [16, 48].
        let mut items: Vec<i32> = vec![0, 16, 32, 48];
        items.extend((1..=8).map(|i| i * 1000 + 1));
        let order = concurrent_order(items, 16, |h| *h);
        let low: Vec<i32> = order
            .iter()
            .copied()
            .filter(|h| [0, 32].contains(h))
            .collect();
        let high: Vec<i32> = order
            .iter()
            .copied()
            .filter(|h| [16, 48].contains(h))
            .collect();
        assert_eq!((low, high), (vec![32, 0], vec![16, 48]));
        // Without a resize it is bucket order, insertion order within a bucket.
        assert_eq!(concurrent_order(vec![17, 1, 2], 16, |h| *h), vec![17, 1, 2]);
    }

    #[test]
    fn small_long_keys_iterate_ascending() {
        let mut ids = vec![3i64, 0, 1];
        sort_by_java_order(&mut ids, Table::DEFAULT, |v| long_hash(*v));
        assert_eq!(ids, vec![0, 1, 3]);
    }
}
