//! The snapshot file's bytes: one header line ([`super::header`]), then a JSON document.
//!
//! ```text
//! namesrv-routes <format> <body length> <crc32 of the body, hex>\n
//! {"writtenAtMillis":…,"pid":…,"reason":"shutdown","clusters":[…],"groups":[…],…}
//! ```
//!
//! The body's lists are compact tuples, because a large table holds a million queue entries.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::header::{checked_body, with_header};
use super::{Meta, Reason, SnapshotError};
use crate::protocol::body::{BrokerData, DataVersion, MappingInfo, Name, QueueData};
use crate::state::route_table::BrokerAddr;
use crate::state::route_table::parts::{LivePart, Parts};

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
    let json =
        serde_json::to_vec(&Body::of(meta, parts)).expect("a snapshot body always serializes");
    with_header(&json)
}

fn b(s: &Name) -> Cow<'_, str> {
    Cow::Borrowed(s)
}

impl<'a> Body<'a> {
    /// The table's parts as compact tuples, borrowing their strings.
    fn of(meta: &Meta, parts: &'a Parts) -> Body<'a> {
        Body {
            written_at_millis: meta.written_at_millis,
            pid: meta.pid,
            reason: meta.reason,
            clusters: parts
                .clusters
                .iter()
                .map(|(c, members)| (b(c), members.iter().map(b).collect()))
                .collect(),
            groups: parts.groups.iter().map(Group::of).collect(),
            topics: parts
                .topics
                .iter()
                .map(|(t, queues)| (b(t), queues.iter().map(queue_row).collect()))
                .collect(),
            live: parts.live.iter().map(|(k, l)| Live::of(k, l)).collect(),
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
        }
    }
}

impl<'a> Group<'a> {
    fn of(g: &'a BrokerData) -> Group<'a> {
        Group {
            cluster: b(&g.cluster),
            name: b(&g.broker_name),
            addrs: g.addrs.iter().map(|(id, a)| (*id, b(a))).collect(),
            zone: g.zone_name.as_ref().map(b),
            acting_master: g.enable_acting_master,
        }
    }
}

impl<'a> Live<'a> {
    fn of(k: &'a BrokerAddr, l: &LivePart) -> Live<'a> {
        Live {
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
        }
    }
}

fn queue_row(q: &QueueData) -> QueueRow<'_> {
    let n = (q.read_queue_nums, q.write_queue_nums, q.perm);
    (b(&q.broker_name), n.0, n.1, n.2, q.topic_sys_flag)
}

/// Reads a snapshot file's bytes.
pub fn decode(bytes: &[u8]) -> Result<(Meta, Parts), SnapshotError> {
    let body: Body<'_> =
        serde_json::from_slice(checked_body(bytes)?).map_err(SnapshotError::Content)?;
    Ok(body.into_parts())
}

/// Broker and cluster names are shared, as registrations share them: one `Name` per
/// distinct string.
#[derive(Default)]
struct Names<'a>(HashMap<Cow<'a, str>, Name>);

impl<'a> Names<'a> {
    fn get(&mut self, s: Cow<'a, str>) -> Name {
        if let Some(n) = self.0.get(&s) {
            return n.clone();
        }
        let n = Name::from(&*s);
        self.0.insert(Cow::Owned(s.into_owned()), n.clone());
        n
    }
}

impl<'a> Body<'a> {
    /// The table's parts, each list turned back from its compact tuples.
    fn into_parts(self) -> (Meta, Parts) {
        let meta = Meta {
            written_at_millis: self.written_at_millis,
            pid: self.pid,
            reason: self.reason,
        };
        let mut names = Names::default();
        let groups = self
            .groups
            .into_iter()
            .map(|g| g.into_data(&mut names))
            .collect();
        let clusters = self
            .clusters
            .into_iter()
            .map(|(c, members)| {
                let cluster = names.get(c);
                (cluster, members.into_iter().map(|m| names.get(m)).collect())
            })
            .collect();
        let topics = self
            .topics
            .into_iter()
            .map(|(t, rows)| (Name::from(&*t), queues_of(rows, &mut names)))
            .collect();
        let live = self
            .live
            .into_iter()
            .map(|l| l.into_part(&mut names))
            .collect();
        let filter_servers = self
            .filter_servers
            .into_iter()
            .map(|(c, a, list)| (broker_addr(c, &a, &mut names), list))
            .collect();
        let mappings = self
            .mappings
            .into_iter()
            .map(|(t, per)| {
                let per = per
                    .into_iter()
                    .map(|(n, m)| (names.get(n), m.into()))
                    .collect();
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
        (meta, parts)
    }
}

impl<'a> Group<'a> {
    fn into_data(self, names: &mut Names<'a>) -> BrokerData {
        BrokerData {
            cluster: names.get(self.cluster),
            broker_name: names.get(self.name),
            addrs: self
                .addrs
                .into_iter()
                .map(|(id, a)| (id, Name::from(&*a)))
                .collect(),
            zone_name: self.zone.map(|z| Name::from(&*z)),
            enable_acting_master: self.acting_master,
        }
    }
}

impl<'a> Live<'a> {
    fn into_part(self, names: &mut Names<'a>) -> (BrokerAddr, LivePart) {
        let key = broker_addr(self.cluster, &self.addr, names);
        let (counter, state_version, timestamp, defaulted) = self.data_version;
        let part = LivePart {
            age: Duration::from_millis(self.age_millis),
            timeout: Duration::from_millis(self.timeout_millis),
            data_version: DataVersion {
                state_version,
                timestamp,
                counter,
                timestamp_defaulted: defaulted,
            },
            ha_server_addr: self.ha_server_addr,
            version: self.version,
        };
        (key, part)
    }
}

/// A broker-live or filter-server key: the cluster name is shared, the address is not.
fn broker_addr<'a>(cluster: Cow<'a, str>, addr: &str, names: &mut Names<'a>) -> BrokerAddr {
    BrokerAddr {
        cluster: names.get(cluster),
        addr: Name::from(addr),
    }
}

fn queues_of<'a>(rows: Vec<QueueRow<'a>>, names: &mut Names<'a>) -> Vec<QueueData> {
    rows.into_iter()
        .map(|(broker, read, write, perm, flag)| QueueData {
            broker_name: names.get(broker),
            read_queue_nums: read,
            write_queue_nums: write,
            perm,
            topic_sys_flag: flag,
        })
        .collect()
}
