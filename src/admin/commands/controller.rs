//! The controller commands that talk to controller nodes only: `getControllerMetaData`,
//! `electMaster`, `cleanBrokerMetadata`, `getControllerConfig`, `updateControllerConfig`,
//! and the leader discovery the leader-only ones (and `getSyncStateSet`) start with.
//!
//! Leader discovery is mqadmin's: CONTROLLER_GET_METADATA_INFO (1005) to `-a`, then the real
//! request to the `controllerLeaderAddress` it names. Unlike mqadmin, every address of `-a` is
//! tried in turn (an unreachable node, or one that knows no leader, passes to the next), and
//! when no node names a leader the command fails saying so (exit 2). mqadmin instead sends
//! the leader-only request with a null address, which its client turns into a *name server*
//! from `-n`/`NAMESRV_ADDR`, and reports that server's `CODE: 3  DESC:  request type … not
//! supported` (CONTROLLER.md §8, §9 item 16): a misleading error, not worth copying.

use super::{Ctx, bad_answer, required, usage};
use crate::admin::format::controller as text;
use crate::admin::format::{self};
use crate::admin::options::Parsed;
use crate::admin::{EXIT_UNREACHABLE, Problem, split_addrs};
use crate::config::properties;
use crate::protocol::body::data_version::wall_clock_millis;
use crate::protocol::controller_code::request as code;
use crate::remoting_client::Request;
use crate::remoting_client::decode_controller::{
    ControllerMetadata, ElectMasterBody, ElectMasterHeader,
};

/// The `-a` addresses, in written order, without repeats.
pub(super) fn controller_addrs(parsed: &Parsed) -> Result<Vec<String>, Problem> {
    let list = required(parsed, "controllerAddress");
    let addrs = split_addrs(list);
    if addrs.is_empty() {
        return Err(usage(format!("no controller address in '{list}'")));
    }
    Ok(addrs)
}

/// The address of the controller leader, from the first node of `addrs` that names one.
/// A node that refuses 1005 ends the search (it is not a controller, or is broken).
pub(super) async fn leader(ctx: &mut Ctx<'_>, addrs: &[String]) -> Result<String, Problem> {
    let mut unreachable: Option<Problem> = None;
    let mut leaderless: Vec<&str> = Vec::new();
    for addr in addrs {
        match ctx
            .client
            .call_ok(addr, &Request::new(code::CONTROLLER_GET_METADATA_INFO))
            .await
        {
            Ok(answer) => match ControllerMetadata::from_answer(&answer).leader() {
                Some(leader) => return Ok(leader.to_owned()),
                None => leaderless.push(addr),
            },
            Err(e) if e.failure.is_refusal() => return Err(e.into()),
            Err(e) => unreachable = Some(e.into()),
        }
    }
    if leaderless.is_empty() {
        return Err(unreachable.expect("addrs is never empty"));
    }
    Err(Problem {
        text: format!(
            "no controller leader is known: {} answered CONTROLLER_GET_METADATA_INFO without a \
             controllerLeaderAddress (an election may be under way; try again)",
            leaderless.join(", ")
        ),
        exit: EXIT_UNREACHABLE,
    })
}

/// `getControllerMetaData -a ADDR`: the group, leader and peers as one node sees them (the
/// first node of `-a` that can be reached).
pub(super) async fn get_controller_metadata(
    ctx: &mut Ctx<'_>,
    parsed: &Parsed,
) -> Result<(), Problem> {
    let mut last: Option<Problem> = None;
    let req = Request::new(code::CONTROLLER_GET_METADATA_INFO);
    for addr in controller_addrs(parsed)? {
        match ctx.client.call_ok(&addr, &req).await {
            Ok(answer) => {
                ctx.print(&text::controller_metadata(
                    &ControllerMetadata::from_answer(&answer),
                ));
                return Ok(());
            }
            Err(e) if e.failure.is_refusal() => return Err(e.into()),
            Err(e) => last = Some(e.into()),
        }
    }
    Err(last.expect("controller_addrs is never empty"))
}

/// `electMaster -a ADDR -c CLUSTER -bn NAME -b ID`: the admin-triggered election of one
/// replica; only `0` is success (`2011` "still alive" included is a failure, as in mqadmin).
pub(super) async fn elect_master(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let addrs = controller_addrs(parsed)?;
    let cluster = required(parsed, "clusterName");
    let broker_name = required(parsed, "brokerName");
    let id_text = required(parsed, "brokerId");
    let id: i64 = id_text.parse().map_err(|_| {
        usage(format!(
            "-b must be a broker id (a number), not '{id_text}'"
        ))
    })?;
    let leader = leader(ctx, &addrs).await?;
    let req = Request::new(code::CONTROLLER_ELECT_MASTER)
        .field("clusterName", cluster)
        .field("brokerName", broker_name)
        .field("brokerId", id.to_string())
        .field("designateElect", "true")
        .field("invokeTime", wall_clock_millis().to_string());
    let answer = ctx.client.call_ok(&leader, &req).await?;
    let header = ElectMasterHeader::from_answer(&answer);
    let body = ElectMasterBody::decode(answer.body_bytes()).map_err(|e| bad_answer(&leader, e))?;
    ctx.print(&text::elect_master(cluster, broker_name, &header, &body));
    Ok(())
}

