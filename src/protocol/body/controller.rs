//! The controller's bodies (Java's `SyncStateSet`, `ElectMasterResponseBody` with its
//! `BrokerMemberGroup`, `BrokerReplicasInfo`, and the broker-name list of
//! CONTROLLER_GET_SYNC_STATE_DATA): reading the two a client sends, writing the rest with the
//! legacy writer, properties alphabetical and nulls omitted.
//!
//! Sets of ids are written ascending, which is Java's `HashSet<Long>` order for the small
//! non-negative ids a broker set has. The member group's numeric map keys are written quoted
//! (`{"1":"…"}`): fastjson reads both forms, and quoted ones are plain JSON for every other
//! reader (our `nsadmin`, the Rust client).

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::protocol::java_hash::{Table, sort_strings_by_java_order};
use crate::protocol::json::{JsonStyle, JsonWriter};

/// Java's `SyncStateSet`: a broker set's in-sync replicas and their epoch.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncStateSetBody {
    /// The in-sync replicas' controller ids.
    pub sync_state_set: BTreeSet<i64>,
    /// The epoch of that set (0 when a sender leaves it out, as Java's `int` default).
    #[serde(default)]
    pub sync_state_set_epoch: i32,
}

impl SyncStateSetBody {
    /// Reads the body of CONTROLLER_ALTER_SYNC_STATE_SET; the error says what is wrong.
    pub fn parse(body: &[u8]) -> Result<SyncStateSetBody, String> {
        serde_json::from_slice(body).map_err(|e| format!("the body is not a SyncStateSet: {e}"))
    }

    /// `{"syncStateSet":[…],"syncStateSetEpoch":n}`.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48);
        let mut w = JsonWriter::new(&mut out, JsonStyle::Legacy);
        w.punct(b'{');
        write_sync_state_set(&mut w, &self.sync_state_set);
        w.raw(b",\"syncStateSetEpoch\":");
        w.int(i64::from(self.sync_state_set_epoch));
        w.punct(b'}');
        out
    }
}

fn write_sync_state_set(w: &mut JsonWriter<'_>, ids: &BTreeSet<i64>) {
    w.raw(b"\"syncStateSet\":[");
    w.separated(ids, |w, id| w.int(*id));
    w.punct(b']');
}

/// Java's `BrokerMemberGroup` as an election answers it: every assigned id of the set with
/// its stored address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberGroup<'a> {
    /// The set's cluster.
    pub cluster: &'a str,
    /// The set's name.
    pub broker_name: &'a str,
    /// Id → address, ascending.
    pub addrs: Vec<(i64, &'a str)>,
}

/// `ElectMasterResponseBody`: `{"brokerMemberGroup":{…},"syncStateSet":[…]}`, the group
/// omitted when `None`.
pub fn elect_master_body(
    group: Option<&MemberGroup<'_>>,
    sync_state_set: &BTreeSet<i64>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    let mut w = JsonWriter::new(&mut out, JsonStyle::Legacy);
    w.punct(b'{');
    if let Some(group) = group {
        w.raw(b"\"brokerMemberGroup\":{\"brokerAddrs\":{");
        w.separated(&group.addrs, |w, (id, addr)| {
            w.str_key(&id.to_string());
            w.string(addr);
        });
        w.raw(b"},\"brokerName\":");
        w.string(group.broker_name);
        w.raw(b",\"cluster\":");
        w.string(group.cluster);
        w.raw(b"},");
    }
    write_sync_state_set(&mut w, sync_state_set);
    w.punct(b'}');
    out
}

/// One replica of `BrokerReplicasInfo` (Java's `ReplicaIdentity`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaIdentity<'a> {
    /// Its controller id.
    pub broker_id: i64,
    /// Its stored address.
    pub broker_address: &'a str,
    /// Whether its heartbeats are current.
    pub alive: bool,
}

/// One broker set of `BrokerReplicasInfo` (Java's `ReplicasInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicasInfo<'a> {
    /// The set's name (the table's key).
    pub broker_name: &'a str,
    /// The recorded master, if any.
    pub master_broker_id: Option<i64>,
    /// Its stored address (absent when its id was cleaned away).
    pub master_address: Option<&'a str>,
    /// The master epoch.
    pub master_epoch: i32,
    /// The sync-state-set epoch.
    pub sync_state_set_epoch: i32,
    /// Replicas in the sync-state set, ascending.
    pub in_sync: Vec<ReplicaIdentity<'a>>,
    /// The others, ascending.
    pub not_in_sync: Vec<ReplicaIdentity<'a>>,
}

/// `BrokerReplicasInfo`: `{"replicasInfoTable":{name:ReplicasInfo,…}}`, the sets in Java's
/// `HashMap<String, _>` order.
pub fn broker_replicas_info(mut sets: Vec<ReplicasInfo<'_>>) -> Vec<u8> {
    sort_strings_by_java_order(&mut sets, Table::DEFAULT, |s| s.broker_name);
    let mut out = Vec::with_capacity(32 + 400 * sets.len());
    let mut w = JsonWriter::new(&mut out, JsonStyle::Legacy);
    w.raw(b"{\"replicasInfoTable\":{");
    w.separated(&sets, |w, set| {
        w.str_key(set.broker_name);
        write_replicas_info(w, set);
    });
    w.raw(b"}}");
    out
}

