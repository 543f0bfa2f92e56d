//! The wire protocol over TCP: unknown codes, one-way requests, pipelining, both header
//! encodings, and every malformed-frame class closing only its own connection.

use bytes::BytesMut;
use namesrv::protocol::code::{request, response};
use namesrv::protocol::{RemotingCommand, SerializeType, encode_frame};

use crate::harness::{TestClient, TestServer, body_text, get_kv};

#[tokio::test]
async fn unknown_codes_get_code_3_with_javas_remark_in_both_encodings() {
    let server = TestServer::start().await;
    for st in [SerializeType::Json, SerializeType::RocketMq] {
        let mut client = server.client().await;
        client.serialize_type = st;
        let resp = client.call(999, &[], None).await;
        assert_eq!(resp.code, response::REQUEST_CODE_NOT_SUPPORTED);
        assert_eq!(
            resp.remark.as_deref(),
            Some(" request type 999 not supported")
        );
        assert!(resp.is_response());
        assert_eq!(resp.version, 479);
    }
}

#[tokio::test]
async fn one_way_requests_are_processed_but_not_answered() {
    let (_server, mut client) = TestServer::with_client("").await;
    let mut put = client.command(
        request::PUT_KV_CONFIG,
        &[("namespace", "ns"), ("key", "k"), ("value", "v")],
        None,
    );
    put.flag |= namesrv::protocol::code::FLAG_ONEWAY;
    client.send(&put).await;
    let mut unknown = client.command(999, &[], None);
    unknown.flag |= namesrv::protocol::code::FLAG_ONEWAY;
    client.send(&unknown).await;
    // The next two-way request's answer is the next frame: nothing was sent for the others.
    let resp = get_kv(&mut client, "ns", "k").await;
    assert_eq!(resp.ext("value"), Some("v"));
}

#[tokio::test]
async fn pipelined_requests_each_get_one_response_matched_by_opaque() {
    let (_server, mut client) = TestServer::with_client("").await;
    let mut wire = BytesMut::new();
    let mut opaques = Vec::new();
    for i in 0..200 {
        let code = if i % 2 == 0 {
            request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER
        } else {
            999
        };
        let cmd = client.command(code, &[], None);
        opaques.push(cmd.opaque);
        encode_frame(
            &cmd,
            if i % 3 == 0 {
                SerializeType::RocketMq
            } else {
                SerializeType::Json
            },
            &mut wire,
        );
    }
    client.send_raw(&wire).await;
    let mut seen = Vec::new();
    for _ in 0..200 {
        seen.push(client.recv().await.unwrap().opaque);
    }
    seen.sort();
    opaques.sort();
    assert_eq!(seen, opaques);
}

#[tokio::test]
async fn json_headers_are_read_leniently() {
    let (_server, mut client) = TestServer::with_client("").await;
    // Go-style: no serializeTypeCurrentRPC, remark "", numbers as ext values, any order.
    let header = br#"{"opaque":42,"remark":"","extFields":{"namespace":"ns","key":7,"value":true},"language":"GO","code":100,"version":317,"flag":0}"#;
    let mut frame = Vec::new();
    frame.extend_from_slice(&((4 + header.len()) as i32).to_be_bytes());
    frame.extend_from_slice(&(header.len() as u32).to_be_bytes());
    frame.extend_from_slice(header);
    client.send_raw(&frame).await;
    let resp = client.recv().await.unwrap();
    assert_eq!((resp.code, resp.opaque), (0, 42));
    let resp = get_kv(&mut client, "ns", "7").await;
    assert_eq!(resp.ext("value"), Some("true"));
}

#[tokio::test]
async fn responses_use_json_headers_even_for_binary_requests() {
    let (_server, mut client) = TestServer::with_client("").await;
    client.serialize_type = SerializeType::RocketMq;
    let cmd = client.command(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[], None);
    client.send(&cmd).await;
    let frame = client.recv_frame().await.unwrap();
    assert_eq!(frame[4], 0, "serialize type byte of the response");
    let text = String::from_utf8_lossy(&frame[8..]);
    assert!(
        text.starts_with(r#"{"code":0,"flag":1,"language":"JAVA","opaque":1,"#),
        "{text}"
    );
}

fn frame_with_header_word(word: u32, rest: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&((4 + rest.len()) as i32).to_be_bytes());
    f.extend_from_slice(&word.to_be_bytes());
    f.extend_from_slice(rest);
    f
}

