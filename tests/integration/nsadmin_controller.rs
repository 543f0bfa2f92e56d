//! The built `nsadmin` binary's controller commands against scripted fake controllers (and a
//! fake broker for `getBrokerEpoch`) that answer with CONTROLLER.md §3's example bodies:
//! mqadmin 5.3.3's outputs byte for byte, the requests on the wire, leader discovery, and
//! the exit codes and stderr lines of refusals (2007, 2009, 2011, 16) and of a group that
//! knows no leader. The name server is ours where a command lists a cluster's brokers.

use std::sync::Arc;

use bytes::BytesMut;
use namesrv::protocol::{
    ExtFields, FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, split_frame,
};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::harness::{TestServer, register_master};
use crate::nsadmin::{Run, dead_addr, nsadmin};

/// The spec's BrokerReplicasInfo example (§3.3), with the SSS epoch of §8.2's output.
const REPLICAS: &str = r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"192.168.0.10:30911","brokerId":1,"brokerName":"broker-a"}],"masterAddress":"192.168.0.10:30911","masterBrokerId":1,"masterEpoch":1,"notInSyncReplicas":[{"alive":false,"brokerAddress":"192.168.0.11:30911","brokerId":2,"brokerName":"broker-a"}],"syncStateSetEpoch":2}}}"#;

/// §8.2's output for [`REPLICAS`].
const REPLICAS_TEXT: &str = "\n#brokerName\tbroker-a\n#MasterBrokerId\t1\n#MasterAddr\t192.168.0.10:30911\n#MasterEpoch\t1\n#SyncStateSetEpoch\t2\n#SyncStateSetNums\t1\n\nInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=1, brokerAddress='192.168.0.10:30911', alive=true}\n\nNotInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=2, brokerAddress='192.168.0.11:30911', alive=false}\n";

/// A scripted server: answers every request with `answer(request)` and records the requests.
struct Fake {
    addr: String,
    seen: Arc<Mutex<Vec<RemotingCommand>>>,
}

impl Fake {
    async fn start(
        answer: impl Fn(&RemotingCommand) -> RemotingCommand + Send + Sync + 'static,
    ) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(answer);
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, answer.clone(), record.clone()));
            }
        });
        Fake { addr, seen }
    }

    /// The codes of the requests seen so far.
    fn codes(&self) -> Vec<i32> {
        self.seen.lock().iter().map(|r| r.code).collect()
    }

    /// The last request with `code`.
    fn last(&self, code: i32) -> RemotingCommand {
        let seen = self.seen.lock();
        seen.iter().rev().find(|r| r.code == code).cloned().unwrap()
    }
}

async fn serve(
    mut conn: tokio::net::TcpStream,
    answer: Arc<dyn Fn(&RemotingCommand) -> RemotingCommand + Send + Sync>,
    seen: Arc<Mutex<Vec<RemotingCommand>>>,
) {
    let mut buf = BytesMut::new();
    loop {
        while let Some(frame) = split_frame(&mut buf, FrameLimits::default()).unwrap() {
            let (req, _) = decode_frame(frame).unwrap();
            let mut resp = answer(&req);
            resp.opaque = req.opaque;
            seen.lock().push(req);
            let mut out = BytesMut::new();
            encode_frame(&resp, SerializeType::Json, &mut out);
            if conn.write_all(&out).await.is_err() {
                return;
            }
        }
        if conn.read_buf(&mut buf).await.unwrap_or(0) == 0 {
            return;
        }
    }
}

/// A `0` answer with these ext fields and body.
fn ok(fields: &[(&str, &str)], body: &str) -> RemotingCommand {
    let mut ext = ExtFields::new();
    for (k, v) in fields {
        ext.insert(*k, *v);
    }
    let mut resp = RemotingCommand::success().with_body(body.as_bytes().to_vec());
    resp.ext_fields = Some(ext);
    resp
}

/// A 1005 answer naming `leader` (or no leader).
fn metadata(leader: Option<&str>) -> RemotingCommand {
    let mut fields = vec![
        ("group", "group1"),
        ("isLeader", "false"),
        (
            "peers",
            "n0:127.0.0.1:9878;n1:127.0.0.1:9868;n2:127.0.0.1:9858;",
        ),
    ];
    if let Some(l) = leader {
        fields.push(("controllerLeaderId", "n1"));
        fields.push(("controllerLeaderAddress", l));
    }
    ok(&fields, "")
}

