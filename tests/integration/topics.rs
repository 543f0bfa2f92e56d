//! Topic listings and operator changes over TCP: every topic code, the enable switches, write
//! permissions and topic deletion/registration.

use namesrv::protocol::RemotingCommand;
use namesrv::protocol::code::{request, response};

use crate::harness::{
    TestClient, TestServer, body_text, cluster_info, register_broker_a, register_ext, route,
    update_config,
};

async fn cluster_with_two_brokers(server: &TestServer) -> TestClient {
    let mut c = server.client().await;
    register_broker_a(&mut c).await;
    let body = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"U1":{"topicName":"U1","topicSysFlag":1},"U2":{"topicName":"U2","topicSysFlag":2},"U3":{"topicName":"U3","topicSysFlag":3}}}}"#;
    let mut ext = register_ext("broker-b", "10.0.0.2:10911", "0");
    ext.retain(|(k, _)| *k != "clusterName");
    ext.push(("clusterName", "OtherCluster"));
    assert_eq!(
        c.call(request::REGISTER_BROKER, &ext, Some(body))
            .await
            .code,
        0
    );
    c
}

fn topics_of(text: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(text).unwrap();
    let mut t: Vec<String> = v["topicList"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect();
    t.sort();
    t
}

/// WIPE_ or ADD_WRITE_PERM_OF_BROKER (`code`) for `broker`.
async fn write_perm(c: &mut TestClient, code: i32, broker: &str) -> RemotingCommand {
    c.call(code, &[("brokerName", broker)], None).await
}

#[tokio::test]
async fn topic_lists() {
    let server = TestServer::start().await;
    let mut c = cluster_with_two_brokers(&server).await;
    let all = c
        .call(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[], None)
        .await;
    assert_eq!(
        topics_of(&body_text(&all)),
        ["TopicA", "TopicB", "U1", "U2", "U3"]
    );
    let by = c
        .ask(
            request::GET_TOPICS_BY_CLUSTER,
            &[("cluster", "OtherCluster")],
        )
        .await;
    assert_eq!(topics_of(&body_text(&by)), ["U1", "U2", "U3"]);
    let none = c
        .call(request::GET_TOPICS_BY_CLUSTER, &[("cluster", "Nope")], None)
        .await;
    assert_eq!(body_text(&none), r#"{"topicList":[]}"#);
    let sys = c
        .call(request::GET_SYSTEM_TOPIC_LIST_FROM_NS, &[], None)
        .await;
    let text = body_text(&sys);
    assert_eq!(
        topics_of(&text),
        ["DefaultCluster", "OtherCluster", "broker-a", "broker-b"]
    );
    assert!(text.starts_with(r#"{"brokerAddr":"10.0.0."#), "{text}");
    for (code, expected) in [
        (request::GET_UNIT_TOPIC_LIST, vec!["U1", "U3"]),
        (request::GET_HAS_UNIT_SUB_TOPIC_LIST, vec!["U2", "U3"]),
        (request::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, vec!["U2"]),
    ] {
        let resp = c.call(code, &[], None).await;
        assert_eq!(topics_of(&body_text(&resp)), expected, "code {code}");
    }
    let info = cluster_info(&mut c).await;
    let text = body_text(&info);
    assert!(
        text.contains(r#""broker-a":{"brokerAddrs":{0:"10.0.0.1:10911"}"#),
        "{text}"
    );
    assert!(text.contains(r#""OtherCluster":["broker-b"]"#), "{text}");
}

#[tokio::test]
async fn topic_lists_can_be_disabled_at_run_time() {
    let server = TestServer::start().await;
    let mut c = cluster_with_two_brokers(&server).await;
    let upd = update_config(&mut c, "enableAllTopicList=false\nenableTopicList=false").await;
    assert_eq!(upd.code, 0);
    for (code, ext) in [
        (request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, vec![]),
        (
            request::GET_TOPICS_BY_CLUSTER,
            vec![("cluster", "DefaultCluster")],
        ),
        (request::GET_UNIT_TOPIC_LIST, vec![]),
        (request::GET_HAS_UNIT_SUB_TOPIC_LIST, vec![]),
        (request::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, vec![]),
    ] {
        let resp = c.call(code, &ext, None).await;
        assert_eq!(
            (resp.code, resp.remark.as_deref()),
            (response::SYSTEM_ERROR, Some("disable")),
            "code {code}"
        );
    }
    // The system topic list has no switch.
    assert_eq!(
        c.call(request::GET_SYSTEM_TOPIC_LIST_FROM_NS, &[], None)
            .await
            .code,
        0
    );
}

#[tokio::test]
async fn write_permission_wipe_and_restore() {
    let server = TestServer::start().await;
    let mut c = cluster_with_two_brokers(&server).await;
    let wipe = write_perm(&mut c, request::WIPE_WRITE_PERM_OF_BROKER, "broker-a").await;
    assert_eq!(wipe.ext("wipeTopicCount"), Some("2"));
    assert!(body_text(&route(&mut c, "TopicA").await).contains(r#""perm":4"#));
    let add = write_perm(&mut c, request::ADD_WRITE_PERM_OF_BROKER, "broker-a").await;
    assert_eq!(add.ext("addTopicCount"), Some("2"));
    assert!(body_text(&route(&mut c, "TopicA").await).contains(r#""perm":6"#));
    let none = write_perm(&mut c, request::WIPE_WRITE_PERM_OF_BROKER, "ghost").await;
    assert_eq!(none.ext("wipeTopicCount"), Some("0"));
}

#[tokio::test]
async fn delete_and_register_topics() {
    let server = TestServer::start().await;
    let mut c = cluster_with_two_brokers(&server).await;
    let del = c
        .ask(
            request::DELETE_TOPIC_IN_NAMESRV,
            &[("topic", "TopicA"), ("clusterName", "OtherCluster")],
        )
        .await;
    assert_eq!(del.code, 0);
    assert_eq!(
        route(&mut c, "TopicA").await.code,
        0,
        "broker-a is not in OtherCluster"
    );
    c.ask(request::DELETE_TOPIC_IN_NAMESRV, &[("topic", "TopicA")])
        .await;
    assert_eq!(
        route(&mut c, "TopicA").await.code,
        response::TOPIC_NOT_EXIST
    );
    let body = br#"{"brokerDatas":[],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":3,"topicSysFlag":0,"writeQueueNums":3}]}"#;
    let reg = register_topic(&mut c, "Fresh", body).await;
    assert_eq!(reg.code, 0);
    assert!(body_text(&route(&mut c, "Fresh").await).contains(r#""readQueueNums":3"#));
    let ghost =
        br#"{"queueDatas":[{"brokerName":"ghost","perm":6,"readQueueNums":3,"writeQueueNums":3}]}"#;
    assert_eq!(register_topic(&mut c, "Ghostly", ghost).await.code, 0);
    assert_eq!(
        route(&mut c, "Ghostly").await.code,
        response::TOPIC_NOT_EXIST
    );
    let bad = register_topic(&mut c, "X", b"{oops").await;
    assert_eq!(bad.code, response::SYSTEM_ERROR);
    // What fastjson reads as null registers nothing and succeeds; so does a list that
    // breaks off at a null entry for a new topic.
    let invalid_utf8 = b"{\"queueDatas\":[{\"brokerName\":\"broker-a\"}],\"x\":\"\xff\"}";
    let null_entry = br#"{"queueDatas":[{"brokerName":"broker-a","perm":6},null]}"#;
    for body in [&b"null"[..], b"  ", invalid_utf8, null_entry] {
        let reg = register_topic(&mut c, "Nothing", body).await;
        assert_eq!(reg.code, 0, "{body:?}");
        assert_eq!(
            route(&mut c, "Nothing").await.code,
            response::TOPIC_NOT_EXIST,
            "{body:?}"
        );
    }
}

/// REGISTER_TOPIC_IN_NAMESRV of `topic` with route-data `body`.
async fn register_topic(c: &mut TestClient, topic: &str, body: &[u8]) -> RemotingCommand {
    c.call(
        request::REGISTER_TOPIC_IN_NAMESRV,
        &[("topic", topic)],
        Some(body),
    )
    .await
}
