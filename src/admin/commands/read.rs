//! Read commands: `topicList`, `topicRoute`, `topicClusterList`, `getNamesrvConfig`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{Ctx, bad_answer, required};
use crate::admin::Problem;
use crate::admin::format;
use crate::admin::options::Parsed;
use crate::config::properties;
use crate::protocol::code::request;
use crate::protocol::java_hash::{Table, sort_strings_by_java_order};
use crate::remoting_client::decode::{self, ClusterInfo, RouteInfo};
use crate::remoting_client::{QUERY_TOPIC_CONSUME_BY_WHO, Request};

/// GET_BROKER_CLUSTER_INFO from one name server.
pub(super) async fn cluster_info(ctx: &mut Ctx<'_>) -> Result<ClusterInfo, Problem> {
    let answer = ctx
        .read_one(&Request::new(request::GET_BROKER_CLUSTER_INFO))
        .await?;
    ClusterInfo::decode(answer.body_bytes()).map_err(|e| bad_answer(ctx.read_server(), e))
}

/// GET_ROUTEINFO_BY_TOPIC from one name server.
pub(super) async fn route(ctx: &mut Ctx<'_>, topic: &str) -> Result<RouteInfo, Problem> {
    let req = Request::new(request::GET_ROUTEINFO_BY_TOPIC).field("topic", topic);
    let answer = ctx.read_one(&req).await?;
    RouteInfo::decode(answer.body_bytes()).map_err(|e| bad_answer(ctx.read_server(), e))
}

/// The route as standard JSON (quoted keys, sorted properties).
pub(crate) fn route_json(r: &RouteInfo) -> Value {
    let brokers: Vec<Value> = r.broker_datas.iter().map(broker_json).collect();
    let queues: Vec<Value> = r
        .queue_datas
        .iter()
        .map(|q| {
            json!({"brokerName": q.broker_name, "perm": q.perm, "readQueueNums": q.read_queue_nums,
                   "topicSysFlag": q.topic_sys_flag, "writeQueueNums": q.write_queue_nums})
        })
        .collect();
    let filters: BTreeMap<&str, &Option<Vec<String>>> = r
        .filter_server_table
        .0
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let mut v = json!({"brokerDatas": brokers, "filterServerTable": filters, "queueDatas": queues});
    if let Some(conf) = &r.order_topic_conf {
        v["orderTopicConf"] = json!(conf);
    }
    if let Some(m) = &r.topic_queue_mapping_by_broker {
        v["topicQueueMappingByBroker"] = m.clone();
    }
    v
}

/// A broker group as standard JSON.
pub(crate) fn broker_json(b: &decode::BrokerInfo) -> Value {
    let addrs: BTreeMap<String, &str> = b
        .addrs()
        .into_iter()
        .map(|(id, a)| (id.to_string(), a))
        .collect();
    let mut v = json!({"brokerAddrs": addrs, "brokerName": b.broker_name, "cluster": b.cluster,
                       "enableActingMaster": b.enable_acting_master});
    if let Some(zone) = &b.zone_name {
        v["zoneName"] = json!(zone);
    }
    v
}

/// `topicRoute -t T [-l]`.
pub(super) async fn topic_route(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let topic = required(parsed, "topic");
    let r = route(ctx, topic).await?;
    if ctx.json {
        ctx.print_json(&route_json(&r));
    } else if parsed.has("list") {
        let text = format::route_list(&r).map_err(|e| bad_answer(ctx.read_server(), e))?;
        ctx.print(&text);
    } else {
        ctx.print(&format::route_pretty(&r));
    }
    Ok(())
}

/// The first cluster (in Java `HashMap` order) listing `broker_name`.
fn cluster_of<'c>(info: &'c ClusterInfo, broker_name: &str) -> Option<&'c str> {
    format::java_order(&info.cluster_addr_table)
        .into_iter()
        .find(|(_, names)| names.iter().any(|n| n == broker_name))
        .map(|(c, _)| c.as_str())
}

/// `topicClusterList -t T`: the clusters holding the route's first broker group.
pub(super) async fn topic_cluster_list(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    let topic = required(parsed, "topic");
    let info = cluster_info(ctx).await?;
    let r = route(ctx, topic).await?;
    let Some(first) = r.broker_datas.first() else {
        return Err(bad_answer(
            ctx.read_server(),
            format!("the route of topic {topic} lists no broker"),
        ));
    };
    let mut clusters: Vec<&str> = format::java_order(&info.cluster_addr_table)
        .into_iter()
        .filter(|(_, names)| names.contains(&first.broker_name))
        .map(|(c, _)| c.as_str())
        .collect();
    if ctx.json {
        clusters.sort_unstable();
        ctx.print_json(&json!({ "clusters": clusters }));
    } else {
        let text: String = clusters.iter().map(|c| format!("{c}\n")).collect();
        ctx.print(&text);
    }
    Ok(())
}

