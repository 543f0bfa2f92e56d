//! PUT_KV_CONFIG, GET_KV_CONFIG, DELETE_KV_CONFIG and GET_KVLIST_BY_NAMESPACE
//! (NAMESRV.md §2.1–2.4).

use super::{Context, Fields, HandlerResult};
use crate::error::HandlerError;
use crate::protocol::code::response;
use crate::protocol::{ExtFields, RemotingCommand};

fn storage(source: std::io::Error) -> HandlerError {
    HandlerError::Storage {
        what: "cannot persist the KV config",
        source,
    }
}

/// PUT_KV_CONFIG: acknowledged only once the change is on disk.
pub fn put(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    let (Some(namespace), Some(key)) = (f.optional("namespace"), f.optional("key")) else {
        return Ok(RemotingCommand::error(
            response::SYSTEM_ERROR,
            "namespace or key is null",
        ));
    };
    let value = f.required("value")?;
    ctx.state.kv().put(namespace, key, value).map_err(storage)?;
    tracing::info!(namespace, key, value, "KV config put");
    Ok(RemotingCommand::success())
}

/// GET_KV_CONFIG.
pub fn get(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    let namespace = f.required("namespace")?;
    let key = f.required("key")?;
    let mut fields = ExtFields::new();
    Ok(match ctx.state.kv().get(namespace, key) {
        Some(value) => {
            fields.insert("value", value);
            RemotingCommand::success().with_ext_fields(fields)
        }
        None => RemotingCommand::error(
            response::QUERY_NOT_FOUND,
            format!("No config item, Namespace: {namespace} Key: {key}"),
        )
        .with_ext_fields(fields),
    })
}

/// DELETE_KV_CONFIG: always succeeds unless the write fails.
pub fn delete(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    let namespace = f.required("namespace")?;
    let key = f.required("key")?;
    ctx.state.kv().delete(namespace, key).map_err(storage)?;
    tracing::info!(namespace, key, "KV config deleted");
    Ok(RemotingCommand::success())
}

/// GET_KVLIST_BY_NAMESPACE.
pub fn list(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let namespace = Fields(req).required("namespace")?;
    Ok(match ctx.state.kv().list(namespace) {
        Some(body) => RemotingCommand::success().with_body(body),
        None => RemotingCommand::error(
            response::QUERY_NOT_FOUND,
            format!("No config item, Namespace: {namespace}"),
        ),
    })
}
