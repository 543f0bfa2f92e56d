//! The controller rows end to end over the in-memory consensus: headers read with Java's
//! names, malformed requests refused with 2005 before anything is proposed, the verdicts'
//! ext fields and bodies on the wire, 2007 on a follower, metadata, peer calls, and the
//! notification a broker receives.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use tokio::time::Instant;

use crate::controller::code::{request as cc, response as rc};
use crate::controller::local::LocalConsensus;
use crate::controller::{Controller, ControllerSettings, Peer, SharedMachine};
use crate::dispatch::CONTROLLER;
use crate::handlers::{Context, HandlerResult};
use crate::protocol::{ExtFields, RemotingCommand};
use crate::state::{ConnId, Namesrv};

struct Node {
    _dir: tempfile::TempDir,
    state: Namesrv,
    controller: Controller,
    consensus: std::sync::Arc<LocalConsensus>,
}

fn node_with(settings: ControllerSettings) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let state = Namesrv::in_dir(dir.path());
    let machine = SharedMachine::default();
    let consensus = LocalConsensus::leader(machine.clone());
    let controller = Controller::with_consensus(settings, machine, consensus.clone(), None);
    Node {
        _dir: dir,
        state,
        controller,
        consensus,
    }
}

fn node() -> Node {
    node_with(ControllerSettings::default())
}

fn request(code: i32, fields: &[(&str, &str)], body: Option<&[u8]>) -> RemotingCommand {
    let mut req = RemotingCommand::request(code, 7);
    if !fields.is_empty() {
        req.ext_fields = Some(fields.iter().copied().collect::<ExtFields>());
    }
    req.body = body.map(bytes::Bytes::copy_from_slice);
    req
}

impl Node {
    async fn call(&self, req: RemotingCommand) -> RemotingCommand {
        let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let ctx = Context::new(&self.state, ConnId(9), peer, Instant::now())
            .with_controller(Some(&self.controller));
        let route = CONTROLLER.route(req.code).expect("a controller row");
        let result: HandlerResult = match route.handler {
            crate::dispatch::Handler::Sync(h) => h(&ctx, &req),
            crate::dispatch::Handler::Async(h) => h(&ctx, &req).await,
        };
        result
            .expect("controller handlers answer, never fail")
            .response
    }

    async fn ok(&self, req: RemotingCommand) -> RemotingCommand {
        let resp = self.call(req).await;
        assert_eq!(resp.code, 0, "{:?}", resp.remark);
        resp
    }

    fn proposals(&self) -> usize {
        self.consensus.proposals.load(Ordering::SeqCst)
    }
}

fn ext(resp: &RemotingCommand) -> Vec<(&str, &str)> {
    resp.ext_fields.iter().flat_map(|e| e.iter()).collect()
}

const A: [(&str, &str); 2] = [
    ("clusterName", "DefaultCluster"),
    ("brokerName", "broker-a"),
];

/// A broker's first start: next id, apply, register, heartbeat, elect itself.
async fn first_broker(n: &Node) {
    let resp = n
        .ok(request(cc::CONTROLLER_GET_NEXT_BROKER_ID, &A, None))
        .await;
    assert_eq!(
        ext(&resp),
        [
            ("clusterName", "DefaultCluster"),
            ("brokerName", "broker-a"),
            ("nextBrokerId", "1")
        ]
    );
    let apply = [
        A[0],
        A[1],
        ("appliedBrokerId", "1"),
        ("registerCheckCode", "127.0.0.1:30911;1"),
    ];
    n.ok(request(cc::CONTROLLER_APPLY_BROKER_ID, &apply, None))
        .await;
    let register = [
        A[0],
        A[1],
        ("brokerId", "1"),
        ("brokerAddress", "127.0.0.1:30911"),
    ];
    let resp = n
        .ok(request(cc::CONTROLLER_REGISTER_BROKER, &register, None))
        .await;
    assert_eq!(
        resp.body.as_deref(),
        Some(&br#"{"syncStateSet":[],"syncStateSetEpoch":0}"#[..])
    );
    let beat = [
        A[0],
        A[1],
        ("brokerAddr", "127.0.0.1:30911"),
        ("brokerId", "1"),
        ("epoch", "-1"),
    ];
    let resp = n.call(request(cc::BROKER_HEARTBEAT, &beat, None)).await;
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (0, Some("Heart beat success"))
    );
    let elect = [A[0], A[1], ("brokerId", "1"), ("designateElect", "false")];
    let resp = n
        .ok(request(cc::CONTROLLER_ELECT_MASTER, &elect, None))
        .await;
    assert_eq!(
        ext(&resp),
        [
            ("masterBrokerId", "1"),
            ("masterAddress", "127.0.0.1:30911"),
            ("masterEpoch", "1"),
            ("syncStateSetEpoch", "1")
        ]
    );
}