/// Checks `-b 1;2;3` as mqadmin means to (its check is a lazy stream that never runs), with
/// `Long.parseLong`'s message.
fn check_ids(ids: &str) -> Result<(), Problem> {
    for item in text::java_split(ids) {
        if item.parse::<i64>().is_err() {
            return Err(usage(format!(
                "please set the option <brokerControllerIdsToClean> according to the format: \
                 For input string: \"{item}\""
            )));
        }
    }
    Ok(())
}

/// `cleanBrokerMetadata -a ADDR -bn NAME [-b IDS] [-c CLUSTER] [-l]`: CLEAN_BROKER_DATA to
/// the leader. Without `-l` the cluster is needed (the controller checks the listed ids'
/// liveness under it).
pub(super) async fn clean_broker_metadata(
    ctx: &mut Ctx<'_>,
    parsed: &Parsed,
) -> Result<(), Problem> {
    let addrs = controller_addrs(parsed)?;
    let broker_name = required(parsed, "brokerName");
    let cluster = parsed.value("clusterName").map(str::trim);
    let ids = parsed.value("brokerControllerIdsToClean").map(str::trim);
    if let Some(ids) = ids {
        check_ids(ids)?;
    }
    let living = parsed.has("cleanLivingBroker");
    if !living && cluster.is_none_or(str::is_empty) {
        return Err(usage(
            "cleanLivingBroker option is false, clusterName option can not be empty.",
        ));
    }
    let leader = leader(ctx, &addrs).await?;
    let mut req = Request::new(code::CLEAN_BROKER_DATA);
    if let Some(c) = cluster {
        req = req.field("clusterName", c);
    }
    req = req.field("brokerName", broker_name);
    if let Some(ids) = ids {
        req = req.field("brokerControllerIdsToClean", ids);
    }
    let req = req
        .field("isCleanLivingBroker", living.to_string())
        .field("invokeTime", wall_clock_millis().to_string());
    ctx.client.call_ok(&leader, &req).await?;
    ctx.print(&text::clean_success(broker_name));
    Ok(())
}

/// `getControllerConfig -a LIST`: every node's live configuration. Nodes that answer are
/// printed even when another one fails (as `getNamesrvConfig`; mqadmin prints nothing then).
pub(super) async fn get_controller_config(
    ctx: &mut Ctx<'_>,
    parsed: &Parsed,
) -> Result<(), Problem> {
    let mut configs: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for addr in controller_addrs(parsed)? {
        let req = Request::new(code::GET_CONTROLLER_CONFIG);
        let answer = match ctx.client.call_ok(&addr, &req).await {
            Ok(a) => a,
            Err(e) => {
                ctx.problems.push(e.into());
                continue;
            }
        };
        match properties::parse(&String::from_utf8_lossy(answer.body_bytes())) {
            Ok(entries) => configs.push((addr, entries)),
            Err(e) => ctx
                .problems
                .push(bad_answer(&addr, format!("unreadable configuration: {e}"))),
        }
    }
    ctx.print(&format::config_tables(configs));
    Ok(())
}

/// `updateControllerConfig -a LIST -k KEY -v VALUE`: UPDATE_CONTROLLER_CONFIG to every node
/// (the change is node-local, not replicated); the success lines only when all succeeded.
pub(super) async fn update_controller_config(
    ctx: &mut Ctx<'_>,
    parsed: &Parsed,
) -> Result<(), Problem> {
    let addrs = controller_addrs(parsed)?;
    let key = required(parsed, "key");
    let value = required(parsed, "value");
    let req =
        Request::new(code::UPDATE_CONTROLLER_CONFIG).body(format!("{key}={value}\n").into_bytes());
    let before = ctx.problems.len();
    for addr in &addrs {
        if let Err(e) = ctx.client.call_ok(addr, &req).await {
            ctx.problems.push(e.into());
        }
    }
    if ctx.problems.len() == before {
        ctx.print(&text::update_success(&addrs, key, value));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_lists_are_checked_as_mqadmin_means_to() {
        assert!(check_ids("1;2;3").is_ok());
        assert!(
            check_ids("1;2;").is_ok(),
            "a trailing ; is dropped by Java's split"
        );
        let p = check_ids("1;x").unwrap_err();
        assert_eq!(p.exit, crate::admin::EXIT_USAGE);
        assert!(p.text.ends_with("For input string: \"x\""), "{}", p.text);
        assert!(check_ids("1;;2").is_err());
    }
}
