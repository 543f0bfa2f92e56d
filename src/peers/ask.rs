//! Asking one peer what it knows, with ordinary requests over the admin tool's client.

use std::collections::{HashMap, HashSet};

use crate::protocol::body::DataVersion;
use crate::protocol::code::request;
use crate::remoting_client::decode::ClusterInfo;
use crate::remoting_client::{CallError, Client, Failure, Request};
use crate::state::peering::{NODE_FIELD, PEER_CHECK_FIELD};

use super::LiveBroker;

/// A broker group name and one of its addresses.
pub(super) type BrokerKey = (String, String);

/// What a peer answered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PeerView {
    /// The peer is this node itself.
    pub(crate) is_self: bool,
    /// Every broker the peer lists.
    pub(crate) brokers: HashSet<BrokerKey>,
    /// The peer's data version of each of this node's brokers it lists, when the peer is a
    /// server of this implementation (`None` otherwise: see [`crate::state::peering`]).
    pub(crate) versions: Option<HashMap<BrokerKey, DataVersion>>,
}

/// Names no broker uses: the probe only asks who answers.
const PROBE: &str = "__namesrv_peer_probe__";

fn query(
    me: u64,
    name: &str,
    addr: &str,
    cluster: &str,
    id: i64,
    version: Option<&DataVersion>,
) -> Request {
    let req = Request::new(request::QUERY_DATA_VERSION)
        .field("brokerName", name)
        .field("brokerAddr", addr)
        .field("clusterName", cluster)
        .field("brokerId", id.to_string())
        .field(PEER_CHECK_FIELD, me.to_string());
    match version {
        Some(v) => req.body(v.to_json()),
        None => req,
    }
}

fn bad_answer(peer: &str, code: i32, what: String) -> CallError {
    CallError {
        server: peer.to_owned(),
        code,
        failure: Failure::BadAnswer(what),
    }
}

/// Asks `peer` who it is, which brokers it lists and (if it is one of ours) their data
/// versions, for the brokers of `ours` it lists.
pub(super) async fn ask(
    client: &mut Client,
    peer: &str,
    me: u64,
    ours: &[LiveBroker],
) -> Result<PeerView, CallError> {
    let probe = client
        .call_ok(peer, &query(me, PROBE, "0.0.0.0:0", PROBE, 0, None))
        .await?;
    let node = probe.ext(NODE_FIELD).and_then(|n| n.parse::<u64>().ok());
    if node == Some(me) {
        return Ok(PeerView {
            is_self: true,
            ..PeerView::default()
        });
    }
    let info = client
        .call_ok(peer, &Request::new(request::GET_BROKER_CLUSTER_INFO))
        .await?;
    let info = ClusterInfo::decode(info.body_bytes())
        .map_err(|e| bad_answer(peer, request::GET_BROKER_CLUSTER_INFO, e.to_string()))?;
    let brokers: HashSet<BrokerKey> = info
        .broker_addr_table
        .0
        .iter()
        .flat_map(|(name, group)| {
            group
                .addrs()
                .into_iter()
                .map(move |(_, a)| (name.clone(), a.to_owned()))
        })
        .collect();
    if node.is_none() {
        return Ok(PeerView {
            is_self: false,
            brokers,
            versions: None,
        });
    }
    let listed: Vec<&LiveBroker> = ours.iter().filter(|b| brokers.contains(&b.key())).collect();
    let requests: Vec<Request> = listed
        .iter()
        .map(|b| {
            query(
                me,
                &b.name,
                &b.addr,
                &b.cluster,
                b.id,
                Some(&b.data_version),
            )
        })
        .collect();
    let answers = client.call_many(peer, &requests).await?;
    let mut versions = HashMap::new();
    for (broker, answer) in listed.into_iter().zip(answers) {
        let body = answer.body_bytes();
        if answer.code != 0 || body.is_empty() {
            continue;
        }
        let version = DataVersion::from_json(body).map_err(|e| {
            bad_answer(
                peer,
                request::QUERY_DATA_VERSION,
                format!("data version: {e}"),
            )
        })?;
        versions.insert(broker.key(), version);
    }
    Ok(PeerView {
        is_self: false,
        brokers,
        versions: Some(versions),
    })
}
