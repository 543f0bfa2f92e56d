//! The fixed label vocabulary of request metrics: the series a request is counted in, the
//! latency classes, and which response codes get their own series.
//!
//! Label values are the lower-cased names of Java's `RequestCode` / `ResponseCode` constants,
//! as RocketMQ's own remoting metrics write them (`RemotingHelper.getRequestCodeDesc`). Which
//! request codes exist is not known here: each row of a request table carries its
//! [`RequestSeries`], and the dispatcher hands it over when it records a request. Codes
//! without a row share [`RequestSeries::OTHER`], so a client sending arbitrary codes cannot
//! grow the number of series. Slots are plain indices: recording a request costs an index,
//! never a search or a string.

use crate::protocol::code::response;

/// The latency class a request code belongs to (the `class` label of
/// `namesrv_request_duration_seconds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyClass {
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

impl LatencyClass {
    /// Every class, in slot order.
    pub(crate) const ALL: [LatencyClass; 7] = [
        LatencyClass::Route,
        LatencyClass::Register,
        LatencyClass::Heartbeat,
        LatencyClass::List,
        LatencyClass::Kv,
        LatencyClass::Admin,
        LatencyClass::Other,
    ];

    /// The label value.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LatencyClass::Route => "route",
            LatencyClass::Register => "register",
            LatencyClass::Heartbeat => "heartbeat",
            LatencyClass::List => "list",
            LatencyClass::Kv => "kv",
            LatencyClass::Admin => "admin",
            LatencyClass::Other => "other",
        }
    }
}

/// Label value of the series shared by unknown codes.
pub(crate) const OTHER: &str = "other";

/// Request series: room for every request code of the process's request tables (the name
/// server's and, beside it, another service's), then `other` in the last slot. A table test
/// checks that its rows fit.
pub(crate) const REQUEST_SLOTS: usize = 48;

/// The series one request code is counted in: its slot, its `request_code` label value and
/// its latency class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSeries {
    /// Index into the request counters, below [`RequestSeries::OTHER`]'s.
    pub(crate) slot: u8,
    /// The `request_code` label value.
    pub(crate) label: &'static str,
    /// The `class` label of its latency.
    pub(crate) class: LatencyClass,
}

impl RequestSeries {
    /// The series of codes no table serves.
    pub(crate) const OTHER: RequestSeries = RequestSeries {
        slot: (REQUEST_SLOTS - 1) as u8,
        label: OTHER,
        class: LatencyClass::Other,
    };
}

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

/// Response slots: one per answered code, then `other`.
pub(crate) const RESPONSE_SLOTS: usize = RESPONSES.len() + 1;

/// Builds a code → slot table over `0..N` from `(code, slot)` pairs; unknown codes map to
/// `fallback`.
const fn slot_table<const N: usize>(codes: &[(i32, &str)], fallback: usize) -> [u8; N] {
    let mut table = [fallback as u8; N];
    let mut i = 0;
    while i < codes.len() {
        table[codes[i].0 as usize] = i as u8;
        i += 1;
    }
    table
}

/// Response codes the name server sends are below 32.
static RESPONSE_SLOT: [u8; 32] = slot_table(&RESPONSES, RESPONSES.len());

/// The slot of a response code.
pub(crate) fn response_slot(code: i32) -> usize {
    usize::try_from(code)
        .ok()
        .and_then(|c| RESPONSE_SLOT.get(c))
        .map_or(RESPONSES.len(), |&s| s as usize)
}

/// The label value of a response slot.
pub(crate) fn response_name(slot: usize) -> &'static str {
    RESPONSES.get(slot).map_or(OTHER, |r| r.1)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn the_other_series_takes_the_last_slot() {
        assert_eq!(RequestSeries::OTHER.slot as usize, REQUEST_SLOTS - 1);
        assert_eq!(RequestSeries::OTHER.class, LatencyClass::Other);
    }
}
