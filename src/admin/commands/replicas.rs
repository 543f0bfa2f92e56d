//! The replica views: `getSyncStateSet` (the controller leader's view of broker-sets) and
//! `getBrokerEpoch` (each broker's own epoch file), for one broker name (`-b`) or every
//! broker of a cluster (`-c`, listed by the name server), once or every `-i` seconds.
//!
//! As in mqadmin, `-b` wins over `-c`; a failure of the name server or of the controller ends
//! the command, a broker that cannot be asked is reported and the others are still printed.
//! Unlike mqadmin (which prints nothing, or `[error] …` on stdout, and exits 0), a name the
//! name server or controller does not know is a failure (exit 3).

use std::time::Duration;

use super::read::cluster_info;
use super::{Ctx, bad_answer, required, usage};
use crate::admin::Problem;
use crate::admin::format::controller as text;
use crate::admin::options::Parsed;
use crate::protocol::controller_code::request as code;
use crate::protocol::java_hash::{Table, sort_strings_by_java_order};
use crate::remoting_client::Request;
use crate::remoting_client::decode::ClusterInfo;
use crate::remoting_client::decode_controller::{BrokerReplicasInfo, EpochEntryCache};

/// mqadmin's `CommandUtil.ERROR_MESSAGE`, for a cluster the name server does not list.
const UNKNOWN_CLUSTER: &str =
    "Make sure the specified clusterName exists or the name server connected to is correct.";

/// `-i SECONDS`: absent → run once; blank → every 3 s (mqadmin's default).
fn interval(parsed: &Parsed) -> Result<Option<Duration>, Problem> {
    if !parsed.has("interval") {
        return Ok(None);
    }
    let raw = parsed.value("interval").unwrap_or_default().trim();
    if raw.is_empty() {
        return Ok(Some(Duration::from_secs(3)));
    }
    raw.parse::<u64>()
        .map(|secs| Some(Duration::from_secs(secs)))
        .map_err(|_| usage(format!("-i must be a number of seconds, not '{raw}'")))
}

/// What to look at: one broker name, or a cluster's.
enum Target<'p> {
    Broker(&'p str),
    Cluster(&'p str),
}

fn target(parsed: &Parsed) -> Result<Target<'_>, Problem> {
    if parsed.has("brokerName") {
        Ok(Target::Broker(required(parsed, "brokerName")))
    } else if parsed.has("clusterName") {
        Ok(Target::Cluster(required(parsed, "clusterName")))
    } else {
        Err(usage("give -b <brokerName> or -c <clusterName>"))
    }
}

/// The broker names the name server lists under `cluster`.
fn cluster_names(ctx: &Ctx<'_>, info: &ClusterInfo, cluster: &str) -> Result<Vec<String>, Problem> {
    match info.cluster_addr_table.get(cluster) {
        Some(names) if !names.is_empty() => Ok(names.clone()),
        _ => Err(bad_answer(
            ctx.read_server(),
            format!("no cluster '{cluster}': {UNKNOWN_CLUSTER}"),
        )),
    }
}

