//! The controller's configuration: Java's `ControllerConfig` and `JraftConfig` keys, read from
//! the same kind of properties file (the name server's own file when the controller is
//! embedded, `controller.conf` when it runs alone), parsed into the
//! [`ControllerSettings`] the controller runs with, and updated at run time by
//! UPDATE_CONTROLLER_CONFIG with Java's rules (`Configuration#update`: black list, setters,
//! only known extra keys, persisted to the controller's own `configStorePath`).
//!
//! What comes out is neutral ([`Resolved`], [`Updated`]): the controller turns it into its
//! own settings (`crate::controller::ControllerSettings::from_config`), as the KV store and
//! the server read theirs from [`Settings`]. The property set GET_CONTROLLER_CONFIG lists
//! travels inside those settings, so that the controller handle alone answers it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

mod keys;

pub use keys::{ControllerKeys, JraftKeys, MetricsExporterType};

use super::settings::{Apply, Env, Group, Settings};
use super::value::InvalidSetting;
use super::{UpdateError, java_split, properties};

/// Why the controller cannot start with its configuration. Java fails these at start (a
/// stack trace, exit status 255); the texts of the first two are Java's.
#[derive(Debug, thiserror::Error)]
pub enum ControllerConfigError {
    /// A required key is absent or empty.
    #[error("Attribute value {0} of ControllerConfig is null or empty")]
    Missing(&'static str),
    /// `controllerDLegerSelfId` is not among the peers.
    #[error(
        "[DLedgerConfig] fail to init self address, config: controllerDLegerSelfId={self_id}, controllerDLegerPeers={peers}"
    )]
    SelfNotAPeer {
        /// The self id.
        self_id: String,
        /// The peers as written.
        peers: String,
    },
    /// A peer entry is not `id-host:port`, or names an id twice.
    #[error("controllerDLegerPeers: {entry:?} {reason}")]
    BadPeer {
        /// The `;`-separated entry.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A value does not parse or is out of range.
    #[error("{origin}: {invalid}")]
    Value {
        /// The file, or "defaults".
        origin: String,
        /// The key, its value and what was expected.
        invalid: InvalidSetting,
    },
}

/// The controller's configuration as read at start.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// The `ControllerConfig` keys.
    pub keys: ControllerKeys,
    /// The `JraftConfig` keys (listed by `-p` only).
    pub jraft: JraftKeys,
    /// The file's properties (`tls.*` left out: they may hold a key password).
    file: BTreeMap<String, String>,
    /// Keys of the file this server accepts but does not act on, for the start-up log.
    not_acted_on: Vec<String>,
}

impl ControllerConfig {
    /// Reads the controller's keys from `props` (a config file's lines; `origin` names it in
    /// errors). Only the types are checked here: `-p` prints a file whose peers are wrong, as
    /// Java's does; [`ControllerConfig::resolve`] checks the rest.
    pub fn from_properties(
        props: &[(String, String)],
        origin: &str,
        env: &Env,
    ) -> Result<ControllerConfig, ControllerConfigError> {
        let mut keys = ControllerKeys::defaults(env);
        let mut jraft = JraftKeys::defaults(env);
        let mut file = BTreeMap::new();
        let mut not_acted_on = Vec::new();
        for (key, value) in props {
            if super::is_tls_key(key) {
                continue;
            }
            let invalid = |invalid| ControllerConfigError::Value {
                origin: origin.to_owned(),
                invalid,
            };
            let info = match ControllerKeys::key_info(key) {
                Some(info) => {
                    keys.set(key, value).map_err(invalid)?;
                    Some(info)
                }
                None if jraft.set(key, value).map_err(invalid)? => JraftKeys::key_info(key),
                None => None,
            };
            if let Some(info) = info
                && info.apply == Apply::Ignored
                && info.name != "rocketmqHome"
            {
                not_acted_on.push(key.clone());
            }
            file.insert(key.clone(), value.clone());
        }
        if keys.controller_type != "DLedger"
            && let Some(entry) = not_acted_on.iter_mut().find(|k| *k == "controllerType")
        {
            *entry = format!("controllerType={}", keys.controller_type);
        }
        not_acted_on.retain(|k| k != "controllerType");
        // Java's getter fills the default in the same way, at the controller's first use.
        if keys.controller_store_path.is_empty() {
            let dir = format!("{}Controller", keys.controller_type);
            keys.controller_store_path = env.under_home(&dir);
        }
        validate(&keys).map_err(|invalid| ControllerConfigError::Value {
            origin: origin.to_owned(),
            invalid,
        })?;
        Ok(ControllerConfig {
            keys,
            jraft,
            file,
            not_acted_on,
        })
    }

