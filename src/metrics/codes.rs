//! The fixed label vocabulary of request metrics: which request and response codes get their
//! own series, their label values, and the latency class of each request code.
//!
//! Label values are the lower-cased names of Java's `RequestCode` / `ResponseCode` constants,
//! as RocketMQ's own remoting metrics write them (`RemotingHelper.getRequestCodeDesc`). Codes
//! outside the tables share one `other` slot, so a client sending arbitrary codes cannot grow
//! the number of series. Slots are found through constant lookup tables: recording a request
//! costs an index, never a search or a string.

use crate::protocol::code::{request as rc, response};

/// The latency class a request code belongs to (the `class` label of
/// `namesrv_request_duration_seconds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestClass {
    /// GET_ROUTEINFO_BY_TOPIC.
    Route,
    /// REGISTER_BROKER.
    Register,
    /// BROKER_HEARTBEAT, QUERY_DATA_VERSION and UNREGISTER_BROKER.
    Heartbeat,
    /// Cluster info, topic lists and broker member groups.
    List,
    /// The KV store, reads and writes.
    Kv,
    /// Configuration, write permissions, topic registration and deletion.
    Admin,
    /// Codes the name server does not serve.
    Other,
}

impl RequestClass {
    /// Every class, in slot order.
    pub const ALL: [RequestClass; 7] = [
        RequestClass::Route,
        RequestClass::Register,
        RequestClass::Heartbeat,
        RequestClass::List,
        RequestClass::Kv,
        RequestClass::Admin,
        RequestClass::Other,
    ];

    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            RequestClass::Route => "route",
            RequestClass::Register => "register",
            RequestClass::Heartbeat => "heartbeat",
            RequestClass::List => "list",
            RequestClass::Kv => "kv",
            RequestClass::Admin => "admin",
            RequestClass::Other => "other",
        }
    }
}

use RequestClass::*;

/// Every request code the name server serves: code, label value, latency class.
const REQUESTS: [(i32, &str, RequestClass); 23] = [
    (rc::PUT_KV_CONFIG, "put_kv_config", Kv),
    (rc::GET_KV_CONFIG, "get_kv_config", Kv),
    (rc::DELETE_KV_CONFIG, "delete_kv_config", Kv),
    (rc::REGISTER_BROKER, "register_broker", Register),
    (rc::UNREGISTER_BROKER, "unregister_broker", Heartbeat),
    (rc::GET_ROUTEINFO_BY_TOPIC, "get_routeinfo_by_topic", Route),
    (rc::GET_BROKER_CLUSTER_INFO, "get_broker_cluster_info", List),
    (
        rc::WIPE_WRITE_PERM_OF_BROKER,
        "wipe_write_perm_of_broker",
        Admin,
    ),
    (
        rc::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        "get_all_topic_list_from_nameserver",
        List,
    ),
    (
        rc::DELETE_TOPIC_IN_NAMESRV,
        "delete_topic_in_namesrv",
        Admin,
    ),
    (
        rc::REGISTER_TOPIC_IN_NAMESRV,
        "register_topic_in_namesrv",
        Admin,
    ),
    (rc::GET_KVLIST_BY_NAMESPACE, "get_kvlist_by_namespace", Kv),
    (rc::GET_TOPICS_BY_CLUSTER, "get_topics_by_cluster", List),
    (
        rc::GET_SYSTEM_TOPIC_LIST_FROM_NS,
        "get_system_topic_list_from_ns",
        List,
    ),
    (rc::GET_UNIT_TOPIC_LIST, "get_unit_topic_list", List),
    (
        rc::GET_HAS_UNIT_SUB_TOPIC_LIST,
        "get_has_unit_sub_topic_list",
        List,
    ),
    (
        rc::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
        "get_has_unit_sub_ununit_topic_list",
        List,
    ),
    (rc::UPDATE_NAMESRV_CONFIG, "update_namesrv_config", Admin),
    (rc::GET_NAMESRV_CONFIG, "get_namesrv_config", Admin),
    (rc::QUERY_DATA_VERSION, "query_data_version", Heartbeat),
    (
        rc::ADD_WRITE_PERM_OF_BROKER,
        "add_write_perm_of_broker",
        Admin,
    ),
    (rc::GET_BROKER_MEMBER_GROUP, "get_broker_member_group", List),
    (rc::BROKER_HEARTBEAT, "broker_heartbeat", Heartbeat),
];

