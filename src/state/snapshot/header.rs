//! The snapshot file's header line, `namesrv-routes <format> <body length> <crc32 hex>`:
//! it makes every kind of damage recognisable before the body is trusted — a file that is
//! not a snapshot, one written by a newer format, a truncated body (length) and a damaged
//! one (checksum).

use super::SnapshotError;

/// The format this server writes and the newest it reads.
pub(crate) const FORMAT: u32 = 1;

const MAGIC: &str = "namesrv-routes";

/// Bytes a file must start with to be taken for a snapshot (of any format).
pub(super) const PREFIX: &[u8] = b"namesrv-routes ";

/// `body` behind its header line.
pub(super) fn with_header(body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "{MAGIC} {FORMAT} {} {:08x}\n",
        body.len(),
        crc32fast::hash(body)
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// What a header of a readable format vouches for: the body's length and checksum.
struct Header {
    len: usize,
    crc: u32,
}

/// Checks the header and returns the body it vouches for.
pub(super) fn checked_body(bytes: &[u8]) -> Result<&[u8], SnapshotError> {
    let (line, body) = split_header(bytes)?;
    let header = parse_header(line)?;
    if body.len() != header.len {
        return Err(SnapshotError::Length {
            expected: header.len,
            found: body.len(),
        });
    }
    if crc32fast::hash(body) != header.crc {
        return Err(SnapshotError::Checksum);
    }
    Ok(body)
}

/// The header line (without its newline) and the bytes after it; a header is short, so a
/// file with no newline in its first 128 bytes is not a snapshot.
fn split_header(bytes: &[u8]) -> Result<(&str, &[u8]), SnapshotError> {
    let newline = bytes
        .iter()
        .take(128)
        .position(|&b| b == b'\n')
        .ok_or(SnapshotError::NotASnapshot)?;
    let line = std::str::from_utf8(&bytes[..newline]).map_err(|_| SnapshotError::NotASnapshot)?;
    Ok((line, &bytes[newline + 1..]))
}

/// `namesrv-routes <format> <length> <crc32 hex>`; a newer format is refused before the
/// rest of its header is read, since that format may lay it out differently.
fn parse_header(line: &str) -> Result<Header, SnapshotError> {
    let mut words = line.split(' ');
    if words.next() != Some(MAGIC) {
        return Err(SnapshotError::NotASnapshot);
    }
    let format: u32 = words
        .next()
        .and_then(|w| w.parse().ok())
        .ok_or(SnapshotError::NotASnapshot)?;
    if format > FORMAT {
        return Err(SnapshotError::NewerFormat { found: format });
    }
    let (Some(len), Some(crc), None) = (
        words.next().and_then(|w| w.parse::<usize>().ok()),
        words.next().and_then(|w| u32::from_str_radix(w, 16).ok()),
        words.next(),
    ) else {
        return Err(SnapshotError::NotASnapshot);
    };
    Ok(Header { len, crc })
}
