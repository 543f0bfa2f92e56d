//! Framing: splitting a byte stream into frames and turning a frame into a
//! [`RemotingCommand`] and back. Pure functions over buffers; no I/O happens here.
//!
//! A partial frame is `Ok(None)`, not an error. Every error means the stream can no longer be
//! trusted: the connection is closed without a reply (PROTOCOL.md §1.3).

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::code::SerializeType;
use super::command::RemotingCommand;
use super::header_binary::{self, BinaryHeaderError};
use super::header_json::{self, JsonHeaderError};

/// Java's default `com.rocketmq.remoting.frameMaxLength`: the largest frame counting its
/// 4-byte length prefix. The largest accepted length field is 4 less (16 777 212).
pub const DEFAULT_FRAME_MAX_LENGTH: usize = 16 * 1024 * 1024;

/// Limits applied while splitting frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLimits {
    /// The largest frame accepted, including the length prefix (Java's `frameMaxLength`).
    pub max_frame_length: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits {
            max_frame_length: DEFAULT_FRAME_MAX_LENGTH,
        }
    }
}

/// Why a frame could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// The length field was negative.
    #[error("negative frame length {0}")]
    NegativeLength(i32),
    /// The frame is larger than the limit.
    #[error("frame length {len} exceeds the limit of {max} bytes")]
    TooLong {
        /// The declared length (without the prefix).
        len: usize,
        /// The largest accepted length field.
        max: usize,
    },
    /// The frame cannot even hold its header-length word.
    #[error("frame length {0} is too short for a header-length word")]
    TooShort(usize),
    /// The header length exceeds what the frame holds.
    #[error("decode error, bad header length: {header_len} (frame holds {available})")]
    BadHeaderLength {
        /// The declared header length.
        header_len: usize,
        /// Bytes available after the header-length word.
        available: usize,
    },
    /// The serialize-type byte is neither JSON nor ROCKETMQ.
    #[error("unknown serialize type {0}")]
    UnknownSerializeType(u8),
    /// The JSON header is malformed.
    #[error(transparent)]
    Json(#[from] JsonHeaderError),
    /// The binary header is malformed.
    #[error(transparent)]
    Binary(#[from] BinaryHeaderError),
}

/// Splits one complete frame off the front of `buf`, returning its content after the length
/// prefix, or `None` if more bytes are needed. The length is validated as soon as its four
/// bytes have arrived, so an oversized frame is rejected before it is buffered.
pub fn split_frame(buf: &mut BytesMut, limits: FrameLimits) -> Result<Option<Bytes>, DecodeError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if len < 0 {
        return Err(DecodeError::NegativeLength(len));
    }
    let len = len as usize;
    let max = limits.max_frame_length.saturating_sub(4);
    if len > max {
        return Err(DecodeError::TooLong { len, max });
    }
    if len < 4 {
        return Err(DecodeError::TooShort(len));
    }
    if buf.len() < 4 + len {
        buf.reserve(4 + len - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(len).freeze()))
}

/// Decodes a frame's content (as returned by [`split_frame`]) into a command, reporting which
/// header encoding it used.
pub fn decode_frame(mut frame: Bytes) -> Result<(RemotingCommand, SerializeType), DecodeError> {
    if frame.len() < 4 {
        return Err(DecodeError::TooShort(frame.len()));
    }
    let word = frame.get_u32();
    let header_len = (word & 0x00FF_FFFF) as usize;
    let type_byte = (word >> 24) as u8;
    if header_len > frame.len() {
        return Err(DecodeError::BadHeaderLength {
            header_len,
            available: frame.len(),
        });
    }
    let serialize_type =
        SerializeType::from_code(type_byte).ok_or(DecodeError::UnknownSerializeType(type_byte))?;
    let header = frame.split_to(header_len);
    let mut cmd = match serialize_type {
        SerializeType::Json => header_json::decode(&header)?,
        SerializeType::RocketMq => header_binary::decode(&header)?,
    };
    cmd.body = (!frame.is_empty()).then_some(frame);
    Ok((cmd, serialize_type))
}

/// Appends the whole frame of `cmd` (length prefix included) to `out`.
pub fn encode_frame(cmd: &RemotingCommand, serialize_type: SerializeType, out: &mut BytesMut) {
    let mut header = Vec::with_capacity(128);
    match serialize_type {
        SerializeType::Json => header_json::encode(cmd, &mut header),
        SerializeType::RocketMq => header_binary::encode(cmd, &mut header),
    }
    let body = cmd.body_bytes();
    out.reserve(8 + header.len() + body.len());
    out.put_i32((4 + header.len() + body.len()) as i32);
    out.put_u32(((serialize_type.code() as u32) << 24) | header.len() as u32);
    out.put_slice(&header);
    out.put_slice(body);
}

