//! Golden frames captured from the Java NameServer 5.3.3 (tests/fixtures/java-5.3.3): the
//! same requests on one connection get byte-identical responses.

use crate::harness::{Options, TestServer};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/java-5.3.3");

fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".request.bin").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn every_captured_exchange_is_reproduced_byte_for_byte() {
    // The capture's server: bindAddress=127.0.0.1, Java's 5 s scan interval, home
    // /home/rocketmq and ROCKETMQ_HOME /opt/rocketmq (paths rewritten in the capture).
    let kv = tempfile::tempdir().unwrap();
    let server = TestServer::start_with(Options {
        properties: "bindAddress=127.0.0.1\nscanNotActiveBrokerInterval=5000\n".into(),
        home: Some("/home/rocketmq".into()),
        rocketmq_home: Some("/opt/rocketmq".into()),
        kv_path: Some(kv.path().join("kvConfig.json")),
        ..Options::default()
    })
    .await;
    let mut client = server.client().await;
    let names = fixture_names();
    assert_eq!(names.len(), 27);
    for name in names {
        let request = std::fs::read(format!("{FIXTURES}/{name}.request.bin")).unwrap();
        let expected = std::fs::read(format!("{FIXTURES}/{name}.response.bin")).unwrap();
        client.send_raw(&request).await;
        let got = client.recv_frame().await.expect("a response");
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected),
            "response to {name} differs from Java's"
        );
    }
}
