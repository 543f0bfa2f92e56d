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

fn apply(name: &str, id: i64, code: &str) -> ApplyBrokerId {
    ApplyBrokerId {
        cluster_name: CLUSTER.into(),
        broker_name: name.into(),
        applied_broker_id: id,
        register_check_code: code.into(),
    }
}

#[test]
fn next_broker_id_is_one_for_an_unknown_set_then_the_sets_next() {
    let q = NextBrokerId {
        cluster_name: Some(CLUSTER.into()),
        broker_name: "broker-a".into(),
    };
    let v = q.decide(&Machine::default());
    assert_eq!(v.code, 0);
    assert_eq!(
        ext(&v),
        [
            ("clusterName", CLUSTER),
            ("brokerName", "broker-a"),
            ("nextBrokerId", "1")
        ]
    );
    let v = q.decide(&machine_with("broker-a", &[1, 2], None));
    assert_eq!(ext(&v)[2], ("nextBrokerId", "3"));
    assert!(v.events.is_empty());
}

#[test]
fn the_first_id_of_a_new_set_must_be_one() {
    let m = Machine::default();
    let v = apply("broker-a", 1, "127.0.0.1:30911;17").decide(&m);
    assert_eq!(v.code, 0);
    assert_eq!(
        v.events,
        [Event::ApplyBrokerIdEvent {
            cluster_name: CLUSTER.into(),
            broker_name: "broker-a".into(),
            broker_address: "127.0.0.1:30911".into(),
            new_broker_id: 1,
            register_check_code: "127.0.0.1:30911;17".into(),
        }]
    );
    let v = apply("broker-a", 2, "x;1").decide(&m);
    assert_eq!(v.code, rc::CONTROLLER_BROKER_ID_INVALID);
    assert_eq!(
        v.remark.as_deref(),
        Some(
            "Broker-set: broker-a hasn't been registered in controller, but broker try to apply brokerId: 2"
        )
    );
    assert_eq!(
        ext(&v),
        [("clusterName", CLUSTER), ("brokerName", "broker-a")]
    );
    assert!(v.events.is_empty());
}

#[test]
fn a_known_set_takes_a_free_id_or_an_identical_retry_only() {
    let m = machine_with("broker-a", &[1, 2], None);
    assert_eq!(apply("broker-a", 3, "a;1").decide(&m).code, 0);
    let retry = apply("broker-a", 2, &check_code(2)).decide(&m);
    assert_eq!((retry.code, retry.events.len()), (0, 1));
    let taken = apply("broker-a", 2, "other:1;5").decide(&m);
    assert_eq!(taken.code, rc::CONTROLLER_BROKER_ID_INVALID);
    assert_eq!(
        taken.remark.as_deref(),
        Some("Fail to apply brokerId: 2 in broker-set: broker-a")
    );
    assert!(taken.events.is_empty());
}

fn register(id: i64, address: &str) -> RegisterBroker {
    RegisterBroker {
        cluster_name: CLUSTER.into(),
        broker_name: "broker-a".into(),
        broker_id: id,
        broker_address: address.into(),
    }
}

#[test]
fn register_refuses_unknown_sets_and_ids() {
    let lives = Lives::default();
    let v = register(1, &addr(1)).decide(&Machine::default(), &lives);
    assert_eq!(v.code, rc::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED);
    assert_eq!(
        v.remark.as_deref(),
        Some("Broker-set: broker-a hasn't been registered in controller")
    );
    let v = register(5, &addr(5)).decide(&machine_with("broker-a", &[1], None), &lives);
    assert_eq!(v.code, rc::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED);
    assert_eq!(
        v.remark.as_deref(),
        Some("BrokerId: 5 hasn't been registered in broker-set: broker-a")
    );
}

#[test]
fn register_shows_the_master_only_while_it_is_alive() {
    let m = machine_with("broker-a", &[1, 2], Some(1));
    let dead = register(2, &addr(2)).decide(&m, &Lives::default());
    assert_eq!(dead.code, 0);
    assert_eq!(
        ext(&dead),
        [("clusterName", CLUSTER), ("brokerName", "broker-a")]
    );
    assert_eq!(
        dead.body.as_deref(),
        Some(&br#"{"syncStateSet":[1],"syncStateSetEpoch":1}"#[..])
    );
    let alive = register(2, &addr(2)).decide(&m, &Lives::default().all("broker-a", &[1]));
    let master_addr = addr(1);
    assert_eq!(
        ext(&alive),
        [
            ("clusterName", CLUSTER),
            ("brokerName", "broker-a"),
            ("masterBrokerId", "1"),
            ("masterAddress", master_addr.as_str()),
            ("masterEpoch", "1"),
            ("syncStateSetEpoch", "1"),
        ]
    );
    assert!(alive.events.is_empty());
}

#[test]
fn register_proposes_an_address_change() {
    let m = machine_with("broker-a", &[1], None);
    let v = register(1, "10.0.0.9:30911").decide(&m, &Lives::default());
    assert_eq!(
        v.events,
        [Event::UpdateBrokerAddressEvent {
            cluster_name: CLUSTER.into(),
            broker_name: "broker-a".into(),
            broker_address: "10.0.0.9:30911".into(),
            broker_id: 1,
        }]
    );
}
