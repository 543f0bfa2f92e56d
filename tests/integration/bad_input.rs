//! Hostile or absurd input inside well-formed frames: invalid JSON and zlib bodies, wrong
//! checksums, absurd numbers and invalid UTF-8 are answered (or the connection closed) without
//! disturbing the server or other connections.

use namesrv::protocol::code::{request, response};

use crate::harness::{TestServer, body_text, register_body, register_ext, route};

#[tokio::test]
async fn absurd_numbers_are_stored_as_java_would_and_never_crash() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let body = br#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":-1,"stateVersion":-9,"timestamp":-5},"topicConfigTable":{"Neg":{"topicName":"Neg","readQueueNums":-5,"writeQueueNums":2147483647,"perm":-1},"Huge":{"topicName":"Huge","readQueueNums":99999999999}}}}"#;
    for id in ["9223372036854775807", "-9223372036854775808", "-1"] {
        let addr = format!("10.0.0.{}:1", id.len());
        let resp = c
            .call(
                request::REGISTER_BROKER,
                &register_ext("absurd", &addr, id),
                Some(body),
            )
            .await;
        assert_eq!(resp.code, 0, "id {id}: {:?}", resp.remark);
    }
    let text = body_text(&route(&mut c, "Neg").await);
    assert!(
        text.contains(r#""readQueueNums":-5"#) && text.contains(r#""perm":-1"#),
        "{text}"
    );
    // 99999999999 does not fit an int: Java's intValue() wraps it.
    assert!(body_text(&route(&mut c, "Huge").await).contains(r#""readQueueNums":1215752191"#));
    let overflow = c
        .call(
            request::REGISTER_BROKER,
            &register_ext("absurd", "10.0.0.9:1", "9223372036854775808"),
            Some(body),
        )
        .await;
    assert_eq!(overflow.code, response::SYSTEM_ERROR);
    let timeout = {
        let mut ext = register_ext("t", "10.0.0.8:1", "0");
        ext.push(("heartbeatTimeoutMillis", "-100"));
        c.call(
            request::REGISTER_BROKER,
            &ext,
            Some(&register_body(1, &["A", "B"])),
        )
        .await
    };
    assert_eq!(timeout.code, 0);
}

#[tokio::test]
async fn invalid_bodies_are_system_errors_and_change_nothing() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    type Case<'a> = (&'a str, &'a [u8], &'a [(&'a str, &'a str)]);
    let cases: [Case<'_>; 6] = [
        ("invalid JSON", b"{\"topicConfigSerializeWrapper\":", &[]),
        (
            "invalid UTF-8 in a key",
            b"{\"topicConfigSerializeWrapper\":{\"topicConfigTable\":{\"\xff\xfe\":{}}}}",
            &[],
        ),
        (
            "a number where an object belongs",
            b"{\"topicConfigSerializeWrapper\":7}",
            &[],
        ),
        (
            "invalid zlib",
            b"\x78\x9c\x01\x02\x03\x04",
            &[("compressed", "true")],
        ),
        (
            "zlib of garbage",
            &[
                0x78, 0x9c, 0x4b, 0x4c, 0x4a, 0x06, 0x00, 0x02, 0x4d, 0x01, 0x27,
            ],
            &[("compressed", "true")],
        ),
        ("wrong CRC", b"{}", &[("bodyCrc32", "1")]),
    ];
    for (what, body, extra) in cases {
        let mut ext = register_ext("bad", "10.0.0.1:10911", "0");
        ext.retain(|(k, _)| !extra.iter().any(|(e, _)| e == k));
        ext.extend_from_slice(extra);
        let resp = c.call(request::REGISTER_BROKER, &ext, Some(body)).await;
        assert_eq!(resp.code, response::SYSTEM_ERROR, "{what}");
    }
    let info = c.call(request::GET_BROKER_CLUSTER_INFO, &[], None).await;
    assert_eq!(
        body_text(&info),
        r#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#
    );
    let qdv_fields = [
        ("brokerName", "b"),
        ("brokerAddr", "a"),
        ("clusterName", "c"),
        ("brokerId", "0"),
    ];
    let qdv = c
        .call(request::QUERY_DATA_VERSION, &qdv_fields, Some(b"not json"))
        .await;
    assert_eq!(qdv.code, response::SYSTEM_ERROR);
    // What fastjson decodes to null is no version at all: changed, as for an absent body.
    for body in [&b"null"[..], b" ", b"\xff{}"] {
        let qdv = c
            .call(request::QUERY_DATA_VERSION, &qdv_fields, Some(body))
            .await;
        assert_eq!(
            (qdv.code, qdv.ext("changed")),
            (0, Some("true")),
            "{body:?}"
        );
    }
    let upd = c
        .call(request::UPDATE_NAMESRV_CONFIG, &[], Some(b"\xff\xfe=\xfd"))
        .await;
    assert_eq!(
        upd.code, 0,
        "lossy UTF-8, unknown key: ignored as Java ignores unknown keys"
    );
}

#[tokio::test]
async fn invalid_utf8_in_headers() {
    let server = TestServer::start().await;
    // A JSON header that is not UTF-8 cannot be read: the connection closes.
    let mut bad = server.client().await;
    let header = b"{\"code\":105,\"extFields\":{\"topic\":\"\xff\"}}";
    let mut frame = Vec::new();
    frame.extend_from_slice(&((4 + header.len()) as i32).to_be_bytes());
    frame.extend_from_slice(&(header.len() as u32).to_be_bytes());
    frame.extend_from_slice(header);
    bad.send_raw(&frame).await;
    assert!(bad.closed_without_reply().await);
    // Binary headers decode strings leniently (as Java's new String does).
    let mut ok = server.client().await;
    let mut h = vec![0, 105, 0, 1, 223, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0];
    let ext = [&[0u8, 5][..], b"topic", &[0, 0, 0, 2], &[0xff, 0xfe]].concat();
    h.extend_from_slice(&(ext.len() as i32).to_be_bytes());
    h.extend_from_slice(&ext);
    let mut frame = Vec::new();
    frame.extend_from_slice(&((4 + h.len()) as i32).to_be_bytes());
    frame.extend_from_slice(&(0x0100_0000u32 | h.len() as u32).to_be_bytes());
    frame.extend_from_slice(&h);
    ok.send_raw(&frame).await;
    let resp = ok.recv().await.unwrap();
    assert_eq!((resp.code, resp.opaque), (response::TOPIC_NOT_EXIST, 9));
}

#[tokio::test]
async fn truncated_frames_with_half_close_are_dropped_quietly() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let cmd = c.command(request::GET_NAMESRV_CONFIG, &[], None);
    let mut wire = bytes::BytesMut::new();
    namesrv::protocol::encode_frame(&cmd, namesrv::protocol::SerializeType::Json, &mut wire);
    c.send_raw(&wire[..wire.len() - 3]).await;
    tokio::io::AsyncWriteExt::shutdown(&mut c.stream)
        .await
        .unwrap();
    assert!(c.closed_without_reply().await);
    let mut other = server.client().await;
    assert_eq!(other.call(999, &[], None).await.code, 3);
}
