//! Comparing the nodes' sections and printing the result, as text grouped by kind or as one
//! JSON document.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde_json::json;

use super::Node;

/// One key whose value is not the same on every node that could be read.
#[derive(Debug)]
pub(super) struct Difference {
    /// The kind (`brokers`, `routes`, `kv ORDER_TOPIC_CONFIG`, …).
    pub(crate) kind: String,
    /// The key (broker name, topic, KV key, config key, …).
    pub(crate) key: String,
    /// Each distinct value (`None` = absent) with the nodes holding it, in node order.
    pub(crate) groups: Vec<(Option<String>, Vec<String>)>,
}

/// Every difference, kind by kind in the nodes' section order, keys sorted.
pub(super) fn compare(nodes: &[Node]) -> Vec<Difference> {
    let mut out = Vec::new();
    let Some(first) = nodes.first() else {
        return out;
    };
    for (k, (kind, _)) in first.sections.iter().enumerate() {
        // Nodes that could not be read for this kind take no part in its comparison.
        let read: Vec<(&str, &super::Section)> = nodes
            .iter()
            .filter_map(|n| Some((n.addr.as_str(), n.sections.get(k)?.1.as_ref()?)))
            .collect();
        if read.len() < 2 {
            continue;
        }
        let keys: BTreeSet<&String> = read.iter().flat_map(|(_, s)| s.keys()).collect();
        for key in keys {
            let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
            for (addr, section) in &read {
                let value = section.get(key).cloned();
                match groups.iter_mut().find(|(v, _)| *v == value) {
                    Some((_, members)) => members.push((*addr).to_owned()),
                    None => groups.push((value, vec![(*addr).to_owned()])),
                }
            }
            if groups.len() > 1 {
                out.push(Difference {
                    kind: kind.clone(),
                    key: key.clone(),
                    groups,
                });
            }
        }
    }
    out
}

/// How many keys each kind had in all (the union over the nodes).
fn compared(nodes: &[Node]) -> Vec<(String, usize)> {
    let Some(first) = nodes.first() else {
        return Vec::new();
    };
    first
        .sections
        .iter()
        .enumerate()
        .map(|(k, (kind, _))| {
            let keys: BTreeSet<&String> = nodes
                .iter()
                .filter_map(|n| n.sections.get(k)?.1.as_ref())
                .flat_map(|s| s.keys())
                .collect();
            (kind.clone(), keys.len())
        })
        .collect()
}

/// The node-local config keys left out on any node, sorted.
fn node_local(nodes: &[Node]) -> Vec<&str> {
    let keys: BTreeSet<&str> = nodes
        .iter()
        .flat_map(|n| n.node_local.iter().map(String::as_str))
        .collect();
    keys.into_iter().collect()
}

