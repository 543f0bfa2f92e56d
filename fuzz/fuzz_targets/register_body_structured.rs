//! Well-formed REGISTER_BROKER bodies built from the fuzz input: the 5.x and 4.9.x JSON
//! shapes, the bare wrapper of pre-V3_0_11 brokers and the zlib-compressed layout (Java's
//! `RegisterBrokerBody#encode`), with escaped or raw names, optional whitespace, numbers written as strings and
//! missing properties. Every such body must decode, and what it decodes to must be what was
//! written: data version, filter servers, mappings and, for every topic, its key and parsed
//! config (Java's defaults for missing properties).
#![no_main]

use std::collections::BTreeMap;
use std::io::Write;

use arbitrary::Arbitrary;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use namesrv::protocol::body::{DecodeOptions, MappingInfo, RegisterBody, TopicConfig};

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `RegisterBrokerBody` as 5.x brokers send it (version 479).
    Json5x,
    /// `RegisterBrokerBody` as 4.9.x brokers send it (no stateVersion, no attributes, no
    /// mapping properties; version 400).
    Json49x,
    /// A bare `TopicConfigSerializeWrapper` (version 30).
    OldWrapper,
    /// zlib body of a 5.x broker (with the mapping section; version 479).
    Compressed5x,
    /// zlib body of a 4.x broker (no mapping section; version 400).
    Compressed4x,
}

#[derive(Arbitrary, Debug)]
struct Topic {
    name: String,
    read: i32,
    write: i32,
    perm: i32,
    sys_flag: i32,
    multi_tag: bool,
    order: bool,
    attributes: Vec<(String, String)>,
    /// Bit i set: property i (topicName, readQueueNums, writeQueueNums, perm, topicSysFlag)
    /// is left out of the JSON form.
    omit: u8,
    /// Text form: end with `" "` (null attributes) instead of an attributes map.
    null_attributes: bool,
}

#[derive(Arbitrary, Debug)]
struct Mapping {
    topic: String,
    bname: Option<String>,
    scope: Option<String>,
    total_queues: i32,
    epoch: i64,
    dirty: bool,
    ids: BTreeMap<i32, i32>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    shape: Shape,
    header_says_compressed: bool,
    counter: Option<i64>,
    state_version: Option<i64>,
    timestamp: Option<i64>,
    numbers_as_strings: bool,
    ascii_only: bool,
    pretty: bool,
    topics: Vec<Topic>,
    filter_servers: Vec<String>,
    mappings: Vec<Mapping>,
}

/// A small JSON writer with knobs the server's reader must not care about.
struct W {
    out: String,
    ascii_only: bool,
    pretty: bool,
    numbers_as_strings: bool,
}

impl W {
    fn string(&mut self, s: &str) {
        self.out.push('"');
        for c in s.chars() {
            match c {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                c if (c as u32) < 0x20 || (self.ascii_only && (c as u32) > 0x7e) => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        self.out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                c => self.out.push(c),
            }
        }
        self.out.push('"');
    }
    fn sep(&mut self, c: char) {
        self.out.push(c);
        if self.pretty {
            self.out.push_str("\n  ");
        }
    }
    fn key(&mut self, k: &str) {
        self.string(k);
        self.out.push(':');
        if self.pretty {
            self.out.push(' ');
        }
    }
    fn int(&mut self, n: i64) {
        if self.numbers_as_strings {
            self.out.push_str(&format!("\"{n}\""));
        } else {
            self.out.push_str(&n.to_string());
        }
    }
    fn raw(&mut self, s: &str) {
        self.out.push_str(s);
    }
}

/// Writes `{k:v,...}` with `f` writing each value.
fn object<T>(w: &mut W, items: &[T], mut f: impl FnMut(&mut W, &T)) {
    w.raw("{");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            w.sep(',');
        }
        f(w, item);
    }
    w.raw("}");
}

fn data_version_json(w: &mut W, input: &Input, with_state: bool) {
    let mut props: Vec<(&str, i64)> = Vec::new();
    if let Some(c) = input.counter {
        props.push(("counter", c));
    }
    if with_state && let Some(s) = input.state_version {
        props.push(("stateVersion", s));
    }
    if let Some(t) = input.timestamp {
        props.push(("timestamp", t));
    }
    object(w, &props, |w, (k, v)| {
        w.key(k);
        w.int(*v);
    });
}

