//! mqadmin 5.3.3's texts for the controller commands, byte for byte
//! (`GetControllerMetaDataSubCommand`, `GetSyncStateSetSubCommand`, `GetBrokerEpochSubCommand`,
//! `ReElectMasterSubCommand`, `CleanControllerBrokerMetaSubCommand`,
//! `UpdateControllerConfigSubCommand`): Java's `printf` with `%s`/`%d` of a null printed as
//! `null`, and its maps in `HashMap` order.
//!
//! One deliberate difference: `electMaster` prints the `#Broker` member lines mqadmin means
//! to print. mqadmin 5.3.3 reads the answer body as a bare `BrokerMemberGroup`, so its member
//! map is always empty and the lines never appear (CONTROLLER.md §9 item 10).

use std::fmt::Write as _;

use super::java_order;
use crate::remoting_client::decode_controller::{
    BrokerReplicasInfo, ControllerMetadata, ElectMasterBody, ElectMasterHeader, EpochEntryCache,
    ReplicaIdentity,
};

/// Java's `%s` of a possibly null value.
fn or_null<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

/// Java's `String.split(";")`: empty items kept, trailing empty ones dropped.
pub(crate) fn java_split(s: &str) -> Vec<&str> {
    let mut items: Vec<&str> = s.split(';').collect();
    while items.last() == Some(&"") {
        items.pop();
    }
    items
}

/// `getControllerMetaData`.
pub(crate) fn controller_metadata(m: &ControllerMetadata) -> String {
    let mut out = String::new();
    let _ = write!(out, "\n#ControllerGroup\t{}", or_null(m.group.as_deref()));
    let _ = write!(
        out,
        "\n#ControllerLeaderId\t{}",
        or_null(m.leader_id.as_deref())
    );
    let _ = write!(
        out,
        "\n#ControllerLeaderAddress\t{}",
        or_null(m.leader_address.as_deref())
    );
    if let Some(peers) = m.peers.as_deref().filter(|p| !p.is_empty()) {
        for peer in java_split(peers) {
            let _ = write!(out, "\n#Peer:\t{peer}");
        }
    }
    out.push('\n');
    out
}

/// `ReplicaIdentity.toString()`.
fn replica_identity(r: &ReplicaIdentity) -> String {
    format!(
        "ReplicaIdentity{{brokerName='{}', brokerId={}, brokerAddress='{}', alive={}}}",
        or_null(r.broker_name.as_deref()),
        or_null(r.broker_id),
        or_null(r.broker_address.as_deref()),
        or_null(r.alive)
    )
}

/// `getSyncStateSet`: every broker-set of the answer, in `HashMap` order of the names.
pub(crate) fn sync_state_sets(info: &BrokerReplicasInfo) -> String {
    let mut out = String::new();
    for (name, r) in java_order(&info.replicas_info_table) {
        let _ = write!(
            out,
            "\n#brokerName\t{name}\n#MasterBrokerId\t{}\n#MasterAddr\t{}\n#MasterEpoch\t{}\n#SyncStateSetEpoch\t{}\n#SyncStateSetNums\t{}\n",
            or_null(r.master_broker_id),
            or_null(r.master_address.as_deref()),
            r.master_epoch,
            r.sync_state_set_epoch,
            r.in_sync_replicas.len()
        );
        for member in &r.in_sync_replicas {
            let _ = write!(out, "\nInSyncReplica:\t{}\n", replica_identity(member));
        }
        for member in &r.not_in_sync_replicas {
            let _ = write!(out, "\nNotInSyncReplica:\t{}\n", replica_identity(member));
        }
    }
    out
}

