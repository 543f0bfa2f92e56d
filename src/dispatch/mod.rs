//! The one place requests meet their handlers, and the one place handler errors become
//! responses. Each request code's facts are its row in a request table (`table`); around
//! the handler, in this order: the going-away answer of a shutting-down server, the auth gate
//! (a refusal becomes `NO_PERMISSION` here; handlers never see credentials), then metrics and
//! the audit line once the response is known.

pub(crate) mod table;

pub use table::{CONTROLLER, Later, NAMESRV, RequestTable, Route, Writes, index_of, numbered};
pub(crate) use table::{Cost, Handler};

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use tokio::time::Instant;

use crate::auth::{Access, Gate, Ticket};
use crate::error::HandlerError;
use crate::handlers::{Context, Effects, HandlerResult};
use crate::metrics::{RegistrationOutcome, RequestSeries};
use crate::protocol::RemotingCommand;
use crate::protocol::code::{response, version};
use crate::state::Namesrv;

/// What serving one request gave: the response to write, if any, and whether the request
/// registered a broker on its connection (closing the connection then unregisters it) — or,
/// for a handler that finishes later, the [`Pending`] that will give them.
#[derive(Debug, Default)]
pub(crate) struct Served {
    /// `None` for one-way requests, for stray responses (the name server sends no requests
    /// on accepted connections) and while `pending`.
    pub(crate) response: Option<RemotingCommand>,
    /// A broker now belongs to the request's connection.
    pub(crate) registered_broker: bool,
    /// Set when the handler finishes later: the connection awaits it beside its other
    /// requests and writes what it gives (its response carries the request's opaque).
    pub(crate) pending: Option<Pending>,
}

/// The rest of a request whose handler finishes later: metrics, audit line and opaque are
/// done when it completes, as for any other request.
pub(crate) struct Pending(Pin<Box<dyn Future<Output = Served> + Send + 'static>>);

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pending")
    }
}

impl Future for Pending {
    type Output = Served;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Served> {
        self.0.as_mut().poll(cx)
    }
}

impl Served {
    fn nothing() -> Served {
        Served::default()
    }

    /// `response` to `req`, carrying its opaque; nothing for a one-way request.
    fn answer(req: &RemotingCommand, mut response: RemotingCommand) -> Served {
        if req.is_oneway() {
            return Served::nothing();
        }
        response.opaque = req.opaque;
        Served {
            response: Some(response),
            ..Served::nothing()
        }
    }
}

/// What handling `req` may cost in the name server's table (frames too large to decode
/// quickly are the server's call).
#[cfg(test)]
pub(crate) fn cost(req: &RemotingCommand) -> Cost {
    NAMESRV.cost(req)
}

impl RequestTable {
    /// What handling `req` may cost: its row's lane; quick for unknown codes and responses.
    pub(crate) fn cost(&self, req: &RemotingCommand) -> Cost {
        if req.is_response() {
            return Cost::Quick;
        }
        self.route(req.code).map_or(Cost::Quick, |r| r.cost)
    }
}

/// Serves `req` by `table`: the going-away answer, the gate, the row's handler (or
/// REQUEST_CODE_NOT_SUPPORTED for a code without one), then the metrics and the audit line.
pub(crate) fn serve(
    table: &RequestTable,
    ctx: &Context<'_>,
    req: &RemotingCommand,
    auth: &Gate,
) -> Served {
    if req.is_response() {
        tracing::debug!(
            code = req.code,
            opaque = req.opaque,
            "ignoring a response frame"
        );
        return Served::nothing();
    }
    if let Some(go_away) = go_away(ctx, req) {
        return go_away;
    }
    let route = table.route(req.code);
    let access = route.map_or(&Access::UNKNOWN, |r| &r.access);
    let ticket = match auth.admit(req, ctx.peer, access) {
        Ok(ticket) => ticket,
        // One-way requests are refused silently (the gate counted them).
        Err(_) if req.is_oneway() => return Served::nothing(),
        Err(refusal) => {
            let resp = RemotingCommand::error(response::NO_PERMISSION, refusal.to_string());
            return Served::answer(req, resp);
        }
    };
    let done = Done {
        state: ctx.state,
        now: ctx.now,
        peer: ctx.peer,
        route,
    };
    match route.map(|r| r.handler) {
        Some(Handler::Sync(handler)) => done.finish(req, ticket, handler(ctx, req)),
        Some(Handler::Async(handler)) => {
            let later = handler(ctx, req);
            let (state, req) = (ctx.state.clone(), req.clone());
            let (now, peer) = (done.now, done.peer);
            Served {
                pending: Some(Pending(Box::pin(async move {
                    let result = later.await;
                    let done = Done {
                        state: &state,
                        now,
                        peer,
                        route,
                    };
                    done.finish(&req, ticket, result)
                }))),
                ..Served::nothing()
            }
        }
        None => done.finish(req, ticket, Ok(not_supported(req.code).into())),
    }
}

