//! The controller's `namesrv_controller_*` families, computed at scrape time from one
//! [`ControllerStatus`]: the group as this node sees it (term, leadership, indexes, peers),
//! the broker sets it holds and the elections and heartbeats it counted. Written with the
//! same helpers as every other family of `/metrics`.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Unit;

use super::apply_lag;
use crate::controller::ControllerStatus;
use crate::metrics::exposition::{Result, counter, gauge, labelled};

/// Every controller family of `status`.
pub(crate) fn encode(enc: &mut DescriptorEncoder<'_>, status: &ControllerStatus) -> Result {
    encode_group(enc, status)?;
    encode_peers(enc, status)?;
    encode_broker_sets(enc, status)?;
    labelled(
        enc,
        (
            "namesrv_controller_elections",
            "Elections this node committed as leader that changed a set's master, by reason.",
            "reason",
        ),
        MetricType::Counter,
        (status.elections_by_reason.iter()).map(|(r, n)| (r.label(), *n)),
    )?;
    let failover = status.last_failover.map_or(0.0, |d| d.as_secs_f64());
    let g = ConstGauge::new(failover);
    g.encode(enc.encode_descriptor(
        "namesrv_controller_last_failover",
        "The last controller-triggered failover, from the dead master's detection to the committed election (0 before the first).",
        Some(&Unit::Seconds),
        g.metric_type(),
    )?)?;
    counter(
        enc,
        "namesrv_controller_heartbeats",
        "BROKER_HEARTBEAT requests received by this node.",
        status.heartbeats,
    )
}

fn encode_group(enc: &mut DescriptorEncoder<'_>, status: &ControllerStatus) -> Result {
    let g = &status.group;
    let index = |i: Option<u64>| i.map_or(-1, |i| i64::try_from(i).unwrap_or(i64::MAX));
    let rows: [(&str, &str, i64); 8] = [
        (
            "namesrv_controller_is_leader",
            "1 when this node leads the controller group, else 0.",
            i64::from(g.is_leader),
        ),
        (
            "namesrv_controller_leader_known",
            "1 when this node knows a leader of its group (a controller node is ready only then), else 0.",
            i64::from(g.leader_id.is_some()),
        ),
        (
            "namesrv_controller_term",
            "The raft term this node is in.",
            index(Some(g.term)),
        ),
        (
            "namesrv_controller_commit_index",
            "The last raft log index this node knows committed (-1: none yet).",
            index(g.committed),
        ),
        (
            "namesrv_controller_apply_index",
            "The last raft log index applied to this node's state machine (-1: none yet).",
            index(g.applied),
        ),
        (
            "namesrv_controller_apply_lag",
            "Committed raft log entries not yet applied on this node.",
            index(Some(apply_lag(status))),
        ),
        (
            "namesrv_controller_last_log_index",
            "The last raft log index this node holds (-1: none yet).",
            index(g.last_log),
        ),
        (
            "namesrv_controller_snapshot_index",
            "The last raft log index the newest state-machine snapshot covers (-1: none yet).",
            index(g.snapshot),
        ),
    ];
    for (name, help, value) in rows {
        gauge(enc, name, help, value)?;
    }
    Ok(())
}

/// One series per other node, only while this node leads (only the leader's replication
/// sees the peers), and their count out of reach, always there for an alert to watch.
fn encode_peers(enc: &mut DescriptorEncoder<'_>, status: &ControllerStatus) -> Result {
    let g = &status.group;
    let others = || g.peers.iter().filter(|p| p.id != g.self_id);
    let unreachable = others().filter(|p| p.reachable == Some(false)).count();
    gauge(
        enc,
        "namesrv_controller_peers_unreachable",
        "On the leader: other nodes of the group its replication has not reached lately (0 on the other nodes).",
        unreachable as i64,
    )?;
    labelled(
        enc,
        (
            "namesrv_controller_peer_reachable",
            "On the leader: whether its replication reached this peer lately (1) or not (0).",
            "peer",
        ),
        MetricType::Gauge,
        others().filter_map(|p| Some((p.id.as_str(), u64::from(p.reachable?)))),
    )
}

fn encode_broker_sets(enc: &mut DescriptorEncoder<'_>, status: &ControllerStatus) -> Result {
    let sets = &status.broker_sets;
    let replicas = sets.iter().flat_map(|s| &s.replicas);
    let alive = replicas.clone().filter(|r| r.alive).count();
    let without_master = sets.iter().filter(|s| s.master.is_none()).count();
    let rows = [
        (
            "namesrv_controller_broker_sets",
            "Broker sets (brokerName) the controller holds.",
            sets.len(),
        ),
        (
            "namesrv_controller_broker_sets_without_master",
            "Broker sets with no recorded master.",
            without_master,
        ),
        (
            "namesrv_controller_replicas",
            "Broker replicas with a controller id, over every set.",
            replicas.count(),
        ),
        (
            "namesrv_controller_live_replicas",
            "Broker replicas whose heartbeats to this node are current.",
            alive,
        ),
    ];
    for (name, help, value) in rows {
        gauge(enc, name, help, value as i64)?;
    }
    Ok(())
}
