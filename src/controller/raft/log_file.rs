//! The raft log's file format: a sequence of records, each `[len u32 LE][crc32 u32 LE]`
//! followed by `len` bytes of JSON. A record is either a log entry or the id of the last
//! purged entry (the first record of a file rewritten by a purge). A crash can leave only the
//! last record torn, since records are only ever appended (or the file replaced whole):
//! [`scan`] stops at the first record whose length runs past the end, whose checksum fails or
//! whose JSON does not parse, and reports where the good prefix ends so the tail is cut off.

use serde::{Deserialize, Serialize};

use super::types::{Entry, LogId};

/// Bytes before a record's JSON.
const HEADER: usize = 8;

/// The largest record accepted when reading: far above any proposal, so a corrupt length
/// cannot make the scan allocate wildly.
const MAX_RECORD: usize = 64 << 20;

/// One record of the log file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Record {
    /// Everything up to this id was purged (it is covered by a snapshot).
    Purged(LogId),
    /// A log entry.
    Entry(Entry),
}

/// Appends `record` in the file format to `out`.
pub(crate) fn encode(record: &Record, out: &mut Vec<u8>) {
    let json = serde_json::to_vec(record).expect("a record always serialises");
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
    out.extend_from_slice(&json);
}

/// What a file's bytes hold.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    /// Each good record and the offset it starts at.
    pub(crate) records: Vec<(u64, Record)>,
    /// Where the good prefix ends: the file is cut here when it is longer.
    pub(crate) good_len: u64,
    /// Why the scan stopped before the end, if it did.
    pub(crate) torn: Option<String>,
}

/// Reads the records of `bytes` up to the first torn or corrupt one.
pub(crate) fn scan(bytes: &[u8]) -> Scanned {
    let mut scanned = Scanned::default();
    let mut at = 0usize;
    while at < bytes.len() {
        match record_at(&bytes[at..]) {
            Ok((record, used)) => {
                scanned.records.push((at as u64, record));
                at += used;
            }
            Err(why) => {
                scanned.torn = Some(format!("{why} at offset {at}"));
                break;
            }
        }
    }
    scanned.good_len = at as u64;
    scanned
}

/// The record at the start of `bytes` and how many bytes it took.
fn record_at(bytes: &[u8]) -> Result<(Record, usize), &'static str> {
    if bytes.len() < HEADER {
        return Err("a record header cut short");
    }
    let len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if len > MAX_RECORD {
        return Err("an impossible record length");
    }
    let Some(json) = bytes.get(HEADER..HEADER + len) else {
        return Err("a record cut short");
    };
    if crc32fast::hash(json) != crc {
        return Err("a record failing its checksum");
    }
    let record = serde_json::from_slice(json).map_err(|_| "a record that does not parse")?;
    Ok((record, HEADER + len))
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, EntryPayload};

    use super::*;

    fn entry(index: u64) -> Record {
        Record::Entry(Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 7), index),
            payload: EntryPayload::Blank,
        })
    }

    fn file(records: &[Record]) -> Vec<u8> {
        let mut out = Vec::new();
        records.iter().for_each(|r| encode(r, &mut out));
        out
    }

    #[test]
    fn records_round_trip_with_their_offsets() {
        let bytes = file(&[entry(1), entry(2)]);
        let scanned = scan(&bytes);
        assert!(scanned.torn.is_none());
        assert_eq!(scanned.good_len, bytes.len() as u64);
        assert_eq!(scanned.records.len(), 2);
        assert_eq!(scanned.records[0].0, 0);
        assert!(matches!(&scanned.records[1].1, Record::Entry(e) if e.log_id.index == 2));
    }

    #[test]
    fn a_torn_tail_is_cut_at_every_length() {
        let whole = file(&[entry(1), entry(2)]);
        let first = file(&[entry(1)]).len();
        for cut in first..whole.len() {
            let scanned = scan(&whole[..cut]);
            assert_eq!(scanned.records.len(), 1, "cut at {cut}");
            assert_eq!(scanned.good_len, first as u64);
            assert_eq!(scanned.torn.is_some(), cut > first);
        }
    }

    #[test]
    fn a_flipped_byte_fails_the_checksum() {
        let mut bytes = file(&[entry(1), entry(2)]);
        let last = bytes.len() - 3;
        bytes[last] ^= 0x20;
        let scanned = scan(&bytes);
        assert_eq!(scanned.records.len(), 1);
        assert!(scanned.torn.unwrap().contains("checksum"));
    }

    #[test]
    fn an_absurd_length_stops_the_scan_without_allocating() {
        let mut bytes = file(&[entry(1)]);
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        bytes.extend_from_slice(&[0; 12]);
        let scanned = scan(&bytes);
        assert_eq!(scanned.records.len(), 1);
        assert!(scanned.torn.unwrap().contains("impossible"));
    }
}
