//! The REGISTER_BROKER request a broker sends, built the way a 5.x Java broker writes it
//! (`BrokerOuterAPI#registerBrokerAll`): the header's ext fields and the JSON body, for the
//! tests, benches, fuzz seeds and example load generators that play a broker. The server never
//! builds one; it decodes them with [`RegisterBody`](super::RegisterBody).

use std::fmt::Write;

/// One broker's registration: header fields and a JSON body with its topics.
///
/// Defaults are a 5.x master: `brokerId` 0, `haServerAddr` `127.0.0.1:10912`, data version
/// counter 1 at 1700000000000, and a `mappingDataVersion` with the two empty mapping maps.
#[derive(Debug, Clone)]
pub struct RegisterBroker {
    cluster: String,
    broker_name: String,
    broker_addr: String,
    ha_server_addr: String,
    broker_id: u64,
    enable_acting_master: bool,
    /// Header fields after the usual ones, such as `heartbeatTimeoutMillis` or `zoneName`.
    extra: Vec<(&'static str, String)>,
    /// The rendered `topicConfigTable` entries, comma-separated.
    table: String,
    counter: i64,
    timestamp: i64,
    /// `None` writes the 4.x shape: no `mappingDataVersion` and no mapping maps.
    mapping_timestamp: Option<i64>,
}

impl RegisterBroker {
    /// A master named `broker_name` at `broker_addr` in `cluster`, with no topics yet.
    pub fn new(cluster: &str, broker_name: &str, broker_addr: &str) -> RegisterBroker {
        RegisterBroker {
            cluster: cluster.to_owned(),
            broker_name: broker_name.to_owned(),
            broker_addr: broker_addr.to_owned(),
            ha_server_addr: "127.0.0.1:10912".to_owned(),
            broker_id: 0,
            enable_acting_master: false,
            extra: Vec::new(),
            table: String::new(),
            counter: 1,
            timestamp: 1_700_000_000_000,
            mapping_timestamp: Some(0),
        }
    }

    /// `brokerId`: 0 for a master, a slave's number otherwise.
    pub fn broker_id(mut self, id: u64) -> RegisterBroker {
        self.broker_id = id;
        self
    }

    /// `enableActingMaster`: whether a slave may act as master while the master is away.
    pub fn enable_acting_master(mut self, enable: bool) -> RegisterBroker {
        self.enable_acting_master = enable;
        self
    }

    /// Appends a header field after the usual ones (`heartbeatTimeoutMillis`, `zoneName`…).
    pub fn header_field(mut self, key: &'static str, value: &str) -> RegisterBroker {
        self.extra.push((key, value.to_owned()));
        self
    }

    /// `haServerAddr`.
    pub fn ha_server_addr(mut self, addr: &str) -> RegisterBroker {
        addr.clone_into(&mut self.ha_server_addr);
        self
    }

    /// Adds a topic with `queues` read and write queues, perm 6 (read and write).
    pub(crate) fn topic(mut self, name: &str, queues: u32) -> RegisterBroker {
        if !self.table.is_empty() {
            self.table.push(',');
        }
        push_topic(&mut self.table, name, queues);
        self
    }

    /// Adds each of `names` as `RegisterBroker::topic` does.
    pub fn topics<S: AsRef<str>>(
        self,
        names: impl IntoIterator<Item = S>,
        queues: u32,
    ) -> RegisterBroker {
        names
            .into_iter()
            .fold(self, |reg, name| reg.topic(name.as_ref(), queues))
    }

    /// Replaces the topics with an already rendered `topicConfigTable` (its entries without
    /// the braces), as [`RegisterBroker::topic_table`] makes: for load generators that send
    /// one table from many brokers.
    pub fn with_topic_table(mut self, table: &str) -> RegisterBroker {
        table.clone_into(&mut self.table);
        self
    }

    /// The `topicConfigTable` entries (without the braces) of `topics`, each with `queues`
    /// queues.
    pub fn topic_table<S: AsRef<str>>(topics: impl IntoIterator<Item = S>, queues: u32) -> String {
        RegisterBroker::new("", "", "").topics(topics, queues).table
    }

