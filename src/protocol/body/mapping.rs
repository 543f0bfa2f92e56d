//! `TopicQueueMappingInfo`: the static-topic mapping a 5.x broker registers for a topic and
//! the name server returns in `topicQueueMappingByBroker`.

use serde::Deserialize;

use super::lenient;
use crate::protocol::java_hash::{Table, sort_by_java_order};
use crate::protocol::json::{JsonStyle, JsonWriter};

/// One broker's mapping for a static topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappingInfo {
    /// The topic (Java's "redundant field"); the registration map key in compressed bodies.
    pub topic: Option<String>,
    /// Metadata scope (default `__global__`).
    pub scope: Option<String>,
    /// Total logical queues.
    pub total_queues: i32,
    /// The hosting broker's name: the key under which the name server stores the mapping.
    pub bname: Option<String>,
    /// Fencing epoch.
    pub epoch: i64,
    /// Whether the mapping is dirty.
    pub dirty: bool,
    /// Logical queue id → physical queue id.
    pub curr_id_map: Vec<(i32, i32)>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    topic: Option<String>,
    #[serde(default = "global_scope", deserialize_with = "lenient::opt_string")]
    scope: Option<String>,
    #[serde(default, deserialize_with = "lenient::i32_or_zero")]
    total_queues: i32,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    bname: Option<String>,
    #[serde(default, deserialize_with = "lenient::i64_or_zero")]
    epoch: i64,
    #[serde(default, deserialize_with = "lenient::bool_or_false")]
    dirty: bool,
    #[serde(default)]
    curr_id_map: Option<std::collections::BTreeMap<String, serde_json::Value>>,
}

fn global_scope() -> Option<String> {
    Some("__global__".to_owned())
}

impl MappingInfo {
    /// Parses the JSON form, accepting fastjson's unquoted integer keys.
    pub fn from_json(json: &[u8]) -> Result<MappingInfo, serde_json::Error> {
        lenient::expect_object(json)?;
        let quoted = lenient::quote_numeric_keys(json);
        let wire: Wire = serde_json::from_slice(&quoted)?;
        Self::from_wire(wire)
    }

    fn from_wire(wire: Wire) -> Result<MappingInfo, serde_json::Error> {
        use serde::de::Error;
        let mut curr_id_map = Vec::new();
        for (k, v) in wire.curr_id_map.unwrap_or_default() {
            let logic = k
                .trim()
                .parse::<i32>()
                .map_err(|_| serde_json::Error::custom(format!("bad currIdMap key {k:?}")))?;
            let physical = match &v {
                serde_json::Value::Number(n) => n.as_i64().map(|n| n as i32),
                serde_json::Value::String(s) => s.trim().parse::<i32>().ok(),
                _ => None,
            }
            .ok_or_else(|| serde_json::Error::custom(format!("bad currIdMap value {v}")))?;
            curr_id_map.push((logic, physical));
        }
        curr_id_map.sort_unstable();
        Ok(MappingInfo {
            topic: wire.topic,
            scope: wire.scope,
            total_queues: wire.total_queues,
            bname: wire.bname,
            epoch: wire.epoch,
            dirty: wire.dirty,
            curr_id_map,
        })
    }

    /// Writes the JSON form in the writer's style: properties alphabetical, `currIdMap`
    /// numeric keys unquoted (legacy, Java hash order) or quoted and sorted (standard).
    pub fn write_json(&self, w: &mut JsonWriter<'_>) {
        w.punct(b'{');
        if let Some(bname) = &self.bname {
            w.key("bname");
            w.string(bname);
            w.punct(b',');
        }
        w.key("currIdMap");
        w.punct(b'{');
        let mut entries = self.curr_id_map.clone();
        if w.style() == JsonStyle::Legacy {
            // A ConcurrentHashMap<Integer,Integer>: an int's hash is itself.
            sort_by_java_order(&mut entries, Table::Concurrent(16), |(k, _)| *k);
        }
        w.separated(entries.iter(), |w, (k, v)| {
            w.num_key(*k as i64);
            w.int(*v as i64);
        });
        w.raw(b"},\"dirty\":");
        w.bool(self.dirty);
        w.raw(b",\"epoch\":");
        w.int(self.epoch);
        w.opt_string(b",\"scope\":", self.scope.as_deref());
        w.opt_string(b",\"topic\":", self.topic.as_deref());
        w.raw(b",\"totalQueues\":");
        w.int(self.total_queues as i64);
        w.punct(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEGACY: &str = r#"{"bname":"broker-a","currIdMap":{0:0,1:1},"dirty":false,"epoch":1700000000000,"scope":"__global__","topic":"StaticTopic","totalQueues":2}"#;

    #[test]
    fn reads_unquoted_keys_and_writes_both_styles() {
        let info = MappingInfo::from_json(LEGACY.as_bytes()).unwrap();
        assert_eq!(info.curr_id_map, vec![(0, 0), (1, 1)]);
        let mut legacy = Vec::new();
        info.write_json(&mut JsonWriter::new(&mut legacy, JsonStyle::Legacy));
        assert_eq!(String::from_utf8(legacy).unwrap(), LEGACY);
        let mut standard = Vec::new();
        info.write_json(&mut JsonWriter::new(&mut standard, JsonStyle::Standard));
        assert!(
            String::from_utf8(standard)
                .unwrap()
                .contains(r#""currIdMap":{"0":0,"1":1}"#)
        );
    }

    #[test]
    fn defaults_scope_to_global() {
        let info = MappingInfo::from_json(br#"{"topic":"T","bname":"b"}"#).unwrap();
        assert_eq!(info.scope.as_deref(), Some("__global__"));
        assert!(MappingInfo::from_json(br#"{"currIdMap":{"x":1}}"#).is_err());
    }
}
