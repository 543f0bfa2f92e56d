//! Route data: `QueueData`, `BrokerData` and the `TopicRouteData` body of
//! GET_ROUTEINFO_BY_TOPIC, written in either fastjson style (`ClientRequestProcessor#getRouteInfoByTopic`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;

use super::lenient;
use super::mapping::MappingInfo;
use super::scan::Scanner;
use crate::protocol::java_hash::{
    Table, long_hash, sort_by_java_order, sort_strings_by_java_order,
};
use crate::protocol::json::{JsonStyle, JsonWriter};

/// An interned name (topic, broker, cluster, address): cloning is a reference-count bump.
pub type Name = Arc<str>;

/// PERM_WRITE.
pub(crate) const PERM_WRITE: i32 = 2;
/// PERM_READ.
pub(crate) const PERM_READ: i32 = 4;

/// One broker group's queues of a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueData {
    /// The broker group serving the queues.
    pub(crate) broker_name: Name,
    /// Readable queues.
    pub(crate) read_queue_nums: i32,
    /// Writable queues.
    pub(crate) write_queue_nums: i32,
    /// Permission bits.
    pub(crate) perm: i32,
    /// `TopicSysFlag` bits.
    pub(crate) topic_sys_flag: i32,
}

impl QueueData {
    /// Whether the write bit is set.
    pub(crate) fn is_writeable(&self) -> bool {
        self.perm & PERM_WRITE == PERM_WRITE
    }

    /// Writes `{"brokerName":…,"perm":…,"readQueueNums":…,"topicSysFlag":…,"writeQueueNums":…}`.
    pub(crate) fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.raw(b"{\"brokerName\":");
        w.string(&self.broker_name);
        w.raw(b",\"perm\":");
        w.int(self.perm as i64);
        w.raw(b",\"readQueueNums\":");
        w.int(self.read_queue_nums as i64);
        w.raw(b",\"topicSysFlag\":");
        w.int(self.topic_sys_flag as i64);
        w.raw(b",\"writeQueueNums\":");
        w.int(self.write_queue_nums as i64);
        w.punct(b'}');
    }
}

/// A broker group: its cluster, name and the address of each member by broker id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerData {
    /// The cluster the group first registered under.
    pub(crate) cluster: Name,
    /// The group's name.
    pub(crate) broker_name: Name,
    /// Broker id → address; id 0 is the master.
    pub(crate) addrs: BTreeMap<i64, Name>,
    /// The zone from the last registration's `__ZONE_NAME`.
    pub(crate) zone_name: Option<Name>,
    /// Whether the group runs in slave-acting-master mode.
    pub(crate) enable_acting_master: bool,
}

impl BrokerData {
    /// Writes the JSON form: `brokerAddrs`, `brokerName`, `cluster`, `enableActingMaster` and,
    /// when set, `zoneName`.
    pub(crate) fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.raw(b"{\"brokerAddrs\":");
        write_addrs(w, &self.addrs);
        w.raw(b",\"brokerName\":");
        w.string(&self.broker_name);
        w.raw(b",\"cluster\":");
        w.string(&self.cluster);
        w.raw(b",\"enableActingMaster\":");
        w.bool(self.enable_acting_master);
        w.opt_string(b",\"zoneName\":", self.zone_name.as_deref());
        w.punct(b'}');
    }
}

/// A broker-id → address map in the iteration order of Java's `HashMap<Long, String>`.
pub(crate) fn addrs_in_java_order(addrs: &BTreeMap<i64, Name>) -> Vec<(i64, &Name)> {
    let mut entries: Vec<(i64, &Name)> = addrs.iter().map(|(k, v)| (*k, v)).collect();
    sort_by_java_order(&mut entries, Table::DEFAULT, |(id, _)| long_hash(*id));
    entries
}

/// Writes a broker-id → address map: unquoted keys in Java `HashMap` order (legacy) or quoted
/// keys sorted numerically (standard).
pub(crate) fn write_addrs(w: &mut JsonWriter<'_>, addrs: &BTreeMap<i64, Name>) {
    let entries: Vec<(i64, &Name)> = match w.style() {
        JsonStyle::Legacy => addrs_in_java_order(addrs),
        JsonStyle::Standard => addrs.iter().map(|(k, v)| (*k, v)).collect(),
    };
    w.punct(b'{');
    w.separated(entries, |w, (id, addr)| {
        w.num_key(id);
        w.string(addr);
    });
    w.punct(b'}');
}

