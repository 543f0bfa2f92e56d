use super::*;

fn apply_id(m: &mut Machine, name: &str, id: BrokerId) {
    m.apply(&Event::ApplyBrokerIdEvent {
        cluster_name: "DefaultCluster".into(),
        broker_name: name.into(),
        broker_address: format!("127.0.0.1:{}", 30901 + id * 10),
        new_broker_id: id,
        register_check_code: format!("127.0.0.1:{};1", 30901 + id * 10),
    });
}

#[test]
fn first_id_creates_both_tables_and_next_id_is_two() {
    let mut m = Machine::default();
    apply_id(&mut m, "broker-a", 1);
    let set = m.broker_set("broker-a").expect("exists");
    assert_eq!(set.replicas.next_assign_broker_id, 2);
    assert_eq!(set.sync.master_epoch, 0);
    assert!(set.sync.sync_state_set.is_empty());
    apply_id(&mut m, "broker-a", 1);
    assert_eq!(
        m.broker_set("broker-a")
            .unwrap()
            .replicas
            .next_assign_broker_id,
        2
    );
    apply_id(&mut m, "broker-a", 5);
    assert_eq!(
        m.broker_set("broker-a")
            .unwrap()
            .replicas
            .next_assign_broker_id,
        3
    );
}

#[test]
fn election_sets_master_and_bumps_both_epochs_and_not_elected_keeps_sss() {
    let mut m = Machine::default();
    apply_id(&mut m, "broker-a", 1);
    apply_id(&mut m, "broker-a", 2);
    m.apply(&Event::ElectMasterEvent {
        broker_name: "broker-a".into(),
        new_master_broker_id: Some(1),
        new_master_elected: true,
    });
    m.apply(&Event::AlterSyncStateSetEvent {
        broker_name: "broker-a".into(),
        new_sync_state_set: [1, 2].into(),
    });
    let s = m.broker_set("broker-a").unwrap().sync.clone();
    assert_eq!(
        (s.master_broker_id, s.master_epoch, s.sync_state_set_epoch),
        (Some(1), 1, 2)
    );
    m.apply(&Event::ElectMasterEvent {
        broker_name: "broker-a".into(),
        new_master_broker_id: None,
        new_master_elected: false,
    });
    let s = m.broker_set("broker-a").unwrap().sync.clone();
    assert_eq!(
        (s.master_broker_id, s.master_epoch, s.sync_state_set_epoch),
        (None, 2, 2)
    );
    assert_eq!(s.sync_state_set, [1, 2].into());
}

#[test]
fn partial_clean_keeps_master_and_drops_emptied_tables() {
    let mut m = Machine::default();
    apply_id(&mut m, "broker-a", 1);
    m.apply(&Event::ElectMasterEvent {
        broker_name: "broker-a".into(),
        new_master_broker_id: Some(1),
        new_master_elected: true,
    });
    m.apply(&Event::CleanBrokerDataEvent {
        broker_name: "broker-a".into(),
        broker_id_set_to_clean: Some([1].into()),
    });
    assert!(m.broker_set("broker-a").is_none());
    assert!(m.is_empty());
}

#[test]
fn events_for_missing_sets_are_no_ops() {
    let mut m = Machine::default();
    for e in [
        Event::AlterSyncStateSetEvent {
            broker_name: "x".into(),
            new_sync_state_set: [1].into(),
        },
        Event::ElectMasterEvent {
            broker_name: "x".into(),
            new_master_broker_id: Some(1),
            new_master_elected: true,
        },
        Event::UpdateBrokerAddressEvent {
            cluster_name: "c".into(),
            broker_name: "x".into(),
            broker_address: "a".into(),
            broker_id: 1,
        },
    ] {
        m.apply(&e);
    }
    assert_eq!(m, Machine::default());
}

#[test]
fn event_json_uses_java_names() {
    let e = Event::ElectMasterEvent {
        broker_name: "broker-a".into(),
        new_master_broker_id: Some(2),
        new_master_elected: true,
    };
    let json = serde_json::to_string(&e).unwrap();
    assert_eq!(
        json,
        r#"{"eventType":"ELECT_MASTER_EVENT","brokerName":"broker-a","newMasterBrokerId":2,"newMasterElected":true}"#
    );
    assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), e);
}