    /// Keys of the file that are accepted and not acted on (`controllerType=jRaft`, DLedger
    /// tuning, Java's thread pools and metrics exporters, every `jRaft*` key).
    pub fn not_acted_on(&self) -> &[String] {
        &self.not_acted_on
    }

    /// What the controller runs with; `netty` is the NettyServerConfig of its listener (the
    /// name server's settings, whose `listenPort` is replaced by this node's peer port, as
    /// DLedger replaces it). Fails as Java fails at start: no group, no peers, no self id, a
    /// self id not among the peers, or a peer that is not `id-host:port`.
    pub fn resolve(&self, netty: &Settings) -> Result<Resolved, ControllerConfigError> {
        let k = &self.keys;
        let group = required(&k.controller_dleger_group, "controllerDLegerGroup")?;
        let peers_text = required(&k.controller_dleger_peers, "controllerDLegerPeers")?;
        let peers = parse_peers(peers_text)?;
        let self_id = required(&k.controller_dleger_self_id, "controllerDLegerSelfId")?;
        let Some((_, addr)) = peers.iter().find(|(id, _)| id == self_id) else {
            return Err(ControllerConfigError::SelfNotAPeer {
                self_id: self_id.to_owned(),
                peers: peers_text.to_owned(),
            });
        };
        let mut netty = netty.clone();
        netty.listen_port = peer_port(addr).into();
        let mut properties = self.file.clone();
        for info in Settings::KEYS.iter().filter(|i| i.group == Group::Netty) {
            if let Some(v) = netty.get(info.name) {
                properties.insert(info.name.to_owned(), v);
            }
        }
        properties.extend(listed(k));
        Ok(Resolved {
            group: group.to_owned(),
            self_id: self_id.to_owned(),
            peers,
            store_path: PathBuf::from(&k.controller_store_path),
            config_store_path: PathBuf::from(&k.config_store_path),
            scan_not_active_broker_interval: k.scan_not_active_broker_interval.duration(),
            runtime: Runtime::of(k),
            properties,
        })
    }

    /// The `-p` lines: the ControllerConfig keys by Java field name (null values empty, as
    /// Java prints them), and the JraftConfig keys when `jraft` (the standalone shape).
    pub fn render_print(&self, jraft: bool) -> String {
        let mut lines: Vec<(String, String)> = ControllerKeys::KEYS
            .iter()
            .map(|info| {
                let value = self.keys.get(info.name).unwrap_or_default();
                (field_name(info.name).to_owned(), value)
            })
            .collect();
        lines.sort();
        if jraft {
            let jraft_lines = JraftKeys::KEYS.iter().map(|info| {
                let value = self.jraft.get(info.name).unwrap_or_default();
                (info.name.to_owned(), value)
            });
            lines.extend(jraft_lines);
        }
        properties::render_raw(lines.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }
}

/// A controller node's configuration as it starts: the start-up keys, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// `controllerDLegerGroup`.
    pub group: String,
    /// `controllerDLegerSelfId`.
    pub self_id: String,
    /// `controllerDLegerPeers` as `(id, host:port)`, in the order given.
    pub peers: Vec<(String, String)>,
    /// `controllerStorePath` (Java's default filled in).
    pub store_path: PathBuf,
    /// `configStorePath`.
    pub config_store_path: PathBuf,
    /// `scanNotActiveBrokerInterval`.
    pub scan_not_active_broker_interval: Duration,
    /// The keys UPDATE_CONTROLLER_CONFIG changes at run time.
    pub runtime: Runtime,
    /// The property set GET_CONTROLLER_CONFIG lists.
    pub properties: BTreeMap<String, String>,
}

