//! Framing: splitting a byte stream into frames and turning a frame into a
//! [`RemotingCommand`] and back. Pure functions over buffers; no I/O happens here.
//!
//! A partial frame is `Ok(None)`, not an error. Every error means the stream can no longer be
//! trusted: the connection is closed without a reply, as Java's `NettyDecoder#decode` does.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::code::SerializeType;
use super::command::RemotingCommand;
use super::header_binary::{self, BinaryHeaderError};
use super::header_json::{self, JsonHeaderError};

/// Java's default `com.rocketmq.remoting.frameMaxLength`: the largest frame counting its
/// 4-byte length prefix. The largest accepted length field is 4 less (16 777 212).
pub(crate) const DEFAULT_FRAME_MAX_LENGTH: usize = 16 * 1024 * 1024;

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
#[cfg(test)]
pub(crate) fn encode_to_bytes(cmd: &RemotingCommand, serialize_type: SerializeType) -> Bytes {
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

    /// The unknown-code answer in the binary ROCKETMQ header form.
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

    /// The answer to the route request above with a standard-JSON route body, 368 bytes.
    const ROUTE_RESPONSE: &str = "00 00 01 6c 00 00 00 5f 7b 22 63 6f 64 65 22 3a
        30 2c 22 66 6c 61 67 22 3a 31 2c 22 6c 61 6e 67 75 61 67 65 22 3a 22 4a 41 56 41 22 2c
        22 6f 70 61 71 75 65 22 3a 31 2c 22 73 65 72 69 61 6c 69 7a 65 54 79 70 65 43 75 72 72
        65 6e 74 52 50 43 22 3a 22 4a 53 4f 4e 22 2c 22 76 65 72 73 69 6f 6e 22 3a 34 37 39 7d
        7b 22 62 72 6f 6b 65 72 44 61 74 61 73 22 3a 5b 7b 22 62 72 6f 6b 65 72 41 64 64 72 73
        22 3a 7b 22 30 22 3a 22 31 39 32 2e 31 36 38 2e 30 2e 31 30 3a 31 30 39 31 31 22 7d 2c
        22 62 72 6f 6b 65 72 4e 61 6d 65 22 3a 22 62 72 6f 6b 65 72 2d 61 22 2c 22 63 6c 75 73
        74 65 72 22 3a 22 44 65 66 61 75 6c 74 43 6c 75 73 74 65 72 22 2c 22 65 6e 61 62 6c 65
        41 63 74 69 6e 67 4d 61 73 74 65 72 22 3a 66 61 6c 73 65 7d 5d 2c 22 66 69 6c 74 65 72
        53 65 72 76 65 72 54 61 62 6c 65 22 3a 7b 7d 2c 22 71 75 65 75 65 44 61 74 61 73 22 3a
        5b 7b 22 62 72 6f 6b 65 72 4e 61 6d 65 22 3a 22 62 72 6f 6b 65 72 2d 61 22 2c 22 70 65
        72 6d 22 3a 36 2c 22 72 65 61 64 51 75 65 75 65 4e 75 6d 73 22 3a 34 2c 22 74 6f 70 69
        63 53 79 73 46 6c 61 67 22 3a 30 2c 22 77 72 69 74 65 51 75 65 75 65 4e 75 6d 73 22 3a
        34 7d 5d 7d";

    #[test]
    fn worked_example_9_3_route_response_encodes_byte_for_byte() {
        use crate::protocol::body::{BrokerData, QueueData, TopicRouteData};
        use crate::protocol::json::JsonStyle;
        let broker = BrokerData {
            cluster: "DefaultCluster".into(),
            broker_name: "broker-a".into(),
            addrs: [(0, "192.168.0.10:10911".into())].into(),
            zone_name: None,
            enable_acting_master: false,
        };
        let queue = QueueData {
            broker_name: "broker-a".into(),
            read_queue_nums: 4,
            write_queue_nums: 4,
            perm: 6,
            topic_sys_flag: 0,
        };
        let route = TopicRouteData {
            queue_datas: vec![&queue],
            broker_datas: vec![std::borrow::Cow::Owned(broker)],
            ..Default::default()
        };
        let mut resp = RemotingCommand::success().with_body(route.encode(JsonStyle::Standard));
        resp.opaque = 1;
        let wire = encode_to_bytes(&resp, SerializeType::Json);
        assert_eq!(&wire[..], &hex(ROUTE_RESPONSE)[..]);
        assert_eq!(wire.len(), 368);
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

#[cfg(test)]
mod roundtrip {
    //! Property: any command survives encode → split → decode, in both encodings.
    use bytes::{Bytes, BytesMut};
    use proptest::prelude::*;

    use super::*;
    use crate::protocol::{ExtFields, LanguageCode};

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9_:.%|-]{0,24}",
            any::<String>().prop_map(|s| s.chars().take(40).collect()),
            Just("quote\" back\\slash / \u{0} \u{7f} é 😀".to_owned()),
        ]
    }

    prop_compose! {
        fn command()(
            code in any::<i16>(),
            lang in proptest::option::of(0u8..14),
            version in any::<i16>(),
            opaque in any::<i32>(),
            flag in any::<i32>(),
            remark in proptest::option::of(text()),
            ext in proptest::option::of(proptest::collection::vec((text(), text()), 0..6)),
            body in proptest::option::of(proptest::collection::vec(any::<u8>(), 1..300)),
        ) -> RemotingCommand {
            RemotingCommand {
                code: code as i32,
                language: lang.and_then(LanguageCode::from_code),
                version: version as i32,
                opaque,
                flag,
                remark,
                ext_fields: ext.map(|pairs| pairs.into_iter().collect::<ExtFields>()),
                body: body.map(Bytes::from),
            }
        }
    }

    /// What the binary encoding can carry: empty strings read back as absent.
    fn binary_view(mut cmd: RemotingCommand) -> RemotingCommand {
        cmd.remark = cmd.remark.filter(|r| !r.is_empty());
        cmd.ext_fields = cmd.ext_fields.and_then(|f| {
            // An ext block without entries is written as length 0, i.e. absent; entries with
            // an empty key or value are written but read back as nulls, which are dropped.
            (!f.is_empty()).then(|| {
                f.iter()
                    .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                    .collect::<ExtFields>()
            })
        });
        cmd
    }

    fn round_trip(cmd: &RemotingCommand, st: SerializeType) -> RemotingCommand {
        let mut wire = BytesMut::new();
        encode_frame(cmd, st, &mut wire);
        let frame = split_frame(&mut wire, FrameLimits::default())
            .unwrap()
            .unwrap();
        assert!(wire.is_empty());
        let (back, got_st) = decode_frame(frame).unwrap();
        assert_eq!(got_st, st);
        back
    }

    proptest! {
        #[test]
        fn json_round_trips(cmd in command()) {
            // As with fastjson, an absent language is omitted and reads back as JAVA.
            let mut expected = cmd.clone();
            expected.language = expected.language.or(Some(LanguageCode::Java));
            prop_assert_eq!(round_trip(&cmd, SerializeType::Json), expected);
        }

        #[test]
        fn binary_round_trips(cmd in command()) {
            let expected = binary_view(cmd.clone());
            prop_assert_eq!(round_trip(&cmd, SerializeType::RocketMq), expected);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let mut buf = BytesMut::from(&bytes[..]);
            while let Ok(Some(frame)) = split_frame(&mut buf, FrameLimits::default()) {
                let _ = decode_frame(frame);
            }
        }
    }
}
