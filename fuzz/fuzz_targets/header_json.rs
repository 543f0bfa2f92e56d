//! Arbitrary bytes as a JSON header (serialize type 0). Must never panic; a header that
//! decodes must round-trip through `header_json::encode` (an absent language reads back as
//! JAVA) and re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use namesrv::protocol::{SerializeType, header_json};

fuzz_target!(|data: &[u8]| {
    namesrv_fuzz::check_decoded_header(header_json::decode(data), SerializeType::Json);
});
