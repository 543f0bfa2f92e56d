//! KV config and namesrv config over TCP, and their durability across restarts.

use namesrv::protocol::code::{request, response};

use crate::harness::{Options, TestServer, body_text, delete_kv, get_kv, put_kv, update_config};

#[tokio::test]
async fn kv_codes_answer_like_java() {
    let (_server, mut c) = TestServer::with_client("").await;
    let put = put_kv(&mut c, "ns", "k", "v").await;
    assert_eq!((put.code, put.ext_fields.is_none()), (0, true));
    let get = get_kv(&mut c, "ns", "k").await;
    assert_eq!(get.ext("value"), Some("v"));
    let miss = get_kv(&mut c, "ns", "nope").await;
    assert_eq!(miss.code, response::QUERY_NOT_FOUND);
    assert_eq!(
        miss.remark.as_deref(),
        Some("No config item, Namespace: ns Key: nope")
    );
    assert_eq!(miss.ext_fields.map(|f| f.len()), Some(0));
    let list = crate::harness::kv_list(&mut c, "ns").await;
    assert_eq!(body_text(&list), r#"{"table":{"k":"v"}}"#);
    let none = crate::harness::kv_list(&mut c, "other").await;
    assert_eq!(
        (none.code, none.remark.as_deref()),
        (
            response::QUERY_NOT_FOUND,
            Some("No config item, Namespace: other")
        )
    );
    assert_eq!(delete_kv(&mut c, "ns", "k").await.code, 0);
    assert_eq!(
        body_text(
            &c.call(
                request::GET_KVLIST_BY_NAMESPACE,
                &[("namespace", "ns")],
                None
            )
            .await
        ),
        r#"{"table":{}}"#
    );
    let null = c.call(request::PUT_KV_CONFIG, &[], None).await;
    assert_eq!(
        (null.code, null.remark.as_deref()),
        (response::SYSTEM_ERROR, Some("namespace or key is null"))
    );
}

#[tokio::test]
async fn kv_table_and_config_survive_a_restart() {
    let (server, mut c) = TestServer::with_client("").await;
    let put = put_kv(&mut c, "ORDER_TOPIC_CONFIG", "T", "b:4").await;
    assert_eq!(put.code, 0);
    let upd = update_config(&mut c, "orderMessageEnable=true\nsupportActingMaster=true").await;
    assert_eq!(upd.code, 0);
    // Restart on the same home: the KV file and the persisted configStorePath are read back.
    let home = server.stop_keeping_home().await;
    let again = TestServer::start_in(home, Options::default()).await;
    let mut c = again.client().await;
    let get = get_kv(&mut c, "ORDER_TOPIC_CONFIG", "T").await;
    assert_eq!(get.ext("value"), Some("b:4"));
    let cfg = body_text(&c.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    assert!(
        cfg.contains("orderMessageEnable=true\n") && cfg.contains("supportActingMaster=true\n"),
        "{cfg}"
    );
}

#[tokio::test]
async fn namesrv_config_get_update_and_black_list() {
    let (dir, file) =
        crate::harness::temp_file("namesrv.conf", "listenPort=9876\nclientWorkerThreads=4\n");
    let server = TestServer::start_with(Options {
        config_file: Some(file.clone()),
        ..Options::default()
    })
    .await;
    let mut c = server.client().await;
    let cfg = body_text(&c.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    assert!(
        cfg.contains("clientWorkerThreads=4\n"),
        "extra file keys are listed"
    );
    assert!(cfg.contains(&format!("configStorePath={}\n", file.display())));
    for key in [
        "kvConfigPath",
        "configStorePath",
        "configBlackList",
        "rocketmqHome",
    ] {
        let resp = c
            .call(
                request::UPDATE_NAMESRV_CONFIG,
                &[],
                Some(format!("{key}=/x").as_bytes()),
            )
            .await;
        assert_eq!(
            (resp.code, resp.remark.as_deref()),
            (
                response::NO_PERMISSION,
                Some("Can not update config in black list.")
            )
        );
    }
    let bad = update_config(&mut c, "listenPort=abc").await;
    assert_eq!(bad.code, response::SYSTEM_ERROR);
    let restart = update_config(&mut c, "listenPort=9999\nsupportActingMaster=true").await;
    assert_eq!(restart.code, 0);
    assert!(restart.remark.unwrap().contains("listenPort"));
    let cfg = body_text(&c.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    assert!(cfg.contains("listenPort=9999\n") && cfg.contains("supportActingMaster=true\n"));
    // The -c file was rewritten with every key; the old one kept as .bak.
    let persisted = std::fs::read_to_string(&file).unwrap();
    assert!(
        persisted.contains("listenPort=9999\n") && persisted.contains("clientWorkerThreads=4\n")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("namesrv.conf.bak")).unwrap(),
        "listenPort=9876\nclientWorkerThreads=4\n"
    );
    assert_eq!(
        c.call(request::UPDATE_NAMESRV_CONFIG, &[], None).await.code,
        0
    );
    let malformed = c
        .call(request::UPDATE_NAMESRV_CONFIG, &[], Some(b"a=\\uZZZZ"))
        .await;
    assert_eq!(
        (malformed.code, malformed.remark.as_deref()),
        (response::SYSTEM_ERROR, Some("string2Properties error"))
    );
}

#[tokio::test]
async fn a_java_written_kv_file_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kvConfig.json");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/kvConfig.java-5.3.3.json"
        ),
        &path,
    )
    .unwrap();
    let server = TestServer::start_with(Options {
        kv_path: Some(path),
        ..Options::default()
    })
    .await;
    let mut c = server.client().await;
    let list = crate::harness::kv_list(&mut c, "ORDER_TOPIC_CONFIG").await;
    assert_eq!(list.code, 0);
    assert!(body_text(&list).contains(r#""TopicOrder":"broker-a:4;broker-b:4""#));
}
