//! mqadmin's output formats, byte for byte (Java's `TopicRouteSubCommand` and
//! `ClusterListSubCommand`): the fastjson pretty form of a
//! topic route, the `-l` route table, the `clusterList` tables, the configuration tables of
//! `getNamesrvConfig` and `getControllerConfig`, and Java's collection texts. The controller
//! commands' texts are in `controller`.

pub(crate) mod controller;

use std::fmt::Write as _;

use super::decode::{BrokerInfo, Ordered, QueueInfo, RouteInfo};
use crate::protocol::body::route::java_string_cmp;
use crate::protocol::json::{JsonStyle, JsonWriter};

/// A string as fastjson writes it by default (quoted, legacy escaping).
fn quoted(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    JsonWriter::new(&mut out, JsonStyle::Legacy).string(s);
    String::from_utf8(out).expect("the writer emits UTF-8")
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push('\t');
    }
}

/// A fastjson pretty list at `depth`: `[]`, or one item per line (items rendered at
/// `depth + 1` by `item`).
fn list<T>(depth: usize, items: &[T], item: impl Fn(usize, &T) -> String) -> String {
    if items.is_empty() {
        return "[]".into();
    }
    let mut out = String::from("[");
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(&mut out, depth + 1);
        out.push_str(&item(depth + 1, it));
    }
    newline(&mut out, depth);
    out.push(']');
    out
}

/// A fastjson pretty map: entries inline, separated by `,`, the closing brace on its own
/// line (`{}` when empty). Keys and values arrive rendered.
fn map(depth: usize, entries: Vec<(String, String)>) -> String {
    if entries.is_empty() {
        return "{}".into();
    }
    let mut out = String::from("{");
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&k);
        out.push(':');
        out.push_str(&v);
    }
    newline(&mut out, depth);
    out.push('}');
    out
}

/// A fastjson pretty bean: one `"name":value` per line, values rendered at `depth + 1`.
fn bean(depth: usize, props: Vec<(&str, String)>) -> String {
    let mut out = String::from("{");
    for (i, (name, value)) in props.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(&mut out, depth + 1);
        let _ = write!(out, "\"{name}\":{value}");
    }
    newline(&mut out, depth);
    out.push('}');
    out
}

fn broker_bean(depth: usize, b: &BrokerInfo) -> String {
    let addrs = b
        .addrs()
        .into_iter()
        .map(|(id, a)| (id.to_string(), quoted(a)))
        .collect();
    let mut props = vec![
        ("brokerAddrs", map(depth + 1, addrs)),
        ("brokerName", quoted(&b.broker_name)),
        ("cluster", quoted(&b.cluster)),
        ("enableActingMaster", b.enable_acting_master.to_string()),
    ];
    if let Some(zone) = &b.zone_name {
        props.push(("zoneName", quoted(zone)));
    }
    bean(depth, props)
}

fn queue_bean(depth: usize, q: &QueueInfo) -> String {
    bean(
        depth,
        vec![
            ("brokerName", quoted(&q.broker_name)),
            ("perm", q.perm.to_string()),
            ("readQueueNums", q.read_queue_nums.to_string()),
            ("topicSysFlag", q.topic_sys_flag.to_string()),
            ("writeQueueNums", q.write_queue_nums.to_string()),
        ],
    )
}

/// Any JSON value in fastjson's pretty style, objects as beans with sorted properties.
fn value_pretty(depth: usize, v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Object(m) => {
            let props: Vec<(&str, String)> = m
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.as_str(), value_pretty(depth + 1, v)))
                .collect();
            if props.is_empty() {
                "{}".into()
            } else {
                bean(depth, props)
            }
        }
        serde_json::Value::Array(items) => list(depth, items, value_pretty),
        serde_json::Value::String(s) => quoted(s),
        other => other.to_string(),
    }
}

/// `topicRoute`'s default output: the client-side `TopicRouteData` as fastjson 1.2.83 writes
/// it with `toJson(true)`, followed by a newline. (Static-topic mappings, which the name
/// server passes through, are written with sorted properties.)
pub(crate) fn route_pretty(r: &RouteInfo) -> String {
    let d = 1;
    let mut filters: Vec<(&String, &Vec<String>)> = r
        .filter_server_table
        .0
        .iter()
        .filter_map(|(k, v)| Some((k, v.as_ref()?)))
        .collect();
    crate::protocol::java_hash::sort_strings_by_java_order(
        &mut filters,
        crate::protocol::java_hash::Table::DEFAULT,
        |(k, _)| k,
    );
    let filters = filters
        .into_iter()
        .map(|(k, v)| (quoted(k), list(d + 1, v, |_, s| quoted(s))))
        .collect();
    let mut props = vec![
        ("brokerDatas", list(d, &r.broker_datas, broker_bean)),
        ("filterServerTable", map(d, filters)),
    ];
    if let Some(conf) = &r.order_topic_conf {
        props.push(("orderTopicConf", quoted(conf)));
    }
    props.push(("queueDatas", list(d, &r.queue_datas, queue_bean)));
    if let Some(m) = r
        .topic_queue_mapping_by_broker
        .as_ref()
        .filter(|m| !m.is_null())
    {
        props.push(("topicQueueMappingByBroker", value_pretty(d, m)));
    }
    let mut out = bean(0, props);
    out.push('\n');
    out
}

