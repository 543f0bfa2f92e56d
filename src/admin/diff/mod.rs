//! `nsadmin diff -n 'a;b;c'`: asks every name server for its view of the cluster and prints
//! what differs, grouped by kind, naming the nodes (apache/rocketmq#4807: name servers never
//! talk to each other, so a registration that reached one node and not another goes
//! unnoticed).
//!
//! Each node is read concurrently on its own connection: cluster info (106), the topic list
//! (206) or the `-t` topics, every topic's route (105, pipelined), the `-s` KV namespaces
//! (219), the live configuration (319) and, with `--dataVersion`, each broker's data version
//! (322). Every kind becomes a *section* of `key → canonical text`; sections are compared
//! key by key. Exit: 0 agree, 1 differ, 2 a node could not be asked (fully).
//!
//! `--dataVersion` is opt-in because a 5.x name server (Java's and ours) counts
//! QUERY_DATA_VERSION as a heartbeat of the broker it names: a `diff` from cron would keep a
//! hung broker registered for as long as the job runs.

mod report;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use super::client::{Client, ClientOptions, Request};
use super::commands::bad_answer;
use super::decode::{self, ClusterInfo, RouteInfo};
use super::options::Parsed;
use super::{EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, Problem};
use crate::config::properties;
use crate::protocol::code::{request, response};

/// `key → canonical value` of one kind of data on one node.
pub type Section = BTreeMap<String, String>;

/// What to compare.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Only these topics (`-t`), else every topic each node lists.
    pub topics: Option<Vec<String>>,
    /// KV namespaces to compare (`-s`).
    pub namespaces: Vec<String>,
    /// Compare brokers' data versions (`--dataVersion`).
    pub data_version: bool,
    /// Config keys left out (`--ignoreConfig`).
    pub ignore_config: Vec<String>,
}

/// One node's answers: sections in a fixed order; `None` where the node could not be read.
#[derive(Debug)]
pub struct Node {
    /// The node's address.
    pub addr: String,
    /// `(kind, section)` pairs, the same kinds in the same order for every node.
    pub sections: Vec<(String, Option<Section>)>,
    /// What went wrong while reading it.
    pub problems: Vec<Problem>,
}