/// Encodes `cmd` into a fresh buffer.
pub fn encode_to_bytes(cmd: &RemotingCommand, serialize_type: SerializeType) -> Bytes {
    let mut out = BytesMut::new();
    encode_frame(cmd, serialize_type, &mut out);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    /// PROTOCOL.md §9.4, ROCKETMQ form of the unknown-code answer.
    const UNKNOWN_CODE_BINARY: &str = "00 00 00 38 01 00 00 34 00 03 00 01 df 00 00 00
        07 00 00 00 01 00 00 00 1f 20 72 65 71 75 65 73 74 20 74 79 70 65 20 39 39 39 20 6e
        6f 74 20 73 75 70 70 6f 72 74 65 64 00 00 00 00";

    #[test]
    fn worked_example_9_1_encodes_byte_for_byte() {
        let mut cmd = RemotingCommand::request(105, 1);
        cmd.ext_fields = Some([("topic", "TopicTest")].into_iter().collect());
        let bytes = encode_to_bytes(&cmd, SerializeType::Json);
        assert_eq!(bytes.len(), 139);
        assert_eq!(&bytes[..8], &hex("00 00 00 87 00 00 00 83")[..]);
        let mut buf = BytesMut::from(&bytes[..]);
        let frame = split_frame(&mut buf, FrameLimits::default())
            .unwrap()
            .unwrap();
        let (back, st) = decode_frame(frame).unwrap();
        assert_eq!(st, SerializeType::Json);
        assert_eq!(back, cmd);
    }

    #[test]
    fn worked_example_9_4_binary_answer_round_trips() {
        let wire = hex(UNKNOWN_CODE_BINARY);
        let mut buf = BytesMut::from(&wire[..]);
        let frame = split_frame(&mut buf, FrameLimits::default())
            .unwrap()
            .unwrap();
        assert!(buf.is_empty());
        let (cmd, st) = decode_frame(frame).unwrap();
        assert_eq!(st, SerializeType::RocketMq);
        assert_eq!(cmd.code, 3);
        assert_eq!(cmd.opaque, 7);
        assert!(cmd.is_response());
        assert_eq!(
            cmd.remark.as_deref(),
            Some(" request type 999 not supported")
        );
        assert_eq!(
            &encode_to_bytes(&cmd, SerializeType::RocketMq)[..],
            &wire[..]
        );
    }

    #[test]
    fn partial_frames_wait_for_more_bytes() {
        let bytes = encode_to_bytes(&RemotingCommand::request(1, 1), SerializeType::Json);
        for cut in 0..bytes.len() {
            let mut buf = BytesMut::from(&bytes[..cut]);
            assert!(
                split_frame(&mut buf, FrameLimits::default())
                    .unwrap()
                    .is_none()
            );
        }
    }

    #[test]
    fn length_limits_match_java() {
        let limits = FrameLimits::default();
        let mut ok = BytesMut::from(&16_777_212i32.to_be_bytes()[..]);
        assert!(split_frame(&mut ok, limits).unwrap().is_none());
        let mut big = BytesMut::from(&16_777_213i32.to_be_bytes()[..]);
        assert!(matches!(
            split_frame(&mut big, limits),
            Err(DecodeError::TooLong { .. })
        ));
        let mut neg = BytesMut::from(&(-1i32).to_be_bytes()[..]);
        assert!(matches!(
            split_frame(&mut neg, limits),
            Err(DecodeError::NegativeLength(-1))
        ));
        let mut short = BytesMut::from(&[0, 0, 0, 3, 0, 0, 0][..]);
        assert!(matches!(
            split_frame(&mut short, limits),
            Err(DecodeError::TooShort(3))
        ));
    }

    #[test]
    fn bad_header_length_and_type_are_errors() {
        let frame = Bytes::from(hex("00 00 00 05 7b"));
        assert!(matches!(
            decode_frame(frame),
            Err(DecodeError::BadHeaderLength { .. })
        ));
        let frame = Bytes::from(hex("02 00 00 00"));
        assert!(matches!(
            decode_frame(frame),
            Err(DecodeError::UnknownSerializeType(2))
        ));
    }
}
