//! A three-node controller group of real processes (three name servers, each embedding one
//! controller node, as `enableControllerInNamesrv=true` runs them): one leader that every
//! node names, followers refusing leader-only requests with Java's 2007, a broker set
//! registered on the leader, the leader killed with SIGKILL, a new leader that still holds
//! the set, and the killed node back as a follower naming the new leader — in plaintext, and
//! with the remoting ports in TLS `enforcing` mode, where the peers speak TLS to each other.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use namesrv::controller::code::request as cc;
use namesrv::protocol::RemotingCommand;

use crate::harness::TestClient;
use crate::harness::process::{Server, config, free_port};
use crate::harness::tls::tls_client_config;

/// How long a group may take to agree on a leader (openraft's election timeout is under 1 s;
/// the machines running this are shared and slow).
const ELECTION_PATIENCE: Duration = Duration::from_secs(20);

/// One node: its controller address and the name server process embedding it.
struct Node {
    ctl: SocketAddr,
    /// The remoting ports use TLS (`tls.server.mode=enforcing`): so do the peers and we.
    tls: bool,
    server: Option<Server>,
    conf: std::path::PathBuf,
    home: std::path::PathBuf,
}

impl Node {
    fn start(&mut self) {
        self.server = Some(Server::start_up(&self.conf, &self.home));
    }
}

fn group(dir: &Path, tls: bool) -> Vec<Node> {
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let peers = ports
        .iter()
        .enumerate()
        .map(|(i, p)| format!("n{i}-127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(";");
    (0..3)
        .map(|i| {
            let home = dir.join(format!("n{i}"));
            std::fs::create_dir_all(&home).unwrap();
            let extra = format!(
                "enableControllerInNamesrv=true\n\
                 controllerDLegerGroup=group1\ncontrollerDLegerPeers={peers}\n\
                 controllerDLegerSelfId=n{i}\ncontrollerStorePath={}\n{}",
                home.join("raft").display(),
                if tls {
                    "tls.server.mode=enforcing\n"
                } else {
                    ""
                }
            );
            let mut node = Node {
                ctl: SocketAddr::from(([127, 0, 0, 1], ports[i])),
                tls,
                server: None,
                conf: config(&home, &extra),
                home,
            };
            node.start();
            node
        })
        .collect()
}

/// A client of `addr`, over TLS when `tls`; `None` when nothing listens there.
async fn connect(addr: SocketAddr, tls: bool) -> Option<TestClient> {
    match tls {
        true => TestClient::connect_tls(addr, tls_client_config(), b"")
            .await
            .ok(),
        false => {
            drop(tokio::net::TcpStream::connect(addr).await.ok()?);
            Some(TestClient::connect(addr).await)
        }
    }
}

/// What `node` answers to CONTROLLER_GET_METADATA_INFO, if it answers.
async fn metadata(node: &Node) -> Option<RemotingCommand> {
    let mut c = connect(node.ctl, node.tls).await?;
    let resp = tokio::time::timeout(
        Duration::from_secs(2),
        c.call(cc::CONTROLLER_GET_METADATA_INFO, &[], None),
    )
    .await
    .ok()?;
    Some(resp)
}

/// The leader address every node of `nodes` names and whose node says it leads.
async fn agreed_leader(nodes: &[&Node]) -> SocketAddr {
    let deadline = Instant::now() + ELECTION_PATIENCE;
    loop {
        let mut named = Vec::new();
        for node in nodes {
            let leader = metadata(node)
                .await
                .and_then(|m| m.ext("controllerLeaderAddress").map(str::to_owned));
            named.push(leader);
        }
        if let Some(Some(first)) = named.first()
            && named.iter().all(|n| n.as_deref() == Some(first.as_str()))
        {
            let leader: SocketAddr = first.parse().unwrap();
            // The node itself must be up (they may still name a killed leader) and accept
            // leader-only requests (its term's entry applied).
            if let Some(mut c) = connect(leader, nodes[0].tls).await
                && next_id(&mut c).await.code == 0
            {
                return leader;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no agreed leader within {ELECTION_PATIENCE:?}: {named:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const SET: [(&str, &str); 2] = [("clusterName", "CtlCluster"), ("brokerName", "ctl-broker")];

async fn next_id(c: &mut TestClient) -> RemotingCommand {
    c.call(cc::CONTROLLER_GET_NEXT_BROKER_ID, &SET, None).await
}

#[tokio::test]
async fn three_nodes_elect_one_leader_and_survive_its_kill() {
    survives_the_leaders_kill(false).await;
}

#[tokio::test]
async fn three_nodes_over_tls_elect_one_leader_and_survive_its_kill() {
    survives_the_leaders_kill(true).await;
}

async fn survives_the_leaders_kill(tls: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = group(dir.path(), tls);
    let leader = agreed_leader(&nodes.iter().collect::<Vec<_>>()).await;

    // Followers refuse leader-only requests as Java's do.
    for node in nodes.iter().filter(|n| n.ctl != leader) {
        let mut c = connect(node.ctl, tls).await.unwrap();
        let refused = next_id(&mut c).await;
        assert_eq!(
            (refused.code, refused.remark.as_deref()),
            (2007, Some("The controller is not in leader state"))
        );
        assert!(refused.ext_fields.as_ref().is_none_or(|f| f.is_empty()));
    }

    // A replica applies for id 1 on the leader: committed by a majority.
    let mut c = connect(leader, tls).await.unwrap();
    let apply = [
        SET[0],
        SET[1],
        ("appliedBrokerId", "1"),
        ("registerCheckCode", "127.0.0.1:30911;1"),
    ];
    let applied = c.call(cc::CONTROLLER_APPLY_BROKER_ID, &apply, None).await;
    assert_eq!(applied.code, 0, "{:?}", applied.remark);
    drop(c);

    // SIGKILL the leader: the other two elect one of themselves, which still knows the set.
    let old = nodes.iter().position(|n| n.ctl == leader).unwrap();
    nodes[old].server.as_mut().unwrap().kill9();
    nodes[old].server = None;
    let rest: Vec<&Node> = nodes.iter().filter(|n| n.ctl != leader).collect();
    let new_leader = agreed_leader(&rest).await;
    assert_ne!(new_leader, leader);
    let mut c = connect(new_leader, tls).await.unwrap();
    let next = next_id(&mut c).await;
    assert_eq!(
        next.ext("nextBrokerId"),
        Some("2"),
        "the applied id survived"
    );

    // The killed node restarts from its store and follows the new leader.
    nodes[old].start();
    let all: Vec<&Node> = nodes.iter().collect();
    assert_eq!(agreed_leader(&all).await, new_leader);
}
