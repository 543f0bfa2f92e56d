//! The name server's request table against the facts each code had before the table held
//! them: its Java name, lane, metric label and class, permission, audit fields and write.

use super::*;
use crate::auth::Permission;
use crate::metrics::{LatencyClass, Write, codes};
use crate::protocol::code::request as rc;

/// One code's expected facts: code, metric label, lane, latency class, permission, audit
/// fields (`None`: not audited), write.
type Expected = (
    i32,
    &'static str,
    Cost,
    LatencyClass,
    Permission,
    Option<&'static [&'static str]>,
    Writes,
);

#[rustfmt::skip]
const EXPECTED: [Expected; 23] = {
    use Cost::*;
    use LatencyClass as L;
    use Permission::*;
    const NO: Writes = Writes::Nothing;
    [
        (rc::PUT_KV_CONFIG, "put_kv_config", Disk, L::Kv, Admin, Some(&["key", "namespace"]), Writes::Durable(Write::Kv)),
        (rc::GET_KV_CONFIG, "get_kv_config", Quick, L::Kv, Read, None, NO),
        (rc::DELETE_KV_CONFIG, "delete_kv_config", Disk, L::Kv, Admin, Some(&["key", "namespace"]), Writes::Durable(Write::Kv)),
        (rc::REGISTER_BROKER, "register_broker", Cpu, L::Register, Broker, None, Writes::Registration),
        (rc::UNREGISTER_BROKER, "unregister_broker", Quick, L::Heartbeat, Broker, None, NO),
        (rc::GET_ROUTEINFO_BY_TOPIC, "get_routeinfo_by_topic", Quick, L::Route, Read, None, NO),
        (rc::GET_BROKER_CLUSTER_INFO, "get_broker_cluster_info", Listing, L::List, Read, None, NO),
        (rc::WIPE_WRITE_PERM_OF_BROKER, "wipe_write_perm_of_broker", Quick, L::Admin, Admin, Some(&["brokerName"]), NO),
        (rc::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, "get_all_topic_list_from_nameserver", Listing, L::List, Read, None, NO),
        (rc::DELETE_TOPIC_IN_NAMESRV, "delete_topic_in_namesrv", Quick, L::Admin, Admin, Some(&["clusterName", "topic"]), NO),
        (rc::REGISTER_TOPIC_IN_NAMESRV, "register_topic_in_namesrv", Cpu, L::Admin, Broker, None, NO),
        (rc::GET_KVLIST_BY_NAMESPACE, "get_kvlist_by_namespace", Cpu, L::Kv, Read, None, NO),
        (rc::GET_TOPICS_BY_CLUSTER, "get_topics_by_cluster", Listing, L::List, Read, None, NO),
        (rc::GET_SYSTEM_TOPIC_LIST_FROM_NS, "get_system_topic_list_from_ns", Listing, L::List, Read, None, NO),
        (rc::GET_UNIT_TOPIC_LIST, "get_unit_topic_list", Listing, L::List, Read, None, NO),
        (rc::GET_HAS_UNIT_SUB_TOPIC_LIST, "get_has_unit_sub_topic_list", Listing, L::List, Read, None, NO),
        (rc::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, "get_has_unit_sub_ununit_topic_list", Listing, L::List, Read, None, NO),
        (rc::UPDATE_NAMESRV_CONFIG, "update_namesrv_config", Disk, L::Admin, Admin, Some(&[]), Writes::Durable(Write::Config)),
        (rc::GET_NAMESRV_CONFIG, "get_namesrv_config", Quick, L::Admin, Admin, Some(&[]), NO),
        (rc::QUERY_DATA_VERSION, "query_data_version", Quick, L::Heartbeat, Broker, None, NO),
        (rc::ADD_WRITE_PERM_OF_BROKER, "add_write_perm_of_broker", Quick, L::Admin, Admin, Some(&["brokerName"]), NO),
        (rc::GET_BROKER_MEMBER_GROUP, "get_broker_member_group", Quick, L::List, Read, None, NO),
        (rc::BROKER_HEARTBEAT, "broker_heartbeat", Quick, L::Heartbeat, Broker, None, NO),
    ]
};

#[test]
fn every_served_code_has_its_row_with_the_facts_it_had() {
    let rows = NAMESRV.rows();
    assert_eq!(rows.len(), EXPECTED.len());
    for (slot, (row, expected)) in rows.iter().zip(EXPECTED).enumerate() {
        let (code, label, cost, class, permission, audit, writes) = expected;
        let found = NAMESRV.route(code).expect("a row");
        assert!(std::ptr::eq(found, row), "{label}: looked up by its code");
        assert_eq!(row.code, code, "{label}");
        assert_eq!(row.metric.label, label);
        assert_eq!(
            row.name.to_ascii_lowercase(),
            label,
            "the label is the lower-cased name"
        );
        assert_eq!(
            usize::from(row.metric.slot),
            slot,
            "{label}: slot in row order"
        );
        assert_eq!(row.metric.class, class, "{label}");
        assert_eq!(row.cost, cost, "{label}");
        assert_eq!(row.access.permission, permission, "{label}");
        assert_eq!(row.access.audit.map(|a| a.fields), audit, "{label}");
        assert_eq!(row.writes, writes, "{label}");
        if let Some(a) = row.access.audit {
            assert_eq!(a.request, row.name);
            assert_eq!(a.config_keys, code == rc::UPDATE_NAMESRV_CONFIG, "{label}");
            assert_eq!(
                row.access.permission,
                Permission::Admin,
                "only admin codes are audited"
            );
        }
    }
    assert_eq!(
        NAMESRV
            .route(rc::GET_ROUTEINFO_BY_TOPIC)
            .unwrap()
            .metric
            .slot,
        5
    );
}

#[test]
fn unknown_codes_have_no_row_and_share_the_other_series() {
    for code in [-1, 0, 99, 107, 903, 1023, 1024, 9999, i32::MAX, i32::MIN] {
        assert!(NAMESRV.route(code).is_none(), "{code}");
        let req = RemotingCommand::request(code, 1);
        assert_eq!(NAMESRV.cost(&req), Cost::Quick, "{code}");
    }
    assert_eq!(Access::UNKNOWN.permission, Permission::Admin);
    assert_eq!(Access::UNKNOWN.audit, None);
    assert_eq!(RequestSeries::OTHER.label, codes::OTHER);
    assert_eq!(RequestSeries::OTHER.class, LatencyClass::Other);
}

#[test]
fn metric_labels_are_distinct_and_fit_the_slots() {
    let mut labels: Vec<&str> = NAMESRV.rows().iter().map(|r| r.metric.label).collect();
    labels.push(codes::OTHER);
    labels.sort_unstable();
    labels.dedup();
    assert_eq!(labels.len(), NAMESRV.rows().len() + 1);
    assert!(NAMESRV.rows().len() < usize::from(RequestSeries::OTHER.slot));
}

#[test]
fn responses_cost_nothing_whatever_their_code() {
    let mut resp = RemotingCommand::response(0, None);
    resp.code = rc::REGISTER_BROKER;
    assert!(resp.is_response());
    assert_eq!(cost(&resp), Cost::Quick);
}
