//! GET_ROUTEINFO_BY_TOPIC and GET_BROKER_CLUSTER_INFO (NAMESRV.md §2.9, §2.20).

use bytes::Bytes;

use super::{Context, Fields, HandlerResult};
use crate::config::Settings;
use crate::kv::ORDER_TOPIC_CONFIG;
use crate::protocol::RemotingCommand;
use crate::protocol::body::lists::cluster_info;
use crate::protocol::code::{response, version};
use crate::protocol::json::JsonStyle;
use crate::state::Namesrv;
use crate::state::route_table::query::RouteQuery;

const ZONE_MODE: &str = "__ZONE_MODE";
const ZONE_NAME: &str = "__ZONE_NAME";

/// GET_ROUTEINFO_BY_TOPIC.
pub fn route(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    let topic = f.required("topic")?;
    let (wait, options) = {
        let config = ctx.state.config();
        let s = &config.settings;
        (s.service_wait(), RouteOptions::from_settings(s))
    };
    if let Some(wait) = wait
        && ctx.now.duration_since(ctx.state.started()) < wait
    {
        tracing::warn!(topic, "name server not ready");
        return Ok(RemotingCommand::error(
            response::SYSTEM_ERROR,
            "name server not ready",
        ));
    }
    let standard =
        req.version >= version::V4_9_4 || f.optional_bool("acceptStandardJsonOnly") == Some(true);
    let zone = (f.optional_bool(ZONE_MODE) == Some(true))
        .then(|| req.ext(ZONE_NAME))
        .flatten()
        .filter(|z| !crate::java_str::is_blank(z));
    let style = if standard {
        JsonStyle::Standard
    } else {
        JsonStyle::Legacy
    };
    Ok(match lookup(ctx.state, topic, style, zone, options) {
        Some(body) => RemotingCommand::success().with_body(body),
        None => RemotingCommand::error(
            response::TOPIC_NOT_EXIST,
            format!(
                "No topic route info in name server for the topic: {topic}\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
            ),
        ),
    })
}

/// The live settings a route depends on.
#[derive(Debug, Clone, Copy)]
pub struct RouteOptions {
    /// `orderMessageEnable`.
    pub order_message_enable: bool,
    /// `supportActingMaster`.
    pub support_acting_master: bool,
}

impl RouteOptions {
    /// The options `settings` give.
    pub fn from_settings(settings: &Settings) -> RouteOptions {
        RouteOptions {
            order_message_enable: settings.order_message_enable,
            support_acting_master: settings.support_acting_master,
        }
    }
}

/// The route body a client asking for `topic` gets in `style` (filtered to `zone` when
/// given), or `None` when the topic has no route. Also used by the HTTP status page, so that
/// it shows routes exactly as clients see them.
pub fn lookup(
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
pub fn cluster(ctx: &mut Context<'_>, _req: &RemotingCommand) -> HandlerResult {
    let snapshot = ctx.state.routes().cluster_snapshot();
    let clusters = snapshot
        .clusters
        .iter()
        .map(|(c, names)| (&**c, names.iter().map(|n| &**n).collect()))
        .collect();
    let body = cluster_info(snapshot.brokers.iter().collect(), clusters);
    Ok(RemotingCommand::success().with_body(body))
}
