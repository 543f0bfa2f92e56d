//! The one `match` on request codes, and the one place handler errors become responses.
//! Authentication wraps the `match`: the auth gate sees every request first, and a refusal
//! becomes `NO_PERMISSION` here; handlers never see credentials.

use crate::auth::Gate;
use crate::error::HandlerError;
use crate::handlers::{self, Context};
use crate::metrics::{Registration, Write};
use crate::protocol::RemotingCommand;
use crate::protocol::code::{request as rc, response, version};
use crate::state::route_table::query::UnitFilter;

/// Handles one request that passed (or, when `auth` is off, skipped) the auth gate. Returns
/// the response to write, or `None` for one-way requests and for stray responses (the name
/// server sends no requests on accepted connections).
pub fn dispatch(
    ctx: &mut Context<'_>,
    req: &RemotingCommand,
    auth: &Gate,
) -> Option<RemotingCommand> {
    if req.is_response() {
        tracing::debug!(
            code = req.code,
            opaque = req.opaque,
            "ignoring a response frame"
        );
        return None;
    }
    // --- Graceful shutdown (issue 15): as Java, before anything else, clients newer than
    // 5.3.1 are told to go away while the server shuts down (`enableShutdownGracefully`);
    // their request is not handled. ---
    if ctx.state.going_away() && req.version > version::V5_3_1 {
        if req.is_oneway() {
            return None;
        }
        let mut resp = RemotingCommand::error(response::GO_AWAY, "please go away");
        resp.opaque = req.opaque;
        return Some(resp);
    }
    // --- authentication (auth/) ---
    let ticket = match auth.admit(req, ctx.peer) {
        Ok(ticket) => ticket,
        // One-way requests are refused silently (the gate counted them).
        Err(_) if req.is_oneway() => return None,
        Err(refusal) => {
            let mut resp = RemotingCommand::error(response::NO_PERMISSION, refusal.to_string());
            resp.opaque = req.opaque;
            return Some(resp);
        }
    };
    let result = match req.code {
        rc::PUT_KV_CONFIG => handlers::kv::put(ctx, req),
        rc::GET_KV_CONFIG => handlers::kv::get(ctx, req),
        rc::DELETE_KV_CONFIG => handlers::kv::delete(ctx, req),
        rc::GET_KVLIST_BY_NAMESPACE => handlers::kv::list(ctx, req),
        rc::REGISTER_BROKER => handlers::broker::register(ctx, req),
        rc::UNREGISTER_BROKER => handlers::broker::unregister(ctx, req),
        rc::BROKER_HEARTBEAT => handlers::broker::heartbeat(ctx, req),
        rc::QUERY_DATA_VERSION => handlers::broker::query_data_version(ctx, req),
        rc::GET_BROKER_MEMBER_GROUP => handlers::broker::member_group(ctx, req),
        rc::GET_ROUTEINFO_BY_TOPIC => handlers::route::route(ctx, req),
        rc::GET_BROKER_CLUSTER_INFO => handlers::route::cluster(ctx, req),
        rc::GET_ALL_TOPIC_LIST_FROM_NAMESERVER => handlers::topic::all(ctx, req),
        rc::GET_TOPICS_BY_CLUSTER => handlers::topic::by_cluster(ctx, req),
        rc::GET_SYSTEM_TOPIC_LIST_FROM_NS => handlers::topic::system(ctx, req),
        rc::GET_UNIT_TOPIC_LIST => handlers::topic::unit(ctx, UnitFilter::Unit),
        rc::GET_HAS_UNIT_SUB_TOPIC_LIST => handlers::topic::unit(ctx, UnitFilter::UnitSub),
        rc::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST => {
            handlers::topic::unit(ctx, UnitFilter::UnitSubNotUnit)
        }
        rc::DELETE_TOPIC_IN_NAMESRV => handlers::topic::delete(ctx, req),
        rc::REGISTER_TOPIC_IN_NAMESRV => handlers::topic::register(ctx, req),
        rc::WIPE_WRITE_PERM_OF_BROKER => handlers::admin::wipe_write_perm(ctx, req),
        rc::ADD_WRITE_PERM_OF_BROKER => handlers::admin::add_write_perm(ctx, req),
        rc::UPDATE_NAMESRV_CONFIG => handlers::admin::update_config(ctx, req),
        rc::GET_NAMESRV_CONFIG => handlers::admin::get_config(ctx, req),
        code => Ok(RemotingCommand::error(
            response::REQUEST_CODE_NOT_SUPPORTED,
            format!(" request type {code} not supported"),
        )),
    };
    let storage_failed = matches!(&result, Err(HandlerError::Storage { .. }));
    let mut resp = match result {
        Ok(resp) => resp,
        Err(e) if e.is_internal() => {
            tracing::error!(code = req.code, error = %e, "request failed");
            e.to_response()
        }
        Err(e) => {
            tracing::debug!(code = req.code, error = %e, "bad request");
            e.to_response()
        }
    };
    record(ctx, req.code, resp.code, storage_failed);
    if req.is_oneway() {
        ticket.record(req, ctx.peer, None);
        return None;
    }
    ticket.record(req, ctx.peer, Some(resp.code));
    resp.opaque = req.opaque;
    Some(resp)
}

