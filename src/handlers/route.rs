//! GET_ROUTEINFO_BY_TOPIC and GET_BROKER_CLUSTER_INFO (Java's `ClientRequestProcessor` and
//! `DefaultRequestProcessor#getBrokerClusterInfo`).

use bytes::Bytes;

use super::headers::GetRouteInfoHeader;
use super::{Context, HandlerResult};
use crate::config::Settings;
use crate::kv::ORDER_TOPIC_CONFIG;
use crate::protocol::RemotingCommand;
use crate::protocol::body::lists::cluster_info;
use crate::protocol::code::{response, version};
use crate::protocol::json::JsonStyle;
use crate::state::Namesrv;
use crate::state::route_table::query::RouteQuery;

/// GET_ROUTEINFO_BY_TOPIC.
pub(crate) fn route(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let header = GetRouteInfoHeader::from_ext(req)?;
    let topic = header.topic;
    let (wait, options) = {
        let config = ctx.state.config();
        let s = &config.settings;
        (s.service_wait(), RouteOptions::from_settings(s))
    };
    if let Some(wait) = wait
        && ctx.now.duration_since(ctx.state.started()) < wait
    {
        tracing::warn!(topic, "name server not ready");
        return Ok(RemotingCommand::error(response::SYSTEM_ERROR, "name server not ready").into());
    }
    let standard = req.version >= version::V4_9_4 || header.accept_standard_json_only;
    let zone = header
        .zone_name
        .filter(|z| header.zone_mode && !crate::java_str::is_blank(z));
    let style = if standard {
        JsonStyle::Standard
    } else {
        JsonStyle::Legacy
    };
    let response = match lookup(ctx.state, topic, style, zone, options) {
        Some(body) => RemotingCommand::success().with_body(body),
        None => RemotingCommand::error(
            response::TOPIC_NOT_EXIST,
            format!(
                "No topic route info in name server for the topic: {topic}\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
            ),
        ),
    };
    Ok(response.into())
}

/// The live settings a route depends on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RouteOptions {
    /// `orderMessageEnable`.
    pub(crate) order_message_enable: bool,
    /// `supportActingMaster`.
    pub(crate) support_acting_master: bool,
}

impl RouteOptions {
    /// The options `settings` give.
    pub(crate) fn from_settings(settings: &Settings) -> RouteOptions {
        RouteOptions {
            order_message_enable: settings.order_message_enable,
            support_acting_master: settings.support_acting_master,
        }
    }
}

/// The route body a client asking for `topic` gets in `style` (filtered to `zone` when
/// given), or `None` when the topic has no route. Also used by the HTTP status page, so that
/// it shows routes exactly as clients see them.
pub(crate) fn lookup(
    state: &Namesrv,
    topic: &str,
    style: JsonStyle,
    zone: Option<&str>,
    options: RouteOptions,
) -> Option<Bytes> {
    let kv = state.kv();
    let order_conf = || {
        options
            .order_message_enable
            .then(|| kv.get(ORDER_TOPIC_CONFIG, topic))
            .flatten()
    };
    let query = RouteQuery {
        topic,
        style,
        support_acting_master: options.support_acting_master,
        zone,
        external_epoch: state.external_epoch(),
        order_topic_conf: &order_conf,
    };
    state.routes().route(&query)
}

/// GET_BROKER_CLUSTER_INFO: always the legacy writer, as Java.
pub(crate) fn cluster(ctx: &Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    let snapshot = ctx.state.routes().cluster_snapshot();
    let clusters = snapshot
        .clusters
        .iter()
        .map(|(c, names)| (&**c, names.iter().map(|n| &**n).collect()))
        .collect();
    let body = cluster_info(snapshot.brokers.iter().collect(), clusters);
    Ok(RemotingCommand::success().with_body(body).into())
}
