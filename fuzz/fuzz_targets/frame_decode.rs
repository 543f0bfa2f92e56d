//! Arbitrary bytes as a TCP stream: split and decode frames with the default limits until
//! the stream ends or goes bad. Must never panic; every frame that decodes must survive
//! encode → split → decode in its own serialize type (modulo the documented normalisations,
//! see `namesrv_fuzz::view`), and re-encoding must be stable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    namesrv_fuzz::check_stream(data);
});
