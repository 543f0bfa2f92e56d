//! openraft's peer RPCs over the remoting client, to the peers' controller ports, with TLS
//! when the remoting port uses it. Each peer gets one connection per kind of RPC — entries,
//! empty heartbeats, votes, snapshot chunks — so a vote or a heartbeat never waits behind a
//! large append or a snapshot on the same stream; each is shared by every openraft client
//! for that peer. A call is bounded by openraft's `RPCOption` deadline; a call that timed out
//! or was abandoned mid-exchange leaves its connection dropped, never reused half-written.
//! A transport failure is `Unreachable` (openraft backs off), an error answer a
//! `NetworkError`, and an openraft error from the peer a `RemoteError`. A test may replace
//! the sockets by a [`PeerTransport`] of its own (the simulation's network); encoding,
//! deadlines and error mapping stay the same.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openraft::BasicNode;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::code;
use super::types::{NodeId, TypeConfig};
use super::wire;
use crate::remoting_client::{CallError, Client, ClientOptions, Request};

/// What kind of RPC a connection carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Entries,
    Heartbeat,
    Vote,
    Snapshot,
}

/// Why a call to a peer failed before it answered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TransportError {
    /// The connection failed or closed.
    #[error(transparent)]
    Call(#[from] CallError),
    /// No answer within openraft's deadline.
    #[error("{addr}: no answer within {millis} ms")]
    Timeout { addr: String, millis: u128 },
    /// The peer answered with an error code (it is shutting down, or not a controller).
    #[error("{addr}: refused with code {code}: {remark}")]
    Refused {
        addr: String,
        code: i32,
        remark: String,
    },
    /// The answer's body was not what openraft expects.
    #[error("{addr}: {why}")]
    BadAnswer { addr: String, why: String },
    /// A [`PeerTransport`] could not reach the peer (it is down).
    #[error("{addr}: unreachable: {why}")]
    Unreachable { addr: String, why: String },
}

/// Peer calls by other means than sockets: `call` delivers one request of `code` with `body`
/// to `target` and resolves to the body of its successful answer, or to why the peer could
/// not be reached; a lost message is a future that never resolves (the caller's deadline
/// ends it).
pub(crate) trait PeerTransport: Send + Sync + 'static {
    /// One request and its answer.
    fn call(
        &self,
        target: NodeId,
        code: i32,
        body: Vec<u8>,
    ) -> crate::controller::consensus::ConsensusFuture<Result<Bytes, String>>;
}

/// One shared connection: `dirty` while a call is in flight, so a call dropped midway
/// (openraft's own timeout, a replication stream closing) leaves it to be replaced.
struct Channel {
    client: Client,
    dirty: bool,
}

/// A connection shared by every openraft client of one peer and kind; a tokio mutex, as
/// a call holds it across its exchange.
type SharedChannel = Arc<tokio::sync::Mutex<Channel>>;

/// The network of one node: openraft's factory of per-peer clients.
#[derive(Clone)]
pub(crate) struct Network {
    shared: Arc<Shared>,
}

struct Shared {
    /// Replaces the sockets when set.
    transport: Option<Arc<dyn PeerTransport>>,
    options: ClientOptions,
    channels: Mutex<HashMap<(NodeId, Kind), SharedChannel>>,
    /// For each peer, when the newest AppendEntries it accepted was sent (the read lease
    /// counts from the sending: the peer's election timer restarted after that instant).
    appended: Mutex<HashMap<NodeId, Instant>>,
}

impl Network {
    /// A network whose connections use TLS with `tls` when set.
    pub(crate) fn new(tls: Option<Arc<rustls::ClientConfig>>) -> Network {
        Network::with(tls, None)
    }

    /// A network whose calls go through `transport` instead of sockets.
    #[cfg(test)]
    pub(crate) fn over(transport: Arc<dyn PeerTransport>) -> Network {
        Network::with(None, Some(transport))
    }

