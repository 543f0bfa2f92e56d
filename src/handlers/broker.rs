//! Broker-facing requests: REGISTER_BROKER, UNREGISTER_BROKER, BROKER_HEARTBEAT,
//! QUERY_DATA_VERSION and GET_BROKER_MEMBER_GROUP (NAMESRV.md §2.5–2.8, §2.21).

use bytes::Bytes;

use super::{Context, Fields, HandlerResult};
use crate::error::HandlerError;
use crate::kv::ORDER_TOPIC_CONFIG;
use crate::metrics::Registration as Applied;
use crate::protocol::body::lists::broker_member_group;
use crate::protocol::body::{DataVersion, DecodeOptions, RegisterBody, lenient};
use crate::protocol::code::{response, version};
use crate::protocol::{ExtFields, RemotingCommand};
use crate::state::RouteTable;
use crate::state::peering::{NODE_FIELD, PEER_CHECK_FIELD};
use crate::state::route_table::register::{
    BodyInput, RegisterError, RegisterOutcome, RegisterSettings, Registration,
};
use crate::state::route_table::unregister::Unregistration;

/// Raw ext field carrying a broker's zone.
const ZONE_NAME: &str = "__ZONE_NAME";

/// How much larger than a frame an inflated registration body may be.
const MAX_INFLATION: usize = 16;

/// The share of `maxBufferedBytes` one inflated registration body may take: inflation runs
/// beside the buffers the budget counts, so it is bounded by the same setting.
const INFLATED_SHARE_OF_BUDGET: usize = 4;

fn bad_body(e: impl std::fmt::Display) -> HandlerError {
    HandlerError::BadBody(format!(
        "org.apache.rocketmq.remoting.exception.RemotingCommandException: Failed to decode RegisterBrokerBody: {e}"
    ))
}

/// A refused registration. Java builds the response from the (empty) response header, so
/// it carries `"extFields":{}` like a successful one.
fn failed(remark: &str) -> RemotingCommand {
    RemotingCommand::error(response::SYSTEM_ERROR, remark).with_ext_fields(ExtFields::new())
}

/// REGISTER_BROKER.
pub fn register(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    let broker_name = f.required("brokerName")?;
    let broker_addr = f.required("brokerAddr")?;
    let cluster = f.required("clusterName")?;
    let ha_server_addr = f.required("haServerAddr")?;
    let broker_id = f.required_i64("brokerId")?;
    let heartbeat_timeout_millis = f.optional_i64("heartbeatTimeoutMillis");
    let enable_acting_master = f.optional_bool("enableActingMaster");
    let compressed = f.optional_bool("compressed").unwrap_or(false);
    let body_crc32 = f.optional_i32("bodyCrc32").unwrap_or(0);

    let raw = req.body.clone().unwrap_or_default();
    if body_crc32 != 0 && (crc32fast::hash(&raw) & 0x7FFF_FFFF) as i32 != body_crc32 {
        tracing::warn!(
            broker = broker_name,
            addr = broker_addr,
            "registration rejected: crc32 not match"
        );
        return Ok(failed("crc32 not match"));
    }
    if req.version < 0 {
        // Java looks the version up in its version table, fails on a negative index and
        // answers the exception; no broker sends one.
        return Err(HandlerError::BadBody(format!(
            "java.lang.ArrayIndexOutOfBoundsException: invalid request version {}",
            req.version
        )));
    }
    // The digest identifies "the same body read the same way".
    let format = (req.version >= version::V3_0_11) as u64
        + (req.version >= version::V5_0_0) as u64 * 2
        + compressed as u64 * 4;
    let digest = xxhash_rust::xxh3::xxh3_64_with_seed(&raw, format);

    let registration = Registration {
        cluster,
        broker_addr,
        broker_name,
        broker_id,
        ha_server_addr: Some(ha_server_addr),
        zone_name: req.ext(ZONE_NAME),
        heartbeat_timeout_millis,
        enable_acting_master,
        conn: ctx.conn,
        version: req.version,
    };
    let (settings, return_order_conf, max_inflated) = {
        let config = ctx.state.config();
        let s = &config.settings;
        (
            RegisterSettings {
                delete_topic_with_broker_registration: s.delete_topic_with_broker_registration,
            },
            s.return_order_topic_config_to_broker,
            (s.frame_max_length as usize)
                .saturating_mul(MAX_INFLATION)
                .min(s.max_buffered_bytes as usize / INFLATED_SHARE_OF_BUDGET),
        )
    };
    let unchanged = BodyInput::Unchanged { digest };
    let first = ctx
        .state
        .routes_mut()
        .register(&registration, unchanged, &settings, ctx.now);
    let mut applied = Applied::Unchanged;
    let outcome = match first {
        Ok(outcome) => outcome,
        Err(RegisterError::NeedsBody) => {
            applied = Applied::Full;
            let body = if raw.is_empty() {
                RegisterBody::empty(req.version)
            } else {
                let opts = DecodeOptions {
                    compressed,
                    version: req.version,
                    max_inflated,
                };
                let hint = ctx.state.routes().table_hint(cluster, broker_addr);
                RegisterBody::decode_with_hint(raw, opts, hint).map_err(bad_body)?
            };
            let decoded = BodyInput::Decoded {
                body: &body,
                digest,
            };
            ctx.state
                .routes_mut()
                .register(&registration, decoded, &settings, ctx.now)
                .map_err(bad_body)?
        }
        Err(e) => return Err(bad_body(e)),
    };
    let mut fields = ExtFields::new();
    match outcome {
        RegisterOutcome::Rejected => {
            return Ok(failed("register broker failed"));
        }
        RegisterOutcome::Registered {
            master_addr,
            ha_server_addr,
        } => {
            if let Some(ha) = ha_server_addr {
                fields.insert("haServerAddr", ha);
            }
            if let Some(master) = master_addr {
                fields.insert("masterAddr", master.to_string());
            }
        }
    }
    ctx.registered_broker = true;
    ctx.registration = Some(applied);
    if matches!(applied, Applied::Full) {
        // An unchanged registration's cluster was noted when its body was first applied
        // (or its route restored): no lock on the metrics for every heartbeat.
        ctx.state.metrics().note_clusters([cluster]);
    }
    let mut resp = RemotingCommand::success().with_ext_fields(fields);
    if return_order_conf && let Some(table) = ctx.state.kv().list(ORDER_TOPIC_CONFIG) {
        resp = resp.with_body(table);
    }
    Ok(resp)
}

