//! The HTTP side door over real sockets: probes, `/metrics`, the address server, the JSON
//! API and the status page, against a server holding brokers, topics and KV entries.

use std::time::Duration;

use namesrv::protocol::code::request as rc;
use namesrv::protocol::code::response;

use crate::harness::{
    HttpResponse, Options, TestClient, TestServer, apply_config, body_text, http_request,
    http_request_with, register, register_master, route, update_config,
};

/// A server with the HTTP listener on and `properties` in its config.
pub(crate) async fn server_with(properties: &str) -> TestServer {
    TestServer::start_with(Options {
        properties: properties.to_owned(),
        http: true,
        ..Options::default()
    })
    .await
}

/// The value of the series written exactly as `series` (name plus labels), if present.
fn metric(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

fn series_count(body: &str) -> usize {
    body.lines().filter(|l| !l.starts_with('#')).count()
}

async fn ok(server: &TestServer, path: &str) -> HttpResponse {
    let resp = server.get(path).await;
    assert_eq!(resp.status, 200, "{path}: {}", resp.body);
    resp
}

async fn json(server: &TestServer, path: &str) -> serde_json::Value {
    let resp = ok(server, path).await;
    assert_eq!(
        resp.header("content-type"),
        Some("application/json"),
        "{path}"
    );
    serde_json::from_str(&resp.body).unwrap()
}

#[tokio::test]
async fn the_listener_is_off_unless_a_port_is_configured() {
    let env = namesrv::config::Env {
        home: "/tmp".into(),
        rocketmq_home: None,
    };
    let mut settings = namesrv::config::Settings::defaults(&env);
    assert!(namesrv::http::bind(&settings).await.unwrap().is_none());
    // A port (0 is "off", so take a free one first) binds on loopback by default.
    let free = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    settings.http_listen_port = free.local_addr().unwrap().port() as i32;
    drop(free);
    let listener = namesrv::http::bind(&settings).await.unwrap().unwrap();
    assert!(listener.local_addr().unwrap().ip().is_loopback());
}

#[tokio::test]
async fn health_and_the_readiness_gate() {
    let server = server_with("needWaitForService=true\nwaitSecondsForService=45\n").await;
    assert_eq!(ok(&server, "/healthz").await.body, "ok\n");
    let resp = server.get("/readyz").await;
    assert_eq!(resp.status, 503);
    assert!(resp.body.contains("needWaitForService"), "{}", resp.body);
    let metrics = ok(&server, "/metrics").await.body;
    assert_eq!(metrics_value(&metrics, "namesrv_ready"), 0.0);
    // The gate is live configuration (from the file, as clients may not change it unless
    // authMode=enforce): lifting it makes the server ready at once.
    let mut client = server.client().await;
    let update = update_config(&mut client, "needWaitForService=false").await;
    assert_eq!(update.code, response::NO_PERMISSION, "{:?}", update.remark);
    apply_config(&server, "needWaitForService=false");
    assert_eq!(ok(&server, "/readyz").await.body, "ready\n");
    let metrics = ok(&server, "/metrics").await.body;
    assert_eq!(metrics_value(&metrics, "namesrv_ready"), 1.0);
}

fn metrics_value(body: &str, series: &str) -> f64 {
    metric(body, series).unwrap_or_else(|| panic!("no series {series} in\n{body}"))
}

#[tokio::test]
async fn readiness_waits_for_the_configured_number_of_live_brokers() {
    let server = server_with("httpReadyMinLiveBrokers=1\n").await;
    let resp = server.get("/readyz").await;
    assert_eq!(resp.status, 503);
    assert!(resp.body.contains("0 live broker(s)"), "{}", resp.body);
    let mut broker = server.client().await;
    register_master(&mut broker, "broker-a", "10.0.0.1:10911", &["A", "B"]).await;
    assert_eq!(server.get("/readyz").await.status, 200);
    drop(broker);
    wait_for(&server, "/readyz", |r| r.status == 503).await;
}

async fn wait_for(server: &TestServer, path: &str, done: impl Fn(&HttpResponse) -> bool) {
    for _ in 0..100 {
        if done(&server.get(path).await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path} never reached the expected state");
}

#[tokio::test]
async fn readiness_fails_while_shutdown_drains() {
    let mut server =
        server_with("shutdownGracePeriodMillis=3000\nmaxQueuedResponseBytes=65536\n").await;
    let mut broker = server.client().await;
    let topics: Vec<String> = (0..2000).map(|i| format!("Topic-{i:05}")).collect();
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    register_master(&mut broker, "broker-a", "10.0.0.1:10911", &names).await;
    // A client that asks for large answers and never reads them keeps its connection busy
    // writing, so the drain lasts until the grace period ends.
    let mut stuck = server.client().await;
    for _ in 0..400 {
        let cmd = stuck.command(rc::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, &[], None);
        stuck.send(&cmd).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.get("/readyz").await.status, 200);
    let stopped = server.begin_stop();
    wait_for(&server, "/readyz", |r| {
        r.status == 503 && r.body.contains("shutting down")
    })
    .await;
    stopped.await.unwrap().unwrap();
    drop(stuck);
}

#[tokio::test]
async fn metrics_count_requests_registrations_evictions_and_state() {
    let server = server_with("").await;
    let mut broker = server.client().await;
    // The second registration repeats the first: its body is recognised as unchanged.
    for _ in 0..2 {
        register_master(&mut broker, "broker-a", "10.0.0.1:10911", &["A", "B", "C"]).await;
    }
    let mut client = server.client().await;
    for _ in 0..3 {
        assert_eq!(route(&mut client, "A").await.code, 0);
    }
    assert_eq!(route(&mut client, "Nope").await.code, 17);
    assert_eq!(client.call(9999, &[], None).await.code, 3);
    let put = [("namespace", "ns"), ("key", "k"), ("value", "v")];
    assert_eq!(client.call(rc::PUT_KV_CONFIG, &put, None).await.code, 0);

    let resp = ok(&server, "/metrics").await;
    assert_eq!(
        resp.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let m = resp.body;
    let v = |s: &str| metrics_value(&m, s);
    let req = |code: &str, resp: &str| {
        v(&format!(
            "namesrv_requests_total{{request_code=\"{code}\",response_code=\"{resp}\"}}"
        ))
    };
    assert_eq!(req("get_routeinfo_by_topic", "success"), 3.0);
    assert_eq!(req("get_routeinfo_by_topic", "topic_not_exist"), 1.0);
    assert_eq!(req("other", "request_code_not_supported"), 1.0);
    assert_eq!(req("register_broker", "success"), 2.0);
    assert_eq!(v("namesrv_registrations_total{outcome=\"full\"}"), 1.0);
    assert_eq!(v("namesrv_registrations_total{outcome=\"unchanged\"}"), 1.0);
    assert_eq!(v("namesrv_live_brokers{cluster=\"DefaultCluster\"}"), 1.0);
    assert_eq!(v("namesrv_broker_groups{cluster=\"DefaultCluster\"}"), 1.0);
    assert_eq!(v("namesrv_topics"), 3.0);
    assert_eq!(v("namesrv_connections_open"), 2.0);
    assert_eq!(v("namesrv_connections_accepted_total"), 2.0);
    assert_eq!(v("namesrv_kv_entries"), 1.0);
    assert_eq!(v("namesrv_kv_write_duration_seconds_count"), 1.0);
    assert_eq!(v("namesrv_kv_write_failures_total"), 0.0);
    assert_eq!(v("namesrv_route_cache_misses_total"), 1.0);
    assert_eq!(v("namesrv_route_cache_hits_total"), 2.0);
    assert_eq!(v("namesrv_eviction_protection_held_brokers"), 0.0);
    assert_eq!(v("namesrv_eviction_protection_holds_total"), 0.0);
    assert_eq!(
        v("namesrv_request_duration_seconds_count{class=\"route\"}"),
        4.0
    );
    assert!(v("namesrv_received_bytes_total") > 0.0);
    assert!(v("namesrv_sent_bytes_total") > 0.0);
    assert!(v("process_resident_memory_bytes") > 0.0);
    assert!(v("process_open_fds") > 0.0);
    assert!(m.contains("process_cpu_seconds_total "));

    // The broker's connection closes: it is evicted, and its cluster reads 0 (not nothing).
    drop(broker);
    let mut client2 = server.client().await;
    let unregistration = register(
        &mut client2,
        "broker-b",
        "10.0.0.2:10911",
        "0",
        1,
        &["X", "Y"],
    );
    unregistration.await;
    let unreg = [
        ("brokerName", "broker-b"),
        ("brokerAddr", "10.0.0.2:10911"),
        ("clusterName", "DefaultCluster"),
        ("brokerId", "0"),
    ];
    assert_eq!(
        client2.call(rc::UNREGISTER_BROKER, &unreg, None).await.code,
        0
    );
    wait_for(&server, "/metrics", |r| {
        metric(&r.body, "namesrv_live_brokers{cluster=\"DefaultCluster\"}") == Some(0.0)
    })
    .await;
    let m = ok(&server, "/metrics").await.body;
    let v = |s: &str| metrics_value(&m, s);
    assert_eq!(
        v("namesrv_broker_evictions_total{reason=\"connection_closed\"}"),
        1.0
    );
    assert_eq!(
        v("namesrv_broker_evictions_total{reason=\"unregister\"}"),
        1.0
    );
    assert_eq!(v("namesrv_broker_evictions_total{reason=\"scan\"}"), 0.0);
    assert_eq!(v("namesrv_topics"), 0.0);
}

#[tokio::test]
async fn series_do_not_grow_with_topics_keys_codes_or_clients() {
    let server = server_with("").await;
    let mut broker = server.client().await;
    let topics: Vec<String> = (0..3000).map(|i| format!("Topic-{i:05}")).collect();
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    register_master(&mut broker, "broker-a", "10.0.0.1:10911", &names).await;
    let mut clients = Vec::new();
    for i in 0..20 {
        let mut c = server.client().await;
        route(&mut c, &topics[i * 7]).await;
        c.call(1000 + i as i32, &[], None).await;
        let key = format!("key-{i}");
        let put = [("namespace", "ns"), ("key", key.as_str()), ("value", "v")];
        c.call(rc::PUT_KV_CONFIG, &put, None).await;
        clients.push(c);
    }
    let m = ok(&server, "/metrics").await.body;
    assert!(series_count(&m) < 500, "{} series", series_count(&m));
    assert!(!m.contains("Topic-0"), "no topic names in labels");
    assert!(!m.contains("key-1"), "no KV keys in labels");
    assert_eq!(
        metrics_value(
            &m,
            "namesrv_requests_total{request_code=\"other\",response_code=\"request_code_not_supported\"}"
        ),
        20.0
    );
}

#[tokio::test]
async fn the_address_server_answers_every_subgroup() {
    let server = server_with("").await;
    let own = format!("127.0.0.1:{}", server.addr.port());
    for path in [
        "/rocketmq/nsaddr",
        "/rocketmq/nsaddr-unit1?nofix=1",
        "/rocketmq/custom",
    ] {
        let resp = ok(&server, path).await;
        assert_eq!(resp.body, own, "{path}");
        assert!(
            resp.header("content-type")
                .unwrap()
                .starts_with("text/plain")
        );
    }
    // The list is live configuration from the file (clients may not change it unless
    // authMode=enforce), validated like every key.
    apply_config(&server, "httpNsaddrList=10.0.0.1:9876; 10.0.0.2:9876");
    assert_eq!(
        ok(&server, "/rocketmq/nsaddr").await.body,
        "10.0.0.1:9876;10.0.0.2:9876"
    );
    let props = namesrv::config::properties::parse("httpNsaddrList=nohost").unwrap();
    let mut config = server.state.config().clone();
    let bad = config.update(&props).unwrap_err();
    assert!(bad.to_string().contains("httpNsaddrList"), "{bad}");
    assert_eq!(
        ok(&server, "/rocketmq/nsaddr").await.body,
        "10.0.0.1:9876;10.0.0.2:9876"
    );
}

/// Two clusters, a master/slave group, a group whose write permission was wiped, KV entries
/// and a topic whose name is markup.
async fn populated() -> (TestServer, TestClient) {
    let server = server_with("secretKey=hunter2\n").await;
    let mut broker = server.client().await;
    broker.version = 479;
    register_master(
        &mut broker,
        "broker-a",
        "10.0.0.1:10911",
        &["Orders", "<b>x</b>"],
    )
    .await;
    register(
        &mut broker,
        "broker-a",
        "10.0.0.1:10921",
        "1",
        1,
        &["Orders", "<b>x</b>"],
    )
    .await;
    register_master(
        &mut broker,
        "broker-b",
        "10.0.0.2:10911",
        &["Orders", "Payments"],
    )
    .await;
    let wipe = crate::harness::wipe_write_perm(&mut broker, "broker-b").await;
    assert_eq!(wipe.code, 0);
    let put = [
        ("namespace", "ORDER_TOPIC_CONFIG"),
        ("key", "Orders"),
        ("value", "broker-a:4"),
    ];
    assert_eq!(broker.call(rc::PUT_KV_CONFIG, &put, None).await.code, 0);
    (server, broker)
}

#[tokio::test]
async fn the_json_api_shows_what_clients_and_brokers_see() {
    let (server, mut broker) = populated().await;
    let status = json(&server, "/api/status").await;
    assert_eq!(status["ready"], true);
    assert_eq!(status["topics"], 3);
    assert_eq!(status["liveBrokers"], 3);
    assert_eq!(status["brokerGroups"], 2);
    assert_eq!(status["kv"]["entries"], 1);

    let clusters = json(&server, "/api/clusters").await;
    let groups = &clusters[0]["brokerGroups"];
    assert_eq!(clusters[0]["clusterName"], "DefaultCluster");
    assert_eq!(groups[0]["brokerName"], "broker-a");
    assert_eq!(groups[0]["writableTopics"], 2);
    assert_eq!(groups[1]["writableTopics"], 0, "write permission wiped");
    let slave = &groups[0]["brokers"][1];
    assert_eq!(slave["brokerId"], 1);
    assert_eq!(slave["addr"], "10.0.0.1:10921");
    assert_eq!(slave["versionName"], "V5_3_3");
    assert_eq!(slave["dataVersion"]["counter"], 1);
    assert!(slave["expiresInMs"].as_u64().unwrap() > 100_000);

    let brokers = json(&server, "/api/brokers").await;
    assert_eq!(brokers.as_array().unwrap().len(), 3);

    let topics = json(&server, "/api/topics?q=ORD&limit=10").await;
    assert_eq!(
        topics,
        serde_json::json!({ "total": 1, "topics": ["Orders"] })
    );
    assert_eq!(server.get("/api/topics?limit=many").await.status, 400);

    // The route is the body a current client receives, byte for byte.
    let over_http = ok(&server, "/api/topics/Orders/route").await.body;
    let over_tcp = body_text(&route(&mut broker, "Orders").await);
    assert_eq!(over_http, over_tcp);
    let missing = server.get("/api/topics/Nope/route").await;
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("Nope"));

    let kv = json(&server, "/api/kv").await;
    assert_eq!(
        kv,
        serde_json::json!([{ "namespace": "ORDER_TOPIC_CONFIG", "keys": 1 }])
    );
    let ns = json(&server, "/api/kv/ORDER_TOPIC_CONFIG").await;
    assert_eq!(ns["entries"]["Orders"], "broker-a:4");
    assert_eq!(server.get("/api/kv/none").await.status, 404);

    let config = json(&server, "/api/config").await;
    assert_eq!(config["listenPort"], "9876");
    assert_eq!(config["secretKey"], "******", "secrets are hidden");
    assert_eq!(config["httpBindAddress"], "127.0.0.1");
}

#[tokio::test]
async fn the_status_page_shows_clusters_topics_kv_and_config() {
    let (server, _broker) = populated().await;
    let page = ok(&server, "/").await;
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.body;
    for expected in [
        "DefaultCluster",
        "broker-a",
        "10.0.0.1:10921",
        "V5_3_3",
        "read-only (write permission wiped)",
        "ORDER_TOPIC_CONFIG",
        "secretKey",
        "location.reload",
        "width=device-width",
    ] {
        assert!(html.contains(expected), "the page shows {expected}");
    }
    assert!(!html.contains("hunter2"), "secrets are hidden");
    assert!(!html.contains("<b>x</b>"), "topic names are escaped");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "nothing from elsewhere"
    );

    let search = ok(&server, "/?topic=%3Cb%3Ex").await.body;
    assert!(search.contains("&lt;b&gt;x&lt;/b&gt;"), "found, escaped");
    assert!(!search.contains("<b>x</b>"));
    let routed = ok(&server, "/?topic=Orders").await.body;
    assert!(routed.contains("Route of Orders"));
    assert!(routed.contains("6 (read, write)") && routed.contains("4 (read)"));
}

#[tokio::test]
async fn nothing_can_be_changed_and_unknown_paths_are_404() {
    let server = server_with("").await;
    let http = server.http.unwrap();
    for path in ["/metrics", "/api/config", "/", "/rocketmq/nsaddr"] {
        let resp = http_request(http, "POST", path).await;
        assert_eq!(resp.status, 405, "POST {path}");
        let resp = http_request(http, "DELETE", path).await;
        assert_eq!(resp.status, 405, "DELETE {path}");
    }
    assert_eq!(server.get("/nope").await.status, 404);
    assert_eq!(server.get("/api/nope").await.status, 404);
}

#[tokio::test]
async fn with_auth_enforced_the_page_and_api_need_an_admin_account() {
    use base64::Engine as _;
    let (_dir, acl) = crate::harness::temp_file(
        "acl.yml",
        "accounts:\n  - {accessKey: rocketmq2, secretKey: 12345678, admin: true}\n  - {accessKey: reader01, secretKey: 12345678}\n",
    );
    let server = server_with(&format!(
        "authMode=enforce\nauthConfigPath={}\nproxyProtocolAllowedAddresses=\n",
        acl.display()
    ))
    .await;
    let http = server.http.unwrap();
    let basic = |ak: &str, sk: &str| {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{ak}:{sk}"));
        format!("Basic {token}")
    };
    // Probes, metrics and the address server stay open.
    for path in ["/healthz", "/readyz", "/metrics", "/rocketmq/nsaddr"] {
        assert_eq!(server.get(path).await.status, 200, "{path}");
    }
    let m = ok(&server, "/metrics").await.body;
    assert_eq!(metrics_value(&m, "namesrv_auth_accounts"), 2.0);
    assert!(m.contains("namesrv_auth_refused_total{reason=\"bad_signature\"} 0"));
    // The page and the API need an admin account's keys.
    for path in ["/", "/api/config", "/api/history", "/api/topics/T/route"] {
        let refused = server.get(path).await;
        assert_eq!(refused.status, 401, "{path}");
        assert!(
            refused
                .header("www-authenticate")
                .unwrap()
                .starts_with("Basic")
        );
        for wrong in [
            basic("rocketmq2", "wrong-secret"),
            basic("reader01", "12345678"),
        ] {
            let resp = http_request_with(http, "GET", path, &[("Authorization", &wrong)]).await;
            assert_eq!(resp.status, 401, "{path} with {wrong}");
        }
    }
    let admin = basic("rocketmq2", "12345678");
    let resp = http_request_with(http, "GET", "/api/config", &[("Authorization", &admin)]).await;
    assert_eq!(resp.status, 200);
    assert!(resp.body.contains("\"authMode\":\"enforce\""));
    let page = http_request_with(http, "GET", "/", &[("Authorization", &admin)]).await;
    assert_eq!(page.status, 200);
}

#[tokio::test]
async fn clients_that_never_finish_their_headers_cannot_keep_probes_out() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = server_with("").await;
    let addr = server.http.unwrap();
    // Fill every connection slot with a request whose headers never end.
    let mut stalled = Vec::new();
    for _ in 0..namesrv::http::MAX_CONNECTIONS {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        stalled.push(s);
    }
    // The server closes them once the header timeout passes, and the probe gets in.
    let probe = tokio::time::timeout(
        namesrv::http::HEADER_READ_TIMEOUT + Duration::from_secs(10),
        server.get("/healthz"),
    )
    .await
    .expect("a probe must get through once the stalled clients time out");
    assert_eq!(probe.status, 200);
    let mut buf = [0u8; 64];
    let n = stalled[0].read(&mut buf).await.unwrap_or(0);
    // Closed, possibly after a 408 answer: no request was ever served on it.
    assert!(!String::from_utf8_lossy(&buf[..n]).contains("200 OK"));
}

#[tokio::test]
async fn a_cluster_that_empties_before_any_scrape_still_reads_zero() {
    let server = server_with("").await;
    let mut broker = server.client().await;
    register_master(&mut broker, "broker-a", "10.0.0.1:10911", &["A", "B"]).await;
    // The broker leaves before /metrics has ever been asked for.
    drop(broker);
    wait_for(&server, "/api/brokers", |r| r.body.trim() == "[]").await;
    let m = ok(&server, "/metrics").await.body;
    assert_eq!(
        metric(&m, "namesrv_live_brokers{cluster=\"DefaultCluster\"}"),
        Some(0.0),
        "{m}"
    );
}