    fn with(
        tls: Option<Arc<rustls::ClientConfig>>,
        transport: Option<Arc<dyn PeerTransport>>,
    ) -> Network {
        let options = ClientOptions {
            // Every call is bounded by openraft's deadline instead (see `PeerClient::call`).
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(1),
            tls,
            ..ClientOptions::default()
        };
        Network {
            shared: Arc::new(Shared {
                transport,
                options,
                channels: Mutex::new(HashMap::new()),
                appended: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// When the newest AppendEntries that `peer` accepted from this node was sent; an
    /// answer naming a higher vote is no acceptance.
    pub(crate) fn appended(&self, peer: NodeId) -> Option<Instant> {
        self.shared.appended.lock().get(&peer).copied()
    }

    fn record_appended(&self, peer: NodeId, sent: Instant) {
        let mut appended = self.shared.appended.lock();
        let at = appended.entry(peer).or_insert(sent);
        *at = (*at).max(sent);
    }

    fn channel(&self, peer: NodeId, kind: Kind) -> SharedChannel {
        let mut channels = self.shared.channels.lock();
        let channel = channels.entry((peer, kind)).or_insert_with(|| {
            Arc::new(tokio::sync::Mutex::new(Channel {
                client: Client::new(self.shared.options.clone()),
                dirty: false,
            }))
        });
        channel.clone()
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> PeerClient {
        PeerClient {
            network: self.clone(),
            target,
            addr: node.addr.clone(),
        }
    }
}

/// RPCs to one peer.
pub(crate) struct PeerClient {
    network: Network,
    target: NodeId,
    addr: String,
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl PeerClient {
    /// Sends `body` with request `code` on the connection for `kind` and returns the answer's
    /// body, within `ttl`.
    async fn call(
        &self,
        kind: Kind,
        code: i32,
        body: Vec<u8>,
        ttl: Duration,
    ) -> Result<Bytes, TransportError> {
        let deadline = Instant::now() + ttl;
        if let Some(transport) = &self.network.shared.transport {
            let call = transport.call(self.target, code, body);
            return match tokio::time::timeout_at(deadline, call).await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(why)) => Err(TransportError::Unreachable {
                    addr: self.addr.clone(),
                    why,
                }),
                Err(_) => Err(self.timeout(ttl)),
            };
        }
        let channel = self.network.channel(self.target, kind);
        let mut channel = match tokio::time::timeout_at(deadline, channel.lock()).await {
            Ok(channel) => channel,
            Err(_) => return Err(self.timeout(ttl)),
        };
        if channel.dirty {
            channel.client = Client::new(self.network.shared.options.clone());
        }
        channel.dirty = true;
        let request = Request::new(code).body(body);
        let answer =
            tokio::time::timeout_at(deadline, channel.client.call(&self.addr, &request)).await;
        let answer = match answer {
            Ok(answer) => answer?,
            Err(_) => return Err(self.timeout(ttl)),
        };
        channel.dirty = false;
        drop(channel);
        if answer.code != crate::protocol::code::response::SUCCESS {
            return Err(TransportError::Refused {
                addr: self.addr.clone(),
                code: answer.code,
                remark: answer.remark.unwrap_or_default(),
            });
        }
        Ok(answer.body.unwrap_or_default())
    }

    fn timeout(&self, ttl: Duration) -> TransportError {
        TransportError::Timeout {
            addr: self.addr.clone(),
            millis: ttl.as_millis(),
        }
    }

    /// One RPC: the call, then the peer's `Result` decoded from the answer.
    async fn rpc<T: DeserializeOwned, E: std::error::Error + DeserializeOwned>(
        &self,
        kind: Kind,
        code: i32,
        body: Vec<u8>,
        ttl: Duration,
    ) -> RpcResult<T, E> {
        let answer = match self.call(kind, code, body, ttl).await {
            Ok(answer) => answer,
            Err(e @ (TransportError::Call(_) | TransportError::Unreachable { .. })) => {
                return Err(RPCError::Unreachable(Unreachable::new(&e)));
            }
            Err(e) => return Err(RPCError::Network(NetworkError::new(&e))),
        };
        let decoded: Result<T, RaftError<NodeId, E>> = wire::from_json(&answer).map_err(|why| {
            let e = TransportError::BadAnswer {
                addr: self.addr.clone(),
                why,
            };
            RPCError::Network(NetworkError::new(&e))
        })?;
        decoded.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        let kind = match rpc.entries.is_empty() {
            true => Kind::Heartbeat,
            false => Kind::Entries,
        };
        let body = wire::to_json(&rpc);
        let sent = Instant::now();
        let answer = self
            .rpc(kind, code::RAFT_APPEND_ENTRIES, body, option.soft_ttl())
            .await;
        if matches!(&answer, Ok(a) if !matches!(a, AppendEntriesResponse::HigherVote(_))) {
            self.network.record_appended(self.target, sent);
        }
        answer
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        let body = wire::snapshot_chunk(&rpc);
        self.rpc(
            Kind::Snapshot,
            code::RAFT_INSTALL_SNAPSHOT,
            body,
            option.soft_ttl(),
        )
        .await
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        let body = wire::to_json(&rpc);
        self.rpc(Kind::Vote, code::RAFT_VOTE, body, option.soft_ttl())
            .await
    }
}
