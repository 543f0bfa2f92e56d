//! Reading one node for `diff`: each kind of data becomes a [`Section`] of
//! `key → canonical text`, written so that equal state gives equal text on any name server.

use std::collections::BTreeMap;

use super::{Plan, Section};
use crate::admin::{EXIT_UNREACHABLE, Problem, bad_answer};
use crate::config::properties;
use crate::protocol::code::{request, response};
use crate::remoting_client::decode::{self, ClusterInfo, RouteInfo};
use crate::remoting_client::{CallError, Client, Failure, Request};

/// Every section `plan` asks for that the node answered. Failures go to `problems`: a refusal
/// drops its section only, an unreachable node ends the reading.
pub(super) async fn sections(
    client: &mut Client,
    addr: &str,
    plan: &Plan,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, Section> {
    let mut out = BTreeMap::new();
    // Stores a section, or records the failure: `Err(())` (end the reading) when the node is
    // unreachable, `Ok(())` (go on without this section) when it refused.
    let mut keep =
        |r: Result<Section, Problem>, kind: String, out: &mut BTreeMap<String, Section>| match r {
            Ok(section) => {
                out.insert(kind, section);
                Ok(())
            }
            Err(p) => {
                let stop = p.exit == EXIT_UNREACHABLE;
                problems.push(p);
                if stop { Err(()) } else { Ok(()) }
            }
        };
    let _: Result<(), ()> = async {
        match cluster_info(client, addr).await {
            Ok(info) => {
                let (clusters, brokers) = cluster_sections(&info);
                out.insert("clusters".into(), clusters);
                out.insert("brokers".into(), brokers);
                if plan.data_version {
                    let r = data_versions(client, addr, &info).await;
                    keep(r, "data versions".into(), &mut out)?;
                }
            }
            Err(p) => keep(Err(p), String::new(), &mut out)?,
        }
        let r = routes(client, addr, plan.topics.clone()).await;
        keep(r, "routes".into(), &mut out)?;
        for ns in &plan.namespaces {
            let r = kv_namespace(client, addr, ns).await;
            keep(r, format!("kv {ns}"), &mut out)?;
        }
        let r = config(client, addr, &plan.ignore_config).await;
        keep(r, "config".into(), &mut out)
    }
    .await;
    out
}

fn refused(addr: &str, code: i32, answer: i32, remark: Option<String>) -> Problem {
    CallError {
        server: addr.to_owned(),
        code,
        failure: Failure::Refused {
            code: answer,
            remark,
        },
    }
    .into()
}

async fn cluster_info(client: &mut Client, addr: &str) -> Result<ClusterInfo, Problem> {
    let answer = client
        .call_ok(addr, &Request::new(request::GET_BROKER_CLUSTER_INFO))
        .await?;
    ClusterInfo::decode(answer.body_bytes()).map_err(|e| bad_answer(addr, e))
}

/// A KV namespace; an unknown (empty) namespace is an empty section.
async fn kv_namespace(client: &mut Client, addr: &str, ns: &str) -> Result<Section, Problem> {
    let req = Request::new(request::GET_KVLIST_BY_NAMESPACE).field("namespace", ns);
    let answer = client.call(addr, &req).await?;
    match answer.code {
        response::SUCCESS => Ok(decode::kv_table(answer.body_bytes())
            .map_err(|e| bad_answer(addr, e))?
            .into_iter()
            .collect()),
        response::QUERY_NOT_FOUND => Ok(Section::new()),
        code => Err(refused(
            addr,
            request::GET_KVLIST_BY_NAMESPACE,
            code,
            answer.remark,
        )),
    }
}

/// The live configuration without the ignored keys.
async fn config(client: &mut Client, addr: &str, ignore: &[String]) -> Result<Section, Problem> {
    let answer = client
        .call_ok(addr, &Request::new(request::GET_NAMESRV_CONFIG))
        .await?;
    let config = properties::parse(&String::from_utf8_lossy(answer.body_bytes()))
        .map_err(|e| bad_answer(addr, format!("unreadable configuration: {e}")))?;
    Ok(config
        .into_iter()
        .filter(|(k, _)| !ignore.contains(k))
        .collect())
}

/// Clusters (their broker names) and brokers (cluster, addresses by id, flags).
fn cluster_sections(info: &ClusterInfo) -> (Section, Section) {
    let clusters = info
        .cluster_addr_table
        .0
        .iter()
        .map(|(c, names)| {
            let mut names = names.clone();
            names.sort();
            names.dedup();
            (c.clone(), names.join(", "))
        })
        .collect();
    let brokers = info
        .broker_addr_table
        .0
        .iter()
        .map(|(name, b)| {
            let mut addrs = b.addrs();
            addrs.sort();
            let addrs: Vec<String> = addrs.iter().map(|(id, a)| format!("{id}={a}")).collect();
            let mut text = format!("cluster {}, {{{}}}", b.cluster, addrs.join(", "));
            if b.enable_acting_master {
                text.push_str(", acting master");
            }
            if let Some(zone) = &b.zone_name {
                text.push_str(&format!(", zone {zone}"));
            }
            (name.clone(), text)
        })
        .collect();
    (clusters, brokers)
}

/// The route of every topic (the node's own list unless `-t` gave them), pipelined; a topic
/// without a route is absent.
async fn routes(
    client: &mut Client,
    addr: &str,
    topics: Option<Vec<String>>,
) -> Result<Section, Problem> {
    let topics = match topics {
        Some(t) => t,
        None => {
            let req = Request::new(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
            let answer = client.call_ok(addr, &req).await?;
            decode::topic_list(answer.body_bytes()).map_err(|e| bad_answer(addr, e))?
        }
    };
    let reqs: Vec<Request> = topics
        .iter()
        .map(|t| Request::new(request::GET_ROUTEINFO_BY_TOPIC).field("topic", t.as_str()))
        .collect();
    let answers = client.call_many(addr, &reqs).await?;
    let mut section = Section::new();
    for (topic, answer) in topics.into_iter().zip(answers) {
        match answer.code {
            response::SUCCESS => {
                let route = RouteInfo::decode(answer.body_bytes())
                    .map_err(|e| bad_answer(addr, format!("topic {topic}: {e}")))?;
                section.insert(topic, route_text(&route));
            }
            response::TOPIC_NOT_EXIST => {}
            code => {
                return Err(refused(
                    addr,
                    request::GET_ROUTEINFO_BY_TOPIC,
                    code,
                    answer.remark,
                ));
            }
        }
    }
    Ok(section)
}

/// A route's queues (sorted by broker group) and order configuration, in one line.
pub(super) fn route_text(route: &RouteInfo) -> String {
    let mut queues: Vec<String> = route
        .queue_datas
        .iter()
        .map(|q| {
            let mut t = format!(
                "{} r{} w{} perm {}",
                q.broker_name,
                q.read_queue_nums,
                q.write_queue_nums,
                perm_text(q.perm)
            );
            if q.topic_sys_flag != 0 {
                t.push_str(&format!(" sysflag {}", q.topic_sys_flag));
            }
            t
        })
        .collect();
    queues.sort();
    let mut text = queues.join("; ");
    if let Some(conf) = &route.order_topic_conf {
        text.push_str(&format!("; order {conf}"));
    }
    text
}

/// Permission bits as RocketMQ's `PermName.perm2String` (`RW-`, `R--`, …) and the number.
fn perm_text(perm: i32) -> String {
    let r = if perm & 4 != 0 { 'R' } else { '-' };
    let w = if perm & 2 != 0 { 'W' } else { '-' };
    let x = if perm & 1 != 0 { 'X' } else { '-' };
    format!("{perm} ({r}{w}{x})")
}

/// Each broker address's data version, keyed `broker id address`.
async fn data_versions(
    client: &mut Client,
    addr: &str,
    info: &ClusterInfo,
) -> Result<Section, Problem> {
    let mut keys = Vec::new();
    let mut reqs = Vec::new();
    for (name, b) in &info.broker_addr_table.0 {
        for (id, broker_addr) in b.addrs() {
            keys.push(format!("{name} {id} {broker_addr}"));
            // A version no broker has: a 4.9.x name server then does not count the query
            // as a heartbeat (5.x always does; see the module doc).
            reqs.push(
                Request::new(request::QUERY_DATA_VERSION)
                    .field("brokerName", name.as_str())
                    .field("brokerAddr", broker_addr)
                    .field("clusterName", b.cluster.as_str())
                    .field("brokerId", id.to_string())
                    .body(br#"{"counter":-1,"stateVersion":-1,"timestamp":-1}"#.to_vec()),
            );
        }
    }
    let answers = client.call_many(addr, &reqs).await?;
    let mut section = Section::new();
    for (key, answer) in keys.into_iter().zip(answers) {
        if answer.code != response::SUCCESS {
            return Err(refused(
                addr,
                request::QUERY_DATA_VERSION,
                answer.code,
                answer.remark,
            ));
        }
        if answer.body_bytes().is_empty() {
            continue; // no live entry for this address on this node
        }
        let v = crate::protocol::body::DataVersion::from_json(answer.body_bytes())
            .map_err(|e| bad_answer(addr, format!("data version of {key}: {e}")))?;
        let counter = v.counter.map_or("null".into(), |c| c.to_string());
        section.insert(
            key,
            format!(
                "counter {counter}, stateVersion {}, timestamp {}",
                v.state_version, v.timestamp
            ),
        );
    }
    Ok(section)
}
