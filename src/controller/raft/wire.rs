//! How openraft's RPCs ride in a remoting frame's body. AppendEntries and Vote requests, and
//! every answer (`Result<response, RaftError>`), are openraft's own serde JSON: readable in a
//! capture, and small beside the fsync each entry costs. An InstallSnapshot chunk carries
//! bytes, which JSON would inflate four times as an array of numbers, so its body is
//! `[u32 BE length][JSON of everything but the data][the data, raw]`.

use openraft::raft::InstallSnapshotRequest;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::types::{SnapshotMeta, TypeConfig, Vote};

/// The JSON of `value`.
pub(crate) fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("openraft's messages always serialise")
}

/// `body` read as JSON of `T`.
pub(crate) fn from_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    serde_json::from_slice(body).map_err(|e| format!("not a raft message: {e}"))
}

/// An InstallSnapshot chunk without its data.
#[derive(Serialize, Deserialize)]
struct ChunkHeader {
    vote: Vote,
    meta: SnapshotMeta,
    offset: u64,
    done: bool,
}

/// The body of an InstallSnapshot request.
pub(crate) fn snapshot_chunk(req: &InstallSnapshotRequest<TypeConfig>) -> Vec<u8> {
    let header = to_json(&ChunkHeader {
        vote: req.vote,
        meta: req.meta.clone(),
        offset: req.offset,
        done: req.done,
    });
    let mut body = Vec::with_capacity(4 + header.len() + req.data.len());
    body.extend_from_slice(&(header.len() as u32).to_be_bytes());
    body.extend_from_slice(&header);
    body.extend_from_slice(&req.data);
    body
}

/// An InstallSnapshot request read from its body.
pub(crate) fn parse_snapshot_chunk(
    body: &[u8],
) -> Result<InstallSnapshotRequest<TypeConfig>, String> {
    let len = body
        .get(..4)
        .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
        .ok_or("a snapshot chunk without its header length")?;
    let header = body
        .get(4..4 + len)
        .ok_or("a snapshot chunk shorter than its header")?;
    let header: ChunkHeader = from_json(header)?;
    Ok(InstallSnapshotRequest {
        vote: header.vote,
        meta: header.meta,
        offset: header.offset,
        data: body[4 + len..].to_vec(),
        done: header.done,
    })
}

#[cfg(test)]
mod tests {
    use openraft::raft::VoteRequest;

    use super::*;

    #[test]
    fn a_snapshot_chunk_keeps_its_bytes_raw() {
        let req = InstallSnapshotRequest::<TypeConfig> {
            vote: Vote::new(3, 9),
            meta: SnapshotMeta::default(),
            offset: 1024,
            data: vec![0, 255, 7],
            done: true,
        };
        let body = snapshot_chunk(&req);
        assert!(body.ends_with(&[0, 255, 7]));
        assert_eq!(parse_snapshot_chunk(&body).unwrap(), req);
    }

    #[test]
    fn short_or_foreign_bodies_are_refused() {
        assert!(parse_snapshot_chunk(&[0, 0]).is_err());
        assert!(parse_snapshot_chunk(&[0, 0, 0, 9, b'{']).is_err());
        assert!(parse_snapshot_chunk(&[0, 0, 0, 2, b'{', b'}']).is_err());
        assert!(from_json::<VoteRequest<u64>>(b"[1,2]").is_err());
    }
}