/// Runs `round` once, or every `every` until it fails, printing problems as they come.
async fn repeat<'c, 'o>(
    ctx: &'c mut Ctx<'o>,
    every: Option<Duration>,
    mut round: impl AsyncFnMut(&mut Ctx<'o>) -> Result<(), Problem>,
) -> Result<(), Problem> {
    loop {
        round(ctx).await?;
        match every {
            Some(every) => {
                ctx.report_now();
                tokio::time::sleep(every).await;
            }
            None => return Ok(()),
        }
    }
}

/// `getSyncStateSet -a ADDR (-b NAME | -c CLUSTER) [-i SECONDS]`.
pub(super) async fn get_sync_state_set(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let addrs = super::controller::controller_addrs(parsed)?;
    let target = target(parsed)?;
    let every = interval(parsed)?;
    repeat(ctx, every, async |ctx| {
        let names = match target {
            Target::Broker(name) => vec![name.to_owned()],
            Target::Cluster(cluster) => {
                let info = cluster_info(ctx).await?;
                cluster_names(ctx, &info, cluster)?
            }
        };
        let leader = super::controller::leader(ctx, &addrs).await?;
        let body = serde_json::to_vec(&names).expect("strings always serialize");
        let req = Request::new(code::CONTROLLER_GET_SYNC_STATE_DATA).body(body);
        let answer = ctx.client.call_ok(&leader, &req).await?;
        let info =
            BrokerReplicasInfo::decode(answer.body_bytes()).map_err(|e| bad_answer(&leader, e))?;
        ctx.print(&text::sync_state_sets(&info));
        if let Target::Broker(name) = target
            && info.replicas_info_table.get(name).is_none()
        {
            ctx.problems.push(bad_answer(
                &leader,
                format!("the controller knows no broker-set '{name}'"),
            ));
        }
        Ok(())
    })
    .await
}

/// The addresses of the brokers to ask, in Java `HashSet<String>` order.
fn broker_addrs(
    ctx: &Ctx<'_>,
    info: &ClusterInfo,
    target: &Target<'_>,
) -> Result<Vec<String>, Problem> {
    let names = match *target {
        Target::Broker(name) if info.broker_addr_table.get(name).is_none() => {
            return Err(bad_answer(
                ctx.read_server(),
                format!("the name server lists no broker named '{name}'"),
            ));
        }
        Target::Broker(name) => vec![name.to_owned()],
        Target::Cluster(cluster) => cluster_names(ctx, info, cluster)?,
    };
    let mut addrs: Vec<String> = Vec::new();
    for name in &names {
        let Some(b) = info.broker_addr_table.get(name) else {
            continue;
        };
        for (_, addr) in b.addrs() {
            if !addrs.iter().any(|a| a == addr) {
                addrs.push(addr.to_owned());
            }
        }
    }
    sort_strings_by_java_order(&mut addrs, Table::DEFAULT, |a| a);
    Ok(addrs)
}

/// `getBrokerEpoch (-b NAME | -c CLUSTER) [-i SECONDS]`: GET_BROKER_EPOCH_CACHE to every
/// address of the brokers.
pub(super) async fn get_broker_epoch(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let target = target(parsed)?;
    let every = interval(parsed)?;
    repeat(ctx, every, async |ctx| {
        let info = cluster_info(ctx).await?;
        let addrs = broker_addrs(ctx, &info, &target)?;
        for addr in addrs {
            let req = Request::new(code::GET_BROKER_EPOCH_CACHE);
            match ctx.client.call_ok(&addr, &req).await {
                Ok(answer) => match EpochEntryCache::decode(answer.body_bytes()) {
                    Ok(cache) => ctx.print(&text::broker_epochs(&addr, &cache)),
                    Err(e) => ctx.problems.push(bad_answer(&addr, e)),
                },
                Err(e) => ctx.problems.push(e.into()),
            }
        }
        Ok(())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::options::find;

    fn parsed(args: &[&str]) -> Parsed {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        find("getBrokerEpoch").unwrap().parse(&args).unwrap()
    }

    #[test]
    fn intervals_default_to_mqadmins_three_seconds() {
        assert_eq!(interval(&parsed(&["-b", "x"])).unwrap(), None);
        assert_eq!(
            interval(&parsed(&["-i", "5"])).unwrap(),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            interval(&parsed(&["-i", " "])).unwrap(),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            interval(&parsed(&["-i", "x"])).unwrap_err().exit,
            crate::admin::EXIT_USAGE
        );
    }

    #[test]
    fn a_broker_name_wins_over_a_cluster() {
        let p = parsed(&["-c", "C", "-b", "B"]);
        assert!(matches!(target(&p), Ok(Target::Broker("B"))));
        assert!(matches!(
            target(&parsed(&["-c", "C"])),
            Ok(Target::Cluster("C"))
        ));
        assert!(target(&parsed(&[])).is_err());
    }
}
