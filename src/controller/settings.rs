//! The controller's settings as the rest of the controller reads them: plain values, parsed
//! from Java's `ControllerConfig` keys (`controllerDLegerPeers`, `controllerDLegerSelfId`,
//! `scanNotActiveBrokerInterval`, …) by the configuration layer.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::controller::{ControllerConfig, ControllerConfigError, Runtime};

/// One controller node: its DLedger-style id (`n0`) and the address it serves controller
/// requests and peer traffic on (`127.0.0.1:9878`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// The text before the first `-` of its `controllerDLegerPeers` item.
    pub id: String,
    /// Everything after that `-`: `host:port`.
    pub addr: String,
}

/// What the controller is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerSettings {
    /// `controllerDLegerGroup`: the group name, answered by CONTROLLER_GET_METADATA_INFO.
    pub group: String,
    /// `controllerDLegerPeers`, in the order given.
    pub peers: Vec<Peer>,
    /// `controllerDLegerSelfId`: which of `peers` this node is.
    pub self_id: String,
    /// `controllerStorePath`: where the raft log, vote and snapshots live.
    pub store_path: PathBuf,
    /// `scanNotActiveBrokerInterval`: how often expired heartbeats are looked for.
    pub scan_not_active_broker_interval: Duration,
    /// `scanInactiveMasterInterval`: how often the leader looks for sets without a live master.
    pub scan_inactive_master_interval: Duration,
    /// `electMasterMaxRetryCount`: attempts of a controller-triggered election.
    pub elect_master_max_retry_count: u32,
    /// `enableElectUncleanMaster`: may a replica outside the sync-state set become master.
    pub enable_elect_unclean_master: bool,
    /// `processReadEvent` (field `isProcessReadEvent`): leader-only reads confirm leadership
    /// through the log first.
    pub process_read_event: bool,
    /// `notifyBrokerRoleChanged`: send NOTIFY_BROKER_ROLE_CHANGED after an election.
    pub notify_broker_role_changed: bool,
    /// `configStorePath`: where UPDATE_CONTROLLER_CONFIG persists [`Self::properties`].
    pub config_store_path: PathBuf,
    /// The node's whole property set as GET_CONTROLLER_CONFIG lists it (Java's
    /// `Configuration`: the ControllerConfig fields by Java field name, the controller's
    /// NettyServerConfig, the config file's other keys), kept and updated by the
    /// configuration layer (`crate::config::controller`).
    pub properties: BTreeMap<String, String>,
}

impl ControllerSettings {
    /// The settings of `config` (the file's ControllerConfig keys; `netty`, the name server's
    /// settings, gives the listener's NettyServerConfig). Fails as Java's start fails.
    pub fn from_config(
        config: &ControllerConfig,
        netty: &crate::config::Settings,
    ) -> Result<ControllerSettings, ControllerConfigError> {
        let r = config.resolve(netty)?;
        let peers = r.peers.into_iter().map(|(id, addr)| Peer { id, addr });
        let settings = ControllerSettings {
            group: r.group,
            peers: peers.collect(),
            self_id: r.self_id,
            store_path: r.store_path,
            config_store_path: r.config_store_path,
            scan_not_active_broker_interval: r.scan_not_active_broker_interval,
            ..ControllerSettings::default()
        };
        Ok(settings.updated(r.properties, r.runtime))
    }

    /// The settings with an UPDATE_CONTROLLER_CONFIG's outcome: the property set it left and
    /// its runtime keys' values (the other keys take effect at the next start).
    pub fn updated(mut self, properties: BTreeMap<String, String>, runtime: Runtime) -> Self {
        self.properties = properties;
        self.scan_inactive_master_interval = runtime.scan_inactive_master_interval;
        self.elect_master_max_retry_count = runtime.elect_master_max_retry_count;
        self.enable_elect_unclean_master = runtime.enable_elect_unclean_master;
        self.process_read_event = runtime.process_read_event;
        self.notify_broker_role_changed = runtime.notify_broker_role_changed;
        self
    }

    /// This node's own peer entry, if `self_id` is among `peers`.
    pub fn self_peer(&self) -> Option<&Peer> {
        self.peers.iter().find(|p| p.id == self.self_id)
    }
}

impl Default for ControllerSettings {
    /// Java's defaults, for a single node `n0-127.0.0.1:9878` storing under `./controller`.
    fn default() -> Self {
        ControllerSettings {
            group: "group1".to_owned(),
            peers: vec![Peer {
                id: "n0".to_owned(),
                addr: "127.0.0.1:9878".to_owned(),
            }],
            self_id: "n0".to_owned(),
            store_path: PathBuf::from("controller"),
            scan_not_active_broker_interval: Duration::from_millis(5000),
            scan_inactive_master_interval: Duration::from_millis(5000),
            elect_master_max_retry_count: 3,
            enable_elect_unclean_master: false,
            process_read_event: false,
            notify_broker_role_changed: true,
            config_store_path: PathBuf::from("controller/controller.properties"),
            properties: BTreeMap::new(),
        }
    }
}
