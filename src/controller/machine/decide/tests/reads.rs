use crate::controller::code::response as rc;
use crate::controller::machine::decide::testing::*;
use crate::controller::machine::decide::*;
use crate::controller::machine::{Event, Machine};

fn ext(v: &Verdict) -> Vec<(&str, &str)> {
    v.ext
        .iter()
        .flatten()
        .map(|(k, v)| (*k, v.as_str()))
        .collect()
}

#[test]
fn replica_info_without_liveness_filter() {
    let q = ReplicaInfoQuery {
        broker_name: "broker-a".into(),
    };
    let v = q.decide(&Machine::default());
    assert_eq!(v.code, rc::CONTROLLER_BROKER_METADATA_NOT_EXIST);
    assert_eq!(v.remark.as_deref(), Some("Broker metadata is not existed"));
    assert_eq!(v.ext, Some(Vec::new()));
    let v = q.decide(&machine_with("broker-a", &[1], None));
    assert_eq!(ext(&v), [("masterEpoch", "0")]);
    assert_eq!(
        v.body.as_deref(),
        Some(&br#"{"syncStateSet":[],"syncStateSetEpoch":0}"#[..])
    );
    let v = q.decide(&machine_with("broker-a", &[1, 2], Some(2)));
    let a = addr(2);
    assert_eq!(
        ext(&v),
        [
            ("masterBrokerId", "2"),
            ("masterAddress", a.as_str()),
            ("masterEpoch", "1")
        ]
    );
}

#[test]
fn sync_state_data_lists_known_sets_with_liveness() {
    let mut m = machine_with("broker-a", &[1, 2], Some(1));
    m.apply(&Event::ApplyBrokerIdEvent {
        cluster_name: CLUSTER.into(),
        broker_name: "broker-b".into(),
        broker_address: "b:1".into(),
        new_broker_id: 1,
        register_check_code: "b:1;1".into(),
    });
    let q = SyncStateData {
        broker_names: vec!["broker-a".into(), "nope".into(), "broker-a".into()],
    };
    let v = q.decide(&m, &Lives::default().all("broker-a", &[1]));
    assert_eq!(v.ext, None);
    let body = String::from_utf8(v.body.unwrap()).unwrap();
    let (a1, a2) = (addr(1), addr(2));
    assert_eq!(
        body,
        format!(
            r#"{{"replicasInfoTable":{{"broker-a":{{"inSyncReplicas":[{{"alive":true,"brokerAddress":"{a1}","brokerId":1,"brokerName":"broker-a"}}],"masterAddress":"{a1}","masterBrokerId":1,"masterEpoch":1,"notInSyncReplicas":[{{"alive":false,"brokerAddress":"{a2}","brokerId":2,"brokerName":"broker-a"}}],"syncStateSetEpoch":1}}}}}}"#
        )
    );
    let none = SyncStateData {
        broker_names: vec!["x".into()],
    };
    assert_eq!(
        none.decide(&m, &Lives::default()).body.unwrap(),
        br#"{"replicasInfoTable":{}}"#
    );
}

fn clean(ids: Option<&str>, living: bool) -> CleanBrokerData {
    CleanBrokerData {
        cluster_name: Some(CLUSTER.into()),
        broker_name: "broker-a".into(),
        ids_to_clean: ids.map(str::to_owned),
        clean_living_broker: living,
    }
}

#[test]
fn clean_refuses_a_set_with_a_master_or_live_ids() {
    let m = machine_with("broker-a", &[1, 2], Some(1));
    let lives = Lives::default().all("broker-a", &[2]);
    let v = clean(None, false).decide(&m, &lives);
    assert_eq!(v.code, rc::CONTROLLER_INVALID_CLEAN_BROKER_METADATA);
    assert_eq!(
        v.remark.as_deref(),
        Some("Broker broker-a is still alive, clean up failure")
    );
    assert_eq!(v.ext, None);
    let v = clean(Some("2"), false).decide(&m, &lives);
    assert_eq!(
        v.remark.as_deref(),
        Some("Broker [broker-a,  2] is still alive, clean up failure")
    );
    let v = clean(Some("1;x"), false).decide(&m, &lives);
    assert_eq!(
        v.remark.as_deref(),
        Some(
            "Please set the option <brokerControllerIdsToClean> according to the format, exception: java.lang.NumberFormatException: For input string: \"x\""
        )
    );
    assert!(v.events.is_empty());
}

#[test]
fn clean_removes_listed_dead_ids_or_everything_when_living() {
    let m = machine_with("broker-a", &[1, 2], Some(1));
    let lives = Lives::default().all("broker-a", &[1, 2]);
    let v = clean(Some("2;"), false).decide(&m, &Lives::default());
    assert_eq!(v.code, 0);
    assert_eq!(
        v.events,
        [Event::CleanBrokerDataEvent {
            broker_name: "broker-a".into(),
            broker_id_set_to_clean: Some([2].into()),
        }]
    );
    // Java's quirk, kept: with isCleanLivingBroker the list is not even parsed.
    let v = clean(Some("garbage"), true).decide(&m, &lives);
    assert_eq!(
        v.events,
        [Event::CleanBrokerDataEvent {
            broker_name: "broker-a".into(),
            broker_id_set_to_clean: None,
        }]
    );
    let v = clean(None, true).decide(&Machine::default(), &lives);
    assert_eq!(
        v.remark.as_deref(),
        Some("Broker broker-a is not existed,clean broker data failure.")
    );
}
