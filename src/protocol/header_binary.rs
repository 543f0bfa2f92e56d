//! The binary ROCKETMQ header encoding (serialize type 1): Java's
//! `RocketMQSerializable#rocketMQProtocolEncode` / `#rocketMQProtocolDecode`.
//!
//! ```text
//! offset 0  i16 code | 2 u8 language | 3 i16 version | 5 i32 opaque | 9 i32 flag
//!        13 i32 remarkLen | remark | i32 extLen | ext block (i16 keyLen, key, i32 valLen, val)*
//! ```
//!
//! The header is parsed strictly inside its declared length: any length that runs past it, a
//! negative length, or bytes left over after the ext block is an error. Zero-length strings
//! mean "absent", as in Java.

use bytes::{Buf, BufMut};

use super::code::LanguageCode;
use super::command::{ExtFields, MAX_EXT_FIELDS, RemotingCommand};

/// Why a binary header could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BinaryHeaderError {
    /// The header ended before a fixed-width field.
    #[error("binary header truncated at {field}")]
    Truncated {
        /// The field that did not fit.
        field: &'static str,
    },
    /// A length prefix was negative or ran past the header.
    #[error("binary header {field} length {len} out of bounds")]
    BadLength {
        /// The field whose length was wrong.
        field: &'static str,
        /// The declared length.
        len: i64,
    },
    /// The ext-fields block holds more than [`MAX_EXT_FIELDS`] entries.
    #[error("binary header has more than {MAX_EXT_FIELDS} ext fields")]
    TooManyExtFields,
    /// Bytes remained after the ext-fields block.
    #[error("binary header has {0} trailing bytes")]
    Trailing(usize),
}

type Result<T> = std::result::Result<T, BinaryHeaderError>;

fn need(buf: &[u8], n: usize, field: &'static str) -> Result<()> {
    if buf.remaining() < n {
        Err(BinaryHeaderError::Truncated { field })
    } else {
        Ok(())
    }
}

fn take_text(buf: &mut &[u8], len: i64, field: &'static str) -> Result<Option<String>> {
    if len < 0 || len as u64 > buf.len() as u64 {
        return Err(BinaryHeaderError::BadLength { field, len });
    }
    let (text, rest) = buf.split_at(len as usize);
    *buf = rest;
    Ok((!text.is_empty()).then(|| String::from_utf8_lossy(text).into_owned()))
}

/// Parses a binary header into a command without a body.
pub fn decode(header: &[u8]) -> Result<RemotingCommand> {
    let mut buf = header;
    need(buf, 21, "fixed fields")?;
    let code = buf.get_i16() as i32;
    let language = LanguageCode::from_code(buf.get_u8());
    let version = buf.get_i16() as i32;
    let opaque = buf.get_i32();
    let flag = buf.get_i32();
    let remark_len = buf.get_i32() as i64;
    let remark = take_text(&mut buf, remark_len, "remark")?;
    need(buf, 4, "extLen")?;
    let ext_len = buf.get_i32() as i64;
    if ext_len < 0 || ext_len as u64 > buf.len() as u64 {
        return Err(BinaryHeaderError::BadLength {
            field: "extFields",
            len: ext_len,
        });
    }
    let (mut ext, rest) = buf.split_at(ext_len as usize);
    if !rest.is_empty() {
        return Err(BinaryHeaderError::Trailing(rest.len()));
    }
    let ext_fields = if ext_len == 0 {
        None
    } else {
        let mut pairs = Vec::new();
        let mut entries = 0usize;
        while !ext.is_empty() {
            entries += 1;
            if entries > MAX_EXT_FIELDS {
                return Err(BinaryHeaderError::TooManyExtFields);
            }
            need(ext, 2, "ext key length")?;
            let key_len = ext.get_i16() as i64;
            let key = take_text(&mut ext, key_len, "ext key")?;
            need(ext, 4, "ext value length")?;
            let val_len = ext.get_i32() as i64;
            let value = take_text(&mut ext, val_len, "ext value")?;
            if let (Some(k), Some(v)) = (key, value) {
                pairs.push((k, v));
            }
        }
        Some(ExtFields::from_pairs(pairs))
    };
    Ok(RemotingCommand {
        code,
        language,
        version,
        opaque,
        flag,
        remark,
        ext_fields,
        body: None,
    })
}

