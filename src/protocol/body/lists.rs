//! The smaller response bodies: `TopicList`, `ClusterInfo`, `KVTable` and
//! `GetBrokerMemberGroupResponseBody` (Java's classes of those names, encoded by
//! `RemotingSerializable#encode`), all written with the legacy writer in Java's collection order.

use std::collections::BTreeMap;

use super::route::{BrokerData, Name, write_addrs};
use crate::protocol::java_hash::{concurrent_order, string_hash};
use crate::protocol::json::{JsonStyle, JsonWriter};

/// `{"brokerAddr":…,"topicList":[…]}`; `TopicList` holds a `ConcurrentHashMap.newKeySet()`,
/// and `topics` are the names in the order Java adds them to it (no repeats).
pub fn topic_list<S: AsRef<str>>(topics: Vec<S>, broker_addr: Option<&str>) -> Vec<u8> {
    let topics = concurrent_order(topics, 16, |t| string_hash(t.as_ref()));
    let mut out =
        Vec::with_capacity(16 + topics.iter().map(|t| t.as_ref().len() + 3).sum::<usize>());
    let mut w = JsonWriter::new(&mut out, JsonStyle::Legacy);
    w.punct(b'{');
    if let Some(addr) = broker_addr {
        w.key("brokerAddr");
        w.string(addr);
        w.punct(b',');
    }
    w.key("topicList");
    w.string_array(topics.iter().map(|t| t.as_ref()));
    w.punct(b'}');
    out
}

/// `{"brokerAddrTable":{name:BrokerData},"clusterAddrTable":{cluster:[names]}}`, everything
/// given in the Java tables' order (see `RouteTable::cluster_snapshot`).
pub(crate) fn cluster_info(brokers: Vec<&BrokerData>, clusters: Vec<(&str, Vec<&str>)>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + 200 * brokers.len());
    let mut w = JsonWriter::new(&mut out, JsonStyle::Legacy);
    w.raw(b"{\"brokerAddrTable\":{");
    w.separated(brokers, |w, bd| {
        w.str_key(&bd.broker_name);
        bd.write_json(w);
    });
    w.raw(b"},\"clusterAddrTable\":{");
    w.separated(clusters, |w, (cluster, names)| {
        w.str_key(cluster);
        w.string_array(names);
    });
    w.raw(b"}}");
    out
}

/// `{"table":{k:v,…}}` for one KV namespace, its entries given in Java's `HashMap` order.
pub(crate) fn kv_table<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let entries: Vec<(&str, &str)> = entries.into_iter().collect();
    let mut out = Vec::with_capacity(
        16 + entries
            .iter()
            .map(|(k, v)| k.len() + v.len() + 6)
            .sum::<usize>(),
    );
    let mut w = JsonWriter::new(&mut out, JsonStyle::Legacy);
    w.raw(b"{\"table\":{");
    w.string_entries(entries);
    w.raw(b"}}");
    out
}

/// `{"brokerMemberGroup":{"brokerAddrs":{…},"brokerName":…,"cluster":…}}`.
pub(crate) fn broker_member_group(
    cluster: &str,
    broker_name: &str,
    addrs: &BTreeMap<i64, Name>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + 32 * addrs.len());
    let mut w = JsonWriter::new(&mut out, JsonStyle::Legacy);
    w.raw(b"{\"brokerMemberGroup\":{\"brokerAddrs\":");
    write_addrs(&mut w, addrs);
    w.raw(b",\"brokerName\":");
    w.string(broker_name);
    w.raw(b",\"cluster\":");
    w.string(cluster);
    w.raw(b"}}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_lists_match_the_captures() {
        assert_eq!(
            topic_list(Vec::<&str>::new(), None),
            br#"{"topicList":[]}"#.to_vec()
        );
        assert_eq!(
            topic_list(vec!["TopicA", "TopicB"], None),
            br#"{"topicList":["TopicB","TopicA"]}"#.to_vec()
        );
        assert_eq!(
            topic_list(vec!["DefaultCluster", "broker-a"], Some("127.0.0.1:10911")),
            br#"{"brokerAddr":"127.0.0.1:10911","topicList":["broker-a","DefaultCluster"]}"#
                .to_vec()
        );
    }

    #[test]
    fn cluster_info_matches_the_capture() {
        let bd = BrokerData {
            cluster: "DefaultCluster".into(),
            broker_name: "broker-a".into(),
            addrs: [(0, "127.0.0.1:10911".into()), (1, "127.0.0.1:10921".into())].into(),
            zone_name: None,
            enable_acting_master: false,
        };
        assert_eq!(
            String::from_utf8(cluster_info(
                vec![&bd],
                vec![("DefaultCluster", vec!["broker-a"])]
            ))
            .unwrap(),
            r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}"#
        );
        assert_eq!(
            cluster_info(vec![], vec![]),
            br#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#.to_vec()
        );
        assert_eq!(
            String::from_utf8(broker_member_group("DefaultCluster", "broker-a", &bd.addrs))
                .unwrap(),
            r#"{"brokerMemberGroup":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"}}"#
        );
    }

    #[test]
    fn kv_tables() {
        assert_eq!(
            kv_table([("TopicA", "broker-a:4")]),
            br#"{"table":{"TopicA":"broker-a:4"}}"#.to_vec()
        );
        assert_eq!(kv_table([]), br#"{"table":{}}"#.to_vec());
    }
}
