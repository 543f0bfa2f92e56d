//! The controller's answers as mqadmin reads them: the metadata (1005) and election (1002)
//! headers from ext fields, and the JSON bodies `ElectMasterResponseBody` (with its
//! `BrokerMemberGroup`), `BrokerReplicasInfo`, `SyncStateSet` and a broker's
//! `EpochEntryCache`. Input is fastjson's legacy output (numeric map keys quoted or not,
//! numbers possibly as strings); absent values stay absent so the formats can print Java's
//! `null`, except where the Java class has a primitive or a default.

use serde::{Deserialize, Deserializer};

use super::decode::{BodyError, Ordered, parse};
use crate::protocol::RemotingCommand;
use crate::protocol::body::lenient;
use crate::protocol::java_hash::{Table, long_hash, sort_by_java_order};

/// The ext fields of a CONTROLLER_GET_METADATA_INFO answer (`GetMetaDataResponseHeader`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ControllerMetadata {
    /// The raft group name.
    pub(crate) group: Option<String>,
    /// The leader's node id, absent (or empty, JRaft) while no leader is known.
    pub(crate) leader_id: Option<String>,
    /// The leader's request address, absent while no leader is known.
    pub(crate) leader_address: Option<String>,
    /// Whether the answering node is the leader.
    pub(crate) is_leader: bool,
    /// `id:host:port;` per node, with a trailing `;`.
    pub(crate) peers: Option<String>,
}

impl ControllerMetadata {
    /// Reads the header of `answer`.
    pub(crate) fn from_answer(answer: &RemotingCommand) -> Self {
        let text = |k: &str| answer.ext(k).map(str::to_owned);
        ControllerMetadata {
            group: text("group"),
            leader_id: text("controllerLeaderId"),
            leader_address: text("controllerLeaderAddress"),
            is_leader: answer
                .ext("isLeader")
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
            peers: text("peers"),
        }
    }

    /// The leader's address, if one is known (an empty value counts as unknown).
    pub(crate) fn leader(&self) -> Option<&str> {
        self.leader_address
            .as_deref()
            .map(str::trim)
            .filter(|a| !a.is_empty())
    }
}

/// The ext fields of a CONTROLLER_ELECT_MASTER answer (`ElectMasterResponseHeader`); a value
/// that is not a number reads as absent, as Java's header decoder leaves it null.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ElectMasterHeader {
    /// The new master's controller id.
    pub(crate) master_broker_id: Option<i64>,
    /// The new master's address.
    pub(crate) master_address: Option<String>,
    /// The master epoch after the election.
    pub(crate) master_epoch: Option<i32>,
    /// The sync-state-set epoch after the election.
    pub(crate) sync_state_set_epoch: Option<i32>,
}

impl ElectMasterHeader {
    /// Reads the header of `answer`.
    pub(crate) fn from_answer(answer: &RemotingCommand) -> Self {
        let number = |k: &str| answer.ext(k).and_then(|v| v.trim().parse::<i64>().ok());
        ElectMasterHeader {
            master_broker_id: number("masterBrokerId"),
            master_address: answer.ext("masterAddress").map(str::to_owned),
            master_epoch: number("masterEpoch").and_then(|v| i32::try_from(v).ok()),
            sync_state_set_epoch: number("syncStateSetEpoch").and_then(|v| i32::try_from(v).ok()),
        }
    }
}

/// An optional Boolean as fastjson reads one (`true`, `"true"`, `1`); null stays absent.
fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Bool(b)) => Some(b),
        Some(serde_json::Value::Number(n)) => Some(n.as_f64() != Some(0.0)),
        Some(serde_json::Value::String(s)) => Some(s.trim().eq_ignore_ascii_case("true")),
        Some(other) => {
            return Err(serde::de::Error::custom(format!("not a boolean: {other}")));
        }
    })
}

/// A list of longs (a Java `Set<Long>`); numeric strings accepted, nulls skipped.
fn longs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    #[derive(Deserialize)]
    struct Long(#[serde(deserialize_with = "lenient::opt_i64")] Option<i64>);
    Ok(Option::<Vec<Long>>::deserialize(d)?
        .unwrap_or_default()
        .into_iter()
        .filter_map(|l| l.0)
        .collect())
}

/// A list that reads `null` as empty.
fn list<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// A broker-set's members (`BrokerMemberGroup`): controller id → address.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MemberGroup {
    /// The cluster.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub(crate) cluster: Option<String>,
    /// The broker-set's name.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub(crate) broker_name: Option<String>,
    /// Controller id → address, in document order.
    #[serde(default)]
    pub(crate) broker_addrs: Ordered<String>,
}

impl MemberGroup {
    /// `(id, address)` in Java `HashMap<Long, String>` order; keys that are not numbers are
    /// skipped (fastjson would fail on them; a controller never sends them).
    pub(crate) fn members(&self) -> Vec<(i64, &str)> {
        let mut out: Vec<(i64, &str)> = self
            .broker_addrs
            .0
            .iter()
            .filter_map(|(k, v)| Some((k.trim().parse().ok()?, v.as_str())))
            .collect();
        sort_by_java_order(&mut out, Table::DEFAULT, |(id, _)| long_hash(*id));
        out
    }
}

