//! The PROXY protocol on the remoting port: the header is stripped, the client address it
//! carries is the one the server acts on — here, the auth gate's address trust — and only the
//! peers `proxyProtocolAllowedAddresses` lists may send one.

use std::net::SocketAddr;

use namesrv::metrics::PreludeOutcome;
use namesrv::protocol::code::{request, response};
use namesrv::server::prelude::proxy::{v1_header, v2_header};

use crate::harness::{TestClient, TestServer, tls_client_config};

/// Unsigned reads are refused, except from 203.0.113.* (trusted by address).
const ACCOUNTS: &str = "\
signatureRequired: [read, admin]
globalWhiteRemoteAddresses: [203.0.113.*]
accounts:
  - accessKey: rocketmq2
    secretKey: 12345678
    admin: true
";

async fn start(extra: &str) -> (TestServer, tempfile::TempDir) {
    let (dir, acl) = crate::harness::temp_file("acl.yml", ACCOUNTS);
    // The tests' proxy is this host; `extra` may list others instead.
    let server = TestServer::with_properties(&format!(
        "authMode=enforce\nauthConfigPath={}\nproxyProtocolAllowedAddresses=127.0.0.1\n{extra}",
        acl.display()
    ))
    .await;
    (server, dir)
}

async fn route_code(c: &mut TestClient) -> i32 {
    c.call(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")], None)
        .await
        .code
}

fn trusted() -> SocketAddr {
    "203.0.113.5:40000".parse().unwrap()
}

fn server_side() -> SocketAddr {
    "198.51.100.1:9876".parse().unwrap()
}

#[tokio::test]
async fn the_proxied_client_address_is_the_one_the_auth_gate_sees() {
    let (server, _dir) = start("").await;
    let mut direct = server.client().await;
    assert_eq!(route_code(&mut direct).await, response::NO_PERMISSION);
    let mut v1 =
        TestClient::connect_with_prefix(server.addr, &v1_header(trusted(), server_side())).await;
    assert_eq!(route_code(&mut v1).await, response::TOPIC_NOT_EXIST);
    let v2 = v2_header(Some((trusted(), server_side())), &[(0x04, b"vpce-0abc")]);
    let mut tls = TestClient::connect_tls(server.addr, tls_client_config(), &v2)
        .await
        .unwrap();
    assert_eq!(route_code(&mut tls).await, response::TOPIC_NOT_EXIST);
    // A LOCAL header (a load balancer's health check) keeps the socket's own address.
    let mut local = TestClient::connect_with_prefix(server.addr, &v2_header(None, &[])).await;
    assert_eq!(route_code(&mut local).await, response::NO_PERMISSION);
}

#[tokio::test]
async fn only_allowed_peers_may_send_a_proxy_header() {
    let (server, _dir) = start("proxyProtocolAllowedAddresses=10.9.9.9;192.0.2.*\n").await;
    let mut spoofing =
        TestClient::connect_with_prefix(server.addr, &v1_header(trusted(), server_side())).await;
    let cmd = spoofing.command(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")], None);
    spoofing.send(&cmd).await;
    assert!(spoofing.closed_without_reply().await);
    // Without a header the same peer is served as itself.
    let mut direct = server.client().await;
    assert_eq!(route_code(&mut direct).await, response::NO_PERMISSION);
    let metrics = server.state.metrics();
    assert_eq!(metrics.preludes(PreludeOutcome::ProxyNotAllowed), 1);
}
