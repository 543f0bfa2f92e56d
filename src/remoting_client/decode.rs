//! The bodies the admin tool reads, decoded the way a Java client's fastjson reads them:
//! fastjson's unquoted numeric keys accepted, lenient scalars, unknown properties ignored,
//! and maps kept in document order so outputs can reproduce Java's iteration order.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::protocol::body::lenient;

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {detail}")]
pub(crate) struct BodyError {
    /// Which body.
    pub(crate) what: &'static str,
    /// The parser's message.
    pub(crate) detail: String,
}

/// Decodes a JSON-object body of fastjson's output into `T`, naming the body as `what`.
pub(super) fn parse<T: DeserializeOwned>(what: &'static str, body: &[u8]) -> Result<T, BodyError> {
    let err = |detail: String| BodyError { what, detail };
    if body.is_empty() {
        return Err(err("the answer has no body".into()));
    }
    lenient::expect_object(body).map_err(|e| err(e.to_string()))?;
    serde_json::from_slice(&lenient::quote_numeric_keys(body)).map_err(|e| err(e.to_string()))
}

/// A JSON object's entries in document order (a `null` object reads as empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ordered<T>(pub Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<T> Ordered<T> {
    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&T> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out: Vec<(String, T)> = Vec::new();
                let mut at: std::collections::HashMap<String, usize> = Default::default();
                while let Some((k, v)) = map.next_entry::<String, T>()? {
                    // A repeated key keeps its last value in its first place, as a HashMap.
                    match at.get(&k) {
                        Some(&i) => out[i].1 = v,
                        None => {
                            at.insert(k.clone(), out.len());
                            out.push((k, v));
                        }
                    }
                }
                Ok(Ordered(out))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Ordered(Vec::new()))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

fn strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<Option<String>>>::deserialize(d)?
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .collect())
}

fn string_or_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(lenient::opt_string(d)?.unwrap_or_default())
}

/// One broker group as a client reads it (`BrokerData`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BrokerInfo {
    /// The cluster.
    #[serde(default, deserialize_with = "string_or_empty")]
    pub(crate) cluster: String,
    /// The group's name.
    #[serde(default, deserialize_with = "string_or_empty")]
    pub(crate) broker_name: String,
    /// Broker id → address, in document order.
    #[serde(default)]
    pub(crate) broker_addrs: Ordered<String>,
    /// Slave-acting-master mode.
    #[serde(default, deserialize_with = "lenient::bool_or_false")]
    pub(crate) enable_acting_master: bool,
    /// The zone, if any.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub(crate) zone_name: Option<String>,
}

impl BrokerInfo {
    /// `(id, address)` pairs in Java `HashMap<Long, String>` order; keys that are not numbers
    /// (never sent by a name server) are skipped.
    pub(crate) fn addrs(&self) -> Vec<(i64, &str)> {
        let mut out: Vec<(i64, &str)> = self
            .broker_addrs
            .0
            .iter()
            .filter_map(|(k, v)| Some((k.trim().parse().ok()?, v.as_str())))
            .collect();
        crate::protocol::java_hash::sort_by_java_order(
            &mut out,
            crate::protocol::java_hash::Table::DEFAULT,
            |(id, _)| crate::protocol::java_hash::long_hash(*id),
        );
        out
    }

    /// The master's address, else any address (Java's `selectBrokerAddr`, minus randomness).
    pub(crate) fn select_addr(&self) -> Option<&str> {
        let addrs = self.addrs();
        addrs
            .iter()
            .find(|(id, _)| *id == 0)
            .or(addrs.first())
            .map(|(_, a)| *a)
    }
}

/// The body of GET_BROKER_CLUSTER_INFO.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClusterInfo {
    /// Broker name → group.
    #[serde(default)]
    pub(crate) broker_addr_table: Ordered<BrokerInfo>,
    /// Cluster name → broker names.
    #[serde(default)]
    pub(crate) cluster_addr_table: Ordered<Vec<String>>,
}

impl ClusterInfo {
    /// Decodes the body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        parse("cluster info", body)
    }
}

/// One broker group's queues of a topic (`QueueData`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct QueueInfo {
    /// The broker group.
    #[serde(default, deserialize_with = "string_or_empty")]
    pub(crate) broker_name: String,
    /// Readable queues.
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    pub(crate) read_queue_nums: i32,
    /// Writable queues.
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    pub(crate) write_queue_nums: i32,
    /// Permission bits.
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    pub(crate) perm: i32,
    /// `TopicSysFlag` bits.
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    pub(crate) topic_sys_flag: i32,
}

