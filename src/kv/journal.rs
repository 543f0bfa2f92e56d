//! The KV journal: changes made since the last snapshot of a large table, so that a PUT
//! appends a few bytes and one `fdatasync` instead of rewriting the whole file.
//!
//! `<kvConfigPath>.journal` starts with a header naming the snapshot it continues (the hash
//! of that file's bytes), then holds records `u32 length, u32 CRC-32, payload`, the payload
//! being `u8 op (1 put, 2 delete), u32+namespace, u32+key[, u32+value]` (big-endian lengths).
//! A journal whose header does not match the snapshot on disk is stale: the snapshot was
//! rewritten with its changes and the journal was not yet removed. A record cut short or
//! failing its checksum ends the journal: a write interrupted by a crash was never
//! acknowledged.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use bytes::{Buf, BufMut};

const MAGIC: &[u8; 8] = b"NSKVJRN1";
const HEADER_LEN: usize = MAGIC.len() + 8;
const PUT: u8 = 1;
const DELETE: u8 = 2;

/// One change, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Edit {
    /// PUT_KV_CONFIG.
    Put {
        namespace: String,
        key: String,
        value: String,
    },
    /// DELETE_KV_CONFIG.
    Delete { namespace: String, key: String },
}

/// The journal beside `kv_path`.
pub(super) fn path_of(kv_path: &Path) -> PathBuf {
    crate::durable::with_suffix(kv_path, ".journal")
}

/// The hash a journal header records for a snapshot's bytes.
pub(super) fn snapshot_hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

fn put_text(out: &mut Vec<u8>, text: &str) {
    out.put_u32(text.len() as u32);
    out.put_slice(text.as_bytes());
}

/// Appends the record of `edit` to `out`.
pub(super) fn encode(edit: &Edit, out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u64(0); // length and checksum, filled in below
    match edit {
        Edit::Put {
            namespace,
            key,
            value,
        } => {
            out.put_u8(PUT);
            put_text(out, namespace);
            put_text(out, key);
            put_text(out, value);
        }
        Edit::Delete { namespace, key } => {
            out.put_u8(DELETE);
            put_text(out, namespace);
            put_text(out, key);
        }
    }
    let payload = start + 8;
    let len = (out.len() - payload) as u32;
    let crc = crc32fast::hash(&out[payload..]);
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    out[start + 4..payload].copy_from_slice(&crc.to_be_bytes());
}

fn take_text(buf: &mut &[u8]) -> Option<String> {
    if buf.remaining() < 4 {
        return None;
    }
    let len = buf.get_u32() as usize;
    if buf.remaining() < len {
        return None;
    }
    let text = std::str::from_utf8(&buf[..len]).ok()?.to_owned();
    buf.advance(len);
    Some(text)
}

fn decode_payload(mut p: &[u8]) -> Option<Edit> {
    if p.is_empty() {
        return None;
    }
    let op = p.get_u8();
    let namespace = take_text(&mut p)?;
    let key = take_text(&mut p)?;
    let edit = match op {
        PUT => Edit::Put {
            namespace,
            key,
            value: take_text(&mut p)?,
        },
        DELETE => Edit::Delete { namespace, key },
        _ => return None,
    };
    p.is_empty().then_some(edit)
}

/// What a journal file holds.
#[derive(Debug, Default)]
pub(super) struct Contents {
    /// The snapshot hash its header names; `None` when the header is incomplete (a crash
    /// while the journal was being created, before any change was written to it).
    pub(crate) base: Option<u64>,
    /// The complete records, in order.
    pub(crate) edits: Vec<Edit>,
    /// Bytes after the last complete record.
    pub(crate) torn: usize,
}

/// Reads the journal beside `kv_path`; `None` when there is none.
pub(super) fn read(kv_path: &Path) -> io::Result<Option<Contents>> {
    let bytes = match fs::read(path_of(kv_path)) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if bytes.len() < HEADER_LEN || &bytes[..MAGIC.len()] != MAGIC {
        return Ok(Some(Contents {
            torn: bytes.len(),
            ..Contents::default()
        }));
    }
    let mut rest = &bytes[MAGIC.len()..];
    let base = rest.get_u64();
    let mut edits = Vec::new();
    while rest.remaining() >= 8 {
        let len = u32::from_be_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_be_bytes(rest[4..8].try_into().expect("4 bytes"));
        let Some(payload) = rest.get(8..8 + len) else {
            break;
        };
        if crc32fast::hash(payload) != crc {
            break;
        }
        let Some(edit) = decode_payload(payload) else {
            break;
        };
        edits.push(edit);
        rest = &rest[8 + len..];
    }
    Ok(Some(Contents {
        base: Some(base),
        edits,
        torn: rest.len(),
    }))
}

