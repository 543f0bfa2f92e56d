//! Broker-facing requests: REGISTER_BROKER, UNREGISTER_BROKER, BROKER_HEARTBEAT,
//! QUERY_DATA_VERSION and GET_BROKER_MEMBER_GROUP (Java's `DefaultRequestProcessor`:
//! `registerBroker`, `unregisterBroker`, `brokerHeartbeat`, `queryBrokerTopicConfig`,
//! `getBrokerMemberGroup`).

use bytes::Bytes;

use super::headers::{
    BrokerHeartbeatHeader, BrokerMemberGroupHeader, QueryDataVersionHeader, RegisterBrokerHeader,
    UnregisterBrokerHeader,
};
use super::{Context, Effects, HandlerResult, Reply};
use crate::error::HandlerError;
use crate::kv::ORDER_TOPIC_CONFIG;
use crate::metrics;
use crate::protocol::body::lists::broker_member_group;
use crate::protocol::body::{DataVersion, DecodeOptions, RegisterBody, lenient};
use crate::protocol::code::{response, version};
use crate::protocol::{ExtFields, RemotingCommand};
use crate::state::RouteTable;
use crate::state::peering::NODE_FIELD;
use crate::state::route_table::register::{
    BodyInput, RegisterError, RegisterOutcome, RegisterSettings, Registration,
};
use crate::state::route_table::unregister::Unregistration;

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
fn failed(remark: &str) -> HandlerResult {
    Ok(RemotingCommand::error(response::SYSTEM_ERROR, remark)
        .with_ext_fields(ExtFields::new())
        .into())
}

/// The live settings a registration reads.
struct RegisterOptions {
    table: RegisterSettings,
    return_order_topic_config: bool,
    max_inflated: usize,
}

impl RegisterOptions {
    fn read(ctx: &Context<'_>) -> RegisterOptions {
        let config = ctx.state.config();
        let s = &config.settings;
        RegisterOptions {
            table: RegisterSettings {
                delete_topic_with_broker_registration: s.delete_topic_with_broker_registration,
            },
            return_order_topic_config: s.return_order_topic_config_to_broker,
            max_inflated: (s.frame_max_length as usize)
                .saturating_mul(MAX_INFLATION)
                .min(s.max_buffered_bytes as usize / INFLATED_SHARE_OF_BUDGET),
        }
    }
}

/// REGISTER_BROKER: checks the body's CRC, applies the registration — without decoding the
/// body when it is the one last applied — and answers the master's and HA addresses.
pub(crate) fn register(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let header = RegisterBrokerHeader::from_ext(req)?;
    let raw = req.body.clone().unwrap_or_default();
    if !crc_matches(&header, &raw) {
        tracing::warn!(
            broker = header.broker_name,
            addr = header.broker_addr,
            "registration rejected: crc32 not match"
        );
        return failed("crc32 not match");
    }
    if req.version < 0 {
        // Java looks the version up in its version table, fails on a negative index and
        // answers the exception; no broker sends one.
        return Err(HandlerError::BadBody(format!(
            "java.lang.ArrayIndexOutOfBoundsException: invalid request version {}",
            req.version
        )));
    }
    let registration = registration(ctx, req, &header);
    let options = RegisterOptions::read(ctx);
    let (outcome, applied) = apply(ctx, req, &registration, &header, raw, &options)?;
    let RegisterOutcome::Registered {
        master_addr,
        ha_server_addr,
    } = outcome
    else {
        return failed("register broker failed");
    };
    if applied == metrics::RegistrationOutcome::Full {
        // An unchanged registration's cluster was noted when its body was first applied
        // (or its route restored): no lock on the metrics for every heartbeat.
        ctx.state.metrics().note_clusters([header.cluster]);
    }
    let mut fields = ExtFields::new();
    if let Some(ha) = ha_server_addr {
        fields.insert("haServerAddr", ha);
    }
    if let Some(master) = master_addr {
        fields.insert("masterAddr", master.to_string());
    }
    let mut response = RemotingCommand::success().with_ext_fields(fields);
    if options.return_order_topic_config
        && let Some(table) = ctx.state.kv().list(ORDER_TOPIC_CONFIG)
    {
        response = response.with_body(table);
    }
    Ok(Reply {
        response,
        effects: Effects {
            registered_broker: true,
            registration: Some(applied),
        },
    })
}

/// Whether the body matches the header's `bodyCrc32` (0: not checked), as Java's
/// `checksum`: the CRC32 of the raw body with its sign bit cleared.
fn crc_matches(header: &RegisterBrokerHeader<'_>, raw: &[u8]) -> bool {
    header.body_crc32 == 0 || (crc32fast::hash(raw) & 0x7FFF_FFFF) as i32 == header.body_crc32
}

/// The registration the header and the connection describe.
fn registration<'a>(
    ctx: &Context<'_>,
    req: &RemotingCommand,
    header: &RegisterBrokerHeader<'a>,
) -> Registration<'a> {
    Registration {
        cluster: header.cluster,
        broker_addr: header.broker_addr,
        broker_name: header.broker_name,
        broker_id: header.broker_id,
        ha_server_addr: Some(header.ha_server_addr),
        zone_name: header.zone_name,
        heartbeat_timeout_millis: header.heartbeat_timeout_millis,
        enable_acting_master: header.enable_acting_master,
        conn: ctx.conn,
        version: req.version,
    }
}

