//! What a failed request reports: [`Failure`] (what happened) inside [`CallError`] (which
//! server, which request), displayed as the one line a caller prints, with RocketMQ's names
//! for the request codes.

use crate::protocol::code::request;
use crate::protocol::controller_code::request as controller;

/// What went wrong with one request to one server.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    /// No TCP connection could be made.
    #[error("connect failed: {0}")]
    Connect(std::io::Error),
    /// The connection attempt timed out.
    #[error("connect timed out after {0} ms")]
    ConnectTimeout(u128),
    /// No answer in time.
    #[error("no answer within {0} ms")]
    Timeout(u128),
    /// The connection broke or was closed by the server.
    #[error("connection lost: {0}")]
    Io(std::io::Error),
    /// The server closed the connection before answering.
    #[error("connection closed by the server before it answered")]
    Closed,
    /// The answer could not be decoded.
    #[error("unreadable answer: {0}")]
    BadAnswer(String),
    /// The server answered with a non-success code.
    #[error("CODE: {code}  DESC: {}", one_line(remark.as_deref().unwrap_or("null")))]
    Refused {
        /// The response code.
        code: i32,
        /// The response's remark.
        remark: Option<String>,
    },
}

impl Failure {
    /// Whether the server answered (and said no), as opposed to not being reachable.
    pub(crate) fn is_refusal(&self) -> bool {
        matches!(self, Failure::Refused { .. } | Failure::BadAnswer(_))
    }
}

/// A failed request: which server, which request, what happened.
#[derive(Debug, thiserror::Error)]
#[error("{server}: {} ({code}): {failure}", request_name(*code))]
pub(crate) struct CallError {
    /// The server's address.
    pub(crate) server: String,
    /// The request code.
    pub(crate) code: i32,
    /// What happened.
    pub(crate) failure: Failure,
}

/// A remark on one line: Java's remarks may carry a `\nSee <FAQ url>` tail.
fn one_line(text: &str) -> String {
    text.split(['\r', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// RocketMQ's name for the request codes this client's users send (`REQUEST` for others).
pub(super) fn request_name(code: i32) -> &'static str {
    match code {
        request::PUT_KV_CONFIG => "PUT_KV_CONFIG",
        request::GET_KV_CONFIG => "GET_KV_CONFIG",
        request::DELETE_KV_CONFIG => "DELETE_KV_CONFIG",
        request::GET_ROUTEINFO_BY_TOPIC => "GET_ROUTEINFO_BY_TOPIC",
        request::GET_BROKER_CLUSTER_INFO => "GET_BROKER_CLUSTER_INFO",
        request::WIPE_WRITE_PERM_OF_BROKER => "WIPE_WRITE_PERM_OF_BROKER",
        request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
        request::DELETE_TOPIC_IN_NAMESRV => "DELETE_TOPIC_IN_NAMESRV",
        request::GET_KVLIST_BY_NAMESPACE => "GET_KVLIST_BY_NAMESPACE",
        request::UPDATE_NAMESRV_CONFIG => "UPDATE_NAMESRV_CONFIG",
        request::GET_NAMESRV_CONFIG => "GET_NAMESRV_CONFIG",
        request::QUERY_DATA_VERSION => "QUERY_DATA_VERSION",
        request::ADD_WRITE_PERM_OF_BROKER => "ADD_WRITE_PERM_OF_BROKER",
        GET_BROKER_RUNTIME_INFO => "GET_BROKER_RUNTIME_INFO",
        QUERY_TOPIC_CONSUME_BY_WHO => "QUERY_TOPIC_CONSUME_BY_WHO",
        controller::CONTROLLER_ELECT_MASTER => "CONTROLLER_ELECT_MASTER",
        controller::CONTROLLER_GET_METADATA_INFO => "CONTROLLER_GET_METADATA_INFO",
        controller::CONTROLLER_GET_SYNC_STATE_DATA => "CONTROLLER_GET_SYNC_STATE_DATA",
        controller::GET_BROKER_EPOCH_CACHE => "GET_BROKER_EPOCH_CACHE",
        controller::UPDATE_CONTROLLER_CONFIG => "UPDATE_CONTROLLER_CONFIG",
        controller::GET_CONTROLLER_CONFIG => "GET_CONTROLLER_CONFIG",
        controller::CLEAN_BROKER_DATA => "CLEAN_BROKER_DATA",
        _ => "REQUEST",
    }
}

/// Broker request: runtime statistics (`clusterList` asks every broker it lists).
pub(crate) const GET_BROKER_RUNTIME_INFO: i32 = 28;
/// Broker request: consumer groups of a topic (`topicList -c`).
pub(crate) const QUERY_TOPIC_CONSUME_BY_WHO: i32 = 300;
