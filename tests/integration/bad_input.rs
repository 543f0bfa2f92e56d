//! Hostile or absurd input inside well-formed frames: invalid JSON and zlib bodies, wrong
//! checksums, absurd numbers and invalid UTF-8 are answered (or the connection closed) without
//! disturbing the server or other connections; hostile TLS and PROXY handshakes likewise.

use namesrv::protocol::code::{request, response};

use std::time::Duration;

use namesrv::metrics::PreludeOutcome;
use namesrv::server::prelude::proxy;

use crate::harness::{
    TestClient, TestServer, body_text, cluster_info, register_body, register_ext, register_raw,
    route, tls_client_config,
};

#[tokio::test]
async fn absurd_numbers_are_stored_as_java_would_and_never_crash() {
    let (_server, mut c) = TestServer::with_client("").await;
    let body = br#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":-1,"stateVersion":-9,"timestamp":-5},"topicConfigTable":{"Neg":{"topicName":"Neg","readQueueNums":-5,"writeQueueNums":2147483647,"perm":-1},"Huge":{"topicName":"Huge","readQueueNums":99999999999}}}}"#;
    for id in ["9223372036854775807", "-9223372036854775808", "-1"] {
        let addr = format!("10.0.0.{}:1", id.len());
        let resp = register_raw(&mut c, ("absurd", &addr, id), body).await;
        assert_eq!(resp.code, 0, "id {id}: {:?}", resp.remark);
    }
    let text = body_text(&route(&mut c, "Neg").await);
    assert!(
        text.contains(r#""readQueueNums":-5"#) && text.contains(r#""perm":-1"#),
        "{text}"
    );
    // 99999999999 does not fit an int: Java's intValue() wraps it.
    assert!(body_text(&route(&mut c, "Huge").await).contains(r#""readQueueNums":1215752191"#));
    let overflow = register_raw(
        &mut c,
        ("absurd", "10.0.0.9:1", "9223372036854775808"),
        body,
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
    let (_server, mut c) = TestServer::with_client("").await;
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
    let info = cluster_info(&mut c).await;
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
    let (server, mut c) = TestServer::with_client("").await;
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

// --- hostile TLS and PROXY handshakes — each closes only its own connection ---

/// A server whose handshakes must finish within 300 ms.
async fn quick_handshake_server() -> TestServer {
    TestServer::with_properties("handshakeTimeoutMillis=300\n").await
}

/// Another connection is served meanwhile and afterwards.
async fn others_are_served(server: &TestServer) {
    let mut other = server.client().await;
    assert_eq!(other.call(999, &[], None).await.code, 3);
    let mut tls = TestClient::connect_tls(server.addr, tls_client_config(), b"")
        .await
        .unwrap();
    assert_eq!(tls.call(999, &[], None).await.code, 3);
}

#[tokio::test]
async fn stalled_handshakes_are_closed_in_bounded_time_without_delaying_others() {
    let server = quick_handshake_server().await;
    let stalls: [&[u8]; 4] = [
        &[0x16, 0x03, 0x01, 0x01, 0x00, 0x01, 0x00], // a ClientHello record cut short
        b"PROXY TCP4 192.0.2.1 ",                    // a v1 line without its end
        &[0x0D, 0x0A, 0x0D, 0x0A, 0x00],             // half a v2 signature
        &[
            0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A, 0x21, 0x11,
            0x00, 0x0C, 1,
        ], // v2 promising 12 bytes
    ];
    let mut stalled = Vec::new();
    for bytes in stalls {
        let mut c = server.client().await;
        c.send_raw(bytes).await;
        stalled.push(c);
    }
    // While all four hang, nobody else waits.
    others_are_served(&server).await;
    let started = std::time::Instant::now();
    for mut c in stalled {
        assert!(c.closed_without_reply().await);
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "closed after the handshake timeout"
    );
    assert_eq!(server.state.metrics().preludes(PreludeOutcome::Timeout), 4);
}

#[tokio::test]
async fn garbage_hellos_truncated_records_and_bad_proxy_headers_close_only_their_connection() {
    let server = quick_handshake_server().await;
    let long_v1 = format!("PROXY TCP4 {} 1.2.3.4 1 2\r\n", "1".repeat(120));
    let mut bad_tlv = proxy::v2_header(
        Some((
            "192.0.2.1:1".parse().unwrap(),
            "192.0.2.2:2".parse().unwrap(),
        )),
        &[],
    );
    bad_tlv.extend_from_slice(&[0x04, 0x00, 0x40, b'x']);
    let len = (bad_tlv.len() - 16) as u16;
    bad_tlv[14..16].copy_from_slice(&len.to_be_bytes());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "garbage ClientHello",
            [&[0x16, 0x03, 0x01, 0x00, 0x10][..], &[0x5A; 16]].concat(),
        ),
        (
            "truncated record, then EOF",
            vec![0x16, 0x03, 0x03, 0x40, 0x00, 0x01],
        ),
        ("over-long PROXY v1", long_v1.into_bytes()),
        (
            "malformed PROXY v1",
            b"PROXY TCP4 999.1.1.1 1.2.3.4 1 2\r\n".to_vec(),
        ),
        ("PROXY v2 with a broken TLV", bad_tlv),
    ];
    for (what, bytes) in cases {
        let mut c = server.client().await;
        c.send_raw(&bytes).await;
        if what.contains("EOF") {
            tokio::io::AsyncWriteExt::shutdown(&mut c.stream)
                .await
                .unwrap();
        }
        assert!(c.closed_without_reply().await, "{what}");
        others_are_served(&server).await;
    }
    let metrics = server.state.metrics();
    assert_eq!(metrics.preludes(PreludeOutcome::ProxyMalformed), 3);
    assert!(metrics.preludes(PreludeOutcome::TlsError) >= 2);
}

#[tokio::test]
async fn a_proxy_header_inside_tls_is_a_malformed_frame() {
    let server = TestServer::start().await;
    let mut c = TestClient::connect_tls(server.addr, tls_client_config(), b"")
        .await
        .unwrap();
    let header = proxy::v1_header(
        "192.0.2.1:1".parse().unwrap(),
        "192.0.2.2:2".parse().unwrap(),
    );
    c.send_raw(&header).await;
    assert!(c.closed_without_reply().await);
    others_are_served(&server).await;
}
