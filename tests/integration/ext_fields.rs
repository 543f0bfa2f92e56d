//! Ext-field decoding cost: a header with more than `MAX_EXT_FIELDS` entries is refused the
//! way Java refuses a header it cannot decode (the connection closes without a reply), in both
//! encodings, and a header at the cap is served. Decoding is linear, so even a 16 MB header of
//! tiny fields is dropped at once while other clients keep being served.

use bytes::BytesMut;
use namesrv::protocol::code::{request, response};
use namesrv::protocol::command::MAX_EXT_FIELDS;
use namesrv::protocol::{ExtFields, RemotingCommand, SerializeType, encode_frame};

use crate::harness::{TestServer, route};

/// A route request for `NoSuchTopic` with `n` ext fields in all (`topic` among them).
fn route_request(n: usize, st: SerializeType) -> BytesMut {
    let mut pairs = vec![("topic".to_owned(), "NoSuchTopic".to_owned())];
    pairs.extend((1..n).map(|i| (format!("f{i}"), "v".to_owned())));
    let mut cmd = RemotingCommand::request(request::GET_ROUTEINFO_BY_TOPIC, 7);
    cmd.ext_fields = Some(ExtFields::from_pairs(pairs));
    let mut wire = BytesMut::new();
    encode_frame(&cmd, st, &mut wire);
    wire
}

#[tokio::test]
async fn more_ext_fields_than_the_cap_close_the_connection_in_both_encodings() {
    let server = TestServer::start().await;
    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let mut at_cap = server.client().await;
        at_cap.send_raw(&route_request(MAX_EXT_FIELDS, st)).await;
        let resp = at_cap.recv().await.expect("a header at the cap is served");
        assert_eq!(
            (resp.code, resp.opaque),
            (response::TOPIC_NOT_EXIST, 7),
            "{st:?}"
        );
        for n in [MAX_EXT_FIELDS + 1, 100_000] {
            let mut over = server.client().await;
            over.send_raw(&route_request(n, st)).await;
            assert!(
                over.closed_without_reply().await,
                "{st:?}: {n} ext fields were answered"
            );
        }
    }
    let mut other = server.client().await;
    assert_eq!(route(&mut other, "x").await.code, response::TOPIC_NOT_EXIST);
}

#[tokio::test]
async fn a_16_mb_header_of_tiny_fields_is_dropped_while_others_are_served() {
    let server = TestServer::start().await;
    // `"fNNNNNNN":"",` is 14 bytes: about 1.19 M fields in a JSON header just under 16 MB.
    let mut header = Vec::with_capacity(16_700_000);
    header.extend_from_slice(br#"{"code":105,"extFields":{"topic":"T""#);
    let mut i = 0u32;
    while header.len() < 16_700_000 {
        header.extend_from_slice(format!(r#","f{i:07}":"""#).as_bytes());
        i += 1;
    }
    header.extend_from_slice(br#"},"flag":0,"opaque":1}"#);
    let mut frame = Vec::with_capacity(header.len() + 8);
    frame.extend_from_slice(&((4 + header.len()) as i32).to_be_bytes());
    frame.extend_from_slice(&(header.len() as u32).to_be_bytes());
    frame.extend_from_slice(&header);
    let mut attacker = server.client().await;
    let mut other = server.client().await;
    let send = tokio::spawn(async move {
        // The server may close before reading everything: a failed write is fine.
        let _ = tokio::io::AsyncWriteExt::write_all(&mut attacker.stream, &frame).await;
        attacker
    });
    assert_eq!(route(&mut other, "x").await.code, response::TOPIC_NOT_EXIST);
    let mut attacker = send.await.unwrap();
    assert!(attacker.closed_without_reply().await);
    assert_eq!(route(&mut other, "y").await.code, response::TOPIC_NOT_EXIST);
}
