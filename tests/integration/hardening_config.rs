//! Configuration an attacker could steer: keys that redirect clients or hold readiness are not
//! for unauthenticated clients to change; address rules are not trusted behind PROXY headers
//! from anyone; eviction protection is not swayed by brokers that only registered; and a
//! declared broker timeout is capped, so a re-split signed registration keeps no broker for
//! months.

use std::path::Path;
use std::time::Duration;

use namesrv::protocol::code::{request, response};
use namesrv::state::route_table::MAX_BROKER_TIMEOUT;

use crate::cli::{namesrv, private_config, run, stderr};
use crate::harness::{
    Options, TestClient, TestServer, body_text, register, register_body, register_ext, route,
    update_config,
};

const ADMIN: &str = "accounts:\n  - {accessKey: rocketmq2, secretKey: '12345678', admin: true}\n";

/// A server with the HTTP side door and `properties`; the accounts file `ADMIN` (or `acl`) is
/// written beside it for `authConfigPath`.
async fn server(properties: &str, acl: &str) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("acl.yml");
    std::fs::write(&path, acl).unwrap();
    let server = TestServer::start_with(Options {
        properties: format!("authConfigPath={}\n{properties}", path.display()),
        http: true,
        ..Options::default()
    })
    .await;
    (server, dir)
}

use crate::auth::{call, sign};