fn topic_json(w: &mut W, t: &Topic, five: bool) {
    let mut parts: Vec<Box<dyn Fn(&mut W) + '_>> = Vec::new();
    if five {
        parts.push(Box::new(|w: &mut W| {
            w.key("attributes");
            object(w, &t.attributes, |w, (k, v)| {
                w.key(k);
                w.string(v);
            });
        }));
    }
    parts.push(Box::new(|w: &mut W| {
        w.key("order");
        w.raw(if t.order { "true" } else { "false" });
    }));
    let ints = [
        (3, "perm", t.perm),
        (1, "readQueueNums", t.read),
        (5, "topicFilterType", 0),
        (0, "topicName", 0),
        (4, "topicSysFlag", t.sys_flag),
        (2, "writeQueueNums", t.write),
    ];
    for (bit, name, value) in ints {
        if bit < 5 && t.omit & (1 << bit) != 0 {
            continue;
        }
        parts.push(Box::new(move |w: &mut W| {
            w.key(name);
            match name {
                "topicName" => w.string(&t.name),
                "topicFilterType" => w.string(if t.multi_tag {
                    "MULTI_TAG"
                } else {
                    "SINGLE_TAG"
                }),
                _ => w.int(value as i64),
            }
        }));
    }
    object(w, &parts, |w, f| f(w));
}

fn expected_json_config(t: &Topic) -> TopicConfig {
    let has = |bit: u8| t.omit & (1 << bit) == 0;
    TopicConfig {
        topic_name: has(0).then(|| t.name.clone()),
        read_queue_nums: if has(1) { t.read } else { 16 },
        write_queue_nums: if has(2) { t.write } else { 16 },
        perm: if has(3) { t.perm } else { 6 },
        topic_sys_flag: if has(4) { t.sys_flag } else { 0 },
    }
}

/// A topic name usable in the space-separated text form.
fn text_name(name: &str) -> String {
    let n: String = name.chars().filter(|c| *c != ' ').collect();
    if n.is_empty() { "T".to_owned() } else { n }
}

fn topic_text(t: &Topic) -> String {
    let mut s = format!(
        "{} {} {} {} {}",
        text_name(&t.name),
        t.read,
        t.write,
        t.perm,
        if t.multi_tag {
            "MULTI_TAG"
        } else {
            "SINGLE_TAG"
        }
    );
    if t.null_attributes {
        s.push(' ');
    } else {
        let mut w = W {
            out: String::new(),
            ascii_only: false,
            pretty: false,
            numbers_as_strings: false,
        };
        object(&mut w, &t.attributes, |w, (k, v)| {
            w.key(k);
            w.string(v);
        });
        s.push(' ');
        s.push_str(&w.out);
    }
    s
}

/// The legacy-writer form of a mapping (unquoted numeric keys in `currIdMap`).
fn mapping_json(m: &Mapping) -> String {
    let mut w = W {
        out: String::new(),
        ascii_only: false,
        pretty: false,
        numbers_as_strings: false,
    };
    w.raw("{");
    if let Some(b) = &m.bname {
        w.key("bname");
        w.string(b);
        w.raw(",");
    }
    w.raw("\"currIdMap\":{");
    for (i, (k, v)) in m.ids.iter().enumerate() {
        if i > 0 {
            w.raw(",");
        }
        w.raw(&format!("{k}:{v}"));
    }
    w.raw(&format!("}},\"dirty\":{},\"epoch\":{}", m.dirty, m.epoch));
    if let Some(s) = &m.scope {
        w.raw(",");
        w.key("scope");
        w.string(s);
    }
    w.raw(",");
    w.key("topic");
    w.string(&m.topic);
    w.raw(&format!(",\"totalQueues\":{}}}", m.total_queues));
    w.out
}

fn expected_mapping(m: &Mapping) -> MappingInfo {
    MappingInfo {
        topic: Some(m.topic.clone()),
        scope: Some(m.scope.clone().unwrap_or_else(|| "__global__".to_owned())),
        total_queues: m.total_queues,
        bname: m.bname.clone(),
        epoch: m.epoch,
        dirty: m.dirty,
        curr_id_map: m.ids.iter().map(|(k, v)| (*k, *v)).collect(),
    }
}

fn chunk(raw: &mut Vec<u8>, b: &[u8]) {
    raw.extend_from_slice(&(b.len() as i32).to_be_bytes());
    raw.extend_from_slice(b);
}