/// Java's `AbstractMap.toString()` of a broker's addresses: `{0=a:1, 1=b:2}`.
pub(crate) fn java_map_text(b: &BrokerInfo) -> String {
    let entries: Vec<String> = b
        .addrs()
        .into_iter()
        .map(|(id, a)| format!("{id}={a}"))
        .collect();
    format!("{{{}}}", entries.join(", "))
}

/// Java's `AbstractCollection.toString()`: `[a, b]`.
pub(crate) fn java_list_text(items: &[String]) -> String {
    format!("[{}]", items.join(", "))
}

fn route_row(out: &mut String, cols: [&str; 6]) {
    let _ = writeln!(
        out,
        "{:<45} {:<32} {:<50} {:<10} {:<11} {:<5}",
        cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]
    );
}

/// Each broker name's queue data; the last one of a name wins, as in the Java HashMap.
fn queues_by_broker(r: &RouteInfo) -> Vec<(&str, &QueueInfo)> {
    let mut queues: Vec<(&str, &QueueInfo)> = Vec::new();
    for q in &r.queue_datas {
        match queues.iter_mut().find(|(n, _)| *n == q.broker_name) {
            Some(slot) => slot.1 = q,
            None => queues.push((&q.broker_name, q)),
        }
    }
    queues
}

/// `topicRoute -l`: one row per broker group sorted by name, a rule of 158 dashes, and the
/// totals. Fails, as mqadmin does, when a broker group has no queue data.
pub(crate) fn route_list(r: &RouteInfo) -> Result<String, String> {
    let queues = queues_by_broker(r);
    let mut brokers: Vec<&BrokerInfo> = r.broker_datas.iter().collect();
    brokers.sort_by(|a, b| java_string_cmp(&a.broker_name, &b.broker_name));
    let mut out = String::new();
    route_row(
        &mut out,
        [
            "#ClusterName",
            "#BrokerName",
            "#BrokerAddrs",
            "#ReadQueue",
            "#WriteQueue",
            "#Perm",
        ],
    );
    let (mut total_read, mut total_write) = (0i32, 0i32);
    for b in brokers {
        let Some((_, q)) = queues.iter().find(|(n, _)| *n == b.broker_name) else {
            return Err(format!(
                "broker {} of the route has no queue data",
                b.broker_name
            ));
        };
        total_read = total_read.wrapping_add(q.read_queue_nums);
        total_write = total_write.wrapping_add(q.write_queue_nums);
        route_row(
            &mut out,
            [
                &b.cluster,
                &b.broker_name,
                &java_map_text(b),
                &q.read_queue_nums.to_string(),
                &q.write_queue_nums.to_string(),
                &q.perm.to_string(),
            ],
        );
    }
    out.push_str(&"-".repeat(158));
    out.push('\n');
    route_row(
        &mut out,
        [
            "Total:",
            &queues.len().to_string(),
            "",
            &total_read.to_string(),
            &total_write.to_string(),
            "",
        ],
    );
    Ok(out)
}

/// Keys in the order of a Java `HashMap` holding them (document order within a bucket).
pub(crate) fn java_order<T>(entries: &Ordered<T>) -> Vec<&(String, T)> {
    let mut v: Vec<&(String, T)> = entries.0.iter().collect();
    crate::protocol::java_hash::sort_strings_by_java_order(
        &mut v,
        crate::protocol::java_hash::Table::DEFAULT,
        |e| &e.0,
    );
    v
}

/// The configuration tables of `getNamesrvConfig` / `getControllerConfig`: mqadmin keeps the
/// answers in a `HashMap(4)` by address, each in a `Properties` (a `ConcurrentHashMap` of 16
/// buckets), prints them in those tables' order, each key padded to 50 columns.
pub(crate) fn config_tables(mut configs: Vec<(String, Vec<(String, String)>)>) -> String {
    use crate::protocol::java_hash::{
        Table, concurrent_order, sort_strings_by_java_order, string_hash,
    };
    sort_strings_by_java_order(&mut configs, Table::HashMap(4), |(a, _)| a);
    let mut text = String::new();
    for (addr, entries) in configs {
        let _ = writeln!(text, "============{addr}============");
        for (k, v) in concurrent_order(entries, 16, |(k, _)| string_hash(k)) {
            let _ = writeln!(text, "{k:<50}=  {v}");
        }
    }
    text
}

/// `UtilAll.frontStringAtLeast`: the first `n` characters.
pub(crate) fn front(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

#[cfg(test)]
mod tests;