/// UNREGISTER_BROKER: applied before the response is sent.
pub fn unregister(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    let request = Unregistration {
        broker_name: f.required("brokerName")?.to_owned(),
        broker_addr: f.required("brokerAddr")?.to_owned(),
        cluster: f.required("clusterName")?.to_owned(),
        broker_id: f.required_i64("brokerId")?,
    };
    ctx.state.unregister(&[request]);
    Ok(RemotingCommand::success())
}

/// BROKER_HEARTBEAT: refreshes a known broker, never registers one.
pub fn heartbeat(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    let cluster = f.required("clusterName")?;
    let addr = f.required("brokerAddr")?;
    f.required("brokerName")?;
    let mut routes = ctx.state.routes_mut();
    routes.touch_broker(cluster, addr, ctx.now);
    adopt_restored(ctx, &mut routes, cluster, addr);
    Ok(RemotingCommand::success())
}

/// A broker restored from a route snapshot belongs to the connection it is first heard
/// from again, as if it had registered there before the restart.
fn adopt_restored(ctx: &mut Context<'_>, routes: &mut RouteTable, cluster: &str, addr: &str) {
    if routes.adopt_connection(cluster, addr, ctx.conn) {
        ctx.registered_broker = true;
    }
}

/// QUERY_DATA_VERSION: whether the broker's data version differs from the registered one;
/// also a heartbeat.
pub fn query_data_version(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    f.required("brokerName")?;
    let addr = f.required("brokerAddr")?;
    let cluster = f.required("clusterName")?;
    f.required_i64("brokerId")?;
    // fastjson reads a `null` document, a blank one and invalid UTF-8 as no version at all.
    let sent = match req.body.as_deref().filter(|b| !lenient::reads_as_null(b)) {
        Some(body) => Some(
            DataVersion::from_json(body)
                .map_err(|e| HandlerError::BadBody(format!("bad DataVersion body: {e}")))?,
        ),
        None => None,
    };
    // A peer name server's check (issue 15) is no heartbeat of the broker it names.
    let peer_check = req.ext(PEER_CHECK_FIELD).is_some();
    let stored = {
        let mut routes = ctx.state.routes_mut();
        let stored = routes.data_version(cluster, addr);
        if !peer_check {
            routes.touch_broker(cluster, addr, ctx.now);
            adopt_restored(ctx, &mut routes, cluster, addr);
        }
        stored
    };
    let changed = match (&stored, &sent) {
        (Some(s), Some(b)) => !s.same_as(b),
        _ => true,
    };
    let mut fields = ExtFields::new();
    fields.insert("changed", changed.to_string());
    if peer_check {
        fields.insert(NODE_FIELD, ctx.state.node_id().to_string());
    }
    let mut resp = RemotingCommand::success().with_ext_fields(fields);
    if let Some(stored) = stored {
        resp = resp.with_body(Bytes::from(stored.to_json()));
    }
    Ok(resp)
}

/// GET_BROKER_MEMBER_GROUP. Java leaves its placeholder remark on this success response.
pub fn member_group(ctx: &mut Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let f = Fields(req);
    let cluster = f.required("clusterName")?;
    let broker_name = f.required("brokerName")?;
    let addrs = ctx.state.routes().member_group(broker_name);
    let body = broker_member_group(cluster, broker_name, &addrs);
    Ok(
        RemotingCommand::response(response::SUCCESS, Some("not set any response code".into()))
            .with_body(body),
    )
}
