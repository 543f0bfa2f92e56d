//! Arbitrary bytes as a binary ROCKETMQ header (serialize type 1). Must never panic; a
//! header that decodes must round-trip through `header_binary::encode` (empty strings read
//! back as absent) and re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use namesrv::protocol::{SerializeType, header_binary};

fuzz_target!(|data: &[u8]| {
    if let Ok(cmd) = header_binary::decode(data) {
        assert!(cmd.body.is_none());
        namesrv_fuzz::check_header_round_trip(&cmd, SerializeType::RocketMq);
        namesrv_fuzz::check_frame_round_trip(&cmd, SerializeType::RocketMq);
    }
});