fn list_option(parsed: &Parsed, long: &str) -> Vec<String> {
    parsed
        .value(long)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `diff` against `servers`; returns the problems to report and the exit code.
pub async fn run(
    client: &mut Client,
    servers: &[String],
    parsed: &Parsed,
    json: bool,
    out: &mut dyn Write,
) -> (Vec<Problem>, u8) {
    if servers.len() < 2 {
        let p = Problem {
            text: "diff needs at least two name servers in -n".into(),
            exit: EXIT_USAGE,
        };
        return (vec![p], EXIT_USAGE);
    }
    let plan = Plan {
        topics: parsed.has("topic").then(|| list_option(parsed, "topic")),
        namespaces: list_option(parsed, "namespace"),
        data_version: parsed.has("dataVersion"),
        ignore_config: list_option(parsed, "ignoreConfig"),
    };
    let nodes = gather(client.options(), servers, Arc::new(plan)).await;
    let differences = report::compare(&nodes);
    let text = if json {
        report::json(&nodes, &differences)
    } else {
        report::text(&nodes, &differences)
    };
    let _ = out.write_all(text.as_bytes());
    let problems: Vec<Problem> = nodes.into_iter().flat_map(|n| n.problems).collect();
    let exit = if !problems.is_empty() {
        EXIT_UNREACHABLE
    } else if !differences.is_empty() {
        EXIT_USAGE
    } else {
        EXIT_OK
    };
    (problems, exit)
}

/// Reads every node concurrently, each on its own client.
pub async fn gather(opts: &ClientOptions, servers: &[String], plan: Arc<Plan>) -> Vec<Node> {
    let mut tasks = tokio::task::JoinSet::new();
    for (i, addr) in servers.iter().enumerate() {
        let client = Client::new(opts.clone());
        let (addr, plan) = (addr.clone(), plan.clone());
        tasks.spawn(async move { (i, snapshot(client, addr, &plan).await) });
    }
    let mut nodes: Vec<(usize, Node)> = Vec::with_capacity(servers.len());
    while let Some(done) = tasks.join_next().await {
        nodes.push(done.expect("snapshot tasks do not panic"));
    }
    nodes.sort_by_key(|(i, _)| *i);
    nodes.into_iter().map(|(_, n)| n).collect()
}

/// One node's view; stops at the first failure that makes the rest unreadable.
async fn snapshot(mut client: Client, addr: String, plan: &Plan) -> Node {
    let mut node = Node {
        addr: addr.clone(),
        sections: Vec::new(),
        problems: Vec::new(),
    };
    let mut kinds: Vec<String> = vec!["clusters".into(), "brokers".into()];
    if plan.data_version {
        kinds.push("data versions".into());
    }
    kinds.push("routes".into());
    kinds.extend(plan.namespaces.iter().map(|ns| format!("kv {ns}")));
    kinds.push("config".into());
    let mut sections: BTreeMap<String, Section> = BTreeMap::new();
    if let Err(p) = read_all(&mut client, &addr, plan, &mut sections).await {
        node.problems.push(p);
    }
    node.sections = kinds
        .into_iter()
        .map(|k| {
            let s = sections.remove(&k);
            (k, s)
        })
        .collect();
    node
}

async fn read_all(
    client: &mut Client,
    addr: &str,
    plan: &Plan,
    sections: &mut BTreeMap<String, Section>,
) -> Result<(), Problem> {
    let info = client
        .call_ok(addr, &Request::new(request::GET_BROKER_CLUSTER_INFO))
        .await?;
    let info = ClusterInfo::decode(info.body_bytes()).map_err(|e| bad_answer(addr, e))?;
    let (clusters, brokers) = cluster_sections(&info);
    sections.insert("clusters".into(), clusters);
    sections.insert("brokers".into(), brokers);
    if plan.data_version {
        sections.insert(
            "data versions".into(),
            data_versions(client, addr, &info).await?,
        );
    }
    let topics = match &plan.topics {
        Some(t) => t.clone(),
        None => {
            let answer = client
                .call_ok(
                    addr,
                    &Request::new(request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
                )
                .await?;
            decode::topic_list(answer.body_bytes()).map_err(|e| bad_answer(addr, e))?
        }
    };
    sections.insert("routes".into(), routes(client, addr, topics).await?);
    for ns in &plan.namespaces {
        let req = Request::new(request::GET_KVLIST_BY_NAMESPACE).field("namespace", ns.as_str());
        let answer = client.call(addr, &req).await?;
        let section = match answer.code {
            response::SUCCESS => decode::kv_table(answer.body_bytes())
                .map_err(|e| bad_answer(addr, e))?
                .into_iter()
                .collect(),
            response::QUERY_NOT_FOUND => Section::new(),
            code => {
                return Err(refused(
                    addr,
                    request::GET_KVLIST_BY_NAMESPACE,
                    code,
                    answer.remark,
                ));
            }
        };
        sections.insert(format!("kv {ns}"), section);
    }
    let answer = client
        .call_ok(addr, &Request::new(request::GET_NAMESRV_CONFIG))
        .await?;
    let config = properties::parse(&String::from_utf8_lossy(answer.body_bytes()))
        .map_err(|e| bad_answer(addr, format!("unreadable configuration: {e}")))?;
    sections.insert(
        "config".into(),
        config
            .into_iter()
            .filter(|(k, _)| !plan.ignore_config.contains(k))
            .collect(),
    );
    Ok(())
}

fn refused(addr: &str, code: i32, answer: i32, remark: Option<String>) -> Problem {
    super::client::CallError {
        server: addr.to_owned(),
        code,
        failure: super::client::Failure::Refused {
            code: answer,
            remark,
        },
    }
    .into()
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

/// The route of every topic, pipelined; a topic without a route is absent.
async fn routes(client: &mut Client, addr: &str, topics: Vec<String>) -> Result<Section, Problem> {
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
pub fn route_text(route: &RouteInfo) -> String {
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
