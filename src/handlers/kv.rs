//! PUT_KV_CONFIG, GET_KV_CONFIG, DELETE_KV_CONFIG and GET_KVLIST_BY_NAMESPACE (Java's
//! `DefaultRequestProcessor`: `putKVConfig`, `getKVConfig`, `deleteKVConfig`,
//! `getKVListByNamespace`).

use super::headers::{KvConfigHeader, NamespaceHeader, PutKvConfigHeader};
use super::{Context, HandlerResult};
use crate::error::HandlerError;
use crate::kv::KvError;
use crate::protocol::code::response;
use crate::protocol::{ExtFields, RemotingCommand};

/// A refused change is the client's fault and answered with `SYSTEM_ERROR` and the reason; a
/// failed write is the server's.
fn failed(e: KvError, namespace: &str, key: &str) -> HandlerResult {
    match e {
        KvError::Io(source) => Err(HandlerError::Storage {
            what: "cannot persist the KV config",
            source,
        }),
        refused => {
            tracing::info!(namespace, key, reason = %refused, "KV change refused");
            Ok(RemotingCommand::error(
                response::SYSTEM_ERROR,
                format!("KV config {namespace}/{key} not stored: {refused}"),
            )
            .into())
        }
    }
}

/// PUT_KV_CONFIG: acknowledged only once the change is on disk. Logs the value's size, never
/// the value, at any level: values are often secrets (passwords, tokens in configs), and log
/// files are read by more people than the KV store.
pub(crate) fn put(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let Some(PutKvConfigHeader {
        namespace,
        key,
        value,
    }) = PutKvConfigHeader::from_ext(req)?
    else {
        return Ok(
            RemotingCommand::error(response::SYSTEM_ERROR, "namespace or key is null").into(),
        );
    };
    if let Err(e) = ctx.state.kv().put(namespace, key, value) {
        return failed(e, namespace, key);
    }
    tracing::info!(namespace, key, value_bytes = value.len(), "KV config put");
    Ok(RemotingCommand::success().into())
}

/// GET_KV_CONFIG.
pub(crate) fn get(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let KvConfigHeader { namespace, key } = KvConfigHeader::from_ext(req)?;
    let mut fields = ExtFields::new();
    let response = match ctx.state.kv().get(namespace, key) {
        Some(value) => {
            fields.insert("value", value);
            RemotingCommand::success().with_ext_fields(fields)
        }
        None => RemotingCommand::error(
            response::QUERY_NOT_FOUND,
            format!("No config item, Namespace: {namespace} Key: {key}"),
        )
        .with_ext_fields(fields),
    };
    Ok(response.into())
}

/// DELETE_KV_CONFIG: always succeeds unless the write fails.
pub(crate) fn delete(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let KvConfigHeader { namespace, key } = KvConfigHeader::from_ext(req)?;
    if let Err(e) = ctx.state.kv().delete(namespace, key) {
        return failed(e, namespace, key);
    }
    tracing::info!(namespace, key, "KV config deleted");
    Ok(RemotingCommand::success().into())
}

/// GET_KVLIST_BY_NAMESPACE.
pub(crate) fn list(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let NamespaceHeader { namespace } = NamespaceHeader::from_ext(req)?;
    let response = match ctx.state.kv().list(namespace) {
        Some(body) => RemotingCommand::success().with_body(body),
        None => RemotingCommand::error(
            response::QUERY_NOT_FOUND,
            format!("No config item, Namespace: {namespace}"),
        ),
    };
    Ok(response.into())
}