/// `getBrokerEpoch` for one broker address: its epochs, the last one ending at the broker's
/// max offset (mqadmin overwrites the last `endOffset`, normally `Long.MAX_VALUE`).
pub(crate) fn broker_epochs(addr: &str, c: &EpochEntryCache) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "\n#clusterName\t{}\n#brokerName\t{}\n#brokerAddr\t{addr}\n#brokerId\t{}",
        or_null(c.cluster_name.as_deref()),
        or_null(c.broker_name.as_deref()),
        c.broker_id
    );
    let last = c.epoch_list.len().saturating_sub(1);
    for (i, e) in c.epoch_list.iter().enumerate() {
        let end = if i == last {
            c.max_offset
        } else {
            e.end_offset
        };
        let _ = write!(
            out,
            "\n#Epoch: EpochEntry{{epoch={}, startOffset={}, endOffset={end}}}",
            e.epoch, e.start_offset
        );
    }
    out.push('\n');
    out
}

/// `electMaster`: the new master from the answer's header, then the set's members.
pub(crate) fn elect_master(
    cluster: &str,
    broker_name: &str,
    h: &ElectMasterHeader,
    body: &ElectMasterBody,
) -> String {
    let mut out = format!(
        "\n#ClusterName\t{cluster}\n#BrokerName\t{broker_name}\n#BrokerMasterAddr\t{}\n#MasterEpoch\t{}\n#SyncStateSetEpoch\t{}\n",
        or_null(h.master_address.as_deref()),
        or_null(h.master_epoch),
        or_null(h.sync_state_set_epoch)
    );
    if let Some(group) = &body.broker_member_group {
        for (id, addr) in group.members() {
            let _ = writeln!(out, "\t#Broker\t{id}\t{addr}");
        }
    }
    out
}

/// `cleanBrokerMetadata`'s success line (with mqadmin's space before the newline).
pub(crate) fn clean_success(broker_name: &str) -> String {
    format!("clear broker {broker_name} metadata from controller success! \n")
}