/// The body of a successful GET_ROUTEINFO_BY_TOPIC, borrowing from the route table.
#[derive(Debug, Default)]
pub struct TopicRouteData<'a> {
    /// Queue data per broker group, in output order.
    pub(crate) queue_datas: Vec<&'a QueueData>,
    /// Copies of the groups' broker data, in output order (owned when rewritten).
    pub(crate) broker_datas: Vec<Cow<'a, BrokerData>>,
    /// Filter servers by broker address (`None` values are omitted, as Java's null values).
    pub(crate) filter_server_table: Vec<(Name, Option<&'a [String]>)>,
    /// `brokerName:queueNum;…` from the ORDER_TOPIC_CONFIG namespace.
    pub(crate) order_topic_conf: Option<&'a str>,
    /// Static-topic mappings by broker name.
    pub(crate) mappings: Option<Vec<(&'a str, &'a MappingInfo)>>,
}

impl TopicRouteData<'_> {
    /// Encodes the body in `style`. Lists keep their order; maps are sorted by key in
    /// standard style and put in Java hash order in legacy style.
    pub fn encode(&self, style: JsonStyle) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + 240 * self.broker_datas.len());
        let mut w = JsonWriter::new(&mut out, style);
        w.raw(b"{\"brokerDatas\":[");
        w.separated(self.broker_datas.iter(), |w, bd| {
            bd.write_json(w);
        });
        w.raw(b"],\"filterServerTable\":{");
        let mut filters: Vec<_> = self
            .filter_server_table
            .iter()
            .filter_map(|(addr, list)| list.map(|l| (&**addr, l)))
            .collect();
        sort_map_entries(&mut filters, style, |(k, _)| k);
        w.separated(filters, |w, (addr, list)| {
            w.str_key(addr);
            w.string_array(list.iter().map(String::as_str));
        });
        w.punct(b'}');
        w.opt_string(b",\"orderTopicConf\":", self.order_topic_conf);
        w.raw(b",\"queueDatas\":[");
        w.separated(self.queue_datas.iter(), |w, qd| {
            qd.write_json(w);
        });
        w.punct(b']');
        if let Some(mappings) = &self.mappings {
            w.raw(b",\"topicQueueMappingByBroker\":{");
            let mut entries = mappings.clone();
            sort_map_entries(&mut entries, style, |(k, _)| k);
            w.separated(entries, |w, (bname, info)| {
                w.str_key(bname);
                info.write_json(w);
            });
            w.punct(b'}');
        }
        w.punct(b'}');
        out
    }
}

/// Orders the entries of a string-keyed map: sorted (standard, `MapSortField`) or in the
/// order of a default Java `HashMap` (legacy).
pub(crate) fn sort_map_entries<T>(entries: &mut [T], style: JsonStyle, key: impl Fn(&T) -> &str) {
    match style {
        JsonStyle::Standard => entries.sort_by(|a, b| java_string_cmp(key(a), key(b))),
        JsonStyle::Legacy => sort_strings_by_java_order(entries, Table::DEFAULT, key),
    }
}

/// Java's `String.compareTo`: by UTF-16 code units.
pub(crate) fn java_string_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct QueueDataWire {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    broker_name: Option<String>,
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    read_queue_nums: i32,
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    write_queue_nums: i32,
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    perm: i32,
    // 4.x's `topicSynFlag` is not read: 5.x's QueueData has no such property.
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    topic_sys_flag: i32,
}

/// A queue data entry as sent in a REGISTER_TOPIC_IN_NAMESRV body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueDataInput {
    /// The broker group; `None` if the sender left it out.
    pub broker_name: Option<String>,
    /// Readable queues.
    pub read_queue_nums: i32,
    /// Writable queues.
    pub write_queue_nums: i32,
    /// Permission bits.
    pub perm: i32,
    /// `TopicSysFlag` bits.
    pub topic_sys_flag: i32,
}

