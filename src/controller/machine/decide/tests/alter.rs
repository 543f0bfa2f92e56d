use crate::controller::code::response as rc;
use crate::controller::machine::decide::testing::*;
use crate::controller::machine::decide::*;
use crate::controller::machine::{Event, Machine};
use crate::protocol::body::controller::SyncStateSetBody;

fn alter(master: i64, master_epoch: i32, set: &[i64], sss_epoch: i32) -> AlterSyncStateSet {
    AlterSyncStateSet {
        broker_name: "broker-a".into(),
        master_broker_id: master,
        master_epoch,
        proposed: SyncStateSetBody {
            sync_state_set: set.iter().copied().collect(),
            sync_state_set_epoch: sss_epoch,
        },
    }
}

fn refusal(v: &Verdict) -> (i32, &str, &[(&'static str, String)]) {
    assert!(v.events.is_empty());
    (
        v.code,
        v.remark.as_deref().unwrap(),
        v.ext.as_deref().unwrap(),
    )
}

/// broker-a: ids 1, 2, 3; master 1 at epoch 1; SSS {1} at epoch 1.
fn machine() -> Machine {
    machine_with("broker-a", &[1, 2, 3], Some(1))
}

#[test]
fn a_valid_alter_proposes_the_set_at_the_next_epoch() {
    let lives = Lives::default().all("broker-a", &[1, 2]);
    let v = alter(1, 1, &[1, 2], 1).decide(&machine(), &lives);
    assert_eq!(v.code, 0);
    assert_eq!(v.ext, Some(vec![("newSyncStateSetEpoch", "2".to_owned())]));
    assert_eq!(
        v.body.as_deref(),
        Some(&br#"{"syncStateSet":[1,2],"syncStateSetEpoch":2}"#[..])
    );
    assert_eq!(
        v.events,
        [Event::AlterSyncStateSetEvent {
            broker_name: "broker-a".into(),
            new_sync_state_set: [1, 2].into(),
        }]
    );
}

#[test]
fn each_check_in_javas_order_with_its_code_and_remark() {
    let m = machine();
    let lives = Lives::default().all("broker-a", &[1, 2]);
    let zero = [("newSyncStateSetEpoch", "0".to_owned())];
    let cases: [(AlterSyncStateSet, i32, &str); 7] = [
        (
            alter(1, 1, &[1], 1),
            rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet",
        ),
        (
            alter(2, 1, &[1, 2], 1),
            rc::CONTROLLER_INVALID_MASTER,
            "Rejecting alter syncStateSet request because the current leader is:{1}, not {2}",
        ),
        (
            alter(1, 0, &[1, 2], 1),
            rc::CONTROLLER_FENCED_MASTER_EPOCH,
            "Rejecting alter syncStateSet request because the current master epoch is:{1}, not {0}",
        ),
        (
            alter(1, 1, &[1, 2], 7),
            rc::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
            "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{1}, not {7}",
        ),
        (
            alter(1, 1, &[1, 9], 1),
            rc::CONTROLLER_INVALID_REPLICAS,
            "Rejecting alter syncStateSet request because the replicas {9} don't exist",
        ),
        (
            alter(1, 1, &[1, 3], 1),
            rc::CONTROLLER_BROKER_NOT_ALIVE,
            "Rejecting alter syncStateSet request because the replicas {3} don't alive",
        ),
        (
            alter(1, 1, &[2], 1),
            rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {1}",
        ),
    ];
    for (request, code, remark) in cases {
        let v = request.decide(&m, &lives);
        assert_eq!(refusal(&v), (code, remark, &zero[..]), "{request:?}");
    }
    let unknown = alter(1, 1, &[1], 1).decide(&Machine::default(), &lives);
    assert_eq!(
        refusal(&unknown),
        (
            rc::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
            "Broker metadata is not existed",
            &zero[..]
        )
    );
}

#[test]
fn without_a_master_the_remark_prints_null() {
    let m = machine_with("broker-a", &[1, 2], None);
    let v = alter(1, 0, &[1, 2], 0).decide(&m, &Lives::default());
    assert_eq!(
        v.remark.as_deref(),
        Some("Rejecting alter syncStateSet request because the current leader is:{null}, not {1}")
    );
}
