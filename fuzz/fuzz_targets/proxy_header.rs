//! Arbitrary bytes as the start of a connection, read as the server's prelude reads a PROXY
//! protocol header (v1 text, v2 binary). `parse` must never panic; a parsed header must lie
//! within the input and within the protocol's (and this server's) length limits, parse the
//! same without the bytes after it, and every shorter prefix of it must be `Incomplete` —
//! the server reads a header piece by piece relying on exactly that — and `detect` must agree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use namesrv::server::prelude::proxy::{
    Detect, ProxyError, V1_MAX_LEN, V2_MAX_LEN, detect, parse,
};

fuzz_target!(|data: &[u8]| {
    let parsed = parse(data);
    let kind = detect(data);
    match &parsed {
        Ok(_) => assert!(matches!(kind, Detect::V1 | Detect::V2)),
        Err(ProxyError::Incomplete) => assert!(kind != Detect::NotProxy),
        Err(_) => {}
    }
    let Ok(header) = parsed else { return };
    assert!(header.len <= data.len(), "header longer than its input");
    let limit = if kind == Detect::V1 { V1_MAX_LEN } else { V2_MAX_LEN };
    assert!(header.len <= limit, "header of {} bytes over the limit", header.len);
    assert_eq!(parse(&data[..header.len]), Ok(header), "trailing bytes changed the result");
    for cut in 0..header.len {
        assert_eq!(
            parse(&data[..cut]),
            Err(ProxyError::Incomplete),
            "a prefix of {cut} bytes of a valid header"
        );
    }
});
