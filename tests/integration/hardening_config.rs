//! Configuration an attacker could steer: keys that redirect clients or hold readiness are not
//! for unauthenticated clients to change; address rules are not trusted behind PROXY headers
//! from anyone; and a declared broker timeout is capped, so a re-split signed registration
//! keeps no broker for months.

use std::path::Path;

use namesrv::protocol::code::{request, response};
use namesrv::state::route_table::MAX_BROKER_TIMEOUT;

use crate::harness::process::{private_config, run_namesrv, stderr};
use crate::harness::{Options, TestServer, body_text, register_body, register_ext, update_config};

const ADMIN: &str = "accounts:\n  - {accessKey: rocketmq2, secretKey: '12345678', admin: true}\n";

/// A server with the HTTP side door and `properties`; the accounts file `ADMIN` (or `acl`) is
/// written beside it for `authConfigPath`.
async fn server(properties: &str, acl: &str) -> (TestServer, tempfile::TempDir) {
    let (dir, path) = crate::harness::temp_file("acl.yml", acl);
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
    run_namesrv(dir, &[], Some(&conf))
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