/// `topicList [-c]`.
pub(super) async fn topic_list(ctx: &mut Ctx<'_>, parsed: &Parsed) -> Result<(), Problem> {
    if parsed.has("clusterModel") {
        return topic_list_by_cluster(ctx).await;
    }
    let mut topics = all_topics(ctx).await?;
    if ctx.json {
        topics.sort();
        ctx.print_json(&json!({ "topicList": topics }));
        return Ok(());
    }
    sort_strings_by_java_order(&mut topics, Table::DEFAULT, |t| t);
    let mut text = String::with_capacity(topics.iter().map(|t| t.len() + 1).sum());
    for t in &topics {
        text.push_str(t);
        text.push('\n');
    }
    ctx.print(&text);
    Ok(())
}

async fn all_topics(ctx: &mut Ctx<'_>) -> Result<Vec<String>, Problem> {
    let answer = ctx
        .read_one(&Request::new(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
        .await?;
    decode::topic_list(answer.body_bytes()).map_err(|e| bad_answer(ctx.read_server(), e))
}

/// `topicList -c`: cluster and consumer groups of every topic but retry and DLQ topics. As
/// in mqadmin, a topic whose route or groups cannot be read is listed without them; the
/// first failure per server is reported.
async fn topic_list_by_cluster(ctx: &mut Ctx<'_>) -> Result<(), Problem> {
    let info = cluster_info(ctx).await?;
    let mut topics = all_topics(ctx).await?;
    sort_strings_by_java_order(&mut topics, Table::DEFAULT, |t| t);
    let mut rows: Vec<(String, String, Vec<String>)> = Vec::new();
    let mut reported: Vec<String> = Vec::new();
    for topic in topics {
        if topic.starts_with("%RETRY%") || topic.starts_with("%DLQ%") {
            continue;
        }
        let mut cluster = String::new();
        let mut groups = Vec::new();
        match route(ctx, &topic).await {
            Ok(r) => {
                if let Some(first) = r.broker_datas.first() {
                    cluster = cluster_of(&info, &first.broker_name)
                        .unwrap_or("null")
                        .to_owned();
                }
                if let Some(addr) = r.broker_datas.iter().find_map(|b| b.select_addr()) {
                    let req = Request::new(QUERY_TOPIC_CONSUME_BY_WHO).field("topic", &topic);
                    match ctx.client.call_ok(addr, &req).await {
                        Ok(a) => groups = decode::group_list(a.body_bytes()).unwrap_or_default(),
                        Err(e) if !reported.contains(&e.server) => {
                            reported.push(e.server.clone());
                            ctx.problems.push(e.into());
                        }
                        Err(_) => {}
                    }
                }
            }
            Err(p) if !reported.contains(&ctx.read_server().to_owned()) => {
                reported.push(ctx.read_server().to_owned());
                ctx.problems.push(p);
            }
            Err(_) => {}
        }
        rows.push((cluster, topic, groups));
    }
    if ctx.json {
        let list: Vec<Value> = rows
            .iter()
            .map(|(c, t, g)| json!({"cluster": c, "topic": t, "consumerGroups": g}))
            .collect();
        ctx.print_json(&json!({ "topics": list }));
        return Ok(());
    }
    let mut text = format!(
        "{:<20}  {:<48}  {:<48}\n",
        "#Cluster Name", "#Topic", "#Consumer Group"
    );
    for (cluster, topic, groups) in &rows {
        let groups: Vec<&str> = if groups.is_empty() {
            vec![""]
        } else {
            groups.iter().map(String::as_str).collect()
        };
        for g in groups {
            let _ = writeln!(
                text,
                "{:<20}  {:<64}  {:<64}",
                format::front(cluster, 20),
                format::front(topic, 64),
                format::front(g, 64)
            );
        }
    }
    ctx.print(&text);
    Ok(())
}

/// `getNamesrvConfig`: the live configuration of every name server of `-n`. Servers that
/// answer are printed even when another one fails.
pub(super) async fn get_namesrv_config(ctx: &mut Ctx<'_>) -> Result<(), Problem> {
    let mut configs: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for addr in ctx.servers.clone() {
        let answer = match ctx
            .client
            .call_ok(&addr, &Request::new(request::GET_NAMESRV_CONFIG))
            .await
        {
            Ok(a) => a,
            Err(e) => {
                ctx.problems.push(e.into());
                continue;
            }
        };
        let text = String::from_utf8_lossy(answer.body_bytes());
        match properties::parse(&text) {
            Ok(entries) => configs.push((addr, entries)),
            Err(e) => ctx
                .problems
                .push(bad_answer(&addr, format!("unreadable configuration: {e}"))),
        }
    }
    if ctx.json {
        let doc: BTreeMap<&str, BTreeMap<&str, &str>> = configs
            .iter()
            .map(|(addr, entries)| {
                let map = entries
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                (addr.as_str(), map)
            })
            .collect();
        ctx.print_json(&json!(doc));
        return Ok(());
    }
    ctx.print(&format::config_tables(configs));
    Ok(())
}
