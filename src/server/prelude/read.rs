//! Reading the start of a connection for the prelude: the bytes that decide whether a PROXY
//! header is there, and the header itself. Every wait is for the socket's readiness, so a
//! connection that stops sending costs nothing until it sends or closes; bytes read past a
//! header stay in the caller's buffer, which goes on in front of the socket.

use bytes::BufMut;
use tokio::net::TcpStream;

use super::proxy::{self, Detect, ProxyError};
use super::{FIRST_READ, Holding, PreludeError};

/// Reads into `head` what the socket has, up to `upto` bytes in all, waiting for the
/// socket's readiness (so a silent peer costs nothing until it sends or closes).
pub(super) async fn read_more(
    socket: &TcpStream,
    head: &mut Vec<u8>,
    upto: usize,
) -> Result<(), PreludeError> {
    let room = upto.saturating_sub(head.len());
    head.reserve_exact(room);
    loop {
        socket.readable().await?;
        // Into the spare room only: no zeroing, and nothing half-done if the wait is dropped.
        match socket.try_read_buf(&mut (&mut *head).limit(room)) {
            Ok(0) => return Err(PreludeError::Eof),
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Reads until the first bytes say whether a PROXY header starts here: every wait is for
/// new bytes, as a connection whose bytes so far are a prefix of a signature has nothing
/// else to offer.
pub(super) async fn detect(socket: &TcpStream, head: &mut Vec<u8>) -> Result<Detect, PreludeError> {
    loop {
        match proxy::detect(head) {
            Detect::NeedMore => read_more(socket, head, FIRST_READ).await?,
            decided => return Ok(decided),
        }
    }
}

/// Reads the PROXY header that starts `head` and parses it; bytes read past its end stay in
/// `head` (they are the client's own).
pub(super) async fn read_proxy(
    socket: &TcpStream,
    head: &mut Vec<u8>,
    holding: &Holding,
) -> Result<proxy::Header, PreludeError> {
    loop {
        match proxy::parse(head) {
            Err(ProxyError::Incomplete) => {}
            parsed => return parsed.map_err(PreludeError::Proxy),
        }
        // No further than the header can reach: a v2 header's length is known after its
        // fixed part, and a v1 line ends within its first 107 bytes.
        let upto = match proxy::detect(head) {
            Detect::V2 if head.len() >= proxy::V2_FIXED_LEN => proxy::v2_len(head),
            Detect::V2 => proxy::V2_FIXED_LEN,
            _ => proxy::V1_MAX_LEN,
        };
        if !holding.report(upto) {
            return Err(PreludeError::Evicted);
        }
        read_more(socket, head, upto).await?;
    }
}