/// The keys that take effect on a running controller when updated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runtime {
    /// `scanInactiveMasterInterval` (read at the next leadership).
    pub scan_inactive_master_interval: Duration,
    /// `electMasterMaxRetryCount`.
    pub elect_master_max_retry_count: u32,
    /// `enableElectUncleanMaster`.
    pub enable_elect_unclean_master: bool,
    /// `processReadEvent`.
    pub process_read_event: bool,
    /// `notifyBrokerRoleChanged`.
    pub notify_broker_role_changed: bool,
}

impl Runtime {
    fn of(k: &ControllerKeys) -> Runtime {
        Runtime {
            scan_inactive_master_interval: k.scan_inactive_master_interval.duration(),
            // Validation refuses a negative count.
            elect_master_max_retry_count: k.elect_master_max_retry_count.max(0) as u32,
            enable_elect_unclean_master: k.enable_elect_unclean_master,
            process_read_event: k.process_read_event,
            notify_broker_role_changed: k.notify_broker_role_changed,
        }
    }
}

/// A property set after UPDATE_CONTROLLER_CONFIG.
#[derive(Debug, Clone, PartialEq)]
pub struct Updated {
    /// The whole set, as GET_CONTROLLER_CONFIG lists it and as it is persisted.
    pub properties: BTreeMap<String, String>,
    /// The runtime keys' values now.
    pub runtime: Runtime,
    /// The updated keys that take effect only at the next start.
    pub restart: Vec<String>,
}

