use crate::controller::code::response as rc;
use crate::controller::machine::decide::testing::*;
use crate::controller::machine::decide::*;
use crate::controller::machine::{Event, Machine};

const CLEAN: Flags = Flags {
    enable_elect_unclean_master: false,
};
const UNCLEAN: Flags = Flags {
    enable_elect_unclean_master: true,
};

fn elect(trigger: Trigger) -> ElectMaster {
    ElectMaster {
        broker_name: "broker-a".into(),
        trigger,
    }
}

fn elected_id(v: &Verdict) -> Option<i64> {
    match v.events.as_slice() {
        [
            Event::ElectMasterEvent {
                new_master_broker_id,
                new_master_elected: true,
                ..
            },
        ] => *new_master_broker_id,
        _ => None,
    }
}

/// broker-a with ids 1..=3, master `master`, SSS `sss`.
fn machine(master: i64, sss: &[i64]) -> Machine {
    let mut m = machine_with("broker-a", &[1, 2, 3], Some(master));
    m.apply(&Event::AlterSyncStateSetEvent {
        broker_name: "broker-a".into(),
        new_sync_state_set: sss.iter().copied().collect(),
    });
    m
}

#[test]
fn an_unknown_set_is_not_registered() {
    let v = elect(Trigger::Broker(1)).decide(&Machine::default(), &Lives::default(), CLEAN);
    assert_eq!(v.code, rc::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED);
    assert_eq!(v.remark.as_deref(), Some("Broker hasn't been registered"));
    assert_eq!(v.ext, Some(Vec::new()));
}

#[test]
fn the_first_election_trusts_the_requester_if_its_id_is_assigned() {
    let m = machine_with("broker-a", &[1, 2], None);
    let v = elect(Trigger::Broker(2)).decide(&m, &Lives::default(), CLEAN);
    assert_eq!(v.code, 0);
    assert_eq!(elected_id(&v), Some(2));
    let a2 = addr(2);
    let ext: Vec<(&str, &str)> = v
        .ext
        .iter()
        .flatten()
        .map(|(k, v)| (*k, v.as_str()))
        .collect();
    assert_eq!(
        ext,
        [
            ("masterBrokerId", "2"),
            ("masterAddress", a2.as_str()),
            ("masterEpoch", "1"),
            ("syncStateSetEpoch", "1")
        ]
    );
    let body = String::from_utf8(v.body.clone().unwrap()).unwrap();
    assert_eq!(
        body,
        format!(
            r#"{{"brokerMemberGroup":{{"brokerAddrs":{{"1":"{}","2":"{a2}"}},"brokerName":"broker-a","cluster":"DefaultCluster"}},"syncStateSet":[2]}}"#,
            addr(1)
        )
    );
    let elected = v.elected.unwrap();
    assert_eq!(
        (elected.old_master, elected.new_master, elected.master_epoch),
        (None, 2, 1)
    );
    // An id nobody was given is no master (Java would record it, without an address).
    let v = elect(Trigger::Broker(7)).decide(&m, &Lives::default(), CLEAN);
    assert_eq!(v.code, rc::CONTROLLER_ELECT_MASTER_FAILED);
    assert_eq!(v.remark.as_deref(), Some("Failed to elect a new master"));
    assert!(v.events.is_empty());
}