#[tokio::test]
async fn unauthenticated_clients_can_neither_redirect_clients_nor_hold_readiness() {
    let (server, _dir) = server("", ADMIN).await;
    let own = server.get("/rocketmq/nsaddr").await.body;
    let mut c = server.client().await;
    for (key, value) in [
        ("httpNsaddrList", "6.6.6.6:9876"),
        ("httpReadyMinLiveBrokers", "1000000"),
        ("namesrvPeers", "6.6.6.6:9876"),
        ("peerCheckIntervalMillis", "100"),
        ("needWaitForService", "true"),
        ("evictionProtectionMaxHoldMillis", "9223372036854775807"),
    ] {
        let resp = update_config(&mut c, &format!("orderMessageEnable=true\n{key}={value}")).await;
        let remark = resp.remark.unwrap_or_default();
        assert_eq!(resp.code, response::NO_PERMISSION, "{key}: {remark}");
        for word in [key, "start-up only", "authMode=enforce"] {
            assert!(remark.contains(word), "{key}: {remark}");
        }
    }
    // Nothing changed, nothing was persisted.
    assert_eq!(server.get("/rocketmq/nsaddr").await.body, own);
    assert_eq!(server.get("/readyz").await.status, 200);
    let config = body_text(&c.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    assert!(
        !config.contains("6.6.6.6") && config.contains("orderMessageEnable=false"),
        "{config}"
    );
    let persisted = server.state.config().settings.config_store_path.clone();
    let text = std::fs::read_to_string(persisted).unwrap_or_default();
    assert!(!text.contains("6.6.6.6"), "{text}");
    // Keys that do not steer clients stay live for everyone, as in Java.
    assert_eq!(
        update_config(&mut c, "orderMessageEnable=true").await.code,
        0
    );
}

#[tokio::test]
async fn a_signed_admin_may_change_them_when_auth_is_enforced() {
    let (server, _dir) = server("authMode=enforce\n", ADMIN).await;
    let mut c = server.client().await;
    let body = b"httpNsaddrList=10.0.0.1:9876;10.0.0.2:9876".to_vec();
    let unsigned = c.command(request::UPDATE_NAMESRV_CONFIG, &[], Some(&body));
    assert_eq!(call(&mut c, unsigned).await.code, response::NO_PERMISSION);
    let signed = sign(
        c.command(request::UPDATE_NAMESRV_CONFIG, &[], Some(&body)),
        "rocketmq2",
        "12345678",
    );
    let resp = call(&mut c, signed).await;
    assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
    assert_eq!(
        server.get("/rocketmq/nsaddr").await.body,
        "10.0.0.1:9876;10.0.0.2:9876"
    );
}

/// Runs the binary on a private config plus `extra`, with `acl` as its accounts file.
fn start_binary(dir: &Path, acl: &str, extra: &str) -> std::process::Output {
    let path = dir.join("acl.yml");
    std::fs::write(&path, acl).unwrap();
    let conf = private_config(dir);
    let mut text = std::fs::read_to_string(&conf).unwrap();
    text.push_str(&format!("authConfigPath={}\n{extra}", path.display()));
    std::fs::write(&conf, text).unwrap();
    let mut cmd = namesrv(dir);
    cmd.arg("-c").arg(&conf);
    run(cmd)
}

#[test]
fn address_rules_with_proxy_headers_from_anyone_do_not_start() {
    let white = "globalWhiteRemoteAddresses: [10.0.1.*]\naccounts: []\n";
    let pinned = "accounts:\n  - {accessKey: operator1, secretKey: '12345678', admin: true, whiteRemoteAddress: 10.0.0.*}\n";
    for (mode, acl, rule) in [
        ("enforce", white, "globalWhiteRemoteAddresses"),
        ("audit", pinned, "whiteRemoteAddress"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        // The default proxyProtocolAllowedAddresses is `*`.
        let out = start_binary(dir.path(), acl, &format!("authMode={mode}\n"));
        assert!(!out.status.success(), "{mode} started");
        let err = stderr(&out);
        for word in ["proxyProtocolAllowedAddresses", rule, "acl.yml"] {
            assert!(err.contains(word), "{mode}: no {word:?} in {err}");
        }
    }
}

// --- Eviction protection and fake brokers, on paused time (scans every second). ---

const SCAN_ONLY: &str = "scanNotActiveBrokerInterval=1000\nserverChannelMaxIdleTimeSeconds=0";

fn addr(b: usize) -> String {
    format!("10.0.0.{b}:10911")
}

fn topic(b: usize) -> String {
    format!("Topic{b}")
}

async fn register_broker(server: &TestServer, b: usize) -> TestClient {
    let mut c = server.client().await;
    let name = format!("broker-{b}");
    register(&mut c, &name, &addr(b), "0", 1, &[&topic(b), "Shared"]).await;
    c
}

async fn heartbeat(broker: &mut TestClient, b: usize) {
    let (name, addr) = (format!("broker-{b}"), addr(b));
    let ext = [
        ("clusterName", "DefaultCluster"),
        ("brokerAddr", addr.as_str()),
        ("brokerName", name.as_str()),
    ];
    let resp = broker.call(request::BROKER_HEARTBEAT, &ext, None).await;
    assert_eq!(resp.code, 0);
}

async fn pass(secs: u64) {
    tokio::time::advance(Duration::from_secs(secs)).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

async fn served(client: &mut TestClient, b: usize) -> bool {
    let resp = route(client, &topic(b)).await;
    resp.code == 0 && body_text(&resp).contains(&addr(b))
}

#[tokio::test(start_paused = true)]
async fn registered_and_silent_fakes_neither_keep_a_dead_broker_nor_raise_a_hold() {
    let server = TestServer::with_properties(SCAN_ONLY).await;
    let mut client = server.client().await;
    let mut real = Vec::new();
    for b in 0..5 {
        real.push(register_broker(&server, b).await);
    }
    // Ten fakes register once and say nothing more; broker 0 dies after 30 s; the other four
    // heartbeat every 30 s.
    let mut fakes = Vec::new();
    for b in 5..15 {
        fakes.push(register_broker(&server, b).await);
    }
    for round in 1..=6 {
        pass(30).await;
        for (b, broker) in real.iter_mut().enumerate() {
            if b > 0 || round == 1 {
                heartbeat(broker, b).await;
            }
        }
    }
    // 180 s: broker 0 has been silent 150 s, past its 120 s timeout: gone, as in Java.
    assert!(!served(&mut client, 0).await, "the dead broker was kept");
    for b in 1..5 {
        assert!(served(&mut client, b).await);
    }
    for b in 5..15 {
        assert!(!served(&mut client, b).await, "fake {b} was kept");
    }
    let status = server.state.eviction_protection();
    assert_eq!((status.held, status.holds), (0, 0), "a false hold");
}

#[tokio::test(start_paused = true)]
async fn heartbeating_newcomers_do_not_get_a_silent_cluster_evicted() {
    let server = TestServer::with_properties(SCAN_ONLY).await;
    let mut client = server.client().await;
    let mut real = Vec::new();
    for b in 0..5 {
        real.push(register_broker(&server, b).await);
    }
    pass(30).await;
    for (b, broker) in real.iter_mut().enumerate() {
        heartbeat(broker, b).await;
    }
    // The five fall silent together (a real mass silence); ten fakes appear and heartbeat
    // every 10 s.
    let mut fakes = Vec::new();
    for b in 5..15 {
        fakes.push(register_broker(&server, b).await);
    }
    for _ in 0..15 {
        pass(10).await;
        for (i, fake) in fakes.iter_mut().enumerate() {
            heartbeat(fake, i + 5).await;
        }
    }
    // 180 s: the five have been silent 150 s, and are held.
    for b in 0..5 {
        assert!(served(&mut client, b).await, "broker {b} was evicted");
    }
    let status = server.state.eviction_protection();
    assert_eq!((status.held, status.holds), (5, 1));
}

// --- A declared broker timeout is capped (finding: any client could keep a broker for ever). ---

#[tokio::test]
async fn a_re_split_signed_registration_keeps_no_broker_for_months() {
    let acl = "signatureRequired: [broker, admin]\naccounts:\n  - {accessKey: brokers1, secretKey: broker-secret, broker: true}\n";
    let (server, _dir) = server("authMode=enforce\n", acl).await;
    let mut c = server.client().await;
    let body = register_body(1, &["T1", "T2"]);
    let mut ext = register_ext("broker-a", "10.0.0.1:10911", "0");
    ext.retain(|(k, _)| *k != "haServerAddr");
    ext.push(("haServerAddr", "10.0.0.1:10912"));
    ext.push(("heartbeatTimeoutMillis", "120000"));
    let captured = sign(
        c.command(request::REGISTER_BROKER, &ext, Some(&body)),
        "brokers1",
        "broker-secret",
    );
    // The signature covers the values concatenated in key order, and these two keys are
    // neighbours: moving the port into the timeout keeps the signature valid (as in Java).
    let mut forged = captured.clone();
    let fields = forged.ext_fields.as_mut().unwrap();
    fields.insert("haServerAddr", "10.0.0.1:");
    fields.insert("heartbeatTimeoutMillis", "10912120000");
    forged.opaque += 1;
    let resp = call(&mut c, forged).await;
    assert_eq!(resp.code, response::SUCCESS, "{:?}", resp.remark);
    let timeout = server
        .state
        .routes()
        .live("DefaultCluster", "10.0.0.1:10911")
        .unwrap()
        .timeout;
    assert_eq!(timeout, MAX_BROKER_TIMEOUT, "not 10912120000 ms (126 days)");
}