/// `updateControllerConfig`'s success lines: the nodes as a Java list, then `key : value`.
pub(crate) fn update_success(nodes: &[String], key: &str, value: &str) -> String {
    format!(
        "update controller config success!{}\n{key} : {value}\n",
        super::java_list_text(nodes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remoting_client::decode_controller::MemberGroup;
    use crate::remoting_client::decode_controller::{BrokerReplicasInfo, EpochEntryCache};

    #[test]
    fn metadata_prints_the_specs_example() {
        let m = ControllerMetadata {
            group: Some("group1".into()),
            leader_id: Some("n0".into()),
            leader_address: Some("127.0.0.1:9878".into()),
            is_leader: true,
            peers: Some("n0:127.0.0.1:9878;n1:127.0.0.1:9868;n2:127.0.0.1:9858;".into()),
        };
        assert_eq!(
            controller_metadata(&m),
            "\n#ControllerGroup\tgroup1\n#ControllerLeaderId\tn0\n#ControllerLeaderAddress\t127.0.0.1:9878\n#Peer:\tn0:127.0.0.1:9878\n#Peer:\tn1:127.0.0.1:9868\n#Peer:\tn2:127.0.0.1:9858\n"
        );
        // No leader known: Java's nulls; no peers: no #Peer lines.
        let m = ControllerMetadata {
            group: Some("g".into()),
            ..Default::default()
        };
        assert_eq!(
            controller_metadata(&m),
            "\n#ControllerGroup\tg\n#ControllerLeaderId\tnull\n#ControllerLeaderAddress\tnull\n"
        );
        assert_eq!(java_split("a;;b;;"), ["a", "", "b"]);
    }

    #[test]
    fn sync_state_sets_print_the_specs_example() {
        let body = br#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"192.168.0.10:30911","brokerId":1,"brokerName":"broker-a"}],"masterAddress":"192.168.0.10:30911","masterBrokerId":1,"masterEpoch":1,"notInSyncReplicas":[{"alive":false,"brokerAddress":"192.168.0.11:30911","brokerId":2,"brokerName":"broker-a"}],"syncStateSetEpoch":2}}}"#;
        let info = BrokerReplicasInfo::decode(body).unwrap();
        assert_eq!(
            sync_state_sets(&info),
            "\n#brokerName\tbroker-a\n#MasterBrokerId\t1\n#MasterAddr\t192.168.0.10:30911\n#MasterEpoch\t1\n#SyncStateSetEpoch\t2\n#SyncStateSetNums\t1\n\nInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=1, brokerAddress='192.168.0.10:30911', alive=true}\n\nNotInSyncReplica:\tReplicaIdentity{brokerName='broker-a', brokerId=2, brokerAddress='192.168.0.11:30911', alive=false}\n"
        );
        let none = BrokerReplicasInfo::decode(
            br#"{"replicasInfoTable":{"b":{"notInSyncReplicas":[{}]}}}"#,
        )
        .unwrap();
        assert_eq!(
            sync_state_sets(&none),
            "\n#brokerName\tb\n#MasterBrokerId\tnull\n#MasterAddr\tnull\n#MasterEpoch\t0\n#SyncStateSetEpoch\t0\n#SyncStateSetNums\t0\n\nNotInSyncReplica:\tReplicaIdentity{brokerName='null', brokerId=null, brokerAddress='null', alive=null}\n"
        );
    }

    #[test]
    fn epochs_end_at_the_max_offset() {
        let body = br#"{"brokerId":0,"brokerName":"broker-a","clusterName":"DefaultCluster","epochList":[{"endOffset":1048576,"epoch":1,"startOffset":0},{"endOffset":9223372036854775807,"epoch":2,"startOffset":1048576}],"maxOffset":2097152}"#;
        let c = EpochEntryCache::decode(body).unwrap();
        assert_eq!(
            broker_epochs("192.168.0.10:30911", &c),
            "\n#clusterName\tDefaultCluster\n#brokerName\tbroker-a\n#brokerAddr\t192.168.0.10:30911\n#brokerId\t0\n#Epoch: EpochEntry{epoch=1, startOffset=0, endOffset=1048576}\n#Epoch: EpochEntry{epoch=2, startOffset=1048576, endOffset=2097152}\n"
        );
        let empty = EpochEntryCache::decode(br#"{"brokerId":-1}"#).unwrap();
        assert_eq!(
            broker_epochs("a:1", &empty),
            "\n#clusterName\tnull\n#brokerName\tnull\n#brokerAddr\ta:1\n#brokerId\t-1\n"
        );
    }

    #[test]
    fn an_election_prints_its_members_unlike_mqadmin_5_3_3() {
        let h = ElectMasterHeader {
            master_broker_id: Some(2),
            master_address: Some("192.168.0.11:30911".into()),
            master_epoch: Some(2),
            sync_state_set_epoch: Some(3),
        };
        let body = ElectMasterBody {
            broker_member_group: Some(MemberGroup {
                cluster: Some("DefaultCluster".into()),
                broker_name: Some("broker-a".into()),
                broker_addrs: crate::remoting_client::decode::Ordered(vec![
                    ("2".into(), "192.168.0.11:30911".into()),
                    ("1".into(), "192.168.0.10:30911".into()),
                ]),
            }),
            sync_state_set: vec![2],
        };
        let head = "\n#ClusterName\tDefaultCluster\n#BrokerName\tbroker-a\n#BrokerMasterAddr\t192.168.0.11:30911\n#MasterEpoch\t2\n#SyncStateSetEpoch\t3\n";
        assert_eq!(
            elect_master("DefaultCluster", "broker-a", &h, &body),
            format!("{head}\t#Broker\t1\t192.168.0.10:30911\n\t#Broker\t2\t192.168.0.11:30911\n")
        );
        let bare = elect_master(
            "c",
            "b",
            &ElectMasterHeader::default(),
            &ElectMasterBody::default(),
        );
        assert_eq!(
            bare,
            "\n#ClusterName\tc\n#BrokerName\tb\n#BrokerMasterAddr\tnull\n#MasterEpoch\tnull\n#SyncStateSetEpoch\tnull\n"
        );
    }

    #[test]
    fn one_line_answers() {
        assert_eq!(
            clean_success("broker-a"),
            "clear broker broker-a metadata from controller success! \n"
        );
        assert_eq!(
            update_success(&["a:1".into(), "b:2".into()], "k", "v"),
            "update controller config success![a:1, b:2]\nk : v\n"
        );
    }
}