/// The body of a CONTROLLER_ELECT_MASTER answer (`ElectMasterResponseBody`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ElectMasterBody {
    /// The set's members; absent when the old master stays.
    #[serde(default)]
    pub(crate) broker_member_group: Option<MemberGroup>,
    /// The new sync-state set.
    #[serde(default, deserialize_with = "longs")]
    pub(crate) sync_state_set: Vec<i64>,
}

impl ElectMasterBody {
    /// Decodes the body; an absent body reads as an empty one (the answer's header carries
    /// what mqadmin prints).
    pub(crate) fn decode(body: &[u8]) -> Result<Self, BodyError> {
        if body.is_empty() || lenient::reads_as_null(body) {
            return Ok(ElectMasterBody::default());
        }
        parse("elect master body", body)
    }
}

/// A sync-state set and its epoch (`SyncStateSet`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SyncStateSet {
    /// The in-sync replicas' controller ids.
    #[serde(default, deserialize_with = "longs")]
    pub(crate) sync_state_set: Vec<i64>,
    /// The set's epoch.
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    pub(crate) sync_state_set_epoch: i32,
}

impl SyncStateSet {
    /// Decodes the body. The admin commands print sync-state sets from the other bodies;
    /// this reader is for the answers that carry a bare set (1001, 1003, 1004, 1008).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn decode(body: &[u8]) -> Result<Self, BodyError> {
        parse("sync state set", body)
    }
}

/// One replica of a broker-set (`BrokerReplicasInfo.ReplicaIdentity`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReplicaIdentity {
    /// The broker-set's name.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub(crate) broker_name: Option<String>,
    /// The controller id.
    #[serde(default, deserialize_with = "lenient::opt_i64")]
    pub(crate) broker_id: Option<i64>,
    /// The replica's address.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub(crate) broker_address: Option<String>,
    /// Whether the controller sees it alive.
    #[serde(default, deserialize_with = "opt_bool")]
    pub(crate) alive: Option<bool>,
}

/// One broker-set's replicas (`BrokerReplicasInfo.ReplicasInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReplicasInfo {
    /// The master's controller id, absent when no master is recorded.
    #[serde(default, deserialize_with = "lenient::opt_i64")]
    pub(crate) master_broker_id: Option<i64>,
    /// The master's address, absent when no master is recorded.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub(crate) master_address: Option<String>,
    /// The master epoch (an `int` in Java's constructor: 0 when absent).
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    pub(crate) master_epoch: i32,
    /// The sync-state-set epoch (0 when absent).
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    pub(crate) sync_state_set_epoch: i32,
    /// Replicas in the sync-state set.
    #[serde(default, deserialize_with = "list")]
    pub(crate) in_sync_replicas: Vec<ReplicaIdentity>,
    /// The other replicas.
    #[serde(default, deserialize_with = "list")]
    pub(crate) not_in_sync_replicas: Vec<ReplicaIdentity>,
}

/// The body of a CONTROLLER_GET_SYNC_STATE_DATA answer (`BrokerReplicasInfo`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BrokerReplicasInfo {
    /// Broker-set name → replicas, in document order.
    #[serde(default)]
    pub(crate) replicas_info_table: Ordered<ReplicasInfo>,
}

impl BrokerReplicasInfo {
    /// Decodes the body.
    pub(crate) fn decode(body: &[u8]) -> Result<Self, BodyError> {
        parse("broker replicas info", body)
    }
}

fn long_max() -> i64 {
    i64::MAX
}

fn end_offset<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    Ok(lenient::opt_i64(d)?.unwrap_or(i64::MAX))
}

/// One epoch of a broker's commit log (`EpochEntry`); `endOffset` defaults to `Long.MAX_VALUE`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EpochEntry {
    /// The master epoch.
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    pub(crate) epoch: i32,
    /// Where the epoch starts in the commit log.
    #[serde(default, deserialize_with = "lenient::i64_or_zero")]
    pub(crate) start_offset: i64,
    /// Where it ends.
    #[serde(default = "long_max", deserialize_with = "end_offset")]
    pub(crate) end_offset: i64,
}

/// The body of a broker's GET_BROKER_EPOCH_CACHE answer (`EpochEntryCache`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EpochEntryCache {
    /// The broker's cluster.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub(crate) cluster_name: Option<String>,
    /// The broker's name.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub(crate) broker_name: Option<String>,
    /// The broker's id (0 as master, its controller id as slave).
    #[serde(default, deserialize_with = "lenient::i64_or_zero")]
    pub(crate) broker_id: i64,
    /// The epochs, oldest first.
    #[serde(default, deserialize_with = "list")]
    pub(crate) epoch_list: Vec<EpochEntry>,
    /// The broker's max commit-log offset.
    #[serde(default, deserialize_with = "lenient::i64_or_zero")]
    pub(crate) max_offset: i64,
}