/// Metrics: counts and times every request, and notes how registrations and durable writes
/// ended. The one place requests are recorded.
fn record(ctx: &Context<'_>, request_code: i32, response_code: i32, storage_failed: bool) {
    let metrics = ctx.state.metrics();
    let elapsed = ctx.now.elapsed();
    metrics.request(request_code, response_code, elapsed);
    let success = response_code == response::SUCCESS;
    let write = match request_code {
        rc::REGISTER_BROKER => {
            metrics.registration(match ctx.registration {
                Some(applied) if success => applied,
                _ => Registration::Refused,
            });
            None
        }
        rc::PUT_KV_CONFIG | rc::DELETE_KV_CONFIG => Some(Write::Kv),
        rc::UPDATE_NAMESRV_CONFIG => Some(Write::Config),
        _ => None,
    };
    // Writes that reached the disk: refused requests (a missing field, a black-listed key)
    // never got that far.
    if let Some(kind) = write
        && (success || storage_failed)
    {
        metrics.write(kind, elapsed, success);
    }
}

// --- Hardening (issue 16): which requests run off the runtime's workers. ---

/// What handling a request may cost, which decides where the server runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// Short and bounded: handled on the connection's task.
    Quick,
    /// Waits for the disk: a durable KV or configuration write.
    Disk,
    /// May keep a core busy: a registration body (possibly compressed) or a KV listing.
    Cpu,
    /// A listing of the route table, whose cost grows with it: quick while the table is
    /// small ([`crate::state::route_table::RouteTable::lists_quickly`]), else `Cpu`. Handing
    /// a small listing to the blocking pool costs more than building it.
    Listing,
}

/// What handling `req` may cost (frames too large to decode quickly are the server's call).
pub fn cost(req: &RemotingCommand) -> Cost {
    if req.is_response() {
        return Cost::Quick;
    }
    match req.code {
        rc::PUT_KV_CONFIG | rc::DELETE_KV_CONFIG | rc::UPDATE_NAMESRV_CONFIG => Cost::Disk,
        rc::REGISTER_BROKER | rc::REGISTER_TOPIC_IN_NAMESRV | rc::GET_KVLIST_BY_NAMESPACE => {
            Cost::Cpu
        }
        rc::GET_BROKER_CLUSTER_INFO
        | rc::GET_ALL_TOPIC_LIST_FROM_NAMESERVER
        | rc::GET_TOPICS_BY_CLUSTER
        | rc::GET_SYSTEM_TOPIC_LIST_FROM_NS
        | rc::GET_UNIT_TOPIC_LIST
        | rc::GET_HAS_UNIT_SUB_TOPIC_LIST
        | rc::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST => Cost::Listing,
        _ => Cost::Quick,
    }
}
