//! GET_CONTROLLER_CONFIG (1010) and UPDATE_CONTROLLER_CONFIG (1009), served by every node of a
//! controller group (Java's `ControllerRequestProcessor` → `Configuration`): the node's own
//! property set, not replicated — an update changes only the node it is sent to.

use parking_lot::Mutex;

use super::{Context, HandlerResult};
use crate::config::{UpdateError, controller as config, properties};
use crate::error::HandlerError;
use crate::protocol::RemotingCommand;
use crate::protocol::code::response;

/// One update at a time: each reads the settings, persists the next ones, then installs
/// them, and two at once would lose one's keys.
static UPDATES: Mutex<()> = Mutex::new(());

/// GET_CONTROLLER_CONFIG: every property of the node, sorted, as `key=value` lines.
pub(crate) fn get_config(ctx: &Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    let Some(controller) = ctx.controller else {
        return Ok(no_controller());
    };
    let text = config::render(&controller.settings().properties);
    Ok(RemotingCommand::success()
        .with_body(text.into_bytes())
        .into())
}

/// UPDATE_CONTROLLER_CONFIG: refuses black-listed keys (`NO_PERMISSION`) and bad values
/// (`SYSTEM_ERROR`, the remark naming the key), persists the whole set to the controller's
/// `configStorePath` before answering, then applies the runtime keys; notes the keys that
/// need a restart. Absent body: nothing changes.
pub(crate) fn update_config(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let Some(controller) = ctx.controller else {
        return Ok(no_controller());
    };
    let Some(body) = &req.body else {
        return Ok(RemotingCommand::success().into());
    };
    let text = String::from_utf8_lossy(body);
    let Ok(props) = properties::parse(&text) else {
        let refusal = RemotingCommand::error(response::SYSTEM_ERROR, "string2Properties error");
        return Ok(refusal.into());
    };
    let _one_at_a_time = UPDATES.lock();
    let current = controller.settings();
    let updated = match config::update(&current.properties, &props) {
        Ok(updated) => updated,
        Err(UpdateError::BlackListed) => {
            let remark = "Can not update config in black list.";
            return Ok(RemotingCommand::error(response::NO_PERMISSION, remark).into());
        }
        Err(e) => {
            tracing::info!(reason = %e, "controller config update refused");
            return Ok(RemotingCommand::error(response::SYSTEM_ERROR, e.to_string()).into());
        }
    };
    let persisted = config::persist(&current.config_store_path, &updated.properties);
    persisted.map_err(|source| HandlerError::Storage {
        what: "cannot persist the controller config",
        source,
    })?;
    let restart = updated.restart;
    controller.update_settings(current.updated(updated.properties, updated.runtime));
    let keys: Vec<&str> = props.iter().map(|(k, _)| k.as_str()).collect();
    tracing::info!(?keys, "controller config updated");
    if restart.is_empty() {
        return Ok(RemotingCommand::success().into());
    }
    tracing::info!(keys = ?restart, "updated controller keys take effect after a restart");
    let remark = format!(
        "stored; takes effect after a restart: {}",
        restart.join(", ")
    );
    Ok(RemotingCommand::response(response::SUCCESS, Some(remark)).into())
}

/// The answer on a listener without a controller. Only a controller's listener serves these
/// codes, so this is the server's fault, answered rather than panicked on.
fn no_controller() -> super::Reply {
    RemotingCommand::error(
        response::SYSTEM_ERROR,
        "no controller runs on this listener",
    )
    .into()
}
