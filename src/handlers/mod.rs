//! Request handlers, one file per domain. A handler takes the request and a [`Context`] and
//! returns the response (or a [`HandlerError`]); it never touches a socket.

pub mod admin;
pub mod broker;
pub mod kv;
pub mod route;
pub mod topic;

use std::net::SocketAddr;

use tokio::time::Instant;

use crate::error::HandlerError;
use crate::metrics::Registration;
use crate::protocol::RemotingCommand;
use crate::state::{ConnId, Namesrv};

/// What a handler knows besides the request.
pub struct Context<'a> {
    /// The shared state.
    pub state: &'a Namesrv,
    /// The connection the request came on.
    pub conn: ConnId,
    /// The client's address (the peer of the connection).
    pub peer: SocketAddr,
    /// The time the request is handled at (tokio's clock).
    pub now: Instant,
    /// Set when the request registered a broker on this connection, so that closing the
    /// connection unregisters it.
    pub registered_broker: bool,
    /// Set by a successful REGISTER_BROKER: whether the body was applied or recognised as
    /// unchanged (for the metrics the dispatcher records).
    pub registration: Option<Registration>,
}

impl<'a> Context<'a> {
    /// The context of a request arriving on `conn` from `peer` at `now`.
    pub fn new(state: &'a Namesrv, conn: ConnId, peer: SocketAddr, now: Instant) -> Context<'a> {
        Context {
            state,
            conn,
            peer,
            now,
            registered_broker: false,
            registration: None,
        }
    }
}

/// The result of a handler.
pub type HandlerResult = Result<RemotingCommand, HandlerError>;

/// Typed access to a request's ext fields, with Java's parsing rules.
pub(crate) struct Fields<'a>(pub &'a RemotingCommand);

impl<'a> Fields<'a> {
    /// A field that must be present.
    pub fn required(&self, name: &'static str) -> Result<&'a str, HandlerError> {
        self.0.ext(name).ok_or(HandlerError::MissingField(name))
    }

    /// A field that may be absent.
    pub fn optional(&self, name: &str) -> Option<&'a str> {
        self.0.ext(name)
    }

    fn parse<T: std::str::FromStr>(name: &'static str, value: &str) -> Result<T, HandlerError> {
        value.parse::<T>().map_err(|_| HandlerError::InvalidField {
            field: name,
            value: value.to_owned(),
        })
    }

    /// A required `Long` field.
    pub fn required_i64(&self, name: &'static str) -> Result<i64, HandlerError> {
        Self::parse(name, self.required(name)?)
    }

    /// An optional `Long` field. As in Java, a value that does not parse is ignored, as if
    /// absent (Java logs it and keeps the header's default).
    pub fn optional_i64(&self, name: &'static str) -> Option<i64> {
        self.optional_number(name)
    }

    /// An optional `Integer` field, read like [`Fields::optional_i64`].
    pub fn optional_i32(&self, name: &'static str) -> Option<i32> {
        self.optional_number(name)
    }

    fn optional_number<T: std::str::FromStr>(&self, name: &'static str) -> Option<T> {
        let value = self.optional(name)?;
        let parsed = Self::parse(name, value);
        if parsed.is_err() {
            tracing::debug!(
                field = name,
                value,
                "ignoring an optional field that does not parse"
            );
        }
        parsed.ok()
    }

    /// An optional `Boolean` field, read as Java's `Boolean.parseBoolean` (only a
    /// case-insensitive `true` is true).
    pub fn optional_bool(&self, name: &str) -> Option<bool> {
        self.optional(name).map(|v| v.eq_ignore_ascii_case("true"))
    }
}