#[tokio::test]
async fn a_broker_set_comes_up_through_the_rows() {
    let n = node();
    first_broker(&n).await;
    assert_eq!(n.proposals(), 2);
    let resp = n
        .ok(request(
            cc::CONTROLLER_GET_REPLICA_INFO,
            &[("brokerName", "broker-a")],
            None,
        ))
        .await;
    assert_eq!(
        ext(&resp),
        [
            ("masterBrokerId", "1"),
            ("masterAddress", "127.0.0.1:30911"),
            ("masterEpoch", "1")
        ]
    );
    let resp = n
        .ok(request(
            cc::CONTROLLER_GET_SYNC_STATE_DATA,
            &[],
            Some(br#"["broker-a"]"#),
        ))
        .await;
    assert!(resp.ext_fields.is_none());
    assert!(String::from_utf8_lossy(resp.body.as_deref().unwrap()).contains(r#""alive":true"#));
    let clean = [A[0], A[1]];
    let resp = n.call(request(cc::CLEAN_BROKER_DATA, &clean, None)).await;
    assert_eq!(resp.code, rc::CONTROLLER_INVALID_CLEAN_BROKER_METADATA);
    assert!(resp.ext_fields.is_none());
    let living = [A[1], ("isCleanLivingBroker", "true")];
    let resp = n.ok(request(cc::CLEAN_BROKER_DATA, &living, None)).await;
    assert!(resp.ext_fields.is_none() && resp.body.is_none());
}

/// A request and the remark it is refused with.
type Case<'a> = (i32, Vec<(&'a str, &'a str)>, Option<&'a [u8]>, &'a str);

#[tokio::test]
async fn malformed_requests_are_refused_with_2005_before_anything_is_proposed() {
    let n = node();
    first_broker(&n).await;
    let before = n.proposals();
    let cases: [Case<'_>; 7] = [
        (
            cc::CONTROLLER_APPLY_BROKER_ID,
            vec![A[0], A[1], ("appliedBrokerId", "2")],
            None,
            "the custom field <registerCheckCode> is null",
        ),
        (
            cc::CONTROLLER_APPLY_BROKER_ID,
            vec![
                A[0],
                A[1],
                ("appliedBrokerId", "two"),
                ("registerCheckCode", "x;1"),
            ],
            None,
            "the custom field <appliedBrokerId> has an invalid value: \"two\"",
        ),
        (
            cc::CONTROLLER_REGISTER_BROKER,
            vec![A[0], A[1], ("brokerId", "1")],
            None,
            "the custom field <brokerAddress> is null",
        ),
        (
            cc::CONTROLLER_ALTER_SYNC_STATE_SET,
            vec![A[1], ("masterBrokerId", "1"), ("masterEpoch", "1")],
            None,
            "the request has no SyncStateSet body",
        ),
        (
            cc::CONTROLLER_ELECT_MASTER,
            vec![A[0], A[1]],
            None,
            "the custom field <brokerId> is null",
        ),
        (
            cc::CLEAN_BROKER_DATA,
            vec![A[0]],
            None,
            "the custom field <brokerName> is null",
        ),
        (
            cc::BROKER_HEARTBEAT,
            vec![A[0], A[1], ("brokerAddr", "a:1")],
            None,
            "Heart beat with empty brokerId",
        ),
    ];
    for (code, fields, body, remark) in cases {
        let resp = n.call(request(code, &fields, body)).await;
        assert_eq!(
            (resp.code, resp.remark.as_deref()),
            (rc::CONTROLLER_INVALID_REQUEST, Some(remark))
        );
    }
    let alter = [A[1], ("masterBrokerId", "1"), ("masterEpoch", "1")];
    let resp = n
        .call(request(
            cc::CONTROLLER_ALTER_SYNC_STATE_SET,
            &alter,
            Some(b"{nope"),
        ))
        .await;
    assert_eq!(resp.code, rc::CONTROLLER_INVALID_REQUEST);
    assert!(
        resp.remark
            .unwrap()
            .starts_with("the body is not a SyncStateSet")
    );
    let resp = n
        .call(request(cc::CONTROLLER_GET_SYNC_STATE_DATA, &[], None))
        .await;
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (1, Some("not set any response code"))
    );
    assert_eq!(n.proposals(), before);
}

#[tokio::test]
async fn a_follower_answers_2007_without_ext_or_body_but_takes_heartbeats() {
    let n = node();
    n.consensus.set_leader(false);
    for code in [
        cc::CONTROLLER_GET_NEXT_BROKER_ID,
        cc::CONTROLLER_GET_REPLICA_INFO,
        cc::CLEAN_BROKER_DATA,
    ] {
        let resp = n.call(request(code, &A, None)).await;
        assert_eq!(
            (resp.code, resp.remark.as_deref()),
            (
                rc::CONTROLLER_NOT_LEADER,
                Some("The controller is not in leader state")
            )
        );
        assert!(resp.ext_fields.is_none() && resp.body.is_none());
    }
    let beat = [A[0], A[1], ("brokerAddr", "a:1"), ("brokerId", "1")];
    assert_eq!(
        n.call(request(cc::BROKER_HEARTBEAT, &beat, None))
            .await
            .code,
        0
    );
    assert_eq!(n.controller.status().heartbeats, 1);
}

#[tokio::test]
async fn metadata_names_the_leader_and_every_peer_with_a_trailing_semicolon() {
    let settings = ControllerSettings {
        peers: [
            "n0-127.0.0.1:9878",
            "n1-127.0.0.1:9868",
            "n2-127.0.0.1:9858",
        ]
        .iter()
        .map(|p| {
            let (id, addr) = p.split_once('-').unwrap();
            Peer {
                id: id.into(),
                addr: addr.into(),
            }
        })
        .collect(),
        ..ControllerSettings::default()
    };
    let n = node_with(settings);
    let resp = n
        .ok(request(cc::CONTROLLER_GET_METADATA_INFO, &[], None))
        .await;
    assert_eq!(
        ext(&resp),
        [
            ("group", "group1"),
            ("controllerLeaderId", "n0"),
            ("controllerLeaderAddress", "127.0.0.1:9878"),
            ("isLeader", "true"),
            (
                "peers",
                "n0:127.0.0.1:9878;n1:127.0.0.1:9868;n2:127.0.0.1:9858;"
            ),
        ]
    );
    n.consensus.set_leader(false);
    let resp = n
        .ok(request(cc::CONTROLLER_GET_METADATA_INFO, &[], None))
        .await;
    let fields = ext(&resp);
    assert!(fields.contains(&("isLeader", "false")));
    assert!(!fields.iter().any(|(k, _)| *k == "controllerLeaderAddress"));
}

#[tokio::test]
async fn peer_calls_reach_the_consensus_layer() {
    let n = node();
    let code = crate::controller::raft::code::RAFT_VOTE;
    let resp = n.ok(request(code, &[], Some(b"vote"))).await;
    assert_eq!(resp.body.as_deref(), Some(&b"vote"[..]));
}

/// The notification a replica receives after an election, over a real socket.
#[tokio::test]
async fn an_election_notifies_the_live_replicas_by_dialling_them() {
    use tokio::io::AsyncReadExt;
    let broker = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let broker_addr = broker.local_addr().unwrap().to_string();
    let n = node();
    let cancel = tokio_util::sync::CancellationToken::new();
    for service in n.controller.services() {
        tokio::spawn(service.run(cancel.child_token()));
    }
    let code = format!("{broker_addr};1");
    let apply = [
        A[0],
        A[1],
        ("appliedBrokerId", "1"),
        ("registerCheckCode", code.as_str()),
    ];
    n.ok(request(cc::CONTROLLER_APPLY_BROKER_ID, &apply, None))
        .await;
    let beat = [
        A[0],
        A[1],
        ("brokerAddr", broker_addr.as_str()),
        ("brokerId", "1"),
    ];
    n.call(request(cc::BROKER_HEARTBEAT, &beat, None)).await;
    let elect = [A[0], A[1], ("brokerId", "1")];
    n.ok(request(cc::CONTROLLER_ELECT_MASTER, &elect, None))
        .await;
    let (mut socket, _) = tokio::time::timeout(std::time::Duration::from_secs(5), broker.accept())
        .await
        .expect("the controller dials")
        .unwrap();
    let mut buf = bytes::BytesMut::new();
    let frame = loop {
        let limits = crate::protocol::FrameLimits {
            max_frame_length: 1 << 20,
        };
        if let Some(frame) = crate::protocol::split_frame(&mut buf, limits).unwrap() {
            break frame;
        }
        assert!(socket.read_buf(&mut buf).await.unwrap() > 0);
    };
    let (notice, _) = crate::protocol::decode_frame(frame).unwrap();
    assert_eq!(notice.code, cc::NOTIFY_BROKER_ROLE_CHANGED);
    assert!(notice.is_oneway());
    assert_eq!(notice.ext("masterBrokerId"), Some("1"));
    assert_eq!(notice.ext("masterEpoch"), Some("1"));
    assert_eq!(notice.ext("masterAddress"), Some(broker_addr.as_str()));
    assert_eq!(
        notice.body.as_deref(),
        Some(&br#"{"syncStateSet":[1],"syncStateSetEpoch":1}"#[..])
    );
    cancel.cancel();
}
