//! The controller's request handlers (Java's `ControllerRequestProcessor`, CONTROLLER.md §2):
//! BROKER_HEARTBEAT and CONTROLLER_GET_METADATA_INFO answered by any node at once; every
//! leader-only code read (`headers`), then handed with its decision to the controller's
//! leader-only flow ([`Controller::lead`]), which refuses on a follower, serialises, proposes
//! and waits for the commit; and the consensus layer's peer RPCs. A handler only translates:
//! the request into a typed one, the verdict into a response.

pub(crate) mod headers;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;

use self::headers::Refusal;
use super::{Context, Effects, HandlerResult, Reply};
use crate::controller::code::response::CONTROLLER_NOT_LEADER;
use crate::controller::elections::ElectionReason;
use crate::controller::machine::Machine;
use crate::controller::machine::decide::{Flags, LiveView, Trigger, Verdict};
use crate::controller::{Controller, LeadError, leader::Purpose};
use crate::protocol::code::response::{SUCCESS, SYSTEM_ERROR};
use crate::protocol::java_hash::{Table, sort_strings_by_java_order};
use crate::protocol::{ExtFields, RemotingCommand};

/// The reply of a handler that finishes later (the request table's `Later`).
type Later = Pin<Box<dyn Future<Output = HandlerResult> + Send + 'static>>;

/// The answer of a controller row on a listener without a controller (never in a process
/// that serves the controller's table; kept so a wiring mistake is visible, not a panic).
fn no_controller() -> RemotingCommand {
    RemotingCommand::error(SYSTEM_ERROR, "this listener serves no controller")
}

/// BROKER_HEARTBEAT (904), any node: refreshes the replica's liveness entry. The connection
/// is marked so that its close reaches [`Controller::connection_closed`].
pub(crate) fn heartbeat(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let Some(controller) = ctx.controller else {
        return Ok(no_controller().into());
    };
    let (key, beat) = match headers::heartbeat(req) {
        Ok(parsed) => parsed,
        Err(refusal) => return Ok(refused(refusal).into()),
    };
    controller.heartbeat(key, beat, ctx.conn, ctx.now);
    let mut response = RemotingCommand::success();
    response.remark = Some("Heart beat success".to_owned());
    Ok(Reply {
        response,
        effects: Effects {
            registered_broker: true,
            ..Effects::default()
        },
    })
}

/// CONTROLLER_GET_METADATA_INFO (1005), any node: the group, the leader if known, whether
/// this node leads, and every peer as `id:addr;`.
pub(crate) fn metadata(ctx: &Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    let Some(controller) = ctx.controller else {
        return Ok(no_controller().into());
    };
    let settings = controller.settings();
    let status = controller.consensus().status();
    let mut ext = ExtFields::new();
    ext.insert("group", settings.group.as_str());
    if let Some(leader) = &status.leader_id {
        ext.insert("controllerLeaderId", leader.as_str());
        if let Some(peer) = settings.peers.iter().find(|p| &p.id == leader) {
            ext.insert("controllerLeaderAddress", peer.addr.as_str());
        }
    }
    ext.insert("isLeader", status.is_leader.to_string());
    let mut peers: Vec<_> = settings.peers.iter().collect();
    sort_strings_by_java_order(&mut peers, Table::DEFAULT, |p| &p.id);
    let peers: String = peers
        .iter()
        .map(|p| format!("{}:{};", p.id, p.addr))
        .collect();
    ext.insert("peers", peers);
    Ok(RemotingCommand::success().with_ext_fields(ext).into())
}

/// One leader-only request: `parse` it now, then decide it with `decide` as leader work.
fn leader_only<R: Send + Sync + 'static>(
    ctx: &Context<'_>,
    req: &RemotingCommand,
    parse: fn(&RemotingCommand) -> Result<R, Refusal>,
    decide: fn(&R, &Machine, &dyn LiveView, Flags) -> Verdict,
    purpose: fn(&R) -> Purpose,
) -> Later {
    let Some(controller) = ctx.controller.cloned() else {
        return Box::pin(async { Ok(no_controller().into()) });
    };
    let request = match parse(req) {
        Ok(request) => request,
        Err(refusal) => return Box::pin(async move { Ok(refused(refusal).into()) }),
    };
    Box::pin(async move { Ok(lead(&controller, request, decide, purpose).await.into()) })
}

async fn lead<R>(
    controller: &Controller,
    request: R,
    decide: fn(&R, &Machine, &dyn LiveView, Flags) -> Verdict,
    purpose: fn(&R) -> Purpose,
) -> RemotingCommand {
    let outcome = controller
        .lead(purpose(&request), |m, live, flags| {
            decide(&request, m, live, flags)
        })
        .await;
    match outcome {
        Ok(verdict) => response_of(verdict),
        Err(LeadError::NotLeader) => {
            RemotingCommand::error(CONTROLLER_NOT_LEADER, LeadError::NotLeader.to_string())
        }
        Err(LeadError::Failed(remark)) => RemotingCommand::error(SYSTEM_ERROR, remark),
    }
}