/// Every malformed class: the connection is closed without a reply, and a second
/// connection is served normally afterwards.
#[tokio::test]
async fn malformed_frames_close_only_their_connection() {
    let server = TestServer::start().await;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("negative length", (-5i32).to_be_bytes().to_vec()),
        (
            "length past the limit",
            16_777_213i32.to_be_bytes().to_vec(),
        ),
        ("length too short for a header word", vec![0, 0, 0, 2, 0, 0]),
        (
            "header length past the frame",
            frame_with_header_word(50, b"{}"),
        ),
        (
            "unknown serialize type",
            frame_with_header_word(0x0200_0002, b"{}"),
        ),
        (
            "malformed JSON header",
            frame_with_header_word(5, b"{\"cod"),
        ),
        (
            "JSON header that is not an object",
            frame_with_header_word(3, b"[1]"),
        ),
        (
            "binary header too short",
            frame_with_header_word(0x0100_0003, &[0, 1, 2]),
        ),
        ("binary remark length past the header", {
            let mut h = vec![0, 105, 0, 1, 223, 0, 0, 0, 1, 0, 0, 0, 0];
            h.extend_from_slice(&1000i32.to_be_bytes());
            h.extend_from_slice(&0i32.to_be_bytes());
            frame_with_header_word(0x0100_0000 | h.len() as u32, &h)
        }),
        ("binary negative ext key length", {
            let mut h = vec![0, 105, 0, 1, 223, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
            h.extend_from_slice(&4i32.to_be_bytes());
            h.extend_from_slice(&[0xff, 0xff, 0, 0]);
            frame_with_header_word(0x0100_0000 | h.len() as u32, &h)
        }),
        (
            "HTTP request",
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "TLS ClientHello",
            vec![
                0x16, 0x03, 0x01, 0x00, 0xa5, 0x01, 0x00, 0x00, 0xa1, 0x03, 0x03,
            ],
        ),
    ];
    for (what, bytes) in cases {
        let mut bad = server.client().await;
        bad.send_raw(&bytes).await;
        assert!(
            bad.closed_without_reply().await,
            "{what}: expected a silent close"
        );
        let mut good = server.client().await;
        let resp = good.call(999, &[], None).await;
        assert_eq!(resp.code, 3, "{what}: server still serves others");
    }
}

#[tokio::test]
async fn a_bad_frame_after_good_ones_still_answers_the_good_ones() {
    let (_server, mut client) = TestServer::with_client("").await;
    let mut wire = BytesMut::new();
    encode_frame(
        &client.command(999, &[], None),
        SerializeType::Json,
        &mut wire,
    );
    wire.extend_from_slice(&(-1i32).to_be_bytes());
    client.send_raw(&wire).await;
    assert_eq!(client.recv().await.unwrap().code, 3);
    assert!(client.recv().await.is_none());
}

#[tokio::test]
async fn oversize_frames_are_refused_and_the_limit_is_configurable() {
    let (server, mut client) = TestServer::with_client("frameMaxLength=2097152").await;
    // 2 MiB + 1: refused as soon as its length arrives.
    client.send_raw(&(2_097_149i32).to_be_bytes()).await;
    assert!(client.closed_without_reply().await);
    // Just under the limit: a big body is accepted.
    let mut client = server.client().await;
    let body = vec![b'x'; 2_000_000];
    let mut cmd = RemotingCommand::request(999, 5);
    cmd.body = Some(body.into());
    client.send(&cmd).await;
    assert_eq!(client.recv().await.unwrap().code, 3);
}

#[tokio::test]
async fn a_frame_dribbled_one_byte_at_a_time_is_read() {
    let (_server, mut client) = TestServer::with_client("").await;
    let mut wire = BytesMut::new();
    encode_frame(
        &client.command(request::GET_NAMESRV_CONFIG, &[], None),
        SerializeType::Json,
        &mut wire,
    );
    for b in wire.iter() {
        client.send_raw(&[*b]).await;
        tokio::task::yield_now().await;
    }
    let resp = client.recv().await.unwrap();
    assert_eq!(resp.code, 0);
    assert!(body_text(&resp).contains("listenPort=9876"));
}

#[tokio::test]
async fn stray_response_frames_are_ignored() {
    let (_server, mut client) = TestServer::with_client("").await;
    let mut stray = RemotingCommand::success();
    stray.opaque = 77;
    client.send(&stray).await;
    let resp = client.call(999, &[], None).await;
    assert_eq!(resp.code, 3);
}

#[tokio::test(start_paused = true)]
async fn idle_connections_are_closed() {
    let (server, mut client) = TestServer::with_client("serverChannelMaxIdleTimeSeconds=5").await;
    assert_eq!(client.call(999, &[], None).await.code, 3);
    tokio::time::advance(std::time::Duration::from_secs(6)).await;
    assert!(client.closed_without_reply().await);
    // A fresh client is served.
    let mut again = TestClient::connect(server.addr).await;
    assert_eq!(again.call(999, &[], None).await.code, 3);
    // An update applies to connections accepted afterwards, as Java sets up each channel.
    let update = again
        .call(
            namesrv::protocol::code::request::UPDATE_NAMESRV_CONFIG,
            &[],
            Some(b"serverChannelMaxIdleTimeSeconds=60"),
        )
        .await;
    assert_eq!((update.code, update.remark), (0, None));
    let mut later = TestClient::connect(server.addr).await;
    assert_eq!(later.call(999, &[], None).await.code, 3);
    tokio::time::advance(std::time::Duration::from_secs(6)).await;
    assert!(
        again.closed_without_reply().await,
        "accepted before the update"
    );
    assert_eq!(
        later.call(999, &[], None).await.code,
        3,
        "accepted after it"
    );
}