/// The text report: the nodes and what was not compared, one block per kind with
/// differences, then a summary line.
pub(super) fn text(nodes: &[Node], differences: &[Difference]) -> String {
    let mut out = String::new();
    let addrs: Vec<&str> = nodes.iter().map(|n| n.addr.as_str()).collect();
    let _ = writeln!(out, "name servers: {}", addrs.join(", "));
    for n in nodes.iter().filter(|n| !n.problems.is_empty()) {
        let missing: Vec<&str> = n
            .sections
            .iter()
            .filter(|(_, s)| s.is_none())
            .map(|(k, _)| k.as_str())
            .collect();
        let _ = writeln!(
            out,
            "not compared on {}: {} (see stderr)",
            n.addr,
            missing.join(", ")
        );
    }
    let skipped = node_local(nodes);
    if !skipped.is_empty() {
        let _ = writeln!(out, "not compared (node-local): {}", skipped.join(", "));
    }
    let mut kinds: Vec<&str> = differences.iter().map(|d| d.kind.as_str()).collect();
    kinds.dedup();
    for kind in &kinds {
        let of_kind: Vec<&Difference> = differences.iter().filter(|d| d.kind == *kind).collect();
        let _ = writeln!(out, "\n{kind}: {} differ", of_kind.len());
        for d in of_kind {
            let _ = writeln!(out, "  {}", d.key);
            for (value, members) in &d.groups {
                let value = value.as_deref().unwrap_or("(absent)");
                let _ = writeln!(out, "    {}: {value}", members.join(", "));
            }
        }
    }
    let counts: Vec<String> = compared(nodes)
        .into_iter()
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    out.push('\n');
    if differences.is_empty() {
        let partial = nodes.iter().any(|n| !n.problems.is_empty());
        let scope = if partial { " where compared" } else { "" };
        let _ = writeln!(out, "agree{scope} ({})", counts.join(", "));
    } else {
        let per_kind: Vec<String> = kinds
            .iter()
            .map(|k| {
                format!(
                    "{k} {}",
                    differences.iter().filter(|d| d.kind == *k).count()
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "differ: {} of {} keys ({}; compared {})",
            differences.len(),
            compared(nodes).iter().map(|(_, n)| n).sum::<usize>(),
            per_kind.join(", "),
            counts.join(", ")
        );
    }
    out
}

/// The JSON report: one document.
pub(super) fn json(nodes: &[Node], differences: &[Difference]) -> String {
    let diffs: Vec<serde_json::Value> = differences
        .iter()
        .map(|d| {
            let values: Vec<serde_json::Value> = d
                .groups
                .iter()
                .map(|(v, members)| json!({"nameServers": members, "value": v}))
                .collect();
            json!({"kind": d.kind, "key": d.key, "values": values})
        })
        .collect();
    let errors: Vec<serde_json::Value> = nodes
        .iter()
        .flat_map(|n| {
            n.problems
                .iter()
                .map(|p| json!({"nameServer": n.addr, "error": p.text}))
        })
        .collect();
    let compared: serde_json::Map<String, serde_json::Value> = compared(nodes)
        .into_iter()
        .map(|(k, n)| (k, json!(n)))
        .collect();
    let doc = json!({
        "nameServers": nodes.iter().map(|n| n.addr.as_str()).collect::<Vec<_>>(),
        "agree": differences.is_empty() && errors.is_empty(),
        "differences": diffs,
        "errors": errors,
        "compared": compared,
        "nodeLocal": node_local(nodes),
    });
    let mut text = serde_json::to_string_pretty(&doc).expect("a Value always serializes");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin::diff::Section;

    fn node(addr: &str, config: &[(&str, &str)], node_local: &[&str]) -> Node {
        let section: Section = config
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Node {
            addr: addr.to_owned(),
            sections: vec![("config".to_owned(), Some(section))],
            problems: Vec::new(),
            node_local: node_local.iter().map(|k| (*k).to_owned()).collect(),
        }
    }

    #[test]
    fn node_local_keys_are_named_once_and_not_counted() {
        let nodes = [
            node(
                "a:1",
                &[("orderMessageEnable", "false")],
                &["kvConfigPath", "listenPort"],
            ),
            node(
                "b:2",
                &[("orderMessageEnable", "false")],
                &["listenPort", "rocketmqHome"],
            ),
        ];
        let differences = compare(&nodes);
        assert!(differences.is_empty());
        assert_eq!(
            text(&nodes, &differences),
            "name servers: a:1, b:2\n\
             not compared (node-local): kvConfigPath, listenPort, rocketmqHome\n\
             \n\
             agree (config 1)\n"
        );
        let doc: serde_json::Value = serde_json::from_str(&json(&nodes, &differences)).unwrap();
        assert_eq!(
            doc["nodeLocal"],
            json!(["kvConfigPath", "listenPort", "rocketmqHome"])
        );
        assert_eq!(doc["agree"], true);
    }

    #[test]
    fn without_node_local_keys_there_is_no_line() {
        let nodes = [
            node("a:1", &[("listenPort", "1")], &[]),
            node("b:2", &[("listenPort", "2")], &[]),
        ];
        let differences = compare(&nodes);
        let out = text(&nodes, &differences);
        assert!(!out.contains("node-local"), "{out}");
        assert!(out.contains("\nconfig: 1 differ\n  listenPort\n    a:1: 1\n    b:2: 2\n"));
        assert!(out.ends_with("differ: 1 of 1 keys (config 1; compared config 1)\n"));
    }
}
