//! The snapshot file's bytes: one header line, then a JSON document.
//!
//! ```text
//! namesrv-routes <format> <body length> <crc32 of the body, hex>\n
//! {"writtenAtMillis":…,"pid":…,"reason":"shutdown","clusters":[…],"groups":[…],…}
//! ```
//!
//! The header makes every kind of damage recognisable before the body is trusted: a file
//! that is not a snapshot, one written by a newer format, a truncated body (length) and a
//! damaged one (checksum). The body's lists are compact tuples, because a large table holds
//! a million queue entries.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Meta, Reason, SnapshotError};
use crate::protocol::body::{BrokerData, DataVersion, MappingInfo, Name, QueueData};
use crate::state::route_table::BrokerAddr;
use crate::state::route_table::parts::{LivePart, Parts};

/// The format this server writes and the newest it reads.
pub const FORMAT: u32 = 1;

const MAGIC: &str = "namesrv-routes";

/// Bytes a file must start with to be taken for a snapshot (of any format).
pub(super) const PREFIX: &[u8] = b"namesrv-routes ";

/// A queue entry: broker name, read queues, write queues, perm, sysflag.
type QueueRow<'a> = (Cow<'a, str>, i32, i32, i32, i32);

/// A topic's static-topic mappings: broker name, mapping.
type TopicMappings<'a> = Vec<(Cow<'a, str>, Mapping)>;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body<'a> {
    written_at_millis: i64,
    pid: u32,
    reason: Reason,
    #[serde(borrow)]
    clusters: Vec<(Cow<'a, str>, Vec<Cow<'a, str>>)>,
    #[serde(borrow)]
    groups: Vec<Group<'a>>,
    #[serde(borrow)]
    topics: Vec<(Cow<'a, str>, Vec<QueueRow<'a>>)>,
    #[serde(borrow)]
    live: Vec<Live<'a>>,
    #[serde(borrow)]
    filter_servers: Vec<(Cow<'a, str>, Cow<'a, str>, Vec<String>)>,
    #[serde(borrow)]
    mappings: Vec<(Cow<'a, str>, TopicMappings<'a>)>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Group<'a> {
    #[serde(borrow)]
    cluster: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    addrs: Vec<(i64, Cow<'a, str>)>,
    #[serde(borrow)]
    zone: Option<Cow<'a, str>>,
    acting_master: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Live<'a> {
    #[serde(borrow)]
    cluster: Cow<'a, str>,
    #[serde(borrow)]
    addr: Cow<'a, str>,
    age_millis: u64,
    timeout_millis: u64,
    /// Counter (null when the broker sent null), state version, timestamp, whether the
    /// timestamp was defaulted.
    data_version: (Option<i64>, i64, i64, bool),
    ha_server_addr: Option<String>,
    /// The RocketMQ version of its last registration request.
    version: i32,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Mapping {
    topic: Option<String>,
    scope: Option<String>,
    total_queues: i32,
    bname: Option<String>,
    epoch: i64,
    dirty: bool,
    curr_id_map: Vec<(i32, i32)>,
}

impl From<&MappingInfo> for Mapping {
    fn from(m: &MappingInfo) -> Mapping {
        Mapping {
            topic: m.topic.clone(),
            scope: m.scope.clone(),
            total_queues: m.total_queues,
            bname: m.bname.clone(),
            epoch: m.epoch,
            dirty: m.dirty,
            curr_id_map: m.curr_id_map.clone(),
        }
    }
}

impl From<Mapping> for MappingInfo {
    fn from(m: Mapping) -> MappingInfo {
        MappingInfo {
            topic: m.topic,
            scope: m.scope,
            total_queues: m.total_queues,
            bname: m.bname,
            epoch: m.epoch,
            dirty: m.dirty,
            curr_id_map: m.curr_id_map,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The file's bytes for `parts`.
pub fn encode(meta: &Meta, parts: &Parts) -> Vec<u8> {
    fn b(s: &Name) -> Cow<'_, str> {
        Cow::Borrowed(s)
    }
    let body = Body {
        written_at_millis: meta.written_at_millis,
        pid: meta.pid,
        reason: meta.reason,
        clusters: parts
            .clusters
            .iter()
            .map(|(c, members)| (b(c), members.iter().map(b).collect()))
            .collect(),
        groups: parts
            .groups
            .iter()
            .map(|g| Group {
                cluster: b(&g.cluster),
                name: b(&g.broker_name),
                addrs: g.addrs.iter().map(|(id, a)| (*id, b(a))).collect(),
                zone: g.zone_name.as_ref().map(b),
                acting_master: g.enable_acting_master,
            })
            .collect(),
        topics: parts
            .topics
            .iter()
            .map(|(t, queues)| {
                let rows = queues
                    .iter()
                    .map(|q| {
                        let n = (q.read_queue_nums, q.write_queue_nums, q.perm);
                        (b(&q.broker_name), n.0, n.1, n.2, q.topic_sys_flag)
                    })
                    .collect();
                (b(t), rows)
            })
            .collect(),
        live: parts
            .live
            .iter()
            .map(|(k, l)| Live {
                cluster: b(&k.cluster),
                addr: b(&k.addr),
                age_millis: millis(l.age),
                timeout_millis: millis(l.timeout),
                data_version: (
                    l.data_version.counter,
                    l.data_version.state_version,
                    l.data_version.timestamp,
                    l.data_version.timestamp_defaulted,
                ),
                ha_server_addr: l.ha_server_addr.clone(),
                version: l.version,
            })
            .collect(),
        filter_servers: parts
            .filter_servers
            .iter()
            .map(|(k, list)| (b(&k.cluster), b(&k.addr), list.clone()))
            .collect(),
        mappings: parts
            .mappings
            .iter()
            .map(|(t, per)| {
                let per = per.iter().map(|(n, m)| (b(n), Mapping::from(m))).collect();
                (b(t), per)
            })
            .collect(),
    };
    let json = serde_json::to_vec(&body).expect("a snapshot body always serializes");
    let mut out = format!(
        "{MAGIC} {FORMAT} {} {:08x}\n",
        json.len(),
        crc32fast::hash(&json)
    )
    .into_bytes();
    out.extend_from_slice(&json);
    out
}

/// Checks the header and returns the body it vouches for, with its format.
fn checked_body(bytes: &[u8]) -> Result<&[u8], SnapshotError> {
    let newline = bytes
        .iter()
        .take(128)
        .position(|&b| b == b'\n')
        .ok_or(SnapshotError::NotASnapshot)?;
    let header = std::str::from_utf8(&bytes[..newline]).map_err(|_| SnapshotError::NotASnapshot)?;
    let mut words = header.split(' ');
    if words.next() != Some(MAGIC) {
        return Err(SnapshotError::NotASnapshot);
    }
    let format: u32 = words
        .next()
        .and_then(|w| w.parse().ok())
        .ok_or(SnapshotError::NotASnapshot)?;
    if format > FORMAT {
        return Err(SnapshotError::NewerFormat { found: format });
    }
    let (Some(len), Some(crc), None) = (
        words.next().and_then(|w| w.parse::<usize>().ok()),
        words.next().and_then(|w| u32::from_str_radix(w, 16).ok()),
        words.next(),
    ) else {
        return Err(SnapshotError::NotASnapshot);
    };
    let body = &bytes[newline + 1..];
    if body.len() != len {
        return Err(SnapshotError::Length {
            expected: len,
            found: body.len(),
        });
    }
    if crc32fast::hash(body) != crc {
        return Err(SnapshotError::Checksum);
    }
    Ok(body)
}

/// Reads a snapshot file's bytes.
pub fn decode(bytes: &[u8]) -> Result<(Meta, Parts), SnapshotError> {
    let body: Body<'_> =
        serde_json::from_slice(checked_body(bytes)?).map_err(SnapshotError::Content)?;
    let meta = Meta {
        written_at_millis: body.written_at_millis,
        pid: body.pid,
        reason: body.reason,
    };
    // Broker and cluster names are shared, as registrations share them.
    let mut names: HashMap<Cow<'_, str>, Name> = HashMap::new();
    let mut name = |s: Cow<'_, str>| -> Name {
        if let Some(n) = names.get(&s) {
            return n.clone();
        }
        let n = Name::from(&*s);
        names.insert(Cow::Owned(s.into_owned()), n.clone());
        n
    };
    let groups = body
        .groups
        .into_iter()
        .map(|g| BrokerData {
            cluster: name(g.cluster),
            broker_name: name(g.name),
            addrs: g
                .addrs
                .into_iter()
                .map(|(id, a)| (id, Name::from(&*a)))
                .collect(),
            zone_name: g.zone.map(|z| Name::from(&*z)),
            enable_acting_master: g.acting_master,
        })
        .collect();
    let clusters = body
        .clusters
        .into_iter()
        .map(|(c, members)| (name(c), members.into_iter().map(&mut name).collect()))
        .collect();
    let topics = body
        .topics
        .into_iter()
        .map(|(t, rows)| {
            let queues = rows
                .into_iter()
                .map(|(broker, read, write, perm, flag)| QueueData {
                    broker_name: name(broker),
                    read_queue_nums: read,
                    write_queue_nums: write,
                    perm,
                    topic_sys_flag: flag,
                })
                .collect();
            (Name::from(&*t), queues)
        })
        .collect();
    let live = body
        .live
        .into_iter()
        .map(|l| {
            let key = BrokerAddr {
                cluster: name(l.cluster),
                addr: Name::from(&*l.addr),
            };
            let (counter, state_version, timestamp, defaulted) = l.data_version;
            let part = LivePart {
                age: Duration::from_millis(l.age_millis),
                timeout: Duration::from_millis(l.timeout_millis),
                data_version: DataVersion {
                    state_version,
                    timestamp,
                    counter,
                    timestamp_defaulted: defaulted,
                },
                ha_server_addr: l.ha_server_addr,
                version: l.version,
            };
            (key, part)
        })
        .collect();
    let filter_servers = body
        .filter_servers
        .into_iter()
        .map(|(c, a, list)| {
            let key = BrokerAddr {
                cluster: name(c),
                addr: Name::from(&*a),
            };
            (key, list)
        })
        .collect();
    let mappings = body
        .mappings
        .into_iter()
        .map(|(t, per)| {
            let per = per.into_iter().map(|(n, m)| (name(n), m.into())).collect();
            (Name::from(&*t), per)
        })
        .collect();
    let parts = Parts {
        clusters,
        groups,
        topics,
        live,
        filter_servers,
        mappings,
    };
    Ok((meta, parts))
}