/// Applies `registration`: first by the body's digest alone, which the route table accepts
/// when the body is the one it applied last, else with the decoded body.
fn apply(
    ctx: &Context<'_>,
    req: &RemotingCommand,
    registration: &Registration<'_>,
    header: &RegisterBrokerHeader<'_>,
    raw: Bytes,
    options: &RegisterOptions,
) -> Result<(RegisterOutcome, metrics::RegistrationOutcome), HandlerError> {
    let digest = digest(req.version, header.compressed, &raw);
    let unchanged = BodyInput::Unchanged { digest };
    let first = ctx
        .state
        .routes_mut()
        .register(registration, unchanged, &options.table, ctx.now);
    match first {
        Ok(outcome) => Ok((outcome, metrics::RegistrationOutcome::Unchanged)),
        Err(RegisterError::NeedsBody) => {
            let body = decode_body(ctx, req, header, raw, options.max_inflated)?;
            let decoded = BodyInput::Decoded {
                body: &body,
                digest,
            };
            let outcome = ctx
                .state
                .routes_mut()
                .register(registration, decoded, &options.table, ctx.now)
                .map_err(bad_body)?;
            Ok((outcome, metrics::RegistrationOutcome::Full))
        }
        Err(e) => Err(bad_body(e)),
    }
}

/// The digest that identifies "the same body read the same way": the body's hash, seeded
/// with how its version and compression make it read.
fn digest(version: i32, compressed: bool, raw: &[u8]) -> u64 {
    let format = (version >= version::V3_0_11) as u64
        + (version >= version::V5_0_0) as u64 * 2
        + compressed as u64 * 4;
    xxhash_rust::xxh3::xxh3_64_with_seed(raw, format)
}

/// The registration body, decoded (inflated if `compressed`) within `max_inflated` bytes;
/// an empty body is the empty body of the request's version.
fn decode_body(
    ctx: &Context<'_>,
    req: &RemotingCommand,
    header: &RegisterBrokerHeader<'_>,
    raw: Bytes,
    max_inflated: usize,
) -> Result<RegisterBody, HandlerError> {
    if raw.is_empty() {
        return Ok(RegisterBody::empty(req.version));
    }
    let opts = DecodeOptions {
        compressed: header.compressed,
        version: req.version,
        max_inflated,
    };
    let hint = ctx
        .state
        .routes()
        .table_hint(header.cluster, header.broker_addr);
    RegisterBody::decode_with_hint(raw, opts, hint).map_err(bad_body)
}

/// UNREGISTER_BROKER: applied before the response is sent.
pub(crate) fn unregister(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let header = UnregisterBrokerHeader::from_ext(req)?;
    let request = Unregistration {
        broker_name: header.broker_name.to_owned(),
        broker_addr: header.broker_addr.to_owned(),
        cluster: header.cluster.to_owned(),
        broker_id: header.broker_id,
    };
    ctx.state.unregister(&[request]);
    Ok(RemotingCommand::success().into())
}

/// BROKER_HEARTBEAT: refreshes a known broker, never registers one.
pub(crate) fn heartbeat(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let header = BrokerHeartbeatHeader::from_ext(req)?;
    let (cluster, addr) = (header.cluster, header.broker_addr);
    let mut routes = ctx.state.routes_mut();
    routes.touch_broker(cluster, addr, ctx.now);
    let effects = adopt_restored(ctx, &mut routes, cluster, addr);
    Ok(Reply {
        response: RemotingCommand::success(),
        effects,
    })
}

/// A broker restored from a route snapshot belongs to the connection it is first heard
/// from again, as if it had registered there before the restart.
fn adopt_restored(
    ctx: &Context<'_>,
    routes: &mut RouteTable,
    cluster: &str,
    addr: &str,
) -> Effects {
    Effects {
        registered_broker: routes.adopt_connection(cluster, addr, ctx.conn),
        registration: None,
    }
}

/// QUERY_DATA_VERSION: whether the broker's data version differs from the registered one;
/// also a heartbeat.
pub(crate) fn query_data_version(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let header = QueryDataVersionHeader::from_ext(req)?;
    let (cluster, addr) = (header.cluster, header.broker_addr);
    // fastjson reads a `null` document, a blank one and invalid UTF-8 as no version at all.
    let sent = match req.body.as_deref().filter(|b| !lenient::reads_as_null(b)) {
        Some(body) => Some(
            DataVersion::from_json(body)
                .map_err(|e| HandlerError::BadBody(format!("bad DataVersion body: {e}")))?,
        ),
        None => None,
    };
    // A peer name server's check is no heartbeat of the broker it names.
    let (stored, effects) = {
        let mut routes = ctx.state.routes_mut();
        let stored = routes.data_version(cluster, addr);
        let mut effects = Effects::default();
        if !header.peer_check {
            routes.touch_broker(cluster, addr, ctx.now);
            effects = adopt_restored(ctx, &mut routes, cluster, addr);
        }
        (stored, effects)
    };
    let changed = match (&stored, &sent) {
        (Some(s), Some(b)) => !s.same_as(b),
        _ => true,
    };
    let mut fields = ExtFields::new();
    fields.insert("changed", changed.to_string());
    if header.peer_check {
        fields.insert(NODE_FIELD, ctx.state.node_id().to_string());
    }
    let mut response = RemotingCommand::success().with_ext_fields(fields);
    if let Some(stored) = stored {
        response = response.with_body(Bytes::from(stored.to_json()));
    }
    Ok(Reply { response, effects })
}

/// GET_BROKER_MEMBER_GROUP. Java leaves its placeholder remark on this success response.
pub(crate) fn member_group(ctx: &Context<'_>, req: &RemotingCommand) -> HandlerResult {
    let header = BrokerMemberGroupHeader::from_ext(req)?;
    let addrs = ctx.state.routes().member_group(header.broker_name);
    let body = broker_member_group(header.cluster, header.broker_name, &addrs);
    Ok(
        RemotingCommand::response(response::SUCCESS, Some("not set any response code".into()))
            .with_body(body)
            .into(),
    )
}