#[test]
fn a_live_master_is_kept_with_2011() {
    let m = machine(1, &[1, 2]);
    let lives = Lives::default().all("broker-a", &[1, 2]);
    let v = elect(Trigger::Broker(2)).decide(&m, &lives, CLEAN);
    assert_eq!(v.code, rc::CONTROLLER_MASTER_STILL_EXIST);
    assert_eq!(
        v.remark.as_deref(),
        Some("The old master 1 is still alive, not need to elect new master for broker broker-a")
    );
    assert_eq!(v.body.as_deref(), Some(&br#"{"syncStateSet":[1,2]}"#[..]));
    assert!(v.events.is_empty() && v.elected.is_none());
}

#[test]
fn a_dead_master_is_replaced_from_the_sync_state_set_only() {
    let m = machine(1, &[1, 2]);
    let lives = Lives::default().all("broker-a", &[2, 3]);
    let v = elect(Trigger::Controller).decide(&m, &lives, CLEAN);
    assert_eq!((v.code, elected_id(&v)), (0, Some(2)));
    // 3 is alive but not in sync: only an unclean election may take it.
    let lives = Lives::default().all("broker-a", &[3]);
    let v = elect(Trigger::Controller).decide(&m, &lives, CLEAN);
    assert_eq!(v.code, rc::CONTROLLER_MASTER_NOT_AVAILABLE);
    assert_eq!(
        v.remark.as_deref(),
        Some("Old master has down and failed to elect a new broker master")
    );
    assert_eq!(
        v.events,
        [Event::ElectMasterEvent {
            broker_name: "broker-a".into(),
            new_master_broker_id: None,
            new_master_elected: false,
        }]
    );
    let v = elect(Trigger::Controller).decide(&m, &lives, UNCLEAN);
    assert_eq!((v.code, elected_id(&v)), (0, Some(3)));
    // A broker's own trigger finding nobody proposes nothing.
    let v = elect(Trigger::Broker(3)).decide(&m, &Lives::default(), CLEAN);
    assert_eq!(
        (v.code, v.events.len()),
        (rc::CONTROLLER_ELECT_MASTER_FAILED, 0)
    );
}

#[test]
fn an_admin_designation_is_taken_if_suitable_and_never_falls_back() {
    let m = machine(1, &[1, 2]);
    let lives = Lives::default().all("broker-a", &[1, 2, 3]);
    let v = elect(Trigger::Admin(2)).decide(&m, &lives, CLEAN);
    assert_eq!(elected_id(&v), Some(2));
    // 3 is not in sync: refused, the live master 1 is not "kept" either.
    let v = elect(Trigger::Admin(3)).decide(&m, &lives, CLEAN);
    assert_eq!(
        (v.code, v.events.len()),
        (rc::CONTROLLER_ELECT_MASTER_FAILED, 0)
    );
    let v = elect(Trigger::Admin(1)).decide(&m, &lives, CLEAN);
    assert_eq!(v.code, rc::CONTROLLER_MASTER_STILL_EXIST);
}

#[test]
fn candidates_by_epoch_then_offset_then_priority_then_smallest_id() {
    let m = machine(9, &[1, 2, 3]);
    let pick = |lives: Lives| elected_id(&elect(Trigger::Controller).decide(&m, &lives, CLEAN));
    let base = || Lives::default();
    assert_eq!(
        pick(
            base()
                .alive("broker-a", 1, 1, 900, 1)
                .alive("broker-a", 2, 2, 10, 5)
        ),
        Some(2)
    );
    assert_eq!(
        pick(
            base()
                .alive("broker-a", 1, 2, 900, 5)
                .alive("broker-a", 2, 2, 10, 1)
        ),
        Some(1)
    );
    assert_eq!(
        pick(
            base()
                .alive("broker-a", 1, 2, 10, 5)
                .alive("broker-a", 3, 2, 10, 1)
        ),
        Some(3)
    );
    assert_eq!(
        pick(
            base()
                .alive("broker-a", 3, 2, 10, 1)
                .alive("broker-a", 2, 2, 10, 1)
        ),
        Some(2)
    );
}

/// apache/rocketmq#10578: Java casts the offset difference to `int`, so offsets more than
/// 2^31 apart can rank the lower one first.
#[test]
fn offsets_compare_as_64_bit_numbers() {
    let m = machine(9, &[1, 2]);
    let low = 1_i64;
    let high = low + (1_i64 << 32) + 5; // (int)(low - high) would be -5 → low first
    let lives = Lives::default()
        .alive("broker-a", 1, 1, low, 1)
        .alive("broker-a", 2, 1, high, 1);
    let v = elect(Trigger::Controller).decide(&m, &lives, CLEAN);
    assert_eq!(elected_id(&v), Some(2));
    let extreme = Lives::default()
        .alive("broker-a", 1, 1, i64::MIN, i32::MIN)
        .alive("broker-a", 2, 1, i64::MAX, i32::MAX);
    assert_eq!(
        elected_id(&elect(Trigger::Controller).decide(&m, &extreme, CLEAN)),
        Some(2)
    );
}

#[test]
fn priorities_at_the_extremes_do_not_overflow() {
    let m = machine(9, &[1, 2]);
    let lives =
        Lives::default()
            .alive("broker-a", 1, 1, 5, i32::MAX)
            .alive("broker-a", 2, 1, 5, i32::MIN);
    assert_eq!(
        elected_id(&elect(Trigger::Controller).decide(&m, &lives, CLEAN)),
        Some(2)
    );
}