fn write_replicas_info(w: &mut JsonWriter<'_>, set: &ReplicasInfo<'_>) {
    w.raw(b"{\"inSyncReplicas\":");
    write_replicas(w, set.broker_name, &set.in_sync);
    w.opt_string(b",\"masterAddress\":", set.master_address);
    if let Some(id) = set.master_broker_id {
        w.raw(b",\"masterBrokerId\":");
        w.int(id);
    }
    w.raw(b",\"masterEpoch\":");
    w.int(i64::from(set.master_epoch));
    w.raw(b",\"notInSyncReplicas\":");
    write_replicas(w, set.broker_name, &set.not_in_sync);
    w.raw(b",\"syncStateSetEpoch\":");
    w.int(i64::from(set.sync_state_set_epoch));
    w.punct(b'}');
}

fn write_replicas(w: &mut JsonWriter<'_>, broker_name: &str, replicas: &[ReplicaIdentity<'_>]) {
    w.punct(b'[');
    w.separated(replicas, |w, r| {
        w.raw(b"{\"alive\":");
        w.bool(r.alive);
        w.raw(b",\"brokerAddress\":");
        w.string(r.broker_address);
        w.raw(b",\"brokerId\":");
        w.int(r.broker_id);
        w.raw(b",\"brokerName\":");
        w.string(broker_name);
        w.punct(b'}');
    });
    w.punct(b']');
}

/// Reads CONTROLLER_GET_SYNC_STATE_DATA's body: a JSON array of broker names.
pub fn parse_broker_names(body: &[u8]) -> Result<Vec<String>, String> {
    serde_json::from_slice(body)
        .map_err(|e| format!("the body is not a JSON array of broker names: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_state_set_round_trips_the_spec_example() {
        let body =
            SyncStateSetBody::parse(br#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#).unwrap();
        assert_eq!(body.sync_state_set, [1, 2].into());
        assert_eq!(
            body.to_json(),
            br#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#
        );
        let empty = SyncStateSetBody {
            sync_state_set: BTreeSet::new(),
            sync_state_set_epoch: 0,
        };
        assert_eq!(
            empty.to_json(),
            br#"{"syncStateSet":[],"syncStateSetEpoch":0}"#
        );
        assert!(SyncStateSetBody::parse(b"not json").is_err());
        assert!(SyncStateSetBody::parse(br#"{"syncStateSetEpoch":3}"#).is_err());
    }

    #[test]
    fn elect_master_bodies_match_the_spec() {
        let group = MemberGroup {
            cluster: "DefaultCluster",
            broker_name: "broker-a",
            addrs: vec![(1, "192.168.0.10:30911"), (2, "192.168.0.11:30911")],
        };
        assert_eq!(
            String::from_utf8(elect_master_body(Some(&group), &[2].into())).unwrap(),
            r#"{"brokerMemberGroup":{"brokerAddrs":{"1":"192.168.0.10:30911","2":"192.168.0.11:30911"},"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[2]}"#
        );
        assert_eq!(
            elect_master_body(None, &[1, 2].into()),
            br#"{"syncStateSet":[1,2]}"#
        );
    }

    #[test]
    fn broker_replicas_info_matches_the_spec() {
        let set = ReplicasInfo {
            broker_name: "broker-a",
            master_broker_id: Some(1),
            master_address: Some("192.168.0.10:30911"),
            master_epoch: 1,
            sync_state_set_epoch: 1,
            in_sync: vec![ReplicaIdentity {
                broker_id: 1,
                broker_address: "192.168.0.10:30911",
                alive: true,
            }],
            not_in_sync: vec![ReplicaIdentity {
                broker_id: 2,
                broker_address: "192.168.0.11:30911",
                alive: false,
            }],
        };
        assert_eq!(
            String::from_utf8(broker_replicas_info(vec![set])).unwrap(),
            r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"192.168.0.10:30911","brokerId":1,"brokerName":"broker-a"}],"masterAddress":"192.168.0.10:30911","masterBrokerId":1,"masterEpoch":1,"notInSyncReplicas":[{"alive":false,"brokerAddress":"192.168.0.11:30911","brokerId":2,"brokerName":"broker-a"}],"syncStateSetEpoch":1}}}"#
        );
        assert_eq!(broker_replicas_info(vec![]), br#"{"replicasInfoTable":{}}"#);
    }

    #[test]
    fn broker_names_must_be_a_string_array() {
        assert_eq!(
            parse_broker_names(br#"["broker-a","broker-b"]"#).unwrap(),
            ["broker-a", "broker-b"]
        );
        assert!(parse_broker_names(b"{}").is_err());
        assert!(parse_broker_names(b"[1]").is_err());
    }
}
