//! A name server restarted under a running cluster: brokers keep re-registering every 30 s and
//! clients keep polling routes, on paused time. The new server must know every broker again
//! within one registration period, and with the readiness gate on (`needWaitForService`) no
//! client may be told a live topic does not exist or be given a route missing live brokers.

use std::time::Duration;

use namesrv::protocol::code::response;

use crate::harness::{TestClient, TestServer, body_text, cluster_info, register_master, route};

const BROKERS: [(&str, &str); 3] = [
    ("broker-a", "10.0.0.1:10911"),
    ("broker-b", "10.0.0.2:10911"),
    ("broker-c", "10.0.0.3:10911"),
];
const PERIOD_S: u64 = 30;
const GATE_S: u64 = 45;
const PROPERTIES: &str =
    "needWaitForService=true\nwaitSecondsForService=45\nserverChannelMaxIdleTimeSeconds=0";

/// Brokers listed in a route body.
fn brokers_in_route(resp: &namesrv::protocol::RemotingCommand) -> usize {
    let route: serde_json::Value = serde_json::from_str(&body_text(resp)).unwrap();
    route["brokerDatas"].as_array().unwrap().len()
}

/// What the polling client saw in one second of the run.
#[derive(Debug, PartialEq)]
enum Seen {
    Complete,
    NotReady,
}

async fn poll(client: &mut TestClient, t: u64) -> Seen {
    let resp = route(client, "TopicShared").await;
    match resp.code {
        0 => {
            let n = brokers_in_route(&resp);
            assert_eq!(
                n,
                BROKERS.len(),
                "t={t}s: a route with {n} of 3 live brokers"
            );
            Seen::Complete
        }
        response::SYSTEM_ERROR => {
            assert_eq!(
                resp.remark.as_deref(),
                Some("name server not ready"),
                "t={t}s"
            );
            Seen::NotReady
        }
        code => panic!(
            "t={t}s: code {code} ({:?}) for a topic with live brokers",
            resp.remark
        ),
    }
}

async fn brokers_known(client: &mut TestClient) -> usize {
    let resp = cluster_info(client).await;
    let text = body_text(&resp);
    BROKERS
        .iter()
        .filter(|(name, _)| text.contains(name))
        .count()
}

/// Runs one server's life: every second, the brokers whose turn it is re-register (broker
/// `i` at second `10 * i` of each period, as real brokers spread out) and the client polls.
/// Returns what the client saw, second by second, and when the server knew every broker.
async fn serve_cluster(server: &TestServer, start: u64, seconds: u64) -> (Vec<Seen>, Option<u64>) {
    // The brokers and the client (re)connect to this server, as they do after a restart.
    let mut brokers = Vec::new();
    for _ in BROKERS {
        brokers.push(server.client().await);
    }
    let mut client = server.client().await;
    let mut admin = server.client().await;
    let mut seen = Vec::new();
    let mut all_known = None;
    for s in 0..seconds {
        let t = start + s;
        for (i, (name, addr)) in BROKERS.iter().enumerate() {
            if t % PERIOD_S == 10 * i as u64 {
                let topics = ["TopicShared", &format!("Topic-{name}")];
                register_master(&mut brokers[i], name, addr, &topics).await;
            }
        }
        seen.push(poll(&mut client, t).await);
        if all_known.is_none() && brokers_known(&mut admin).await == BROKERS.len() {
            all_known = Some(s);
        }
        tokio::time::advance(Duration::from_secs(1)).await;
    }
    (seen, all_known)
}

#[tokio::test(start_paused = true)]
async fn a_restart_converges_within_one_period_and_never_serves_an_empty_route() {
    let first = TestServer::with_properties(PROPERTIES).await;
    let (seen, known) = serve_cluster(&first, 0, 120).await;
    assert_eq!(known, Some(2 * 10), "all three brokers registered by t=20s");
    assert!(seen[..GATE_S as usize].iter().all(|s| *s == Seen::NotReady));
    assert!(
        seen[GATE_S as usize + 1..]
            .iter()
            .all(|s| *s == Seen::Complete)
    );
    first.stop().await.unwrap();

    // The new server starts at t=120s, between two rounds of registrations.
    let second = TestServer::with_properties(PROPERTIES).await;
    let (seen, known) = serve_cluster(&second, 120, 120).await;
    let known = known.expect("the restarted server never learnt every broker");
    assert!(
        known < PERIOD_S,
        "all brokers known {known}s after the restart"
    );
    // Until the gate opens the client is sent to another name server (or keeps its cached
    // route); from then on every route is complete.
    assert!(seen[..GATE_S as usize].iter().all(|s| *s == Seen::NotReady));
    assert!(
        seen[GATE_S as usize + 1..]
            .iter()
            .all(|s| *s == Seen::Complete)
    );
}
