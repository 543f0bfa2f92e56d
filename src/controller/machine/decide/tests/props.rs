//! Random request sequences, decided and applied as the leader would: applying never
//! panics, epochs never decrease, a clean election picks only from the sync-state set, and
//! an elected master always has an address.

use proptest::prelude::*;

use crate::controller::machine::decide::testing::*;
use crate::controller::machine::decide::*;
use crate::controller::machine::{Event, Machine};
use crate::protocol::body::controller::SyncStateSetBody;

const NAMES: [&str; 2] = ["broker-a", "broker-b"];

#[derive(Debug, Clone)]
enum Op {
    Apply(usize, i64, bool),
    Register(usize, i64, bool),
    Alter(usize, i64, i32, Vec<i64>, i32),
    Elect(usize, u8, i64),
    Clean(usize, Option<String>, bool),
    Alive(usize, Vec<(i64, i32, i64, i32)>),
}

fn op() -> impl Strategy<Value = Op> {
    let name = 0..NAMES.len();
    let id = -1_i64..5;
    prop_oneof![
        (name.clone(), id.clone(), any::<bool>()).prop_map(|(n, i, c)| Op::Apply(n, i, c)),
        (name.clone(), id.clone(), any::<bool>()).prop_map(|(n, i, a)| Op::Register(n, i, a)),
        (
            name.clone(),
            id.clone(),
            0..4,
            prop::collection::vec(-1_i64..5, 0..4),
            0..4
        )
            .prop_map(|(n, m, e, s, se)| Op::Alter(n, m, e, s, se)),
        (name.clone(), 0_u8..3, id.clone()).prop_map(|(n, t, i)| Op::Elect(n, t, i)),
        (
            name.clone(),
            prop::option::of("[0-9;x]{0,4}"),
            any::<bool>()
        )
            .prop_map(|(n, ids, l)| Op::Clean(n, ids, l)),
        (
            name,
            prop::collection::vec((1_i64..5, -1..3, any::<i64>(), any::<i32>()), 0..4)
        )
            .prop_map(|(n, l)| Op::Alive(n, l)),
    ]
}

fn verdict(op: &Op, m: &Machine, lives: &Lives, flags: Flags) -> Option<Verdict> {
    let name = |n: &usize| NAMES[*n].to_owned();
    Some(match op {
        Op::Apply(n, id, same_code) => ApplyBrokerId {
            cluster_name: CLUSTER.into(),
            broker_name: name(n),
            applied_broker_id: *id,
            register_check_code: if *same_code {
                check_code(*id)
            } else {
                format!("{};9", addr(*id))
            },
        }
        .decide(m),
        Op::Register(n, id, moved) => RegisterBroker {
            cluster_name: CLUSTER.into(),
            broker_name: name(n),
            broker_id: *id,
            broker_address: if *moved { "moved:1".into() } else { addr(*id) },
        }
        .decide(m, lives),
        Op::Alter(n, master, epoch, set, sss_epoch) => AlterSyncStateSet {
            broker_name: name(n),
            master_broker_id: *master,
            master_epoch: *epoch,
            proposed: SyncStateSetBody {
                sync_state_set: set.iter().copied().collect(),
                sync_state_set_epoch: *sss_epoch,
            },
        }
        .decide(m, lives),
        Op::Elect(n, t, id) => ElectMaster {
            broker_name: name(n),
            trigger: match t {
                0 => Trigger::Broker(*id),
                1 => Trigger::Admin(*id),
                _ => Trigger::Controller,
            },
        }
        .decide(m, lives, flags),
        Op::Clean(n, ids, living) => CleanBrokerData {
            cluster_name: Some(CLUSTER.into()),
            broker_name: name(n),
            ids_to_clean: ids.clone(),
            clean_living_broker: *living,
        }
        .decide(m, lives),
        Op::Alive(..) => return None,
    })
}

proptest! {
    #[test]
    fn decided_sequences_keep_the_invariants(ops in prop::collection::vec(op(), 1..60), unclean in any::<bool>()) {
        let flags = Flags { enable_elect_unclean_master: unclean };
        let mut m = Machine::default();
        let mut lives = Lives::default();
        for op in &ops {
            if let Op::Alive(n, list) = op {
                lives = Lives::default();
                for (id, epoch, offset, priority) in list {
                    lives = lives.alive(NAMES[*n], *id, *epoch, *offset, *priority);
                }
                continue;
            }
            let Some(v) = verdict(op, &m, &lives, flags) else { continue };
            if v.code != 0 {
                // Refusals propose nothing, except a controller's failed election.
                let not_elected = matches!(v.events.as_slice(), [Event::ElectMasterEvent { new_master_elected: false, .. }]);
                prop_assert!(v.events.is_empty() || not_elected, "{op:?} -> {v:?}");
            }
            let before: Vec<(String, i32, i32)> = m
                .broker_sets()
                .map(|s| (s.replicas.broker_name.clone(), s.sync.master_epoch, s.sync.sync_state_set_epoch))
                .collect();
            let elected = v.elected.as_ref().and_then(|e| Some((e, m.broker_set(&e.broker_name)?)));
            if let Some((elected, set)) = elected {
                prop_assert!(set.replicas.broker_ids.contains_key(&elected.new_master));
                if !unclean && !set.sync.is_first_election() {
                    prop_assert!(set.sync.sync_state_set.contains(&elected.new_master), "{op:?}");
                }
            }
            for e in &v.events {
                m.apply(e);
            }
            for (name, master_epoch, sss_epoch) in before {
                if let Some(set) = m.broker_set(&name) {
                    prop_assert!(set.sync.master_epoch >= master_epoch);
                    prop_assert!(set.sync.sync_state_set_epoch >= sss_epoch);
                }
            }
        }
    }

    #[test]
    fn applying_arbitrary_events_never_panics(events in prop::collection::vec(arbitrary_event(), 0..40)) {
        let mut m = Machine::default();
        for e in &events {
            m.apply(e);
        }
    }
}

fn arbitrary_event() -> impl Strategy<Value = Event> {
    let name = prop::sample::select(vec!["a".to_owned(), "b".to_owned()]);
    let ids = prop::collection::btree_set(-2_i64..4, 0..3);
    prop_oneof![
        (name.clone(), ids.clone()).prop_map(|(broker_name, new_sync_state_set)| {
            Event::AlterSyncStateSetEvent {
                broker_name,
                new_sync_state_set,
            }
        }),
        (name.clone(), any::<i64>()).prop_map(|(broker_name, id)| Event::ApplyBrokerIdEvent {
            cluster_name: "c".into(),
            broker_name,
            broker_address: "x".into(),
            new_broker_id: id,
            register_check_code: "x;1".into(),
        }),
        (name.clone(), prop::option::of(any::<i64>()), any::<bool>()).prop_map(
            |(broker_name, new_master_broker_id, new_master_elected)| Event::ElectMasterEvent {
                broker_name,
                new_master_broker_id,
                new_master_elected
            }
        ),
        (name.clone(), prop::option::of(ids)).prop_map(|(broker_name, broker_id_set_to_clean)| {
            Event::CleanBrokerDataEvent {
                broker_name,
                broker_id_set_to_clean,
            }
        }),
        (name, any::<i64>()).prop_map(|(broker_name, broker_id)| Event::UpdateBrokerAddressEvent {
            cluster_name: "c".into(),
            broker_name,
            broker_address: "y".into(),
            broker_id,
        }),
    ]
}
