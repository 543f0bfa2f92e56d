//! Request handlers, one file per domain. A handler takes the request and a [`Context`] and
//! returns a [`Reply`] — the response and what serving it did to the connection — or a
//! `HandlerError`; it never touches a socket. Each request's ext fields are read once, into
//! the typed header of `headers`.

pub(crate) mod broker;
pub(crate) mod controller;
pub(crate) mod controller_config;
pub(crate) mod headers;
pub(crate) mod kv;
pub(crate) mod operator;
pub(crate) mod route;
pub(crate) mod topic;

use std::net::SocketAddr;

use tokio::time::Instant;

use crate::controller::Controller;
use crate::error::HandlerError;
use crate::metrics::RegistrationOutcome;
use crate::protocol::RemotingCommand;
use crate::state::{ConnId, Namesrv};

/// What a handler knows besides the request: inputs only, what it did is in its [`Reply`].
pub struct Context<'a> {
    /// The shared state.
    pub(crate) state: &'a Namesrv,
    /// The connection the request came on.
    pub(crate) conn: ConnId,
    /// The client's address (the peer of the connection).
    pub(crate) peer: SocketAddr,
    /// The time the request is handled at (tokio's clock).
    pub(crate) now: Instant,
    /// The controller, on a listener of a process that runs one.
    pub(crate) controller: Option<&'a Controller>,
}

impl<'a> Context<'a> {
    /// The context of a request arriving on `conn` from `peer` at `now`.
    pub(crate) fn new(
        state: &'a Namesrv,
        conn: ConnId,
        peer: SocketAddr,
        now: Instant,
    ) -> Context<'a> {
        Context {
            state,
            conn,
            peer,
            now,
            controller: None,
        }
    }

    /// The context, with the process's controller.
    pub(crate) fn with_controller(mut self, controller: Option<&'a Controller>) -> Context<'a> {
        self.controller = controller;
        self
    }
}

/// What serving a request did besides answering it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Effects {
    /// A broker was registered on (or, restored from a snapshot, adopted by) the request's
    /// connection, so that closing the connection unregisters it.
    pub(crate) registered_broker: bool,
    /// How a successful REGISTER_BROKER was applied (for the metrics the dispatcher records).
    pub(crate) registration: Option<RegistrationOutcome>,
}

/// A handler's answer: the response, and its `Effects`.
#[derive(Debug)]
pub struct Reply {
    /// The response (the dispatcher sets its opaque).
    pub(crate) response: RemotingCommand,
    /// What serving the request did.
    pub(crate) effects: Effects,
}

impl From<RemotingCommand> for Reply {
    /// A reply that changed nothing on the connection.
    fn from(response: RemotingCommand) -> Reply {
        Reply {
            response,
            effects: Effects::default(),
        }
    }
}

/// The result of a handler.
pub type HandlerResult = Result<Reply, HandlerError>;

#[cfg(test)]
mod tests;