/// Every response code the name server answers with, and its label value.
const RESPONSES: [(i32, &str); 7] = [
    (response::SUCCESS, "success"),
    (response::SYSTEM_ERROR, "system_error"),
    (response::SYSTEM_BUSY, "system_busy"),
    (
        response::REQUEST_CODE_NOT_SUPPORTED,
        "request_code_not_supported",
    ),
    (response::NO_PERMISSION, "no_permission"),
    (response::TOPIC_NOT_EXIST, "topic_not_exist"),
    (response::QUERY_NOT_FOUND, "query_not_found"),
];

/// Label value of the slot shared by unknown codes.
pub const OTHER: &str = "other";

/// Request slots: one per served code, then `other`.
pub const REQUEST_SLOTS: usize = REQUESTS.len() + 1;
/// Response slots: one per answered code, then `other`.
pub const RESPONSE_SLOTS: usize = RESPONSES.len() + 1;

/// Builds a code → slot table over `0..N` from `(code, slot)` pairs; unknown codes map to
/// `fallback`.
const fn slot_table<const N: usize>(codes: &[i32], fallback: usize) -> [u8; N] {
    let mut table = [fallback as u8; N];
    let mut i = 0;
    while i < codes.len() {
        table[codes[i] as usize] = i as u8;
        i += 1;
    }
    table
}

/// The codes (first fields) of a constant code table.
macro_rules! codes_of {
    ($table:expr) => {{
        let mut codes = [0; $table.len()];
        let mut i = 0;
        while i < $table.len() {
            codes[i] = $table[i].0;
            i += 1;
        }
        codes
    }};
}

const REQUEST_CODES: [i32; REQUESTS.len()] = codes_of!(REQUESTS);
const RESPONSE_CODES: [i32; RESPONSES.len()] = codes_of!(RESPONSES);

/// Request codes are below 1024 (the largest served is 904).
static REQUEST_SLOT: [u8; 1024] = slot_table(&REQUEST_CODES, REQUESTS.len());
/// Response codes the name server sends are below 32.
static RESPONSE_SLOT: [u8; 32] = slot_table(&RESPONSE_CODES, RESPONSES.len());

/// The slot of a request code.
pub fn request_slot(code: i32) -> usize {
    usize::try_from(code)
        .ok()
        .and_then(|c| REQUEST_SLOT.get(c))
        .map_or(REQUESTS.len(), |&s| s as usize)
}

/// The slot of a response code.
pub fn response_slot(code: i32) -> usize {
    usize::try_from(code)
        .ok()
        .and_then(|c| RESPONSE_SLOT.get(c))
        .map_or(RESPONSES.len(), |&s| s as usize)
}

/// The label value of a request slot.
pub fn request_name(slot: usize) -> &'static str {
    REQUESTS.get(slot).map_or(OTHER, |r| r.1)
}

/// The label value of a response slot.
pub fn response_name(slot: usize) -> &'static str {
    RESPONSES.get(slot).map_or(OTHER, |r| r.1)
}

/// The latency class of a request slot.
pub fn request_class(slot: usize) -> RequestClass {
    REQUESTS.get(slot).map_or(Other, |r| r.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_code_has_its_own_slot_and_unknown_codes_share_other() {
        for (i, (code, name, _)) in REQUESTS.iter().enumerate() {
            assert_eq!(request_slot(*code), i, "{name}");
            assert_eq!(request_name(i), *name);
        }
        for code in [-1, 0, 99, 107, 903, 1023, 1024, i32::MAX, i32::MIN] {
            assert_eq!(request_name(request_slot(code)), OTHER, "{code}");
            assert_eq!(request_class(request_slot(code)), Other);
        }
        assert_eq!(request_slot(rc::GET_ROUTEINFO_BY_TOPIC), 5);
        assert_eq!(request_class(5), Route);
    }

    #[test]
    fn response_codes_map_to_javas_lower_case_names() {
        assert_eq!(response_name(response_slot(0)), "success");
        assert_eq!(response_name(response_slot(17)), "topic_not_exist");
        assert_eq!(response_name(response_slot(22)), "query_not_found");
        for code in [-5, 4, 15, 31, 32, 1500] {
            assert_eq!(response_name(response_slot(code)), OTHER, "{code}");
        }
    }

    #[test]
    fn label_values_are_distinct() {
        let mut names: Vec<&str> = REQUESTS.iter().map(|r| r.1).collect();
        names.push(OTHER);
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), REQUEST_SLOTS);
    }
}