/// The body of GET_ROUTEINFO_BY_TOPIC (`TopicRouteData`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RouteInfo {
    /// Broker groups serving the topic.
    #[serde(default)]
    pub(crate) broker_datas: Vec<BrokerInfo>,
    /// Queues per broker group.
    #[serde(default)]
    pub(crate) queue_datas: Vec<QueueInfo>,
    /// Filter servers by broker address.
    #[serde(default)]
    pub(crate) filter_server_table: Ordered<Option<Vec<String>>>,
    /// `brokerName:queueNum;…` of an order topic.
    #[serde(default, deserialize_with = "lenient::opt_string")]
    pub(crate) order_topic_conf: Option<String>,
    /// Static-topic mappings, kept as JSON.
    #[serde(default)]
    pub(crate) topic_queue_mapping_by_broker: Option<serde_json::Value>,
}

impl RouteInfo {
    /// Decodes the body.
    pub fn decode(body: &[u8]) -> Result<Self, BodyError> {
        parse("topic route", body)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TopicListWire {
    #[serde(default, deserialize_with = "strings")]
    topic_list: Vec<String>,
}

/// The topics of a `TopicList` body, in document order.
pub(crate) fn topic_list(body: &[u8]) -> Result<Vec<String>, BodyError> {
    Ok(parse::<TopicListWire>("topic list", body)?.topic_list)
}

#[derive(Deserialize)]
struct KvTableWire {
    #[serde(default)]
    table: Ordered<Option<String>>,
}

/// The entries of a `KVTable` body (`{"table":{…}}`), in document order.
pub(crate) fn kv_table(body: &[u8]) -> Result<Vec<(String, String)>, BodyError> {
    let wire: KvTableWire = parse("KV table", body)?;
    Ok(wire
        .table
        .0
        .into_iter()
        .map(|(k, v)| (k, v.unwrap_or_else(|| "null".into())))
        .collect())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupListWire {
    #[serde(default, deserialize_with = "strings")]
    group_list: Vec<String>,
}

/// The groups of a `GroupList` body.
pub(crate) fn group_list(body: &[u8]) -> Result<Vec<String>, BodyError> {
    Ok(parse::<GroupListWire>("group list", body)?.group_list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_legacy_cluster_info_in_document_order() {
        let body = br#"{"brokerAddrTable":{"b":{"brokerAddrs":{1:"x:2",0:"x:1"},"brokerName":"b","cluster":"C","enableActingMaster":false},"a":{"brokerAddrs":{},"brokerName":"a","cluster":"C"}},"clusterAddrTable":{"C":["b","a"]}}"#;
        let info = ClusterInfo::decode(body).unwrap();
        let names: Vec<&str> = info
            .broker_addr_table
            .0
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(names, ["b", "a"]);
        let b = info.broker_addr_table.get("b").unwrap();
        assert_eq!(b.addrs(), vec![(0, "x:1"), (1, "x:2")]);
        assert_eq!(b.select_addr(), Some("x:1"));
        assert_eq!(info.cluster_addr_table.get("C").unwrap(), &["b", "a"]);
    }

    #[test]
    fn reads_routes_lists_and_tables() {
        let route = RouteInfo::decode(br#"{"brokerDatas":[{"brokerAddrs":{"0":"a:1"},"brokerName":"b","cluster":"C","enableActingMaster":false}],"filterServerTable":{},"orderTopicConf":"b:4","queueDatas":[{"brokerName":"b","perm":"6","readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}"#).unwrap();
        assert_eq!(route.queue_datas[0].perm, 6);
        assert_eq!(route.order_topic_conf.as_deref(), Some("b:4"));
        assert_eq!(
            topic_list(br#"{"topicList":["B","A"]}"#).unwrap(),
            ["B", "A"]
        );
        assert_eq!(
            kv_table(br#"{"table":{"k":"v","n":null}}"#).unwrap(),
            vec![("k".into(), "v".into()), ("n".into(), "null".into())]
        );
        assert_eq!(group_list(br#"{"groupList":["g"]}"#).unwrap(), ["g"]);
        assert!(RouteInfo::decode(b"").is_err());
        assert!(RouteInfo::decode(b"[1]").is_err());
        assert!(ClusterInfo::decode(b"{\"brokerAddrTable\":").is_err());
    }
}
