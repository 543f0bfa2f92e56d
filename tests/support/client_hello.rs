//! A stalled TLS handshake's first bytes, shared by the prelude's unit tests, the integration
//! tests and the `abuse` example (each includes this file with `#[path]`).

/// Three full TLS records of a ClientHello that claims 60 000 bytes: rustls must hold all of
/// them while it waits for the rest.
pub fn partial_client_hello() -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..3 {
        out.extend_from_slice(&[0x16, 0x03, 0x01]);
        out.extend_from_slice(&16_384u16.to_be_bytes());
        let mut payload = vec![0u8; 16_384];
        if i == 0 {
            payload[0] = 1; // client_hello
            payload[1..4].copy_from_slice(&60_000u32.to_be_bytes()[1..]);
            payload[4..6].copy_from_slice(&[3, 3]);
        }
        out.extend_from_slice(&payload);
    }
    out
}
