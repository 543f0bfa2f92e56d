//! In-process groups on real loopback sockets: a tiny peer server per node that decodes our
//! frames and hands raft codes to [`Consensus::serve_peer`], as the controller port does.
//! Nodes can be stopped, restarted from their store, and cut off from chosen requests.

mod group;
mod store;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use parking_lot::{Mutex, RwLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::node::Node;
use super::{Tuning, start_node};
use crate::controller::consensus::{Consensus, GroupStatus, SharedMachine};
use crate::controller::machine::{Event, Machine};
use crate::controller::settings::{ControllerSettings, Peer};
use crate::protocol::{
    FrameLimits, RemotingCommand, SerializeType, decode_frame, encode_frame, split_frame,
};

/// Short timings, so elections take a fraction of a second.
fn fast() -> Tuning {
    Tuning {
        heartbeat: Duration::from_millis(50),
        election_min: Duration::from_millis(200),
        election_max: Duration::from_millis(400),
        snapshot_every: 2000,
        keep_behind_snapshot: 500,
    }
}

/// One member: its settings, its machine, the running node (when up) and what its server
/// refuses to serve.
struct Member {
    settings: ControllerSettings,
    machine: SharedMachine,
    node: Arc<RwLock<Option<Node>>>,
    refused: Arc<Mutex<HashSet<i32>>>,
}

/// A group of `n` members storing under one temporary directory.
struct Group {
    _dir: tempfile::TempDir,
    members: Vec<Member>,
    tuning: Tuning,
}

impl Group {
    /// Binds a server per member and starts every node.
    async fn start(n: usize, tuning: Tuning) -> Group {
        let dir = tempfile::tempdir().unwrap();
        let mut listeners = Vec::new();
        for _ in 0..n {
            listeners.push(TcpListener::bind("127.0.0.1:0").await.unwrap());
        }
        let peers: Vec<Peer> = listeners
            .iter()
            .enumerate()
            .map(|(i, l)| Peer {
                id: format!("n{i}"),
                addr: l.local_addr().unwrap().to_string(),
            })
            .collect();
        let mut members = Vec::new();
        for (i, listener) in listeners.into_iter().enumerate() {
            let settings = ControllerSettings {
                peers: peers.clone(),
                self_id: format!("n{i}"),
                store_path: dir.path().to_owned(),
                ..ControllerSettings::default()
            };
            let member = Member {
                settings,
                machine: SharedMachine::default(),
                node: Arc::new(RwLock::new(None)),
                refused: Arc::new(Mutex::new(HashSet::new())),
            };
            tokio::spawn(serve(listener, member.node.clone(), member.refused.clone()));
            members.push(member);
        }
        let mut group = Group {
            _dir: dir,
            members,
            tuning,
        };
        for i in 0..n {
            group.restart(i).await;
        }
        group
    }

    /// Starts member `i` afresh from its store, with an empty machine.
    async fn restart(&mut self, i: usize) {
        let member = &mut self.members[i];
        member.machine = SharedMachine::default();
        let node = start_node(&member.settings, member.machine.clone(), None, &self.tuning)
            .await
            .unwrap();
        *member.node.write() = Some(node);
    }

    /// Stops member `i` (its server then drops every connection).
    async fn stop(&self, i: usize) {
        let node = self.members[i].node.write().take();
        if let Some(node) = node {
            node.shutdown().await;
        }
    }

    fn node(&self, i: usize) -> Node {
        self.members[i].node.read().clone().expect("member is up")
    }

    fn status(&self, i: usize) -> GroupStatus {
        self.node(i).status()
    }

    fn machine(&self, i: usize) -> Machine {
        self.members[i].machine.read().clone()
    }

    /// Makes member `i`'s server drop connections carrying `code`.
    fn refuse(&self, i: usize, code: i32) {
        self.members[i].refused.lock().insert(code);
    }

    /// The running member that is a ready leader, once exactly one is.
    async fn leader(&self) -> usize {
        wait_until(Duration::from_secs(8), "a ready leader", || {
            let up: Vec<usize> = (0..self.members.len())
                .filter(|&i| self.members[i].node.read().is_some())
                .collect();
            let ready: Vec<usize> = up
                .iter()
                .copied()
                .filter(|&i| self.status(i).leader_ready)
                .collect();
            (ready.len() == 1).then(|| ready[0])
        })
        .await
    }

    async fn shutdown(&self) {
        for i in 0..self.members.len() {
            self.stop(i).await;
        }
    }
}

/// Polls `check` every 20 ms until it yields, failing the test after `limit`.
async fn wait_until<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An event that creates broker set `name` with replica 1.
fn new_set(name: &str) -> Event {
    Event::ApplyBrokerIdEvent {
        cluster_name: "DefaultCluster".to_owned(),
        broker_name: name.to_owned(),
        broker_address: "127.0.0.1:10911".to_owned(),
        new_broker_id: 1,
        register_check_code: "127.0.0.1:10911;1".to_owned(),
    }
}

/// Serves peer RPCs on `listener` for whatever node is in `slot`.
async fn serve(
    listener: TcpListener,
    slot: Arc<RwLock<Option<Node>>>,
    refused: Arc<Mutex<HashSet<i32>>>,
) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(connection(stream, slot.clone(), refused.clone()));
    }
}

/// One connection: frames in, `serve_peer`, frames out; closed when the node is down or the
/// code is refused (a lost message, to the sender).
async fn connection(
    mut stream: TcpStream,
    slot: Arc<RwLock<Option<Node>>>,
    refused: Arc<Mutex<HashSet<i32>>>,
) {
    let mut buf = BytesMut::new();
    loop {
        let frame = match split_frame(&mut buf, FrameLimits::default()) {
            Ok(Some(frame)) => frame,
            Ok(None) => match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            },
            Err(_) => return,
        };
        let Ok((request, _)) = decode_frame(frame) else {
            return;
        };
        let node = slot.read().clone();
        let Some(node) = node else { return };
        if refused.lock().contains(&request.code) {
            return;
        }
        let body = request.body.clone().unwrap_or_default();
        let mut answer = match node.serve_peer(request.code, body).await {
            Ok(body) => RemotingCommand::success().with_body(body),
            Err(e) => RemotingCommand::error(1, e.to_string()),
        };
        answer.opaque = request.opaque;
        let mut out = BytesMut::new();
        encode_frame(&answer, SerializeType::Json, &mut out);
        if stream.write_all(&out).await.is_err() {
            return;
        }
    }
}
