//! GET_ROUTEINFO_BY_TOPIC and GET_BROKER_CLUSTER_INFO (NAMESRV.md §2.9, §2.20).

use std::time::Duration;

use super::{Context, Fields, HandlerResult};
use crate::kv::ORDER_TOPIC_CONFIG;
use crate::protocol::RemotingCommand;
use crate::protocol::body::lists::cluster_info;
use crate::protocol::code::{response, version};
use crate::protocol::json::JsonStyle;
use crate::state::route_table::query::RouteQuery;

const ZONE_MODE: &str = "__ZONE_MODE";
const ZONE_NAME: &str = "__ZONE_NAME";

/// GET_ROUTEINFO_BY_TOPIC.
pub fn route(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    let topic = f.required("topic")?;
    let (wait, order_enabled, support_acting_master) = {
        let config = ctx.state.config();
        let s = &config.settings;
        let wait = s
            .need_wait_for_service
            .then(|| Duration::from_secs(s.wait_seconds_for_service.max(0) as u64));
        (wait, s.order_message_enable, s.support_acting_master)
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
    let kv = ctx.state.kv();
    let order_conf = || {
        order_enabled
            .then(|| kv.get(ORDER_TOPIC_CONFIG, topic))
            .flatten()
    };
    let query = RouteQuery {
        topic,
        style: if standard {
            JsonStyle::Standard
        } else {
            JsonStyle::Legacy
        },
        support_acting_master,
        zone,
        external_epoch: ctx.state.external_epoch(),
        order_topic_conf: &order_conf,
    };
    let body = ctx.state.routes().route(&query);
    Ok(match body {
        Some(body) => RemotingCommand::success().with_body(body),
        None => RemotingCommand::error(
            response::TOPIC_NOT_EXIST,
            format!(
                "No topic route info in name server for the topic: {topic}\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
            ),
        ),
    })
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