/// Appends the binary header of `cmd` to `out`. A command without a language is written with
/// byte 0xFF, which reads back as "no language".
pub fn encode(cmd: &RemotingCommand, out: &mut Vec<u8>) {
    out.put_i16(cmd.code as i16);
    out.put_u8(cmd.language.map_or(0xFF, LanguageCode::code));
    out.put_i16(cmd.version as i16);
    out.put_i32(cmd.opaque);
    out.put_i32(cmd.flag);
    match cmd.remark.as_deref() {
        Some(r) if !r.is_empty() => {
            out.put_i32(r.len() as i32);
            out.put_slice(r.as_bytes());
        }
        _ => out.put_i32(0),
    }
    let len_at = out.len();
    out.put_i32(0);
    if let Some(fields) = &cmd.ext_fields {
        // A key length is a signed 16-bit number: a longer key cannot be written (the server
        // only writes its own short keys; this keeps the output decodable regardless).
        for (k, v) in fields.iter().filter(|(k, _)| k.len() <= i16::MAX as usize) {
            out.put_i16(k.len() as i16);
            out.put_slice(k.as_bytes());
            out.put_i32(v.len() as i32);
            out.put_slice(v.as_bytes());
        }
    }
    let ext_len = (out.len() - len_at - 4) as i32;
    out[len_at..len_at + 4].copy_from_slice(&ext_len.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 41-byte binary header of a route request for `TopicTest`.
    const ROUTE_REQUEST: [u8; 41] = [
        0x00, 0x69, 0x00, 0x01, 0xdf, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x05, b't', b'o', b'p', b'i', b'c', 0x00, 0x00,
        0x00, 0x09, b'T', b'o', b'p', b'i', b'c', b'T', b'e', b's', b't',
    ];

    #[test]
    fn decodes_and_encodes_the_worked_example() {
        let cmd = decode(&ROUTE_REQUEST).unwrap();
        assert_eq!(cmd.code, 105);
        assert_eq!(cmd.language, Some(LanguageCode::Java));
        assert_eq!(cmd.version, 479);
        assert_eq!(cmd.opaque, 1);
        assert_eq!(cmd.ext("topic"), Some("TopicTest"));
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        assert_eq!(out, ROUTE_REQUEST);
    }

    #[test]
    fn empty_strings_are_absent() {
        let mut cmd = RemotingCommand::request(1, 2);
        cmd.remark = Some(String::new());
        cmd.ext_fields = Some([("k", ""), ("", "v"), ("a", "b")].into_iter().collect());
        let mut out = Vec::new();
        encode(&cmd, &mut out);
        let back = decode(&out).unwrap();
        assert_eq!(back.remark, None);
        let ext = back.ext_fields.unwrap();
        assert_eq!(ext.len(), 1);
        assert_eq!(ext.get("a"), Some("b"));
    }

    /// A binary header of a route request with `n` ext-field entries, `distinct` different keys.
    pub(crate) fn many_fields(n: usize, distinct: usize) -> Vec<u8> {
        let mut cmd = ROUTE_REQUEST[..17].to_vec();
        let mut ext = Vec::new();
        for i in 0..n {
            let key = format!("f{}", i % distinct);
            ext.put_i16(key.len() as i16);
            ext.put_slice(key.as_bytes());
            ext.put_i32(1);
            ext.put_u8(b'v');
        }
        cmd.put_i32(ext.len() as i32);
        cmd.extend_from_slice(&ext);
        cmd
    }

    #[test]
    fn ext_fields_are_capped_counting_every_entry() {
        let ok = decode(&many_fields(MAX_EXT_FIELDS, 7)).unwrap();
        assert_eq!(ok.ext_fields.unwrap().len(), 7);
        assert_eq!(
            decode(&many_fields(MAX_EXT_FIELDS + 1, MAX_EXT_FIELDS + 1)),
            Err(BinaryHeaderError::TooManyExtFields)
        );
        assert_eq!(
            decode(&many_fields(100_000, 100_000)),
            Err(BinaryHeaderError::TooManyExtFields)
        );
    }

    #[test]
    fn lengths_past_the_header_are_errors() {
        let mut bad = ROUTE_REQUEST;
        bad[16] = 0x7f; // remarkLen huge
        assert!(matches!(
            decode(&bad),
            Err(BinaryHeaderError::BadLength {
                field: "remark",
                ..
            })
        ));
        let mut bad = ROUTE_REQUEST;
        bad[13] = 0xff; // remarkLen negative
        assert!(decode(&bad).is_err());
        let mut bad = ROUTE_REQUEST;
        bad[20] = 0x15; // extLen one too long
        assert!(decode(&bad).is_err());
        let mut bad = ROUTE_REQUEST;
        bad[21] = 0x80; // negative key length
        assert!(decode(&bad).is_err());
        assert!(decode(&ROUTE_REQUEST[..20]).is_err());
        let mut long = ROUTE_REQUEST.to_vec();
        long.push(0);
        assert_eq!(decode(&long), Err(BinaryHeaderError::Trailing(1)));
    }
}