/// The GET_CONTROLLER_CONFIG body: every property, `key=value\n` sorted by key, unescaped.
pub(crate) fn render(properties: &BTreeMap<String, String>) -> String {
    properties::render_raw(properties.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// The property set `current` after UPDATE_CONTROLLER_CONFIG `props`. All-or-nothing, as the name server's update: a
/// black-listed key (`{configBlackList, configStorePath, rocketmqHome}` and those of
/// `configBlackList` as the node started with) or a bad value changes nothing. Keys that are
/// neither ControllerConfig's nor NettyServerConfig's change only a property the set already
/// has, as Java's `mergeIfExist`.
pub(crate) fn update(
    current: &BTreeMap<String, String>,
    props: &[(String, String)],
) -> Result<Updated, UpdateError> {
    if props.iter().any(|(k, _)| black_list(current).contains(k)) {
        return Err(UpdateError::BlackListed);
    }
    let mut keys = keys_of(current)?;
    let mut netty = Settings::defaults(&neutral_env());
    let mut next = current.clone();
    let mut restart = Vec::new();
    for (key, value) in props {
        if let Some(info) = ControllerKeys::key_info(key) {
            keys.set(key, value).map_err(UpdateError::Value)?;
            let field = field_name(key).to_owned();
            match keys.get(key) {
                Some(text) => next.insert(field, text),
                None => next.remove(&field),
            };
            if info.apply != Apply::Live {
                restart.push(key.clone());
            }
        } else if Settings::key_info(key).is_some_and(|i| i.group == Group::Netty) {
            // The controller's listener is bound at start: recorded, effective at restart.
            netty.set(key, value).map_err(UpdateError::Value)?;
            next.insert(key.clone(), netty.get(key).unwrap_or_default());
            restart.push(key.clone());
        } else if let Some(slot) = next.get_mut(key) {
            *slot = value.clone();
        }
    }
    validate(&keys).map_err(UpdateError::Value)?;
    Ok(Updated {
        properties: next,
        runtime: Runtime::of(&keys),
        restart,
    })
}

/// Writes the property set to `path` (`configStorePath`), durably (escaped so that it reads
/// back exactly).
pub(crate) fn persist(path: &Path, all: &BTreeMap<String, String>) -> std::io::Result<()> {
    let text = properties::render_escaped(all.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    crate::durable::replace(path, text.as_bytes())
}

/// The keys UPDATE_CONTROLLER_CONFIG refuses, fixed at start (`configBlackList` is itself
/// on the list, so the listed value is the one the node started with).
fn black_list(properties: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut list: BTreeSet<String> = ["configBlackList", "configStorePath", "rocketmqHome"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    if let Some(extra) = properties.get("configBlackList") {
        list.extend(java_split(extra, ';').map(str::to_owned));
    }
    list
}

/// The typed keys a property set lists (it was rendered from valid ones).
fn keys_of(properties: &BTreeMap<String, String>) -> Result<ControllerKeys, UpdateError> {
    let mut keys = ControllerKeys::defaults(&neutral_env());
    for info in ControllerKeys::KEYS {
        if let Some(value) = properties.get(field_name(info.name)) {
            keys.set(info.name, value).map_err(UpdateError::Value)?;
        }
    }
    Ok(keys)
}

/// An environment whose defaults are never used: every value that has one is in the set.
fn neutral_env() -> Env {
    Env {
        home: String::new(),
        rocketmq_home: None,
    }
}

/// Range checks: a scan needs a period, a retry count cannot be negative.
fn validate(k: &ControllerKeys) -> Result<(), InvalidSetting> {
    let out_of_range = |key: &str, value: String, reason: &str| InvalidSetting {
        key: key.to_owned(),
        value,
        reason: reason.to_owned(),
    };
    for (key, ms) in [
        (
            "scanNotActiveBrokerInterval",
            k.scan_not_active_broker_interval,
        ),
        (
            "scanInactiveMasterInterval",
            k.scan_inactive_master_interval,
        ),
    ] {
        if ms.get() <= 0 {
            return Err(out_of_range(key, ms.to_string(), "must be positive"));
        }
    }
    if k.elect_master_max_retry_count < 0 {
        let value = k.elect_master_max_retry_count.to_string();
        return Err(out_of_range(
            "electMasterMaxRetryCount",
            value,
            "must be 0 or more",
        ));
    }
    Ok(())
}

/// The ControllerConfig properties GET_CONTROLLER_CONFIG lists: by Java field name, null
/// values left out.
fn listed(k: &ControllerKeys) -> impl Iterator<Item = (String, String)> + '_ {
    ControllerKeys::KEYS.iter().filter_map(move |info| {
        let value = k.get(info.name)?;
        Some((field_name(info.name).to_owned(), value))
    })
}

/// Java lists a key by its field's name, which differs from the setter's for one key.
fn field_name(key: &str) -> &str {
    match key {
        "processReadEvent" => "isProcessReadEvent",
        key => key,
    }
}

fn required<'a>(
    value: &'a Option<String>,
    key: &'static str,
) -> Result<&'a str, ControllerConfigError> {
    match value.as_deref() {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(ControllerConfigError::Missing(key)),
    }
}

/// `id-host:port;id-host:port`: the id is the text before an entry's first `-`, the address
/// everything after it (Java's `DLedgerConfig`), in the order given.
pub(crate) fn parse_peers(text: &str) -> Result<Vec<(String, String)>, ControllerConfigError> {
    let mut peers: Vec<(String, String)> = Vec::new();
    for entry in java_split(text, ';') {
        let bad = |reason| ControllerConfigError::BadPeer {
            entry: entry.to_owned(),
            reason,
        };
        let Some((id, addr)) = entry.split_once('-') else {
            return Err(bad("is not id-host:port"));
        };
        if id.is_empty() {
            return Err(bad("has no id before its '-'"));
        }
        match addr.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0) => {}
            _ => return Err(bad("has no host:port (a port 1-65535) after its id")),
        }
        if peers.iter().any(|(known, _)| known == id) {
            return Err(bad("repeats an id"));
        }
        peers.push((id.to_owned(), addr.to_owned()));
    }
    Ok(peers)
}

/// The port of a peer address `parse_peers` accepted.
fn peer_port(addr: &str) -> u16 {
    addr.rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests;
