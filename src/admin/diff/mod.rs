//! `nsadmin diff -n 'a;b;c'`: asks every name server for its view of the cluster and prints
//! what differs, grouped by kind, naming the nodes (apache/rocketmq#4807: name servers never
//! talk to each other, so a registration that reached one node and not another goes
//! unnoticed).
//!
//! Each node is read concurrently on its own connection: cluster info (106), the topic list
//! (206) or the `-t` topics, every topic's route (105, pipelined), the `-s` KV namespaces
//! (219), the live configuration (319) and, with `--dataVersion`, each broker's data version
//! (322). Every kind becomes a *section* of `key → canonical text`; sections are compared
//! key by key. Exit: 0 agree, 1 differ, 2 a node could not be asked (fully). Config keys
//! that identify the node (its ports, addresses and paths: `node_local`) are left out and
//! named, unless `--compareAll`.
//!
//! `--dataVersion` is opt-in because a 5.x name server (Java's and ours) counts
//! QUERY_DATA_VERSION as a heartbeat of the broker it names: a `diff` from cron would keep a
//! hung broker registered for as long as the job runs.

mod node_local;
mod read;
mod report;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use super::options::Parsed;
use super::{EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, Problem};
use crate::remoting_client::{Client, ClientOptions};

/// `key → canonical value` of one kind of data on one node.
pub(crate) type Section = BTreeMap<String, String>;

/// What to compare.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    /// Only these topics (`-t`), else every topic each node lists.
    pub(crate) topics: Option<Vec<String>>,
    /// KV namespaces to compare (`-s`).
    pub(crate) namespaces: Vec<String>,
    /// Compare brokers' data versions (`--dataVersion`).
    pub(crate) data_version: bool,
    /// Config keys left out (`--ignoreConfig`).
    pub(crate) ignore_config: Vec<String>,
    /// Compare the node-local config keys too (`--compareAll`).
    pub(crate) compare_all: bool,
}

/// One node's answers: sections in a fixed order; `None` where the node could not be read.
#[derive(Debug)]
pub(crate) struct Node {
    /// The node's address.
    pub(crate) addr: String,
    /// `(kind, section)` pairs, the same kinds in the same order for every node.
    pub(crate) sections: Vec<(String, Option<Section>)>,
    /// What went wrong while reading it.
    pub(crate) problems: Vec<Problem>,
    /// The node-local config keys it listed, left out of the comparison.
    pub(crate) node_local: Vec<String>,
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
pub(crate) async fn run(
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
        compare_all: parsed.has("compareAll"),
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
pub(crate) async fn gather(opts: &ClientOptions, servers: &[String], plan: Arc<Plan>) -> Vec<Node> {
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

/// One node's view. A refused request leaves only its kind out; a node that cannot be
/// reached is not asked further.
async fn snapshot(mut client: Client, addr: String, plan: &Plan) -> Node {
    let mut problems = Vec::new();
    let mut sections = read::sections(&mut client, &addr, plan, &mut problems).await;
    let node_local = match sections.get_mut("config") {
        Some(config) if !plan.compare_all => node_local::split_off(config),
        _ => Vec::new(),
    };
    let mut kinds: Vec<String> = vec!["clusters".into(), "brokers".into()];
    if plan.data_version {
        kinds.push("data versions".into());
    }
    kinds.push("routes".into());
    kinds.extend(plan.namespaces.iter().map(|ns| format!("kv {ns}")));
    kinds.push("config".into());
    Node {
        addr,
        sections: kinds
            .into_iter()
            .map(|k| {
                let s = sections.remove(&k);
                (k, s)
            })
            .collect(),
        problems,
        node_local,
    }
}
