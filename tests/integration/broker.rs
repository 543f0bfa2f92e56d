//! Brokers over TCP: registration in every body format, liveness (expiry on paused time,
//! connection loss, connection ownership), master/slave, route JSON styles and zones.

use std::io::Write;
use std::time::Duration;

use namesrv::protocol::code::{request, response};

use namesrv::protocol::body::RegisterBroker;

use crate::harness::{
    TestClient, TestServer, body_text, cluster_info, put_kv, qdv_ext, query_data_version, register,
    register_body, register_broker_a, register_ext, register_raw, register_with, registration,
    route, update_config,
};

/// Waits (boundedly) until `topic` has no route.
async fn wait_until_gone(client: &mut TestClient, topic: &str) {
    for _ in 0..500 {
        if route(client, topic).await.code == response::TOPIC_NOT_EXIST {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{topic} still has a route");
}

#[tokio::test(start_paused = true)]
async fn a_broker_that_stops_heartbeating_expires() {
    let (server, mut broker) = TestServer::with_client(
        "scanNotActiveBrokerInterval=1000\nserverChannelMaxIdleTimeSeconds=0",
    )
    .await;
    let reg = registration("broker-a", "10.0.0.1:10911", "0", 1, &["TopicA", "TopicB"]);
    register_with(
        &mut broker,
        &reg.header_field("heartbeatTimeoutMillis", "10000"),
    )
    .await;
    let mut client = server.client().await;
    assert_eq!(route(&mut client, "TopicA").await.code, 0);

    tokio::time::advance(Duration::from_secs(8)).await;
    // A QUERY_DATA_VERSION is a heartbeat.
    let qdv = query_data_version(&mut broker, "broker-a", "10.0.0.1:10911", 1).await;
    assert_eq!(qdv.ext("changed"), Some("false"));
    tokio::time::advance(Duration::from_secs(8)).await;
    assert_eq!(
        route(&mut client, "TopicA").await.code,
        0,
        "refreshed 8 s ago"
    );

    tokio::time::advance(Duration::from_secs(4)).await;
    tokio::task::yield_now().await;
    assert_eq!(
        route(&mut client, "TopicA").await.code,
        response::TOPIC_NOT_EXIST
    );
    // The expired broker's connection was closed, as Java closes its channel.
    assert!(broker.closed_without_reply().await);
}

#[tokio::test(start_paused = true)]
async fn default_expiry_is_120_seconds_and_broker_heartbeat_refreshes() {
    let (server, mut broker) = TestServer::with_client("serverChannelMaxIdleTimeSeconds=0").await;
    register_broker_a(&mut broker).await;
    let mut client = server.client().await;
    tokio::time::advance(Duration::from_secs(100)).await;
    let hb = broker
        .call(
            request::BROKER_HEARTBEAT,
            &[
                ("clusterName", "DefaultCluster"),
                ("brokerAddr", "10.0.0.1:10911"),
                ("brokerName", "broker-a"),
            ],
            None,
        )
        .await;
    assert_eq!(hb.code, 0);
    tokio::time::advance(Duration::from_secs(100)).await;
    assert_eq!(route(&mut client, "TopicA").await.code, 0);
    tokio::time::advance(Duration::from_secs(31)).await;
    tokio::task::yield_now().await;
    assert_eq!(
        route(&mut client, "TopicA").await.code,
        response::TOPIC_NOT_EXIST
    );
}

#[tokio::test]
async fn a_broker_whose_connection_drops_is_unregistered_at_once() {
    let (server, mut broker) = TestServer::with_client("").await;
    register_broker_a(&mut broker).await;
    let mut client = server.client().await;
    assert_eq!(route(&mut client, "TopicA").await.code, 0);
    drop(broker);
    wait_until_gone(&mut client, "TopicA").await;
    let cluster = cluster_info(&mut client).await;
    assert_eq!(
        body_text(&cluster),
        r#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#
    );
}

#[tokio::test]
async fn only_the_latest_registering_connection_owns_the_broker() {
    let (server, mut old) = TestServer::with_client("").await;
    register_broker_a(&mut old).await;
    let mut new = server.client().await;
    register_broker_a(&mut new).await;
    drop(old);
    let mut client = server.client().await;
    // Give the close time to be processed, then check the broker is still there.
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(route(&mut client, "TopicA").await.code, 0);
    }
    drop(new);
    wait_until_gone(&mut client, "TopicA").await;
}

#[tokio::test]
async fn master_and_slave() {
    let (server, mut master) = TestServer::with_client("").await;
    let resp = register_broker_a(&mut master).await;
    assert_eq!(resp.ext_fields.map(|f| f.len()), Some(0));
    let mut slave = server.client().await;
    let resp = register(
        &mut slave,
        "broker-a",
        "10.0.0.2:10911",
        "1",
        1,
        &["TopicA", "TopicB"],
    )
    .await;
    assert_eq!(resp.ext("masterAddr"), Some("10.0.0.1:10911"));
    assert_eq!(resp.ext("haServerAddr"), Some("127.0.0.1:10912"));
    let mut client = server.client().await;
    let body = body_text(&route(&mut client, "TopicA").await);
    assert!(
        body.contains(r#""brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}"#),
        "{body}"
    );
    let group = client
        .call(
            request::GET_BROKER_MEMBER_GROUP,
            &[
                ("clusterName", "DefaultCluster"),
                ("brokerName", "broker-a"),
            ],
            None,
        )
        .await;
    assert_eq!(
        body_text(&group),
        r#"{"brokerMemberGroup":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}}"#
    );
    // The master unregisters: the slave keeps the group (and its routes) alive.
    let unreg = client
        .ask(
            request::UNREGISTER_BROKER,
            &qdv_ext("broker-a", "10.0.0.1:10911"),
        )
        .await;
    assert_eq!(unreg.code, 0);
    let body = body_text(&route(&mut client, "TopicA").await);
    assert!(
        body.contains(r#""brokerAddrs":{"1":"10.0.0.2:10911"}"#),
        "{body}"
    );
}

#[tokio::test]
async fn a_49x_broker_registers_without_5x_fields() {
    let (server, mut broker) = TestServer::with_client("").await;
    broker.version = 409;
    let body = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1700000000000},"topicConfigTable":{"TopicA":{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TopicA","topicSysFlag":0,"writeQueueNums":8},"TopicB":{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TopicB","topicSysFlag":0,"writeQueueNums":8}}}}"#;
    let ext = [
        ("brokerName", "broker-old"),
        ("brokerAddr", "10.0.0.9:10911"),
        ("clusterName", "DefaultCluster"),
        ("haServerAddr", "10.0.0.9:10912"),
        ("brokerId", "0"),
        ("compressed", "false"),
    ];
    let resp = broker
        .call(request::REGISTER_BROKER, &ext, Some(body))
        .await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let mut client = server.client().await;
    let body = body_text(&route(&mut client, "TopicA").await);
    assert!(body.contains(r#""readQueueNums":8"#));
    assert!(body.contains(r#""enableActingMaster":false"#));
    // A pre-V3_0_11 broker sends the bare wrapper.
    broker.version = 30;
    let wrapper = br#"{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"Old1":{"topicName":"Old1"},"Old2":{"topicName":"Old2"}}}"#;
    let ext = [
        ("brokerName", "broker-older"),
        ("brokerAddr", "10.0.0.8:10911"),
        ("clusterName", "DefaultCluster"),
        ("haServerAddr", "10.0.0.8:10912"),
        ("brokerId", "0"),
    ];
    assert_eq!(
        broker
            .call(request::REGISTER_BROKER, &ext, Some(wrapper))
            .await
            .code,
        0
    );
    assert!(body_text(&route(&mut client, "Old1").await).contains(r#""readQueueNums":16"#));
}

fn compressed_body(topics: &[&str]) -> Vec<u8> {
    let mut raw = Vec::new();
    let chunk = |raw: &mut Vec<u8>, b: &[u8]| {
        raw.extend_from_slice(&(b.len() as i32).to_be_bytes());
        raw.extend_from_slice(b);
    };
    chunk(
        &mut raw,
        br#"{"counter":5,"stateVersion":0,"timestamp":1700000000000}"#,
    );
    raw.extend_from_slice(&(topics.len() as i32).to_be_bytes());
    for t in topics {
        chunk(&mut raw, format!("{t} 2 2 6 SINGLE_TAG {{}}").as_bytes());
    }
    chunk(&mut raw, b"[]");
    raw.extend_from_slice(&0i32.to_be_bytes());
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&raw).unwrap();
    z.finish().unwrap()
}

#[tokio::test]
async fn compressed_bodies_with_and_without_the_flag_and_the_crc_check() {
    let (server, mut broker) = TestServer::with_client("").await;
    let body = compressed_body(&["Z1", "Z2"]);
    let crc = (crc32fast::hash(&body) & 0x7fff_ffff).to_string();
    let mut ext = register_ext("broker-z", "10.0.0.3:10911", "0");
    ext.retain(|(k, _)| *k != "compressed");
    ext.push(("compressed", "true"));
    ext.push(("bodyCrc32", &crc));
    assert_eq!(
        broker
            .call(request::REGISTER_BROKER, &ext, Some(&body))
            .await
            .code,
        0
    );
    let mut client = server.client().await;
    assert!(body_text(&route(&mut client, "Z1").await).contains(r#""readQueueNums":2"#));
    // 5.x brokers say compressed=false even when they compress.
    let mut quirk = register_ext("broker-y", "10.0.0.4:10911", "0");
    quirk.push(("bodyCrc32", &crc));
    assert_eq!(
        broker
            .call(request::REGISTER_BROKER, &quirk, Some(&body))
            .await
            .code,
        0
    );
    // A wrong checksum is refused.
    let mut wrong = register_ext("broker-x", "10.0.0.5:10911", "0");
    wrong.push(("bodyCrc32", "12345"));
    let resp = broker
        .call(request::REGISTER_BROKER, &wrong, Some(&body))
        .await;
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (response::SYSTEM_ERROR, Some("crc32 not match"))
    );
    // Garbage that claims to be compressed is a decode failure, not a crash.
    let mut garbage = register_ext("broker-w", "10.0.0.6:10911", "0");
    garbage.retain(|(k, _)| *k != "compressed");
    garbage.push(("compressed", "true"));
    let resp = broker
        .call(
            request::REGISTER_BROKER,
            &garbage,
            Some(b"\x78\x9cnot zlib"),
        )
        .await;
    assert_eq!(resp.code, response::SYSTEM_ERROR);
    assert!(
        resp.remark
            .unwrap()
            .contains("Failed to decode RegisterBrokerBody")
    );
    assert_eq!(route(&mut client, "Z1").await.code, 0);
}

#[tokio::test]
async fn first_registration_with_a_single_topic_is_refused_like_java() {
    let (_server, mut broker) = TestServer::with_client("").await;
    let body = register_body(1, &["Only"]);
    let resp = register_raw(&mut broker, ("broker-a", "10.0.0.1:10911", "0"), &body).await;
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (response::SYSTEM_ERROR, Some("register broker failed"))
    );
    // Java answers from its (empty) response header: `"extFields":{}` is on the wire.
    assert_eq!(resp.ext_fields.map(|f| f.len()), Some(0));
}

#[tokio::test]
async fn missing_and_invalid_fields_are_clear_errors() {
    let (_server, mut broker) = TestServer::with_client("").await;
    let resp = broker
        .call(request::REGISTER_BROKER, &[("brokerName", "b")], None)
        .await;
    assert_eq!(resp.code, response::SYSTEM_ERROR);
    assert!(resp.remark.unwrap().contains("<brokerAddr> is null"));
    let mut ext = register_ext("broker-a", "10.0.0.1:10911", "0");
    ext.retain(|(k, _)| *k != "brokerId");
    ext.push(("brokerId", "abc"));
    let resp = broker.call(request::REGISTER_BROKER, &ext, None).await;
    assert!(
        resp.remark
            .unwrap()
            .contains("<brokerId> has an invalid value")
    );
    let body = br#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"perm":"x","topicName":"A"},"B":{"topicName":"B"}}}}"#;
    let resp = register_raw(&mut broker, ("broker-a", "10.0.0.1:10911", "0"), body).await;
    assert_eq!(resp.code, response::SYSTEM_ERROR);
    let resp = register_raw(
        &mut broker,
        ("broker-a", "10.0.0.1:10911", "0"),
        b"{not json",
    )
    .await;
    assert_eq!(resp.code, response::SYSTEM_ERROR);
    // Java fails on a negative version before reading the body.
    broker.version = -1;
    let body = register_body(1, &["A", "B"]);
    let resp = register_raw(&mut broker, ("broker-a", "10.0.0.1:10911", "0"), &body).await;
    assert_eq!(resp.code, response::SYSTEM_ERROR);
    broker.version = 479;
    assert_eq!(
        route(&mut broker, "A").await.code,
        response::TOPIC_NOT_EXIST
    );
    // Optional fields that do not parse are ignored, as Java ignores them: no CRC check,
    // the default timeout.
    let mut ext = register_ext("broker-a", "10.0.0.1:10911", "0");
    ext.push(("bodyCrc32", "3000000000"));
    ext.push(("heartbeatTimeoutMillis", "10s"));
    let resp = broker
        .call(request::REGISTER_BROKER, &ext, Some(&body))
        .await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert_eq!(route(&mut broker, "A").await.code, 0);
}

#[tokio::test]
async fn route_json_style_follows_client_version() {
    let (server, mut broker) = TestServer::with_client("").await;
    register_broker_a(&mut broker).await;
    let mut old = server.client().await;
    old.version = 121;
    let legacy = body_text(&route(&mut old, "TopicA").await);
    assert!(
        legacy.contains(r#""brokerAddrs":{0:"10.0.0.1:10911"}"#),
        "{legacy}"
    );
    let standard_by_flag = old
        .ask(
            request::GET_ROUTEINFO_BY_TOPIC,
            &[("topic", "TopicA"), ("acceptStandardJsonOnly", "true")],
        )
        .await;
    assert!(body_text(&standard_by_flag).contains(r#""brokerAddrs":{"0":"10.0.0.1:10911"}"#));
    let mut new = server.client().await;
    new.version = 401;
    assert!(body_text(&route(&mut new, "TopicA").await).contains(r#"{"0":"10.0.0.1:10911"}"#));
    let missing = route(&mut new, "Nope").await;
    assert_eq!(missing.code, response::TOPIC_NOT_EXIST);
    assert_eq!(
        missing.remark.as_deref(),
        Some(
            "No topic route info in name server for the topic: Nope\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
        )
    );
}

#[tokio::test]
async fn zone_mode_filters_groups_by_the_clients_zone() {
    let (server, mut b1) = TestServer::with_client("").await;
    for (name, addr, zone) in [
        ("broker-east", "10.0.0.1:10911", "east"),
        ("broker-west", "10.0.0.2:10911", "west"),
    ] {
        let reg = registration(name, addr, "0", 1, &["T", "U"]).header_field("__ZONE_NAME", zone);
        register_with(&mut b1, &reg).await;
    }
    let mut client = server.client().await;
    let zoned = client
        .call(
            request::GET_ROUTEINFO_BY_TOPIC,
            &[
                ("topic", "T"),
                ("__ZONE_MODE", "true"),
                ("__ZONE_NAME", "EAST"),
            ],
            None,
        )
        .await;
    let text = body_text(&zoned);
    assert!(
        text.contains("broker-east") && !text.contains("broker-west"),
        "{text}"
    );
    assert!(text.contains(r#""zoneName":"east""#));
    let unzoned = body_text(&route(&mut client, "T").await);
    assert!(unzoned.contains("broker-west"));
    let blank = client
        .call(
            request::GET_ROUTEINFO_BY_TOPIC,
            &[
                ("topic", "T"),
                ("__ZONE_MODE", "true"),
                ("__ZONE_NAME", " "),
            ],
            None,
        )
        .await;
    assert!(body_text(&blank).contains("broker-west"));
}

#[tokio::test]
async fn static_topic_mappings_appear_in_routes() {
    let (_server, mut broker) = TestServer::with_client("").await;
    let body = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1},"topicConfigTable":{"S":{"topicName":"S","readQueueNums":2,"writeQueueNums":2,"perm":6},"T":{"topicName":"T"}},"topicQueueMappingInfoMap":{"S":{"bname":"broker-a","currIdMap":{0:0,1:1},"dirty":false,"epoch":7,"scope":"__global__","topic":"S","totalQueues":2}}}}"#;
    let resp = register_raw(&mut broker, ("broker-a", "10.0.0.1:10911", "0"), body).await;
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let text = body_text(&route(&mut broker, "S").await);
    assert!(
        text.ends_with(r#""topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{"0":0,"1":1},"dirty":false,"epoch":7,"scope":"__global__","topic":"S","totalQueues":2}}}"#),
        "{text}"
    );
    assert!(!body_text(&route(&mut broker, "T").await).contains("topicQueueMappingByBroker"));
}

#[tokio::test]
async fn order_topic_config_reaches_brokers_and_routes() {
    let (_server, mut client) = TestServer::with_client("orderMessageEnable=true").await;
    let put = put_kv(&mut client, "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4").await;
    assert_eq!(put.code, 0);
    let resp = register_broker_a(&mut client).await;
    assert_eq!(body_text(&resp), r#"{"table":{"TopicA":"broker-a:4"}}"#);
    assert!(
        body_text(&route(&mut client, "TopicA").await).contains(r#""orderTopicConf":"broker-a:4""#)
    );
    assert!(!body_text(&route(&mut client, "TopicB").await).contains("orderTopicConf"));
    // A KV change is visible in the next route, cache or not.
    put_kv(&mut client, "ORDER_TOPIC_CONFIG", "TopicA", "broker-a:8").await;
    assert!(
        body_text(&route(&mut client, "TopicA").await).contains(r#""orderTopicConf":"broker-a:8""#)
    );
    update_config(&mut client, "orderMessageEnable=false").await;
    assert!(!body_text(&route(&mut client, "TopicA").await).contains("orderTopicConf"));
}

/// `broker-a` at `addr` with TopicA and TopicB, allowing a slave to act as master.
fn acting(addr: &str, id: &str) -> RegisterBroker {
    registration("broker-a", addr, id, 1, &["TopicA", "TopicB"]).enable_acting_master(true)
}

#[tokio::test]
async fn acting_master_rewrite_and_write_perm_cleared_when_the_master_leaves() {
    let (server, mut master) = TestServer::with_client("supportActingMaster=true").await;
    register_with(&mut master, &acting("10.0.0.1:10911", "0")).await;
    let mut slave = server.client().await;
    register_with(&mut slave, &acting("10.0.0.2:10911", "1")).await;
    drop(master);
    let mut client = server.client().await;
    for _ in 0..500 {
        let text = body_text(&route(&mut client, "TopicA").await);
        if text.contains(r#""perm":4"#) {
            assert!(
                text.contains(r#""brokerAddrs":{"0":"10.0.0.2:10911"}"#),
                "{text}"
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the slave never became the acting master");
}

#[tokio::test]
async fn switching_support_acting_master_at_run_time_changes_cached_routes() {
    let (server, mut slave) = TestServer::with_client("").await;
    register_with(&mut slave, &acting("10.0.0.2:10911", "1")).await;
    let mut client = server.client().await;
    assert!(body_text(&route(&mut client, "TopicA").await).contains(r#"{"1":"10.0.0.2:10911"}"#));
    let upd = update_config(&mut client, "supportActingMaster=true").await;
    assert_eq!(upd.code, 0);
    assert!(body_text(&route(&mut client, "TopicA").await).contains(r#"{"0":"10.0.0.2:10911"}"#));
}

#[tokio::test(start_paused = true)]
async fn the_readiness_gate_refuses_routes_until_brokers_had_time_to_register() {
    let (_server, mut client) = TestServer::with_client(
        "needWaitForService=true\nwaitSecondsForService=45\nserverChannelMaxIdleTimeSeconds=0",
    )
    .await;
    register_broker_a(&mut client).await;
    let resp = route(&mut client, "TopicA").await;
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (response::SYSTEM_ERROR, Some("name server not ready"))
    );
    tokio::time::advance(Duration::from_secs(46)).await;
    assert_eq!(route(&mut client, "TopicA").await.code, 0);
}