/// What finishing a request needs besides its result.
struct Done<'a> {
    state: &'a Namesrv,
    /// When the request was taken up: requests are timed from here.
    now: Instant,
    peer: SocketAddr,
    route: Option<&'static Route>,
}

impl Done<'_> {
    /// The response `result` gives, with the metrics and the audit line recorded.
    fn finish(&self, req: &RemotingCommand, ticket: Ticket, result: HandlerResult) -> Served {
        let storage_failed = matches!(&result, Err(HandlerError::Storage { .. }));
        let (resp, effects) = match result {
            Ok(reply) => (reply.response, reply.effects),
            Err(e) => (error_response(req, &e), Effects::default()),
        };
        self.record(resp.code, effects, storage_failed);
        ticket.record(req, self.peer, (!req.is_oneway()).then_some(resp.code));
        Served {
            registered_broker: effects.registered_broker,
            ..Served::answer(req, resp)
        }
    }

    /// Metrics: counts and times every request, and notes how registrations and durable
    /// writes ended. The one place requests are recorded.
    fn record(&self, response_code: i32, effects: Effects, storage_failed: bool) {
        let metrics = self.state.metrics();
        let elapsed = self.now.elapsed();
        let series = self.route.map_or(RequestSeries::OTHER, |r| r.metric);
        metrics.request(series, response_code, elapsed);
        let success = response_code == response::SUCCESS;
        match self.route.map_or(Writes::Nothing, |r| r.writes) {
            Writes::Nothing => {}
            Writes::Registration => metrics.registration(match effects.registration {
                Some(applied) if success => applied,
                _ => RegistrationOutcome::Refused,
            }),
            // Writes that reached the disk: refused requests (a missing field, a black-listed
            // key) never got that far.
            Writes::Durable(kind) if success || storage_failed => {
                metrics.write(kind, elapsed, success)
            }
            Writes::Durable(_) => {}
        }
    }
}

/// As Java, before anything else, clients newer than 5.3.1 are told to go away while the
/// server shuts down (`enableShutdownGracefully`); their request is not handled.
fn go_away(ctx: &Context<'_>, req: &RemotingCommand) -> Option<Served> {
    if !ctx.state.going_away() || req.version <= version::V5_3_1 {
        return None;
    }
    let resp = RemotingCommand::error(response::GO_AWAY, "please go away");
    Some(Served::answer(req, resp))
}

/// Java's answer to a code without a row (`NettyRemotingAbstract#processRequestCommand`).
fn not_supported(code: i32) -> RemotingCommand {
    RemotingCommand::error(
        response::REQUEST_CODE_NOT_SUPPORTED,
        format!(" request type {code} not supported"),
    )
}

/// The response a handler error gives; internal faults are logged as errors.
fn error_response(req: &RemotingCommand, e: &HandlerError) -> RemotingCommand {
    if e.is_internal() {
        tracing::error!(code = req.code, error = %e, "request failed");
    } else {
        tracing::debug!(code = req.code, error = %e, "bad request");
    }
    e.to_response()
}

#[cfg(test)]
mod tests;