    /// The topic config table's `dataVersion`.
    pub fn data_version(mut self, counter: i64, timestamp: i64) -> RegisterBroker {
        self.counter = counter;
        self.timestamp = timestamp;
        self
    }

    /// The `mappingDataVersion` timestamp (its counter stays 0).
    pub fn mapping_timestamp(mut self, timestamp: i64) -> RegisterBroker {
        self.mapping_timestamp = Some(timestamp);
        self
    }

    /// Writes the body as a 4.x broker does: no static-topic mapping data at all.
    pub fn without_mapping(mut self) -> RegisterBroker {
        self.mapping_timestamp = None;
        self
    }

    /// The request header's ext fields, in the order a Java broker writes them.
    pub fn header_fields(&self) -> Vec<(&'static str, String)> {
        let usual = [
            ("brokerName", self.broker_name.clone()),
            ("brokerAddr", self.broker_addr.clone()),
            ("clusterName", self.cluster.clone()),
            ("haServerAddr", self.ha_server_addr.clone()),
            ("brokerId", self.broker_id.to_string()),
            ("compressed", "false".to_owned()),
            ("enableActingMaster", self.enable_acting_master.to_string()),
        ];
        usual
            .into_iter()
            .chain(self.extra.iter().cloned())
            .collect()
    }

    /// The JSON body (`RegisterBrokerBody` with its `TopicConfigAndMappingSerializeWrapper`).
    pub fn body_json(&self) -> Vec<u8> {
        let mut s = String::with_capacity(self.table.len() + 320);
        let (counter, timestamp) = (self.counter, self.timestamp);
        let _ = write!(
            s,
            r#"{{"filterServerList":[],"topicConfigSerializeWrapper":{{"dataVersion":{{"counter":{counter},"stateVersion":0,"timestamp":{timestamp}}},"#
        );
        if let Some(mapping) = self.mapping_timestamp {
            let _ = write!(
                s,
                r#""mappingDataVersion":{{"counter":0,"stateVersion":0,"timestamp":{mapping}}},"#
            );
        }
        let _ = write!(s, r#""topicConfigTable":{{{}}}"#, self.table);
        if self.mapping_timestamp.is_some() {
            s.push_str(r#","topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}"#);
        }
        s.push_str("}}");
        s.into_bytes()
    }
}

/// One `topicConfigTable` entry, as Java's `TopicConfig` serializes.
fn push_topic(out: &mut String, name: &str, queues: u32) {
    let _ = write!(
        out,
        r#""{name}":{{"attributes":{{}},"order":false,"perm":6,"readQueueNums":{queues},"topicFilterType":"SINGLE_TAG","topicName":"{name}","topicSysFlag":0,"writeQueueNums":{queues}}}"#
    );
}

#[cfg(test)]
mod tests {
    use super::RegisterBroker;
    use crate::protocol::body::{DecodeOptions, RegisterBody};

    #[test]
    fn a_5x_body_has_the_mapping_wrapper_and_java_field_order() {
        let body = RegisterBroker::new("DefaultCluster", "broker-a", "10.0.0.1:10911")
            .topic("T", 4)
            .data_version(7, 1_700_000_000_000)
            .body_json();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            concat!(
                r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1700000000000},"#,
                r#""mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"#,
                r#""topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}},"#,
                r#""topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#
            )
        );
    }

    #[test]
    fn a_4x_body_has_no_mapping_data() {
        let body = RegisterBroker::new("C", "b", "a:1")
            .without_mapping()
            .body_json();
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{}}}"#
        );
    }

    #[test]
    fn the_server_decodes_what_the_builder_writes() {
        let reg = RegisterBroker::new("C", "b", "a:1").topics(["A", "B", "C"], 8);
        let opts = DecodeOptions {
            compressed: false,
            version: 479,
            max_inflated: 1 << 20,
        };
        let body = RegisterBody::decode(reg.body_json().into(), opts).unwrap();
        assert_eq!(body.topic_count().unwrap(), 3);
        assert_eq!(
            reg.header_fields()[..3],
            [
                ("brokerName", "b".to_owned()),
                ("brokerAddr", "a:1".to_owned()),
                ("clusterName", "C".to_owned())
            ]
        );
    }
}