impl EpochEntryCache {
    /// Decodes the body.
    pub(crate) fn decode(body: &[u8]) -> Result<Self, BodyError> {
        parse("epoch entry cache", body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_specs_elect_master_bodies() {
        let body = br#"{"brokerMemberGroup":{"brokerAddrs":{2:"192.168.0.11:30911",1:"192.168.0.10:30911"},"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[2]}"#;
        let b = ElectMasterBody::decode(body).unwrap();
        let g = b.broker_member_group.as_ref().unwrap();
        assert_eq!(g.broker_name.as_deref(), Some("broker-a"));
        assert_eq!(g.cluster.as_deref(), Some("DefaultCluster"));
        assert_eq!(
            g.members(),
            vec![(1, "192.168.0.10:30911"), (2, "192.168.0.11:30911")],
            "HashMap<Long, String> order, not document order"
        );
        assert_eq!(b.sync_state_set, [2]);
        let still = ElectMasterBody::decode(br#"{"syncStateSet":["1",2,null]}"#).unwrap();
        assert_eq!(
            (still.broker_member_group, still.sync_state_set),
            (None, vec![1, 2])
        );
        assert_eq!(
            ElectMasterBody::decode(b"").unwrap(),
            ElectMasterBody::default()
        );
        assert!(ElectMasterBody::decode(b"[2]").is_err());
    }

    #[test]
    fn reads_the_specs_replicas_info_with_quoted_or_bare_numbers() {
        let body = br#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"192.168.0.10:30911","brokerId":1,"brokerName":"broker-a"}],"masterAddress":"192.168.0.10:30911","masterBrokerId":1,"masterEpoch":1,"notInSyncReplicas":[{"alive":false,"brokerAddress":"192.168.0.11:30911","brokerId":"2","brokerName":"broker-a"}],"syncStateSetEpoch":"2"}}}"#;
        let info = BrokerReplicasInfo::decode(body).unwrap();
        let a = info.replicas_info_table.get("broker-a").unwrap();
        assert_eq!(
            (a.master_broker_id, a.master_epoch, a.sync_state_set_epoch),
            (Some(1), 1, 2)
        );
        assert_eq!(a.in_sync_replicas[0].alive, Some(true));
        assert_eq!(a.not_in_sync_replicas[0].broker_id, Some(2));
        // No master recorded, lists absent: Java's nulls and int defaults.
        let none = BrokerReplicasInfo::decode(br#"{"replicasInfoTable":{"b":{"masterEpoch":3}}}"#)
            .unwrap();
        let b = none.replicas_info_table.get("b").unwrap();
        assert_eq!((b.master_broker_id, &b.master_address), (None, &None));
        assert!(b.in_sync_replicas.is_empty() && b.not_in_sync_replicas.is_empty());
        let empty = BrokerReplicasInfo::decode(br#"{"replicasInfoTable":{}}"#).unwrap();
        assert!(empty.replicas_info_table.0.is_empty());
        assert!(BrokerReplicasInfo::decode(b"").is_err());
    }

    #[test]
    fn reads_sync_state_sets_and_epoch_caches() {
        let s = SyncStateSet::decode(br#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#).unwrap();
        assert_eq!((s.sync_state_set, s.sync_state_set_epoch), (vec![1, 2], 3));
        let body = br#"{"brokerId":0,"brokerName":"broker-a","clusterName":"DefaultCluster","epochList":[{"endOffset":1048576,"epoch":1,"startOffset":0},{"endOffset":9223372036854775807,"epoch":2,"startOffset":1048576}],"maxOffset":2097152}"#;
        let c = EpochEntryCache::decode(body).unwrap();
        assert_eq!((c.broker_id, c.max_offset), (0, 2097152));
        assert_eq!(c.epoch_list[1].end_offset, i64::MAX);
        let bare = EpochEntryCache::decode(br#"{"epochList":[{"epoch":"4"}]}"#).unwrap();
        assert_eq!(
            bare.epoch_list,
            [EpochEntry {
                epoch: 4,
                start_offset: 0,
                end_offset: i64::MAX
            }]
        );
        assert_eq!(bare.cluster_name, None);
    }

    #[test]
    fn reads_the_metadata_and_election_headers() {
        let mut answer = RemotingCommand::success();
        let mut f = crate::protocol::ExtFields::new();
        for (k, v) in [
            ("group", "group1"),
            ("controllerLeaderId", "n0"),
            ("controllerLeaderAddress", "127.0.0.1:9878"),
            ("isLeader", "true"),
            ("peers", "n0:127.0.0.1:9878;"),
            ("masterBrokerId", "2"),
            ("masterEpoch", "x"),
        ] {
            f.insert(k, v);
        }
        answer.ext_fields = Some(f);
        let m = ControllerMetadata::from_answer(&answer);
        assert_eq!((m.leader(), m.is_leader), (Some("127.0.0.1:9878"), true));
        let h = ElectMasterHeader::from_answer(&answer);
        assert_eq!((h.master_broker_id, h.master_epoch), (Some(2), None));
        let mut none = RemotingCommand::success();
        let mut f = crate::protocol::ExtFields::new();
        f.insert("controllerLeaderId", "");
        none.ext_fields = Some(f);
        assert_eq!(ControllerMetadata::from_answer(&none).leader(), None);
    }
}