/// Removes the journal beside `kv_path` (if any) and makes the removal durable.
pub(super) fn remove(kv_path: &Path) -> io::Result<()> {
    match fs::remove_file(path_of(kv_path)) {
        Ok(()) => crate::durable::sync_parent(kv_path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// An open journal, appended to by the KV store's committing thread.
#[derive(Debug)]
pub(super) struct Writer {
    file: File,
    /// Bytes written and synced: the end of the last complete record.
    len: u64,
}

impl Writer {
    /// Starts a journal continuing the snapshot whose bytes hash to `base`, replacing any
    /// stale one; the header is durable when this returns.
    pub(super) fn create(kv_path: &Path, base: u64) -> io::Result<Writer> {
        if let Some(dir) = kv_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        // A stale journal (or a link planted in its place) is removed, never opened: the new
        // one is created exclusively and without following a link, so appends cannot be
        // redirected to another file.
        let path = path_of(kv_path);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut file = crate::durable::create_new_nofollow(&path)?;
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.put_slice(MAGIC);
        header.put_u64(base);
        file.write_all(&header)?;
        file.sync_all()?;
        crate::durable::sync_parent(kv_path)?;
        Ok(Writer {
            file,
            len: HEADER_LEN as u64,
        })
    }

    /// Bytes in the journal.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Appends encoded records and syncs them. On failure the journal is cut back to its
    /// last complete record; if even that fails the error says so and the writer must not
    /// be used again.
    pub(super) fn append(&mut self, records: &[u8]) -> Result<(), AppendError> {
        let written = self
            .file
            .write_all(records)
            .and_then(|()| self.file.sync_data());
        match written {
            Ok(()) => {
                self.len += records.len() as u64;
                Ok(())
            }
            Err(e) => match self
                .file
                .set_len(self.len)
                .and_then(|()| self.file.sync_data())
            {
                Ok(()) => {
                    use std::io::Seek;
                    self.file
                        .seek(io::SeekFrom::Start(self.len))
                        .map_err(AppendError::Unusable)?;
                    Err(AppendError::Failed(e))
                }
                Err(_) => Err(AppendError::Unusable(e)),
            },
        }
    }
}

/// Why an append failed.
#[derive(Debug)]
pub(super) enum AppendError {
    /// Nothing was appended; the journal can still be used.
    Failed(io::Error),
    /// The journal may hold a partial record: stop using it.
    Unusable(io::Error),
}

impl AppendError {
    /// The I/O error.
    pub(super) fn into_io(self) -> io::Error {
        match self {
            AppendError::Failed(e) | AppendError::Unusable(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(ns: &str, k: &str, v: &str) -> Edit {
        Edit::Put {
            namespace: ns.into(),
            key: k.into(),
            value: v.into(),
        }
    }

    #[test]
    fn records_round_trip_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let kv = dir.path().join("kv.json");
        assert!(read(&kv).unwrap().is_none());
        let mut w = Writer::create(&kv, 42).unwrap();
        let edits = vec![
            put("ns", "k", "v"),
            Edit::Delete {
                namespace: "ünï".into(),
                key: "".into(),
            },
            put("", "quote\"", "🚀"),
        ];
        let mut records = Vec::new();
        for e in &edits {
            encode(e, &mut records);
        }
        w.append(&records).unwrap();
        let back = read(&kv).unwrap().unwrap();
        assert_eq!((back.base, &back.edits, back.torn), (Some(42), &edits, 0));
        // Every cut inside the last record drops exactly that record.
        let full = fs::read(path_of(&kv)).unwrap();
        let mut last = Vec::new();
        encode(&edits[2], &mut last);
        for cut in 1..last.len() {
            fs::write(path_of(&kv), &full[..full.len() - cut]).unwrap();
            let back = read(&kv).unwrap().unwrap();
            assert_eq!(back.edits, edits[..2], "cut {cut}");
            assert_eq!(back.torn, last.len() - cut);
        }
        // A flipped bit ends the journal at that record.
        let mut flipped = full.clone();
        let at = full.len() - 2;
        flipped[at] ^= 1;
        fs::write(path_of(&kv), &flipped).unwrap();
        assert_eq!(read(&kv).unwrap().unwrap().edits, edits[..2]);
        // A header cut short has no base.
        fs::write(path_of(&kv), &full[..5]).unwrap();
        assert_eq!(read(&kv).unwrap().unwrap().base, None);
        remove(&kv).unwrap();
        remove(&kv).unwrap();
        assert!(read(&kv).unwrap().is_none());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_as_the_journal_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let kv = dir.path().join("kv.json");
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, path_of(&kv)).unwrap();
        let mut w = Writer::create(&kv, 7).unwrap();
        let mut records = Vec::new();
        encode(&put("ns", "k", "v"), &mut records);
        w.append(&records).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert!(fs::symlink_metadata(path_of(&kv)).unwrap().is_file());
        assert_eq!(read(&kv).unwrap().unwrap().edits.len(), 1);
    }
}
