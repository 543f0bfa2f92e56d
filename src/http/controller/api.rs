//! `GET /api/controller`: the controller as JSON, and the summary `/api/status` carries.
//! Field names are camelCase as the rest of `/api`; durations are milliseconds, times
//! milliseconds since the Unix epoch; an unknown index or reachability is `null`.

use serde_json::{Value, json};
use tokio::time::Instant;

use super::{apply_lag, master_address, wall_millis};
use crate::controller::consensus::PeerStatus;
use crate::controller::elections::ElectionRecord;
use crate::controller::{BrokerSetStatus, Controller, ControllerStatus};

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The whole controller: group, broker sets, recent elections, counters.
pub(crate) fn controller_json(controller: &Controller) -> Value {
    let status = controller.status();
    let now = Instant::now();
    let group = controller.settings().group;
    json!({
        "group": group_json(&group, &status),
        "brokerSets": status.broker_sets.iter().map(set_json).collect::<Vec<_>>(),
        "elections": status.elections.iter().rev().map(|e| election_json(e, now)).collect::<Vec<_>>(),
        "electionsByReason": status.elections_by_reason.iter()
            .map(|(r, n)| (r.label().to_owned(), json!(n)))
            .collect::<serde_json::Map<_, _>>(),
        "heartbeats": status.heartbeats,
        "liveEntries": status.live_entries,
        "lastFailoverMs": status.last_failover.map(millis),
    })
}

/// The headline of `/api/status`.
pub(crate) fn summary_json(controller: &Controller) -> Value {
    let status = controller.status();
    let g = &status.group;
    json!({
        "group": controller.settings().group,
        "selfId": g.self_id,
        "leaderId": g.leader_id,
        "isLeader": g.is_leader,
        "term": g.term,
        "brokerSets": status.broker_sets.len(),
        "elections": status.elections_by_reason.iter().map(|(_, n)| n).sum::<u64>(),
    })
}

fn group_json(name: &str, status: &ControllerStatus) -> Value {
    let g = &status.group;
    json!({
        "name": name,
        "selfId": g.self_id,
        "leaderId": g.leader_id,
        "isLeader": g.is_leader,
        "leaderReady": g.leader_ready,
        "term": g.term,
        "committedIndex": g.committed,
        "appliedIndex": g.applied,
        "applyLag": apply_lag(status),
        "lastLogIndex": g.last_log,
        "snapshotIndex": g.snapshot,
        "peers": g.peers.iter().map(|p| peer_json(p, g.leader_id.as_deref(), &g.self_id)).collect::<Vec<_>>(),
    })
}

fn peer_json(p: &PeerStatus, leader: Option<&str>, self_id: &str) -> Value {
    json!({
        "id": p.id,
        "addr": p.addr,
        "self": p.id == self_id,
        "leader": leader == Some(p.id.as_str()),
        "reachable": p.reachable,
        "matchedIndex": p.matched,
    })
}

fn set_json(s: &BrokerSetStatus) -> Value {
    let replicas: Vec<Value> = (s.replicas.iter())
        .map(|r| {
            json!({
                "brokerId": r.broker_id,
                "address": r.address,
                "inSync": r.in_sync,
                "alive": r.alive,
            })
        })
        .collect();
    let in_sync: Vec<i64> = (s.replicas.iter())
        .filter(|r| r.in_sync)
        .map(|r| r.broker_id)
        .collect();
    json!({
        "clusterName": s.cluster,
        "brokerName": s.broker_name,
        "masterBrokerId": s.master,
        "masterAddress": master_address(s),
        "masterEpoch": s.master_epoch,
        "syncStateSetEpoch": s.sync_state_set_epoch,
        "syncStateSet": in_sync,
        "replicas": replicas,
    })
}

/// One election, newest first in the list.
fn election_json(e: &ElectionRecord, now: Instant) -> Value {
    json!({
        "timeMillis": wall_millis(e.at, now),
        "ageMs": millis(now.saturating_duration_since(e.at)),
        "brokerName": e.broker_name,
        "oldMasterBrokerId": e.old_master,
        "newMasterBrokerId": e.new_master,
        "masterEpoch": e.master_epoch,
        "reason": e.reason.label(),
        "failoverMs": e.failover.map(millis),
    })
}
