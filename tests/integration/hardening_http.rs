//! The HTTP side door under attack: clients that pipeline requests and never read, many
//! connections from one address, credential guessing, and views that wait for the route
//! table's lock — probes and the rest of the server must keep answering.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use base64::Engine as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::harness::{
    HttpResponse, TestServer, http_exchange, http_request, http_request_with, register_broker_a,
};

use crate::http::server_with;

/// A connection to `to` from the loopback address `from` (all of 127/8 is loopback on Linux).
async fn connect_from(from: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    let ip: IpAddr = from.parse().unwrap();
    socket.bind(SocketAddr::new(ip, 0)).unwrap();
    socket.connect(to).await.unwrap()
}

/// A client that pipelines `GET /metrics` and never reads the answers.
async fn pipeline_and_never_read(from: &str, to: SocketAddr) -> TcpStream {
    let mut s = connect_from(from, to).await;
    let requests = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".repeat(2000);
    // The server stops reading once its answers fill the socket: give up writing then.
    let _ = tokio::time::timeout(Duration::from_secs(1), s.write_all(requests.as_bytes())).await;
    s
}

/// `path` answers 200, 20 times out of 20, each within 5 s: a starved probe never answers, and
/// the slack keeps a loaded 2-core CI machine from failing a healthy server.
async fn probes_answer_promptly(server: &TestServer) {
    for i in 0..20 {
        let path = if i % 2 == 0 { "/healthz" } else { "/readyz" };
        let resp = tokio::time::timeout(Duration::from_secs(5), server.get(path))
            .await
            .unwrap_or_else(|_| panic!("probe {i} ({path}) not answered within 5 s"));
        assert_eq!(resp.status, 200, "probe {i} ({path}): {}", resp.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_get_through_64_clients_that_pipeline_and_never_read() {
    let server = server_with("").await;
    let http = server.http.unwrap();
    // The attack: 64 sockets from the probe's own address...
    let mut attackers = Vec::new();
    for _ in 0..64 {
        attackers.push(pipeline_and_never_read("127.0.0.1", http).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    probes_answer_promptly(&server).await;
    // ...and 64 more spread over four other addresses, enough for every ordinary slot.
    for i in 0..64 {
        let from = format!("127.0.0.{}", 2 + i % 4);
        attackers.push(pipeline_and_never_read(&from, http).await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    probes_answer_promptly(&server).await;

    // A client that reads nothing is closed once a write has waited for the write deadline.
    let budget = namesrv::http::WRITE_TIMEOUT + Duration::from_secs(20);
    let mut stuck = attackers.swap_remove(70);
    let mut sink = Vec::new();
    let closed = tokio::time::timeout(budget, stuck.read_to_end(&mut sink)).await;
    assert!(
        closed.is_ok(),
        "the connection of a client that never reads is closed"
    );
}

#[tokio::test]
async fn one_address_gets_a_bounded_share_of_the_connections() {
    let server = server_with("").await;
    let http = server.http.unwrap();
    // Connections that send nothing yet hold their slots (until the header timeout).
    let mut held = Vec::new();
    for _ in 0..namesrv::http::MAX_CONNECTIONS_PER_CLIENT {
        held.push(connect_from("127.0.0.2", http).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let over = request_from("127.0.0.2", http, "/metrics").await;
    assert_eq!(over.0, 503, "over the per-client limit: {}", over.1);
    assert!(over.1.contains("/healthz"), "{}", over.1);
    // Probes from that address are still answered, and other addresses are served in full.
    assert_eq!(request_from("127.0.0.2", http, "/healthz").await.0, 200);
    assert_eq!(request_from("127.0.0.3", http, "/metrics").await.0, 200);
    drop(held);
}

/// `(status, body)` of `GET path` sent from `from`.
async fn request_from(from: &str, to: SocketAddr, path: &str) -> (u16, String) {
    let s = connect_from(from, to).await;
    let resp = tokio::time::timeout(
        Duration::from_secs(10),
        http_exchange(s, to, "GET", path, &[]),
    )
    .await
    .expect("an answer within 10 s");
    (resp.status, resp.body)
}

#[tokio::test]
async fn the_page_forbids_framing_sniffing_and_foreign_script() {
    let server = server_with("").await;
    let page = server.get("/").await;
    assert_eq!(page.status, 200);
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    let csp = page.header("content-security-policy").expect("a CSP");
    for directive in [
        "default-src 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    // The page's own inline script and style are allowed by their hashes, nothing else is.
    for (open, close, directive) in [
        ("<script>", "</script>", "script-src"),
        ("<style>", "</style>", "style-src"),
    ] {
        let inline = between(&page.body, open, close);
        let hash = ring::digest::digest(&ring::digest::SHA256, inline.as_bytes());
        let hash = base64::engine::general_purpose::STANDARD.encode(hash.as_ref());
        assert!(
            csp.contains(&format!("{directive} 'sha256-{hash}'")),
            "{directive} hash in {csp}"
        );
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    // The other answers are not to be sniffed or framed either.
    for path in ["/metrics", "/api/status", "/healthz", "/nope"] {
        let resp = server.get(path).await;
        assert_eq!(
            resp.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(resp.header("x-frame-options"), Some("DENY"), "{path}");
    }
}

fn between<'a>(text: &'a str, open: &str, close: &str) -> &'a str {
    let start = text.find(open).expect(open) + open.len();
    let len = text[start..].find(close).expect(close);
    &text[start..start + len]
}

fn basic(ak: &str, sk: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{ak}:{sk}"));
    format!("Basic {token}")
}

async fn enforced(accounts: &str) -> (TestServer, tempfile::TempDir) {
    let (dir, acl) = crate::harness::temp_file("acl.yml", accounts);
    let server = server_with(&format!(
        "authMode=enforce\nauthConfigPath={}\nproxyProtocolAllowedAddresses=\n",
        acl.display()
    ))
    .await;
    (server, dir)
}

async fn page_with(server: &TestServer, authorization: &str) -> HttpResponse {
    let headers = [("Authorization", authorization)];
    http_request_with(server.http.unwrap(), "GET", "/api/config", &headers).await
}

/// The status of the config API asked with Basic credentials `ak`:`sk`.
async fn status_with(server: &TestServer, ak: &str, sk: &str) -> u16 {
    page_with(server, &basic(ak, sk)).await.status
}

fn metric(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().unwrap())
}

#[tokio::test]
async fn basic_auth_honours_the_accounts_address_rule_and_counts_refusals() {
    let (server, _dir) = enforced(
        "accounts:\n  - {accessKey: remote01, secretKey: 12345678, admin: true, whiteRemoteAddress: 10.9.9.*}\n  - {accessKey: local01, secretKey: 12345678, admin: true, whiteRemoteAddress: 127.0.0.1}\n",
    )
    .await;
    let refused = page_with(&server, &basic("remote01", "12345678")).await;
    assert_eq!(refused.status, 401, "right keys, forbidden address");
    assert_eq!(status_with(&server, "local01", "12345678").await, 200);
    assert_eq!(status_with(&server, "local01", "wrong").await, 401);
    assert_eq!(status_with(&server, "nobody", "x").await, 401);
    assert_eq!(server.get("/api/config").await.status, 401);
    let m = server.get("/metrics").await.body;
    let refused = |reason: &str| {
        metric(
            &m,
            &format!("namesrv_auth_http_refused_total{{reason=\"{reason}\"}}"),
        )
        .unwrap_or_else(|| panic!("no HTTP refusals for {reason} in\n{m}"))
    };
    assert_eq!(refused("address_not_allowed"), 1.0);
    assert_eq!(refused("bad_signature"), 1.0);
    assert_eq!(refused("unknown_access_key"), 1.0);
    assert_eq!(refused("missing_access_key"), 1.0);
}

#[tokio::test]
async fn repeated_wrong_credentials_from_one_address_are_slowed_down() {
    let (server, _dir) =
        enforced("accounts:\n  - {accessKey: rocketmq2, secretKey: 12345678, admin: true}\n").await;
    let wrong = basic("rocketmq2", "guess");
    for _ in 0..5 {
        assert_eq!(page_with(&server, &wrong).await.status, 401);
    }
    // After five failures, each further attempt waits (right keys included: no oracle).
    let start = Instant::now();
    assert_eq!(status_with(&server, "rocketmq2", "12345678").await, 200);
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "answered after {:?}",
        start.elapsed()
    );
    // A success forgives the address.
    let start = Instant::now();
    assert_eq!(page_with(&server, &wrong).await.status, 401);
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn views_wait_for_the_route_table_off_the_runtime_workers() {
    // One runtime thread (the default test runtime): a view that waited for the route table's
    // lock on it would stop every other connection too.
    let server = server_with("").await;
    let mut broker = server.client().await;
    register_broker_a(&mut broker).await;
    let state = server.state.clone();
    // The writer holds the lock until the probe is answered (or 30 s pass): the probe must be
    // answered while the lock is held, however slow the machine, and a runtime stuck behind
    // the view would only answer it after the release.
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let (answered_tx, answered_rx) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        let _routes = state.routes_mut();
        locked_tx.send(()).unwrap();
        answered_rx.recv_timeout(Duration::from_secs(30)).is_ok()
    });
    locked_rx.recv().unwrap();
    let http = server.http.unwrap();
    let view = tokio::spawn(async move { http_request(http, "GET", "/api/clusters").await });
    // The probe runs on a runtime of its own, so that it is sent even if the server's runtime
    // is stuck; it starts once the view is waiting for the lock.
    let probe = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let answer = runtime.block_on(http_request(http, "GET", "/healthz"));
        let _ = answered_tx.send(());
        answer
    });
    let probe = tokio::task::spawn_blocking(move || probe.join().unwrap())
        .await
        .unwrap();
    assert_eq!(probe.status, 200);
    assert!(
        writer.join().unwrap(),
        "a probe is answered while a view waits for the route table"
    );
    let view = view.await.unwrap();
    assert_eq!(view.status, 200);
    assert!(view.body.contains("broker-a"), "{}", view.body);
}
