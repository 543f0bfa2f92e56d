//! Operator requests: GET/UPDATE_NAMESRV_CONFIG and WIPE/ADD_WRITE_PERM_OF_BROKER (Java's
//! `DefaultRequestProcessor`: `getConfig`, `updateConfig`, `wipeWritePermOfBroker`,
//! `addWritePermOfBroker`).

use super::headers::WritePermHeader;
use super::{Context, HandlerResult};
use crate::config::UpdateError;
use crate::config::properties;
use crate::error::HandlerError;
use crate::protocol::code::response;
use crate::protocol::{ExtFields, RemotingCommand};
use crate::state::protection::HELD_BROKERS_KEY;

/// GET_NAMESRV_CONFIG: every property, sorted, as `key=value` lines — plus, while eviction
/// protection holds brokers, how many (a status line, never stored).
pub(crate) fn get_config(ctx: &Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    let held = ctx.state.eviction_protection().held;
    let status = (held > 0).then(|| (HELD_BROKERS_KEY.to_owned(), held.to_string()));
    // Peer checks: divergent brokers and unreachable peers, when there are any.
    let status = status
        .into_iter()
        .chain(ctx.state.peer_report().status_lines());
    let text = ctx.state.config().render(status);
    Ok(RemotingCommand::success()
        .with_body(text.into_bytes())
        .into())
}

/// UPDATE_NAMESRV_CONFIG: refuses black-listed and start-up-only keys (`NO_PERMISSION`; the
/// keys that steer clients too, unless `authMode=enforce`) and
/// anything the next start could not use (`SYSTEM_ERROR`, the remark naming the key and the
/// reason), applies the rest all-or-nothing, persists to `configStorePath` before answering,
/// and notes keys that need a restart. Runs off the runtime's workers (it may bind sockets).
pub(crate) fn update_config(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    update(ctx, req).map(Into::into)
}

/// [`update_config`]'s response.
fn update(ctx: &Context<'_>, req: &RemotingCommand) -> Result<RemotingCommand, HandlerError> {
    let Some(body) = &req.body else {
        return Ok(RemotingCommand::success());
    };
    let text = String::from_utf8_lossy(body);
    let Ok(props) = properties::parse(&text) else {
        return Ok(RemotingCommand::error(
            response::SYSTEM_ERROR,
            "string2Properties error",
        ));
    };
    let outcome = ctx.state.update_config(
        |config| {
            let current = config.clone();
            let restart = config.update_from_request(&props)?;
            current.check_startable(config)?;
            Ok(restart)
        },
        |config| config.persist().map_err(UpdateError::Persist),
    );
    let restart = match outcome {
        Ok(restart) => restart,
        Err(UpdateError::BlackListed) => {
            return Ok(RemotingCommand::error(
                response::NO_PERMISSION,
                "Can not update config in black list.",
            ));
        }
        Err(e @ UpdateError::StartupOnly { .. }) => {
            tracing::info!(reason = %e, "name server config update refused");
            return Ok(RemotingCommand::error(
                response::NO_PERMISSION,
                e.to_string(),
            ));
        }
        Err(e @ (UpdateError::Value { .. } | UpdateError::Refused { .. })) => {
            tracing::info!(reason = %e, "name server config update refused");
            return Ok(RemotingCommand::error(
                response::SYSTEM_ERROR,
                e.to_string(),
            ));
        }
        Err(UpdateError::Persist(source)) => {
            return Err(HandlerError::Storage {
                what: "cannot persist the name server config",
                source,
            });
        }
    };
    let keys: Vec<&str> = props.iter().map(|(k, _)| k.as_str()).collect();
    tracing::info!(?keys, "name server config updated");
    if restart.is_empty() {
        Ok(RemotingCommand::success())
    } else {
        tracing::info!(keys = ?restart, "updated keys take effect after a restart");
        Ok(RemotingCommand::response(
            response::SUCCESS,
            Some(format!(
                "stored; takes effect after a restart: {}",
                restart.join(", ")
            )),
        ))
    }
}

fn change_perm(ctx: &Context<'_>, req: &RemotingCommand, wipe: bool) -> HandlerResult {
    let WritePermHeader { broker_name } = WritePermHeader::from_ext(req)?;
    let count = {
        let mut routes = ctx.state.routes_mut();
        if wipe {
            routes.wipe_write_perm(broker_name)
        } else {
            routes.add_write_perm(broker_name)
        }
    };
    tracing::info!(
        broker = broker_name,
        topics = count,
        wipe,
        "write permission changed"
    );
    let mut fields = ExtFields::new();
    fields.insert(
        if wipe {
            "wipeTopicCount"
        } else {
            "addTopicCount"
        },
        count.to_string(),
    );
    Ok(RemotingCommand::success().with_ext_fields(fields).into())
}

/// WIPE_WRITE_PERM_OF_BROKER.
pub(crate) fn wipe_write_perm(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    change_perm(ctx, req, true)
}

/// ADD_WRITE_PERM_OF_BROKER.
pub(crate) fn add_write_perm(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    change_perm(ctx, req, false)
}
