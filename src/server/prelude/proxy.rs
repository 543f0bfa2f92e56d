//! The HAProxy PROXY protocol header (v1 text, v2 binary), as Java 5.3.3's Netty decoder
//! accepts it (`HAProxyMessageDecoder` in `NettyRemotingServer`): recognised by its signature at the very start of a connection,
//! parsed by the `ppp` crate, and reduced to what the server uses — the header's length, so
//! that exactly those bytes are consumed, and the client address it carries.
//!
//! Pure functions over byte slices (no I/O), so the fuzz target drives the same code as the
//! server. A v1 line is at most 107 bytes, CRLF included (as the protocol says); a v2 header
//! at most [`V2_MAX_LEN`] bytes here.

use std::net::SocketAddr;

/// The v2 signature: the first 12 bytes of every v2 header.
pub(crate) const V2_SIGNATURE: [u8; 12] = [
    0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A,
];
/// The v1 prefix.
pub(crate) const V1_PREFIX: &[u8; 5] = b"PROXY";
/// Longest v1 header, CRLF included.
pub const V1_MAX_LEN: usize = 107;
/// Bytes of a v2 header before its addresses: signature, version/command, family, length.
pub(crate) const V2_FIXED_LEN: usize = 16;
/// Longest v2 header accepted. The format allows 16 + 65535 bytes (and Netty accepts that);
/// load balancers send far less (addresses plus a few TLVs such as an endpoint id), and every
/// connection's header is held in memory until its handshake completes.
pub const V2_MAX_LEN: usize = 4096;

/// What the first bytes of a connection say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detect {
    /// Too few bytes to tell: every byte so far matches a signature.
    NeedMore,
    /// No PROXY header: the bytes are the client's own.
    NotProxy,
    /// A v1 (text) header starts here.
    V1,
    /// A v2 (binary) header starts here.
    V2,
}

/// Classifies the start of a connection, deciding as soon as one byte differs from both
/// signatures (Java waits for 12 bytes whatever they are; the answer is the same).
pub fn detect(start: &[u8]) -> Detect {
    let matches = |sig: &[u8]| {
        let n = start.len().min(sig.len());
        start[..n] == sig[..n]
    };
    match (matches(V1_PREFIX), matches(&V2_SIGNATURE)) {
        (true, _) if start.len() >= V1_PREFIX.len() => Detect::V1,
        (_, true) if start.len() >= V2_SIGNATURE.len() => Detect::V2,
        (false, false) => Detect::NotProxy,
        _ => Detect::NeedMore,
    }
}

/// A parsed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Its length in bytes: the client's own bytes start right after.
    pub len: usize,
    /// The client's address, when the header carries a TCP/IP one (not for v1 `UNKNOWN`, v2
    /// `LOCAL` — a load balancer's health check — nor unspecified or UNIX families).
    pub(crate) source: Option<SocketAddr>,
}

/// Why a header could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    /// More bytes are needed (a v2 header's total length is known after 16 bytes).
    #[error("incomplete PROXY header")]
    Incomplete,
    /// A v1 line longer than 107 bytes, or a v2 header longer than [`V2_MAX_LEN`].
    #[error("PROXY header longer than allowed (v1: {V1_MAX_LEN} bytes, v2: {V2_MAX_LEN})")]
    TooLong,
    /// Not a valid header.
    #[error("malformed PROXY header: {0}")]
    Malformed(String),
}

/// Parses the header at the start of `input` (bytes after it are ignored).
pub fn parse(input: &[u8]) -> Result<Header, ProxyError> {
    match detect(input) {
        Detect::NeedMore => Err(ProxyError::Incomplete),
        Detect::NotProxy => Err(ProxyError::Malformed("no PROXY signature".to_owned())),
        Detect::V1 => parse_v1(input),
        Detect::V2 => parse_v2(input),
    }
}

