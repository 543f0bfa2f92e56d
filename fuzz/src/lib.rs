//! Helpers shared by the fuzz targets: the documented normalisations of the two header
//! encodings, and the round-trip checks built on them.

use bytes::BytesMut;
use namesrv::protocol::{
    ExtFields, FrameLimits, LanguageCode, RemotingCommand, SerializeType, decode_frame,
    encode_frame, header_binary, header_json, split_frame,
};

/// What the JSON encoding can carry: an absent language is omitted on the wire and reads
/// back as JAVA (fastjson's field initialiser), exactly as the proptests in `frame.rs` say.
pub fn json_view(mut cmd: RemotingCommand) -> RemotingCommand {
    cmd.language = cmd.language.or(Some(LanguageCode::Java));
    cmd
}

/// What the binary encoding can carry: keys longer than a signed 16-bit length are not
/// written; an ext block with no entry written has length 0, i.e. is absent; empty strings
/// read back as absent (and such entries are dropped).
pub fn binary_view(mut cmd: RemotingCommand) -> RemotingCommand {
    cmd.remark = cmd.remark.filter(|r| !r.is_empty());
    cmd.ext_fields = cmd.ext_fields.and_then(|f| {
        let written: Vec<(&str, &str)> = f
            .iter()
            .filter(|(k, _)| k.len() <= i16::MAX as usize)
            .collect();
        (!written.is_empty()).then(|| {
            written
                .into_iter()
                .filter(|(k, v)| !k.is_empty() && !v.is_empty())
                .collect::<ExtFields>()
        })
    });
    cmd
}

/// The normalisation of `st`.
pub fn view(cmd: RemotingCommand, st: SerializeType) -> RemotingCommand {
    match st {
        SerializeType::Json => json_view(cmd),
        SerializeType::RocketMq => binary_view(cmd),
    }
}

/// Encodes `cmd` as a whole frame in `st`, splits and decodes it again, and checks that the
/// result is `view(cmd)` and that encoding the result gives the same bytes as encoding
/// `view(cmd)` (ext fields compare without order, so this also checks that encoding does not
/// depend on the order in which they were read).
pub fn check_frame_round_trip(cmd: &RemotingCommand, st: SerializeType) {
    let mut wire = BytesMut::new();
    encode_frame(cmd, st, &mut wire);
    let mut first = BytesMut::new();
    encode_frame(&view(cmd.clone(), st), st, &mut first);
    let frame = split_frame(&mut wire, FrameLimits::default())
        .expect("an encoded frame splits")
        .expect("an encoded frame is complete");
    assert!(
        wire.is_empty(),
        "encode_frame wrote {} bytes past the frame",
        wire.len()
    );
    let (back, got_st) = decode_frame(frame).expect("an encoded frame decodes");
    assert_eq!(got_st, st, "serialize type changed in the round trip");
    assert_eq!(back, view(cmd.clone(), st), "frame round trip in {st:?}");
    let mut again = BytesMut::new();
    encode_frame(&back, st, &mut again);
    assert_eq!(
        &again[..],
        &first[..],
        "re-encoding a decoded frame in {st:?}"
    );
}

/// The check of the header targets: a header `decoded` from arbitrary bytes in `st` has no
/// body, and round-trips alone and framed.
pub fn check_decoded_header<E>(decoded: Result<RemotingCommand, E>, st: SerializeType) {
    if let Ok(cmd) = decoded {
        assert!(cmd.body.is_none());
        check_header_round_trip(&cmd, st);
        check_frame_round_trip(&cmd, st);
    }
}

/// Encodes a header in `st`, decodes it and checks the round trip as
/// [`check_frame_round_trip`] does, without the framing.
pub fn check_header_round_trip(cmd: &RemotingCommand, st: SerializeType) {
    let mut header = Vec::new();
    let back = match st {
        SerializeType::Json => {
            header_json::encode(cmd, &mut header);
            header_json::decode(&header).expect("an encoded JSON header decodes")
        }
        SerializeType::RocketMq => {
            header_binary::encode(cmd, &mut header);
            header_binary::decode(&header).expect("an encoded binary header decodes")
        }
    };
    let mut expected = view(cmd.clone(), st);
    expected.body = None;
    assert_eq!(back, expected, "header round trip in {st:?}");
    let encode = |c: &RemotingCommand| {
        let mut out = Vec::new();
        match st {
            SerializeType::Json => header_json::encode(c, &mut out),
            SerializeType::RocketMq => header_binary::encode(c, &mut out),
        }
        out
    };
    assert_eq!(
        encode(&back),
        encode(&expected),
        "re-encoding a decoded header in {st:?}"
    );
}

/// Splits and decodes every frame of `data` with the default limits, checking the round trip
/// of every frame that decodes. Returns how many frames decoded.
pub fn check_stream(data: &[u8]) -> usize {
    let limits = FrameLimits::default();
    let mut buf = BytesMut::from(data);
    let mut decoded = 0;
    loop {
        let before = buf.len();
        match split_frame(&mut buf, limits) {
            Ok(Some(frame)) => {
                assert_eq!(before - buf.len(), frame.len() + 4, "split_frame consumed");
                if let Ok((cmd, st)) = decode_frame(frame) {
                    decoded += 1;
                    check_frame_round_trip(&cmd, st);
                }
            }
            Ok(None) => {
                assert_eq!(buf.len(), before, "a partial frame consumed bytes");
                break;
            }
            Err(_) => break,
        }
    }
    decoded
}
