//! Arbitrary bytes as a binary ROCKETMQ header (serialize type 1). Must never panic; a
//! header that decodes must round-trip through `header_binary::encode` (empty strings read
//! back as absent) and re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use namesrv::protocol::{SerializeType, header_binary};

fuzz_target!(|data: &[u8]| {
    namesrv_fuzz::check_decoded_header(header_binary::decode(data), SerializeType::RocketMq);
});
