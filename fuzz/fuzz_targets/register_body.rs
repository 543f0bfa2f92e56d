//! Arbitrary bytes as a REGISTER_BROKER body, read as JSON and as a zlib body, for a
//! pre-V3_0_11 broker (bare wrapper), a 4.x broker (no mapping section) and a 5.x broker.
//! Must never panic. When a body decodes, everything the route table later asks of it must
//! work without panicking: the topic index, each config's parse and fingerprint, the digests,
//! and the data version and mappings re-encode to JSON that reads back the same.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use namesrv::protocol::body::{DataVersion, DecodeOptions, MappingInfo, RegisterBody};
use namesrv::protocol::json::{JsonStyle, JsonWriter};

/// The server allows a compressed body to inflate to many times the frame limit; the fuzzer
/// keeps a smaller bound so a zlib bomb costs milliseconds, not seconds.
const MAX_INFLATED: usize = 8 << 20;

fuzz_target!(|data: &[u8]| {
    let bytes = Bytes::copy_from_slice(data);
    for version in [30, 400, 479] {
        for compressed in [false, true] {
            let opts = DecodeOptions {
                compressed,
                version,
                max_inflated: MAX_INFLATED,
            };
            if let Ok(body) = RegisterBody::decode(bytes.clone(), opts) {
                exercise(&body, version);
            }
        }
    }
});

fn exercise(body: &RegisterBody, version: i32) {
    let _ = body.digest();
    let _ = body.table_digest();
    // Pre-V3_0_11 bodies carry no list; later JSON bodies may say `null` (Java then leaves
    // the stored list alone), so only the first case is certain.
    if version < 37 {
        assert!(body.filter_server_list.is_none());
    }
    let count = body.topic_count();
    match body.topics() {
        Ok(topics) => {
            assert_eq!(count.ok(), Some(topics.len()), "topic_count vs topics()");
            for t in topics {
                let _ = t.key.len();
                let _ = t.fingerprint(0);
                let _ = t.fingerprint(1);
                let _ = t.parse();
            }
        }
        Err(_) => assert!(count.is_err(), "topics() failed but topic_count() did not"),
    }
    check_data_version(&body.data_version);
    for (_, info) in &body.mappings {
        check_mapping(info);
    }
}

fn check_data_version(dv: &DataVersion) {
    let json = dv.to_json();
    let back = DataVersion::from_json(&json).expect("DataVersion::to_json reads back");
    assert_eq!(
        (back.state_version, back.timestamp, back.counter),
        (dv.state_version, dv.timestamp, dv.counter),
        "DataVersion JSON round trip of {}",
        String::from_utf8_lossy(&json)
    );
}

fn check_mapping(info: &MappingInfo) {
    for style in [JsonStyle::Legacy, JsonStyle::Standard] {
        let mut out = Vec::new();
        info.write_json(&mut JsonWriter::new(&mut out, style));
        let back = MappingInfo::from_json(&out).unwrap_or_else(|e| {
            panic!(
                "MappingInfo {style:?} JSON does not read back: {e}\n{}",
                String::from_utf8_lossy(&out)
            )
        });
        assert_eq!(
            &back,
            info,
            "MappingInfo {style:?} JSON round trip of {}",
            String::from_utf8_lossy(&out)
        );
    }
}