fuzz_target!(|input: Input| {
    let mut input = input;
    // Topic-table and mapping keys are unique, as in the Java maps they come from.
    let mut seen = std::collections::HashSet::new();
    let compressed = matches!(input.shape, Shape::Compressed5x | Shape::Compressed4x);
    input.topics.retain(|t| {
        seen.insert(if compressed {
            text_name(&t.name)
        } else {
            t.name.clone()
        })
    });
    let mut seen = std::collections::HashSet::new();
    input.mappings.retain(|m| seen.insert(m.topic.clone()));

    let version = match input.shape {
        Shape::Json5x | Shape::Compressed5x => 479,
        Shape::Json49x | Shape::Compressed4x => 400,
        Shape::OldWrapper => 30,
    };
    let five = matches!(input.shape, Shape::Json5x);
    let mut w = W {
        out: String::new(),
        ascii_only: input.ascii_only,
        pretty: input.pretty,
        numbers_as_strings: input.numbers_as_strings,
    };
    let body: Vec<u8> = if compressed {
        let mut raw = Vec::new();
        let mut dv = W {
            out: String::new(),
            ascii_only: false,
            pretty: false,
            numbers_as_strings: input.numbers_as_strings,
        };
        data_version_json(&mut dv, &input, true);
        chunk(&mut raw, dv.out.as_bytes());
        raw.extend_from_slice(&(input.topics.len() as i32).to_be_bytes());
        for t in &input.topics {
            chunk(&mut raw, topic_text(t).as_bytes());
        }
        chunk(
            &mut raw,
            serde_json::to_string(&input.filter_servers)
                .unwrap()
                .as_bytes(),
        );
        if version >= 413 {
            raw.extend_from_slice(&(input.mappings.len() as i32).to_be_bytes());
            for m in &input.mappings {
                chunk(&mut raw, mapping_json(m).as_bytes());
            }
        }
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&raw).unwrap();
        enc.finish().unwrap()
    } else {
        let wrapper = |w: &mut W| {
            w.raw("{");
            w.key("dataVersion");
            data_version_json(w, &input, five);
            if five {
                w.sep(',');
                w.key("mappingDataVersion");
                w.raw("{\"counter\":0,\"stateVersion\":0,\"timestamp\":1700000000000}");
            }
            w.sep(',');
            w.key("topicConfigTable");
            object(w, &input.topics, |w, t| {
                w.key(&t.name);
                topic_json(w, t, five);
            });
            if five {
                w.sep(',');
                w.key("topicQueueMappingDetailMap");
                w.raw("{}");
                w.sep(',');
                w.key("topicQueueMappingInfoMap");
                object(w, &input.mappings, |w, m| {
                    w.key(&m.topic);
                    w.raw(&mapping_json(m));
                });
            }
            w.raw("}");
        };
        if input.shape == Shape::OldWrapper {
            wrapper(&mut w);
        } else {
            w.raw("{");
            w.key("filterServerList");
            w.raw("[");
            for (i, f) in input.filter_servers.iter().enumerate() {
                if i > 0 {
                    w.sep(',');
                }
                w.string(f);
            }
            w.raw("]");
            w.sep(',');
            w.key("topicConfigSerializeWrapper");
            wrapper(&mut w);
            w.raw("}");
        }
        if input.pretty {
            w.raw("\n");
        }
        w.out.into_bytes()
    };

    let opts = DecodeOptions {
        compressed: compressed && input.header_says_compressed,
        version,
        max_inflated: 64 << 20,
    };
    let decoded = RegisterBody::decode(Bytes::from(body.clone()), opts).unwrap_or_else(|e| {
        panic!(
            "a well-formed {:?} body failed: {e}\n{}",
            input.shape,
            String::from_utf8_lossy(&body)
        )
    });

    // Data version.
    let dv = decoded.data_version;
    assert_eq!(dv.counter, Some(input.counter.unwrap_or(0)), "counter");
    let state = if five || compressed {
        input.state_version.unwrap_or(0)
    } else {
        0
    };
    assert_eq!(dv.state_version, state, "stateVersion");
    assert_eq!(
        dv.timestamp_defaulted,
        input.timestamp.is_none(),
        "timestamp defaulted"
    );
    if let Some(t) = input.timestamp {
        assert_eq!(dv.timestamp, t, "timestamp");
    }

    // Filter servers.
    match input.shape {
        Shape::OldWrapper => assert_eq!(decoded.filter_server_list, None),
        _ => assert_eq!(
            decoded.filter_server_list.as_ref(),
            Some(&input.filter_servers)
        ),
    }

    // Topics.
    let topics: Vec<_> = decoded.topics().expect("topic table indexes").collect();
    assert_eq!(topics.len(), input.topics.len(), "topic count");
    assert_eq!(decoded.topic_count().unwrap(), input.topics.len());
    for (got, t) in topics.iter().zip(&input.topics) {
        let config = got
            .parse()
            .unwrap_or_else(|e| panic!("topic {:?}: {e}", t.name));
        if compressed {
            let name = text_name(&t.name);
            assert_eq!(got.key, name, "text-form key");
            assert_eq!(
                config,
                TopicConfig {
                    topic_name: Some(name),
                    read_queue_nums: t.read,
                    write_queue_nums: t.write,
                    perm: t.perm,
                    topic_sys_flag: 0,
                }
            );
        } else {
            assert_eq!(got.key, t.name, "JSON key");
            assert_eq!(config, expected_json_config(t));
        }
    }

    // Mappings.
    let expected: Vec<(String, MappingInfo)> = match input.shape {
        Shape::Json5x | Shape::Compressed5x => input
            .mappings
            .iter()
            .map(|m| (m.topic.clone(), expected_mapping(m)))
            .collect(),
        _ => Vec::new(),
    };
    assert_eq!(decoded.mappings, expected, "mappings");
});
