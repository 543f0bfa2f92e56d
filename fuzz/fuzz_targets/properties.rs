//! Arbitrary bytes as a properties file (read like the server reads `namesrv.conf`: UTF-8
//! when valid, ISO-8859-1 otherwise). `parse` must never panic; when it succeeds,
//! `render_escaped` of the pairs must parse back to exactly the same pairs (the documented
//! property of `render_escaped`), and rendering those again gives the same text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use namesrv::config::properties::{decode_file_bytes, parse, render_escaped, render_raw};

fuzz_target!(|data: &[u8]| {
    let text = decode_file_bytes(data);
    let Ok(pairs) = parse(&text) else { return };
    let mut keys: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), pairs.len(), "parse returned a key twice");
    let entries = || pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    let rendered = render_escaped(entries());
    let back = parse(&rendered)
        .unwrap_or_else(|e| panic!("render_escaped output does not parse: {e}\n{rendered:?}"));
    assert_eq!(back, pairs, "render_escaped → parse\n{rendered:?}");
    assert_eq!(
        render_escaped(back.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
        rendered
    );
    // GET_NAMESRV_CONFIG's unescaped rendering has no round-trip promise; just run it.
    let _ = render_raw(entries());
});