/// A follower that knows `leader`: answers 1005, and 2007 to anything else.
async fn follower(leader: Option<String>) -> Fake {
    Fake::start(move |req| match req.code {
        1005 => metadata(leader.as_deref()),
        _ => RemotingCommand::error(2007, "The controller is not in leader state"),
    })
    .await
}

fn assert_fails(r: &Run, code: i32, err_part: &str) {
    assert_eq!((r.code, r.out.as_str()), (code, ""), "{r:?}");
    assert!(r.err.contains(err_part), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_controller_metadata_prints_the_specs_example() {
    let node = Fake::start(|_| {
        let mut m = metadata(Some("127.0.0.1:9878"));
        m.ext_fields
            .as_mut()
            .unwrap()
            .insert("controllerLeaderId", "n0");
        m
    })
    .await;
    let r = nsadmin(&format!("getControllerMetaData -a {}", node.addr)).await;
    assert_eq!(
        (r.code, r.out.as_str(), r.err.as_str()),
        (
            0,
            "\n#ControllerGroup\tgroup1\n#ControllerLeaderId\tn0\n#ControllerLeaderAddress\t127.0.0.1:9878\n#Peer:\tn0:127.0.0.1:9878\n#Peer:\tn1:127.0.0.1:9868\n#Peer:\tn2:127.0.0.1:9858\n",
            ""
        ),
        "{r:?}"
    );
    let req = node.last(1005);
    assert!(req.ext_fields.is_none() && req.body.is_none(), "{req:?}");

    // No -n needed; a leaderless node prints Java's nulls; a dead first address is skipped.
    let leaderless = follower(None).await;
    let r = nsadmin(&format!(
        "getControllerMetaData -a {};{}",
        dead_addr(),
        leaderless.addr
    ))
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.out
            .starts_with("\n#ControllerGroup\tgroup1\n#ControllerLeaderId\tnull\n#ControllerLeaderAddress\tnull\n#Peer:"),
        "{r:?}"
    );
    let r = nsadmin(&format!("getControllerMetaData -a {}", dead_addr())).await;
    assert_fails(&r, 2, "CONTROLLER_GET_METADATA_INFO (1005): connect failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_sync_state_set_asks_the_leader_the_follower_names() {
    // As the controller, it skips names it does not know.
    let leader = Fake::start(|req| match req.code {
        1006 if req.body_bytes() == br#"["broker-a"]"# => ok(&[], REPLICAS),
        1006 => ok(&[], r#"{"replicasInfoTable":{}}"#),
        _ => RemotingCommand::error(3, " request type not supported"),
    })
    .await;
    let node = follower(Some(leader.addr.clone())).await;
    let r = nsadmin(&format!("getSyncStateSet -a {} -b broker-a", node.addr)).await;
    assert_eq!(
        (r.code, r.out.as_str(), r.err.as_str()),
        (0, REPLICAS_TEXT, "")
    );
    assert_eq!(node.codes(), [1005]);
    assert_eq!(leader.codes(), [1006]);
    assert_eq!(leader.last(1006).body_bytes(), br#"["broker-a"]"#);

    // A name the controller does not know prints nothing and fails.
    let r = nsadmin(&format!("getSyncStateSet -a {} -b broker-x", node.addr)).await;
    assert_fails(&r, 3, "the controller knows no broker-set 'broker-x'");
    // Neither -b nor -c: usage.
    let r = nsadmin(&format!("getSyncStateSet -a {}", node.addr)).await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err.starts_with(
            "give -b <brokerName> or -c <clusterName>\nusage: nsadmin getSyncStateSet"
        ),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_sync_state_set_of_a_cluster_lists_its_brokers_at_the_name_server() {
    let (server, mut broker) = TestServer::with_client("").await;
    register_master(
        &mut broker,
        "broker-a",
        "127.0.0.1:1",
        &["TopicA", "TopicB"],
    )
    .await;
    register_master(
        &mut broker,
        "broker-b",
        "127.0.0.1:2",
        &["TopicA", "TopicB"],
    )
    .await;
    let leader = Fake::start(|_| ok(&[], REPLICAS)).await;
    let node = follower(Some(leader.addr.clone())).await;
    let r = nsadmin(&format!(
        "getSyncStateSet -a {} -c DefaultCluster -n {}",
        node.addr, server.addr
    ))
    .await;
    assert_eq!((r.code, r.out.as_str()), (0, REPLICAS_TEXT), "{r:?}");
    let mut names: Vec<String> = serde_json::from_slice(leader.last(1006).body_bytes()).unwrap();
    names.sort();
    assert_eq!(names, ["broker-a", "broker-b"]);

    let r = nsadmin(&format!(
        "getSyncStateSet -a {} -c NoCluster -n {}",
        node.addr, server.addr
    ))
    .await;
    assert_fails(&r, 3, "Make sure the specified clusterName exists");
    let r = nsadmin(&format!(
        "getSyncStateSet -a {} -c DefaultCluster",
        node.addr
    ))
    .await;
    assert_eq!(r.code, 1, "-c needs a name server: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_discovery_fails_clearly() {
    // Nobody knows a leader: exit 2, naming it, and no request goes anywhere else.
    let a = follower(None).await;
    let b = follower(None).await;
    let r = nsadmin(&format!(
        "electMaster -a {};{} -c C -bn broker-a -b 1",
        a.addr, b.addr
    ))
    .await;
    assert_fails(&r, 2, "no controller leader is known");
    assert!(r.err.contains(&a.addr) && r.err.contains(&b.addr), "{r:?}");
    assert_eq!((a.codes(), b.codes()), (vec![1005], vec![1005]));

    // One node knows the leader: it is asked after the one that does not.
    let leader = Fake::start(|_| ok(&[], "")).await;
    let c = follower(Some(leader.addr.clone())).await;
    let r = nsadmin(&format!(
        "cleanBrokerMetadata -a {};{};{} -bn broker-a -l",
        dead_addr(),
        a.addr,
        c.addr
    ))
    .await;
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(leader.codes(), [1011]);

    // The named leader lost its leadership meanwhile: Java's error text, exit 3.
    let stale = follower(None).await;
    let d = follower(Some(stale.addr.clone())).await;
    let r = nsadmin(&format!("getSyncStateSet -a {} -b broker-a", d.addr)).await;
    assert_fails(
        &r,
        3,
        "CONTROLLER_GET_SYNC_STATE_DATA (1006): CODE: 2007  DESC: The controller is not in leader state",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elect_master_prints_the_new_master_and_its_members() {
    let leader = Fake::start(|req| {
        if req.ext("brokerId") == Some("1") {
            let mut resp = ok(
                &[
                    ("masterBrokerId", "1"),
                    ("masterAddress", "192.168.0.10:30911"),
                    ("masterEpoch", "1"),
                    ("syncStateSetEpoch", "1"),
                ],
                r#"{"syncStateSet":[1,2]}"#,
            );
            resp.code = 2011;
            resp.remark = Some(
                "The old master 1 is still alive, not need to elect new master for broker broker-a"
                    .into(),
            );
            return resp;
        }
        ok(
            &[
                ("masterBrokerId", "2"),
                ("masterAddress", "192.168.0.11:30911"),
                ("masterEpoch", "2"),
                ("syncStateSetEpoch", "2"),
            ],
            r#"{"brokerMemberGroup":{"brokerAddrs":{1:"192.168.0.10:30911",2:"192.168.0.11:30911"},"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[2]}"#,
        )
    })
    .await;
    let node = follower(Some(leader.addr.clone())).await;
    let r = nsadmin(&format!(
        "electMaster -a {} -c DefaultCluster -bn broker-a -b 2",
        node.addr
    ))
    .await;
    // mqadmin 5.3.3 prints no #Broker lines (it reads the body as a bare BrokerMemberGroup);
    // these are the lines it means to print.
    assert_eq!(
        (r.code, r.out.as_str(), r.err.as_str()),
        (
            0,
            "\n#ClusterName\tDefaultCluster\n#BrokerName\tbroker-a\n#BrokerMasterAddr\t192.168.0.11:30911\n#MasterEpoch\t2\n#SyncStateSetEpoch\t2\n\t#Broker\t1\t192.168.0.10:30911\n\t#Broker\t2\t192.168.0.11:30911\n",
            ""
        ),
        "{r:?}"
    );
    let req = leader.last(1002);
    assert_eq!(
        (
            req.ext("clusterName"),
            req.ext("brokerName"),
            req.ext("brokerId"),
            req.ext("designateElect")
        ),
        (
            Some("DefaultCluster"),
            Some("broker-a"),
            Some("2"),
            Some("true")
        )
    );
    assert!(
        req.ext("invokeTime").unwrap().parse::<i64>().unwrap() > 1_600_000_000_000,
        "{req:?}"
    );

    let r = nsadmin(&format!(
        "electMaster -a {} -c DefaultCluster -bn broker-a -b 1",
        node.addr
    ))
    .await;
    assert_fails(
        &r,
        3,
        "CONTROLLER_ELECT_MASTER (1002): CODE: 2011  DESC: The old master 1 is still alive, not need to elect new master for broker broker-a\n",
    );
    let r = nsadmin(&format!(
        "electMaster -a {} -c DefaultCluster -bn broker-a -b two",
        node.addr
    ))
    .await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err
            .starts_with("-b must be a broker id (a number), not 'two'\n"),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_broker_metadata_sends_javas_header() {
    let leader = Fake::start(|req| match req.ext("brokerControllerIdsToClean") {
        Some("1") => RemotingCommand::error(
            2009,
            "Broker [broker-a,  1] is still alive, clean up failure",
        ),
        _ => ok(&[], ""),
    })
    .await;
    let node = follower(Some(leader.addr.clone())).await;
    let r = nsadmin(&format!(
        "cleanBrokerMetadata -a {} -bn broker-a -b 2;3 -c DefaultCluster",
        node.addr
    ))
    .await;
    assert_eq!(
        (r.code, r.out.as_str(), r.err.as_str()),
        (
            0,
            "clear broker broker-a metadata from controller success! \n",
            ""
        ),
        "{r:?}"
    );
    let req = leader.last(1011);
    let fields: Vec<(&str, &str)> = {
        let mut f: Vec<(&str, &str)> = req.ext_fields.as_ref().unwrap().iter().collect();
        f.retain(|(k, _)| *k != "invokeTime");
        f.sort();
        f
    };
    assert_eq!(
        fields,
        [
            ("brokerControllerIdsToClean", "2;3"),
            ("brokerName", "broker-a"),
            ("clusterName", "DefaultCluster"),
            ("isCleanLivingBroker", "false"),
        ]
    );

    let r = nsadmin(&format!(
        "cleanBrokerMetadata -a {} -bn broker-a -b 1 -c DefaultCluster",
        node.addr
    ))
    .await;
    assert_fails(
        &r,
        3,
        "CLEAN_BROKER_DATA (1011): CODE: 2009  DESC: Broker [broker-a,  1] is still alive, clean up failure",
    );
    // Without -l the cluster is required; bad ids are refused before anything is sent.
    let sent = leader.codes().len();
    let r = nsadmin(&format!(
        "cleanBrokerMetadata -a {} -bn broker-a",
        node.addr
    ))
    .await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.err.starts_with(
            "cleanLivingBroker option is false, clusterName option can not be empty.\n"
        ),
        "{r:?}"
    );
    let r = nsadmin(&format!(
        "cleanBrokerMetadata -a {} -bn broker-a -b 1;x -l",
        node.addr
    ))
    .await;
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.err.contains("For input string: \"x\""), "{r:?}");
    assert_eq!(leader.codes().len(), sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_config_is_read_and_written_on_every_node() {
    let config = |port: &'static str| {
        move |req: &RemotingCommand| match req.code {
            1010 => ok(
                &[],
                &format!("controllerDLegerGroup=group1\nlistenPort={port}\n"),
            ),
            1009 if req.body_bytes() == b"notifyBrokerRoleChanged=false\n" => ok(&[], ""),
            1009 => RemotingCommand::error(16, "Can not update config in black list."),
            _ => RemotingCommand::error(1, "unexpected"),
        }
    };
    let a = Fake::start(config("9878")).await;
    let b = Fake::start(config("9868")).await;
    let r = nsadmin(&format!("getControllerConfig -a {};{}", a.addr, b.addr)).await;
    assert_eq!(r.code, 0, "{r:?}");
    let mut printed = 0;
    for (addr, port) in [(&a.addr, "9878"), (&b.addr, "9868")] {
        let table = format!(
            "============{addr}============\n{:<50}=  group1\n{:<50}=  {port}\n",
            "controllerDLegerGroup", "listenPort"
        );
        assert!(r.out.contains(&table), "{r:?}");
        printed += table.len();
    }
    assert_eq!(r.out.len(), printed, "nothing else: {r:?}");

    let r = nsadmin(&format!(
        "updateControllerConfig -a {};{} -k notifyBrokerRoleChanged -v false",
        a.addr, b.addr
    ))
    .await;
    assert_eq!(
        (r.code, r.out.as_str()),
        (
            0,
            format!(
                "update controller config success![{}, {}]\nnotifyBrokerRoleChanged : false\n",
                a.addr, b.addr
            )
            .as_str()
        ),
        "{r:?}"
    );
    assert_eq!((a.codes(), b.codes()), (vec![1010, 1009], vec![1010, 1009]));

    // A refused key: no success line, Java's remark, exit 3; a dead node: exit 2, the other
    // node's configuration still printed.
    let r = nsadmin(&format!(
        "updateControllerConfig -a {} -k configStorePath -v /x",
        a.addr
    ))
    .await;
    assert_fails(
        &r,
        3,
        "UPDATE_CONTROLLER_CONFIG (1009): CODE: 16  DESC: Can not update config in black list.",
    );
    let r = nsadmin(&format!(
        "getControllerConfig -a {};{}",
        dead_addr(),
        a.addr
    ))
    .await;
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.out
            .starts_with(&format!("============{}============\n", a.addr)),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_broker_epoch_asks_every_broker_of_the_name() {
    let broker = Fake::start(|req| match req.code {
        1007 => ok(
            &[],
            r#"{"brokerId":0,"brokerName":"broker-a","clusterName":"DefaultCluster","epochList":[{"endOffset":1048576,"epoch":1,"startOffset":0},{"endOffset":9223372036854775807,"epoch":2,"startOffset":1048576}],"maxOffset":2097152}"#,
        ),
        _ => RemotingCommand::error(3, "no"),
    })
    .await;
    let (server, mut client) = TestServer::with_client("").await;
    register_master(&mut client, "broker-a", &broker.addr, &["TopicA", "TopicB"]).await;
    let expected = format!(
        "\n#clusterName\tDefaultCluster\n#brokerName\tbroker-a\n#brokerAddr\t{}\n#brokerId\t0\n#Epoch: EpochEntry{{epoch=1, startOffset=0, endOffset=1048576}}\n#Epoch: EpochEntry{{epoch=2, startOffset=1048576, endOffset=2097152}}\n",
        broker.addr
    );
    for select in ["-b broker-a", "-c DefaultCluster"] {
        let r = nsadmin(&format!("getBrokerEpoch {select} -n {}", server.addr)).await;
        assert_eq!(
            (r.code, r.out.as_str(), r.err.as_str()),
            (0, expected.as_str(), ""),
            "{select}"
        );
    }
    assert!(broker.last(1007).ext_fields.is_none());

    let r = nsadmin(&format!("getBrokerEpoch -c NoCluster -n {}", server.addr)).await;
    assert_fails(
        &r,
        3,
        "Make sure the specified clusterName exists or the name server connected to is correct.",
    );
    let r = nsadmin(&format!("getBrokerEpoch -b broker-x -n {}", server.addr)).await;
    assert_fails(&r, 3, "the name server lists no broker named 'broker-x'");
    let r = nsadmin("getBrokerEpoch -b broker-a").await;
    assert_eq!(r.code, 1, "no name server: {r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_list_shows_the_controller_commands() {
    let r = nsadmin("").await;
    assert_eq!(r.code, 0);
    for (name, desc) in [
        ("getSyncStateSet", "Fetch syncStateSet for target brokers."),
        ("getBrokerEpoch", "Fetch broker epoch entries."),
        (
            "getControllerMetaData",
            "Get controller cluster's metadata.",
        ),
        ("getControllerConfig", "Get controller config."),
        ("updateControllerConfig", "Update controller config."),
        ("electMaster", "Re-elect the specified broker as master."),
        (
            "cleanBrokerMetadata",
            "Clean metadata of broker on controller.",
        ),
    ] {
        assert!(
            r.out.contains(&format!("\n   {name:<35} {desc}\n")),
            "{name}: {r:?}"
        );
    }
    let r = nsadmin("help electMaster").await;
    assert_eq!(r.code, 0);
    assert!(
        r.out
            .starts_with("usage: nsadmin electMaster -a <arg> -b <arg> -bn <arg> -c <arg>"),
        "{r:?}"
    );
}
