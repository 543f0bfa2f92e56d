//! Scale: one broker registering 200 k topics, in JSON (with the frame limit raised, as an
//! operator would) and compressed; and the default limit refusing the oversized JSON frame.

use std::io::Write;

use namesrv::protocol::code::{request, response};

use crate::harness::{TestServer, body_text, register_ext, register_raw, route};

const TOPICS: usize = 200_000;

fn json_body(topics: usize) -> Vec<u8> {
    let mut s = String::with_capacity(180 * topics + 300);
    s.push_str(r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1},"topicConfigTable":{"#);
    for i in 0..topics {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            r#""Scale_{i:06}":{{"attributes":{{}},"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"Scale_{i:06}","topicSysFlag":0,"writeQueueNums":8}}"#
        ));
    }
    s.push_str("}}}");
    s.into_bytes()
}

fn compressed_body(topics: usize) -> Vec<u8> {
    let mut raw = Vec::new();
    let dv = br#"{"counter":1,"stateVersion":0,"timestamp":1}"#;
    raw.extend_from_slice(&(dv.len() as i32).to_be_bytes());
    raw.extend_from_slice(dv);
    raw.extend_from_slice(&(topics as i32).to_be_bytes());
    for i in 0..topics {
        let line = format!("Zipped_{i:06} 8 8 6 SINGLE_TAG {{}}");
        raw.extend_from_slice(&(line.len() as i32).to_be_bytes());
        raw.extend_from_slice(line.as_bytes());
    }
    raw.extend_from_slice(&2i32.to_be_bytes());
    raw.extend_from_slice(b"[]");
    raw.extend_from_slice(&0i32.to_be_bytes());
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).unwrap();
    z.finish().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_thousand_topics_in_one_registration() {
    let body = json_body(TOPICS);
    assert!(body.len() > 16 << 20, "larger than Java's frame limit");

    // The default limit refuses the frame (as Java would).
    let default = TestServer::start().await;
    let mut broker = default.client().await;
    let cmd = broker.command(
        request::REGISTER_BROKER,
        &register_ext("big", "10.0.0.1:10911", "0"),
        Some(&body),
    );
    let mut wire = bytes::BytesMut::new();
    namesrv::protocol::encode_frame(&cmd, namesrv::protocol::SerializeType::Json, &mut wire);
    // The server closes as soon as the length arrives; the rest of the write may fail.
    let _ = tokio::io::AsyncWriteExt::write_all(&mut broker.stream, &wire).await;
    assert!(broker.closed_without_reply().await);

    // Raised, it is accepted, and so is the compressed form.
    let (server, mut broker) = TestServer::with_client("frameMaxLength=67108864").await;
    let resp = register_raw(&mut broker, ("big", "10.0.0.1:10911", "0"), &body).await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let zipped = compressed_body(TOPICS);
    let mut ext = register_ext("zipped", "10.0.0.2:10911", "0");
    ext.retain(|(k, _)| *k != "compressed");
    ext.push(("compressed", "true"));
    let resp = broker
        .call(request::REGISTER_BROKER, &ext, Some(&zipped))
        .await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let mut client = server.client().await;
    assert!(body_text(&route(&mut client, "Scale_199999").await).contains(r#""readQueueNums":8"#));
    assert!(body_text(&route(&mut client, "Zipped_123456").await).contains("zipped"));
    assert_eq!(
        route(&mut client, "Scale_200000").await.code,
        response::TOPIC_NOT_EXIST
    );
    let all = client
        .call(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[], None)
        .await;
    assert_eq!(body_text(&all).matches("Scale_").count(), TOPICS);
}