fn parse_v1(input: &[u8]) -> Result<Header, ProxyError> {
    let Some(end) = input.windows(2).position(|w| w == b"\r\n") else {
        // Whatever came so far (even a stray CR) is judged once the line is complete, so a
        // header read piece by piece gets the same answer as one read whole (the fuzz target
        // checks exactly that).
        return match input.len() {
            n if n >= V1_MAX_LEN => Err(ProxyError::TooLong),
            _ => Err(ProxyError::Incomplete),
        };
    };
    let len = end + 2;
    if len > V1_MAX_LEN {
        return Err(ProxyError::TooLong);
    }
    // The line ends at its first CRLF (as Netty reads it); a stray CR before that would make
    // the parser below end it elsewhere, so such a line is refused whatever it says.
    if input[..end].contains(&b'\r') {
        return Err(ProxyError::Malformed(
            "CR inside the header line".to_owned(),
        ));
    }
    let header = ppp::v1::Header::try_from(&input[..len])
        .map_err(|e| ProxyError::Malformed(e.to_string()))?;
    let source = match header.addresses {
        ppp::v1::Addresses::Unknown => None,
        ppp::v1::Addresses::Tcp4(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
        ppp::v1::Addresses::Tcp6(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
    };
    Ok(Header { len, source })
}

/// A v2 header's total length, from its first [`V2_FIXED_LEN`] bytes.
pub(crate) fn v2_len(fixed: &[u8]) -> usize {
    V2_FIXED_LEN + u16::from_be_bytes([fixed[14], fixed[15]]) as usize
}

fn parse_v2(input: &[u8]) -> Result<Header, ProxyError> {
    if input.len() < V2_FIXED_LEN {
        return Err(ProxyError::Incomplete);
    }
    let len = v2_len(input);
    if len > V2_MAX_LEN {
        return Err(ProxyError::TooLong);
    }
    if input.len() < len {
        return Err(ProxyError::Incomplete);
    }
    let header = ppp::v2::Header::try_from(&input[..len])
        .map_err(|e| ProxyError::Malformed(e.to_string()))?;
    // Netty decodes every TLV and fails the connection on a malformed one; so do we.
    if let Some(Err(e)) = header.tlvs().find(Result::is_err) {
        return Err(ProxyError::Malformed(format!("bad TLV: {e}")));
    }
    let source = match (header.command, header.addresses) {
        (ppp::v2::Command::Local, _) => None,
        (_, ppp::v2::Addresses::IPv4(a)) => {
            Some(SocketAddr::from((a.source_address, a.source_port)))
        }
        (_, ppp::v2::Addresses::IPv6(a)) => {
            Some(SocketAddr::from((a.source_address, a.source_port)))
        }
        _ => None,
    };
    Ok(Header { len, source })
}

/// The bytes of a v1 header for `source` → `destination` (tests, benches and the fuzz seeds).
pub fn v1_header(source: SocketAddr, destination: SocketAddr) -> Vec<u8> {
    let family = if source.is_ipv4() { "TCP4" } else { "TCP6" };
    format!(
        "PROXY {family} {} {} {} {}\r\n",
        source.ip(),
        destination.ip(),
        source.port(),
        destination.port()
    )
    .into_bytes()
}

/// The bytes of a v2 PROXY (or, without addresses, LOCAL) header with `tlvs` appended.
pub fn v2_header(addresses: Option<(SocketAddr, SocketAddr)>, tlvs: &[(u8, &[u8])]) -> Vec<u8> {
    let mut out = V2_SIGNATURE.to_vec();
    let mut body = Vec::new();
    match addresses {
        None => out.extend_from_slice(&[0x20, 0x00]),
        Some((SocketAddr::V4(s), SocketAddr::V4(d))) => {
            out.extend_from_slice(&[0x21, 0x11]);
            body.extend_from_slice(&s.ip().octets());
            body.extend_from_slice(&d.ip().octets());
            body.extend_from_slice(&s.port().to_be_bytes());
            body.extend_from_slice(&d.port().to_be_bytes());
        }
        Some((s, d)) => {
            let v6 = |a: SocketAddr| match a {
                SocketAddr::V4(v4) => v4.ip().to_ipv6_mapped(),
                SocketAddr::V6(v6) => *v6.ip(),
            };
            out.extend_from_slice(&[0x21, 0x21]);
            body.extend_from_slice(&v6(s).octets());
            body.extend_from_slice(&v6(d).octets());
            body.extend_from_slice(&s.port().to_be_bytes());
            body.extend_from_slice(&d.port().to_be_bytes());
        }
    }
    for (kind, value) in tlvs {
        body.push(*kind);
        body.extend_from_slice(&(value.len() as u16).to_be_bytes());
        body.extend_from_slice(value);
    }
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn detection_decides_on_the_first_differing_byte() {
        assert_eq!(detect(b""), Detect::NeedMore);
        assert_eq!(detect(&[0x00, 0x00, 0x01]), Detect::NotProxy);
        assert_eq!(detect(&[0x16, 0x03, 0x01]), Detect::NotProxy);
        assert_eq!(detect(b"PRO"), Detect::NeedMore);
        assert_eq!(detect(b"PROXY"), Detect::V1);
        assert_eq!(detect(b"PROXZ"), Detect::NotProxy);
        assert_eq!(detect(&V2_SIGNATURE[..7]), Detect::NeedMore);
        assert_eq!(detect(&V2_SIGNATURE), Detect::V2);
        let mut almost = V2_SIGNATURE;
        almost[11] = 0;
        assert_eq!(detect(&almost), Detect::NotProxy);
    }

    #[test]
    fn v1_headers_carry_the_client_address() {
        let h = v1_header(addr("10.1.2.3:4567"), addr("10.9.9.9:9876"));
        let mut input = h.clone();
        input.extend_from_slice(&[0, 0, 0, 9]);
        assert_eq!(
            parse(&input),
            Ok(Header {
                len: h.len(),
                source: Some(addr("10.1.2.3:4567"))
            })
        );
        let v6 = v1_header(addr("[2001:db8::1]:1"), addr("[2001:db8::2]:2"));
        assert_eq!(parse(&v6).unwrap().source, Some(addr("[2001:db8::1]:1")));
        assert_eq!(
            parse(b"PROXY UNKNOWN\r\nxyz"),
            Ok(Header {
                len: 15,
                source: None
            })
        );
        assert_eq!(parse(&h[..h.len() - 1]), Err(ProxyError::Incomplete));
        assert_eq!(parse(b"PROXY TCP4 1.2.3"), Err(ProxyError::Incomplete));
    }

    #[test]
    fn bad_v1_headers_are_refused() {
        let long = format!("PROXY TCP4 {}\r\n", "1".repeat(120));
        assert_eq!(parse(long.as_bytes()), Err(ProxyError::TooLong));
        assert_eq!(
            parse(&[b'P'; 200][..]),
            Err(ProxyError::Malformed("no PROXY signature".into()))
        );
        assert_eq!(
            parse("PROXY ".repeat(30).as_bytes()),
            Err(ProxyError::TooLong)
        );
        assert!(matches!(
            parse(b"PROXY TCP4 1.2.3.999 1.2.3.4 1 2\r\n"),
            Err(ProxyError::Malformed(_))
        ));
        assert!(matches!(
            parse(b"PROXY TCP4 1.2.3.4 1.2.3.4 1 2\rX\r\n"),
            Err(ProxyError::Malformed(_))
        ));
        // A stray CR is refused once the line is complete, and only then.
        assert_eq!(parse(b"PROXY UNKNOWN a\rb"), Err(ProxyError::Incomplete));
        assert!(matches!(
            parse(b"PROXY UNKNOWN a\rb\r\n"),
            Err(ProxyError::Malformed(_))
        ));
        assert!(matches!(
            parse(b"PROXY TCP9 1.2.3.4 1.2.3.4 1 2\r\n"),
            Err(ProxyError::Malformed(_))
        ));
    }

    #[test]
    fn v2_headers_carry_the_client_address_and_may_have_tlvs() {
        let h = v2_header(
            Some((addr("192.0.2.7:5000"), addr("192.0.2.1:9876"))),
            &[(0x04, b"hello")],
        );
        assert_eq!(
            parse(&h),
            Ok(Header {
                len: h.len(),
                source: Some(addr("192.0.2.7:5000"))
            })
        );
        let v6 = v2_header(Some((addr("[::1]:7"), addr("[::2]:8"))), &[]);
        assert_eq!(parse(&v6).unwrap().source, Some(addr("[::1]:7")));
        let local = v2_header(None, &[]);
        assert_eq!(
            parse(&local),
            Ok(Header {
                len: 16,
                source: None
            })
        );
        let mut huge = v2_header(None, &[(0x20, &[b'x'; 5000])]);
        assert_eq!(parse(&huge), Err(ProxyError::TooLong));
        huge.truncate(16);
        assert_eq!(
            parse(&huge),
            Err(ProxyError::TooLong),
            "known from the length field"
        );
        for cut in [12, 15, h.len() - 1] {
            assert_eq!(
                parse(&h[..cut]),
                Err(ProxyError::Incomplete),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn bad_v2_headers_are_refused() {
        let good = v2_header(Some((addr("192.0.2.7:5000"), addr("192.0.2.1:9876"))), &[]);
        let mut version = good.clone();
        version[12] = 0x11;
        assert!(matches!(parse(&version), Err(ProxyError::Malformed(_))));
        let mut short = good.clone();
        short[14..16].copy_from_slice(&4u16.to_be_bytes());
        assert!(matches!(parse(&short), Err(ProxyError::Malformed(_))));
        // A TLV claiming more bytes than the header has.
        let mut tlv = good.clone();
        tlv.extend_from_slice(&[0x04, 0x00, 0x09, b'x']);
        let len = (tlv.len() - 16) as u16;
        tlv[14..16].copy_from_slice(&len.to_be_bytes());
        assert!(matches!(parse(&tlv), Err(ProxyError::Malformed(_))));
    }
}