/// Reads the `queueDatas` of a `TopicRouteData` body; the rest of the body is only checked
/// for syntax. A missing or null `queueDatas` gives an empty list.
pub(crate) fn decode_queue_datas(json: &[u8]) -> Result<Vec<QueueDataInput>, String> {
    let mut s = Scanner::new(json);
    let mut it = s.begin_object().map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    while let Some(key) = s.next_key(&mut it).map_err(|e| e.to_string())? {
        let span = s.value_span().map_err(|e| e.to_string())?;
        if key == "queueDatas" {
            // Elements go through `Value` so that a repeated property keeps its last value,
            // as in fastjson; a null element stops registration where it stands, as Java's
            // NullPointerException does (an entry without a broker name).
            let list: Option<Vec<Option<serde_json::Value>>> =
                serde_json::from_slice(&json[span]).map_err(|e| e.to_string())?;
            out = list
                .unwrap_or_default()
                .into_iter()
                .map(|q| {
                    let Some(q) = q else {
                        return Ok(QueueDataInput {
                            broker_name: None,
                            read_queue_nums: 0,
                            write_queue_nums: 0,
                            perm: 0,
                            topic_sys_flag: 0,
                        });
                    };
                    let q = QueueDataWire::deserialize(q).map_err(|e| e.to_string())?;
                    Ok(QueueDataInput {
                        broker_name: q.broker_name,
                        read_queue_nums: q.read_queue_nums,
                        write_queue_nums: q.write_queue_nums,
                        perm: q.perm,
                        topic_sys_flag: q.topic_sys_flag,
                    })
                })
                .collect::<Result<_, String>>()?;
        }
    }
    s.end().map_err(|e| e.to_string())?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(addrs: &[(i64, &str)]) -> BrokerData {
        BrokerData {
            cluster: "DefaultCluster".into(),
            broker_name: "broker-a".into(),
            addrs: addrs.iter().map(|(id, a)| (*id, Name::from(*a))).collect(),
            zone_name: None,
            enable_acting_master: false,
        }
    }

    fn queue() -> QueueData {
        QueueData {
            broker_name: "broker-a".into(),
            read_queue_nums: 4,
            write_queue_nums: 4,
            perm: 6,
            topic_sys_flag: 0,
        }
    }

    #[test]
    fn encodes_the_captured_route_in_both_styles() {
        let q = queue();
        let route = TopicRouteData {
            queue_datas: vec![&q],
            broker_datas: vec![Cow::Owned(broker(&[
                (0, "127.0.0.1:10911"),
                (1, "127.0.0.1:10921"),
            ]))],
            ..Default::default()
        };
        assert_eq!(
            String::from_utf8(route.encode(JsonStyle::Standard)).unwrap(),
            r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        assert_eq!(
            String::from_utf8(route.encode(JsonStyle::Legacy)).unwrap(),
            r#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
    }

    #[test]
    fn optional_parts_appear_only_when_set() {
        let q = queue();
        let fs = vec!["f:1".to_owned()];
        let info = MappingInfo::from_json(br#"{"bname":"broker-a","topic":"T"}"#).unwrap();
        let mut bd = broker(&[(0, "a:1")]);
        bd.zone_name = Some("z1".into());
        let route = TopicRouteData {
            queue_datas: vec![&q],
            broker_datas: vec![Cow::Owned(bd)],
            filter_server_table: vec![("a:1".into(), Some(&fs)), ("b:1".into(), None)],
            order_topic_conf: Some("broker-a:4"),
            mappings: Some(vec![("broker-a", &info)]),
        };
        let json = String::from_utf8(route.encode(JsonStyle::Standard)).unwrap();
        assert!(json.contains(r#""zoneName":"z1"}"#), "{json}");
        assert!(
            json.contains(
                r#""filterServerTable":{"a:1":["f:1"]},"orderTopicConf":"broker-a:4","queueDatas""#
            ),
            "{json}"
        );
        assert!(json.contains(r#""topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{},"dirty":false,"epoch":0,"scope":"__global__","topic":"T","totalQueues":0}}}"#), "{json}");
    }

    #[test]
    fn reads_queue_datas_as_fastjson_reads_them_into_5x_classes() {
        let body = br#"{"brokerDatas":[{"brokerAddrs":{0:"a:1"}}],"filterServerTable":{},"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":8,"topicSysFlag":1,"writeQueueNums":8},{"brokerName":"c","topicSynFlag":1,"perm":6,"perm":4}]}"#;
        let qds = decode_queue_datas(body).unwrap();
        assert_eq!(qds.len(), 2);
        assert_eq!(qds[0].topic_sys_flag, 1);
        assert_eq!(qds[0].broker_name.as_deref(), Some("b"));
        // 4.x's misspelt flag is no property of 5.x's QueueData; a repeated one keeps its
        // last value.
        assert_eq!((qds[1].topic_sys_flag, qds[1].perm), (0, 4));
        // A null element reads as an entry without a broker, which stops registration.
        let qds = decode_queue_datas(br#"{"queueDatas":[{"brokerName":"b"},null]}"#).unwrap();
        assert_eq!(qds[1].broker_name, None);
        assert!(decode_queue_datas(b"{\"queueDatas\":[1]}").is_err());
        assert!(decode_queue_datas(b"{}").unwrap().is_empty());
    }
}