/// The response a verdict gives: its code, remark, ext fields (none for a `Void` header) and
/// body.
fn response_of(verdict: Verdict) -> RemotingCommand {
    let mut response = RemotingCommand::response(verdict.code, verdict.remark);
    if let Some(ext) = verdict.ext {
        response = response.with_ext_fields(ext.iter().map(|(k, v)| (*k, v.as_str())).collect());
    }
    match verdict.body {
        Some(body) => response.with_body(body),
        None => response,
    }
}

fn refused(refusal: Refusal) -> RemotingCommand {
    tracing::debug!(code = refusal.code, remark = %refusal.remark, "controller request refused");
    RemotingCommand::error(refusal.code, refusal.remark)
}

fn plain<R>(_: &R) -> Purpose {
    Purpose::PLAIN
}

/// CONTROLLER_GET_NEXT_BROKER_ID (1012).
pub(crate) fn next_broker_id(ctx: &Context<'_>, req: &RemotingCommand) -> Later {
    leader_only(
        ctx,
        req,
        headers::next_broker_id,
        |r, m, _, _| r.decide(m),
        plain,
    )
}

/// CONTROLLER_APPLY_BROKER_ID (1013).
pub(crate) fn apply_broker_id(ctx: &Context<'_>, req: &RemotingCommand) -> Later {
    leader_only(
        ctx,
        req,
        headers::apply_broker_id,
        |r, m, _, _| r.decide(m),
        plain,
    )
}

/// CONTROLLER_REGISTER_BROKER (1003).
pub(crate) fn register_broker(ctx: &Context<'_>, req: &RemotingCommand) -> Later {
    leader_only(
        ctx,
        req,
        headers::register_broker,
        |r, m, l, _| r.decide(m, l),
        plain,
    )
}

/// CONTROLLER_GET_REPLICA_INFO (1004).
pub(crate) fn replica_info(ctx: &Context<'_>, req: &RemotingCommand) -> Later {
    leader_only(
        ctx,
        req,
        headers::replica_info,
        |r, m, _, _| r.decide(m),
        plain,
    )
}

/// CONTROLLER_ALTER_SYNC_STATE_SET (1001).
pub(crate) fn alter_sync_state_set(ctx: &Context<'_>, req: &RemotingCommand) -> Later {
    leader_only(
        ctx,
        req,
        headers::alter_sync_state_set,
        |r, m, l, _| r.decide(m, l),
        plain,
    )
}

/// CONTROLLER_ELECT_MASTER (1002), from a broker or an operator.
pub(crate) fn elect_master(ctx: &Context<'_>, req: &RemotingCommand) -> Later {
    leader_only(
        ctx,
        req,
        headers::elect_master,
        |r, m, l, f| r.decide(m, l, f),
        |r| {
            let reason = match r.trigger {
                Trigger::Admin(_) => ElectionReason::AdminTrigger,
                _ => ElectionReason::BrokerTrigger,
            };
            Purpose::election(reason, None)
        },
    )
}

/// CONTROLLER_GET_SYNC_STATE_DATA (1006).
pub(crate) fn sync_state_data(ctx: &Context<'_>, req: &RemotingCommand) -> Later {
    leader_only(
        ctx,
        req,
        headers::sync_state_data,
        |r, m, l, _| r.decide(m, l),
        plain,
    )
}

/// CLEAN_BROKER_DATA (1011).
pub(crate) fn clean_broker_data(ctx: &Context<'_>, req: &RemotingCommand) -> Later {
    leader_only(
        ctx,
        req,
        headers::clean_broker_data,
        |r, m, l, _| r.decide(m, l),
        plain,
    )
}

/// A consensus peer RPC (`raft::code::*`): the body goes to the consensus layer, its answer
/// comes back as the body of a `0`; a failure is a `1` with its text.
pub(crate) fn peer(ctx: &Context<'_>, req: &RemotingCommand) -> Later {
    let Some(controller) = ctx.controller.cloned() else {
        return Box::pin(async { Ok(no_controller().into()) });
    };
    let (code, body) = (req.code, req.body.clone().unwrap_or_default());
    Box::pin(async move {
        let answer = controller.consensus().serve_peer(code, body).await;
        let response = match answer {
            Ok(body) => RemotingCommand::response(SUCCESS, None).with_body(body),
            Err(e) => RemotingCommand::error(SYSTEM_ERROR, e.to_string()),
        };
        Ok(response.into())
    })
}
