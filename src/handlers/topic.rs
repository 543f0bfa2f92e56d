//! Topic listings and topic changes: GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
//! GET_TOPICS_BY_CLUSTER, GET_SYSTEM_TOPIC_LIST_FROM_NS, the three unit-topic lists,
//! DELETE_TOPIC_IN_NAMESRV and REGISTER_TOPIC_IN_NAMESRV (Java's `DefaultRequestProcessor`:
//! `getAllTopicListFromNameserver`, `getTopicsByCluster`, `getSystemTopicListFromNs`,
//! `getUnitTopicList` and its two siblings, `deleteTopicInNamesrv`, `registerTopicToNamesrv`).

use super::headers::{DeleteTopicHeader, RegisterTopicHeader, TopicsByClusterHeader};
use super::{Context, HandlerResult};
use crate::error::HandlerError;
use crate::protocol::RemotingCommand;
use crate::protocol::body::lenient;
use crate::protocol::body::lists::topic_list;
use crate::protocol::body::route::decode_queue_datas;
use crate::protocol::code::response;
use crate::state::route_table::query::UnitFilter;

fn disabled() -> HandlerResult {
    Ok(RemotingCommand::error(response::SYSTEM_ERROR, "disable").into())
}

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER (gated by `enableAllTopicList`).
pub(crate) fn all(ctx: &Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    if !ctx.state.config().settings.enable_all_topic_list {
        return disabled();
    }
    let topics = ctx.state.routes().all_topics();
    Ok(RemotingCommand::success()
        .with_body(topic_list(topics, None))
        .into())
}

/// GET_TOPICS_BY_CLUSTER (gated by `enableTopicList`, checked before the header).
pub(crate) fn by_cluster(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    if !ctx.state.config().settings.enable_topic_list {
        return disabled();
    }
    let TopicsByClusterHeader { cluster } = TopicsByClusterHeader::from_ext(req)?;
    let topics = ctx.state.routes().topics_by_cluster(cluster);
    Ok(RemotingCommand::success()
        .with_body(topic_list(topics, None))
        .into())
}

/// GET_SYSTEM_TOPIC_LIST_FROM_NS: cluster and group names, plus one broker address.
pub(crate) fn system(ctx: &Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    let (topics, addr) = ctx.state.routes().system_topics();
    Ok(RemotingCommand::success()
        .with_body(topic_list(topics, addr.as_deref()))
        .into())
}

/// GET_UNIT_TOPIC_LIST.
pub(crate) fn unit(ctx: &Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    unit_topics(ctx, UnitFilter::Unit)
}

/// GET_HAS_UNIT_SUB_TOPIC_LIST.
pub(crate) fn unit_sub(ctx: &Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    unit_topics(ctx, UnitFilter::UnitSub)
}

/// GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST.
pub(crate) fn unit_sub_not_unit(ctx: &Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    unit_topics(ctx, UnitFilter::UnitSubNotUnit)
}

/// The unit-topic lists (gated by `enableTopicList`).
fn unit_topics(ctx: &Context<'_>, filter: UnitFilter) -> HandlerResult {
    if !ctx.state.config().settings.enable_topic_list {
        return disabled();
    }
    let topics = ctx.state.routes().unit_topics(filter);
    Ok(RemotingCommand::success()
        .with_body(topic_list(topics, None))
        .into())
}

/// DELETE_TOPIC_IN_NAMESRV: everywhere, or only in `clusterName`'s groups.
pub(crate) fn delete(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let DeleteTopicHeader { topic, cluster } = DeleteTopicHeader::from_ext(req)?;
    ctx.state.routes_mut().delete_topic(topic, cluster);
    tracing::info!(topic, cluster, "topic deleted");
    Ok(RemotingCommand::success().into())
}

/// REGISTER_TOPIC_IN_NAMESRV: only the body's `queueDatas` are used.
pub(crate) fn register(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let RegisterTopicHeader { topic } = RegisterTopicHeader::from_ext(req)?;
    // A body fastjson reads as null (invalid UTF-8, blank, `null`) registers nothing.
    if let Some(body) = req.body.as_deref().filter(|b| !lenient::reads_as_null(b)) {
        let queue_datas = decode_queue_datas(body)
            .map_err(|e| HandlerError::BadBody(format!("Failed to decode TopicRouteData: {e}")))?;
        ctx.state.routes_mut().register_topic(topic, &queue_datas);
    }
    Ok(RemotingCommand::success().into())
}
