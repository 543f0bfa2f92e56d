//! The one place requests meet their handlers, and the one place handler errors become
//! responses. Each request code's facts are its row in a request table ([`table`]); around
//! the handler, in this order: the going-away answer of a shutting-down server, the auth gate
//! (a refusal becomes `NO_PERMISSION` here; handlers never see credentials), then metrics and
//! the audit line once the response is known.

pub mod table;

pub use table::{Cost, Handler, NAMESRV, RequestTable, Route, Writes};

use crate::auth::{Access, Gate};
use crate::error::HandlerError;
use crate::handlers::{Context, Effects, HandlerResult};
use crate::metrics::{Registration, RequestSeries};
use crate::protocol::RemotingCommand;
use crate::protocol::code::{response, version};

/// What serving one request gave: the response to write, if any, and whether the request
/// registered a broker on its connection (closing the connection then unregisters it).
#[derive(Debug)]
pub struct Served {
    /// `None` for one-way requests and for stray responses (the name server sends no
    /// requests on accepted connections).
    pub response: Option<RemotingCommand>,
    /// A broker now belongs to the request's connection.
    pub registered_broker: bool,
}

impl Served {
    fn nothing() -> Served {
        Served {
            response: None,
            registered_broker: false,
        }
    }

    /// `response` to `req`, carrying its opaque; nothing for a one-way request.
    fn answer(req: &RemotingCommand, mut response: RemotingCommand) -> Served {
        if req.is_oneway() {
            return Served::nothing();
        }
        response.opaque = req.opaque;
        Served {
            response: Some(response),
            registered_broker: false,
        }
    }
}

/// Serves one request of the name server's table.
pub fn dispatch(ctx: &Context<'_>, req: &RemotingCommand, auth: &Gate) -> Served {
    serve(&NAMESRV, ctx, req, auth)
}

/// What handling `req` may cost in the name server's table (frames too large to decode
/// quickly are the server's call).
pub fn cost(req: &RemotingCommand) -> Cost {
    NAMESRV.cost(req)
}

impl RequestTable {
    /// What handling `req` may cost: its row's lane; quick for unknown codes and responses.
    pub fn cost(&self, req: &RemotingCommand) -> Cost {
        if req.is_response() {
            return Cost::Quick;
        }
        self.route(req.code).map_or(Cost::Quick, |r| r.cost)
    }
}

/// Serves `req` by `table`: the going-away answer, the gate, the row's handler (or
/// REQUEST_CODE_NOT_SUPPORTED for a code without one), then the metrics and the audit line.
pub fn serve(
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
    let result = match route {
        Some(route) => run(route, ctx, req),
        None => Ok(not_supported(req.code).into()),
    };
    let storage_failed = matches!(&result, Err(HandlerError::Storage { .. }));
    let (resp, effects) = match result {
        Ok(reply) => (reply.response, reply.effects),
        Err(e) => (error_response(req, &e), Effects::default()),
    };
    record(ctx, route, resp.code, effects, storage_failed);
    ticket.record(req, ctx.peer, (!req.is_oneway()).then_some(resp.code));
    Served {
        registered_broker: effects.registered_broker,
        ..Served::answer(req, resp)
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

/// Runs the row's handler.
fn run(route: &Route, ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    match route.handler {
        Handler::Sync(handler) => handler(ctx, req),
    }
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

/// Metrics: counts and times every request, and notes how registrations and durable writes
/// ended. The one place requests are recorded.
fn record(
    ctx: &Context<'_>,
    route: Option<&Route>,
    response_code: i32,
    effects: Effects,
    storage_failed: bool,
) {
    let metrics = ctx.state.metrics();
    let elapsed = ctx.now.elapsed();
    let series = route.map_or(RequestSeries::OTHER, |r| r.metric);
    metrics.request(series, response_code, elapsed);
    let success = response_code == response::SUCCESS;
    match route.map_or(Writes::Nothing, |r| r.writes) {
        Writes::Nothing => {}
        Writes::Registration => metrics.registration(match effects.registration {
            Some(applied) if success => applied,
            _ => Registration::Refused,
        }),
        // Writes that reached the disk: refused requests (a missing field, a black-listed
        // key) never got that far.
        Writes::Durable(kind) if success || storage_failed => metrics.write(kind, elapsed, success),
        Writes::Durable(_) => {}
    }
}

#[cfg(test)]
mod tests;
