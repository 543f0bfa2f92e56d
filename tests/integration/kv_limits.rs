//! The KV store's limits over the wire (`maxKvValueBytes`, `maxKvTotalBytes`): refusals are
//! `SYSTEM_ERROR`s naming the limit and change nothing; and a PUT logs the value's size,
//! never the value.

use namesrv::protocol::code::response;

use crate::harness::process::Server;
use crate::harness::{TestClient, TestServer, delete_kv, get_kv, put_kv};

async fn put(c: &mut TestClient, key: &str, value: &str) -> (i32, String) {
    let resp = put_kv(c, "ns", key, value).await;
    (resp.code, resp.remark.unwrap_or_default())
}

async fn get(c: &mut TestClient, key: &str) -> Option<String> {
    let resp = get_kv(c, "ns", key).await;
    resp.ext("value").map(str::to_owned)
}

#[tokio::test]
async fn oversized_values_and_a_full_store_are_refused_with_the_limit_named() {
    let (_server, mut c) =
        TestServer::with_client("maxKvValueBytes=2048\nmaxKvTotalBytes=6144").await;
    let (code, remark) = put(&mut c, "big", &"x".repeat(2049)).await;
    assert_eq!(code, response::SYSTEM_ERROR);
    assert!(
        remark.contains("ns/big")
            && remark.contains("2049 bytes")
            && remark.contains("maxKvValueBytes=2048"),
        "{remark}"
    );
    assert_eq!(get(&mut c, "big").await, None);
    for key in ["a", "b", "c"] {
        assert_eq!(
            put(&mut c, key, &"y".repeat(2000)).await.0,
            response::SUCCESS
        );
    }
    let (code, remark) = put(&mut c, "d", &"z".repeat(2000)).await;
    assert_eq!(code, response::SYSTEM_ERROR);
    assert!(remark.contains("maxKvTotalBytes=6144"), "{remark}");
    assert_eq!(get(&mut c, "d").await, None);
    // Making room works.
    let del = delete_kv(&mut c, "ns", "a").await;
    assert_eq!(del.code, response::SUCCESS);
    assert_eq!(
        put(&mut c, "d", &"z".repeat(2000)).await.0,
        response::SUCCESS
    );
}

#[tokio::test]
async fn a_put_logs_the_value_size_but_never_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("namesrv.properties");
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    std::fs::write(
        &conf,
        format!(
            "bindAddress=127.0.0.1\nlistenPort=0\nkvConfigPath={}\n",
            dir.path().join("kv.json").display()
        ),
    )
    .unwrap();
    let mut server = Server::start_up(&conf, &dir.path().join("home"));
    let mut c = TestClient::connect(server.addr()).await;
    let secret = "s3cr3t-password-0123456789";
    assert_eq!(put(&mut c, "token", secret).await.0, response::SUCCESS);
    assert_eq!(get(&mut c, "token").await.as_deref(), Some(secret));
    let log = server.take_stderr();
    assert!(log.contains("KV config put"), "{log}");
    assert!(log.contains("value_bytes=26"), "{log}");
    assert!(!log.contains(secret), "the value reached the log:\n{log}");
}
