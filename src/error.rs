//! The errors a request handler can end with, and the one place they become wire responses.
//!
//! Client faults (a missing or malformed field, an undecodable body) become `SYSTEM_ERROR`
//! with a remark saying what was wrong, as Java answers them; internal faults (a failed disk
//! write) become `SYSTEM_ERROR` too but are logged at error level.

use crate::protocol::RemotingCommand;
use crate::protocol::code::response;

/// Why a handler could not serve a request.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// A required ext field is absent.
    #[error(
        "org.apache.rocketmq.remoting.exception.RemotingCommandException: the custom field <{0}> is null"
    )]
    MissingField(&'static str),
    /// An ext field does not parse as its type.
    #[error(
        "org.apache.rocketmq.remoting.exception.RemotingCommandException: the custom field <{field}> has an invalid value: {value:?}"
    )]
    InvalidField { field: &'static str, value: String },
    /// The body could not be decoded; the text is the remark.
    #[error("{0}")]
    BadBody(String),
    /// Persisting a change failed; nothing was changed.
    #[error("{what}: {source}")]
    Storage {
        /// What was being persisted.
        what: &'static str,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl HandlerError {
    /// Whether the fault is the server's rather than the client's.
    pub(crate) fn is_internal(&self) -> bool {
        matches!(self, HandlerError::Storage { .. })
    }

    /// The response Java would give.
    pub(crate) fn to_response(&self) -> RemotingCommand {
        RemotingCommand::error(response::SYSTEM_ERROR, self.to_string())
    }
}
