//! The controller's key tables: Java's `ControllerConfig` and `JraftConfig` keys with their
//! names, types, defaults and when an update takes effect, written with the name server's
//! key-table macro, and the one value type of their own (`metricsExporterType`).

use super::super::settings::{Apply, Env, Group, KeyInfo, settings};
use super::super::value::{InvalidSetting, Millis, SettingValue, ValueError};

settings! {
    /// Java's `ControllerConfig` keys, typed. Field docs give the Java key.
    pub struct ControllerKeys;
    /// Installation directory; not needed by this server.
    "rocketmqHome" => rocketmq_home: Option<String> = |e: &Env| e.rocketmq_home.clone(), Controller, Ignored;
    /// Where UPDATE_CONTROLLER_CONFIG persists the controller's configuration.
    "configStorePath" => config_store_path: String = |e: &Env| e.under_home("controller/controller.properties"), Controller, Restart;
    /// `DLedger` or `jRaft` in Java; here the group always replicates on openraft with the
    /// `controllerDLeger*` keys.
    "controllerType" => controller_type: String = |_: &Env| "DLedger".to_owned(), Controller, Ignored;
    /// Milliseconds between scans for brokers whose heartbeats expired.
    "scanNotActiveBrokerInterval" => scan_not_active_broker_interval: Millis = |_: &Env| Millis(5_000), Controller, Restart;
    /// Java's request thread pool size.
    "controllerThreadPoolNums" => controller_thread_pool_nums: i32 = |_: &Env| 16, Controller, Ignored;
    /// Java's request queue bound.
    "controllerRequestThreadPoolQueueCapacity" => controller_request_thread_pool_queue_capacity: i32 = |_: &Env| 50_000, Controller, Ignored;
    /// The raft group's name.
    "controllerDLegerGroup" => controller_dleger_group: Option<String> = |_: &Env| None, Controller, Restart;
    /// The group's nodes, `id-host:port;id-host:port`.
    "controllerDLegerPeers" => controller_dleger_peers: Option<String> = |_: &Env| None, Controller, Restart;
    /// Which of the peers this node is.
    "controllerDLegerSelfId" => controller_dleger_self_id: Option<String> = |_: &Env| None, Controller, Restart;
    /// DLedger's data file size (no DLedger files here).
    "mappedFileSize" => mapped_file_size: i32 = |_: &Env| 1024 * 1024 * 1024, Controller, Ignored;
    /// The raft storage directory; empty: `~/<controllerType>Controller`, as Java.
    "controllerStorePath" => controller_store_path: String = |_: &Env| String::new(), Controller, Restart;
    /// Attempts of an election the controller starts itself.
    "electMasterMaxRetryCount" => elect_master_max_retry_count: i32 = |_: &Env| 3, Controller, Live;
    /// May a replica outside the sync-state set become master (acknowledged messages may be
    /// lost).
    "enableElectUncleanMaster" => enable_elect_unclean_master: bool = |_: &Env| false, Controller, Live;
    /// Leader-only reads confirm leadership first (listed as field `isProcessReadEvent`).
    "processReadEvent" => process_read_event: bool = |_: &Env| false, Controller, Live;
    /// Send NOTIFY_BROKER_ROLE_CHANGED to a set's brokers after an election.
    "notifyBrokerRoleChanged" => notify_broker_role_changed: bool = |_: &Env| true, Controller, Live;
    /// Milliseconds between the leader's scans for sets without a live master.
    "scanInactiveMasterInterval" => scan_inactive_master_interval: Millis = |_: &Env| Millis(5_000), Controller, Live;
    /// Java's controller metrics exporter (this server's metrics are on the HTTP side door).
    "metricsExporterType" => metrics_exporter_type: MetricsExporterType = |_: &Env| MetricsExporterType::Disable, Controller, Ignored;
    /// OTLP exporter target (not used).
    "metricsGrpcExporterTarget" => metrics_grpc_exporter_target: String = |_: &Env| String::new(), Controller, Ignored;
    /// OTLP exporter header (not used).
    "metricsGrpcExporterHeader" => metrics_grpc_exporter_header: String = |_: &Env| String::new(), Controller, Ignored;
    /// OTLP exporter timeout (not used).
    "metricGrpcExporterTimeOutInMills" => metric_grpc_exporter_time_out_in_mills: i64 = |_: &Env| 3_000, Controller, Ignored;
    /// OTLP exporter interval (not used).
    "metricGrpcExporterIntervalInMills" => metric_grpc_exporter_interval_in_mills: i64 = |_: &Env| 60_000, Controller, Ignored;
    /// Logging exporter interval (not used).
    "metricLoggingExporterIntervalInMills" => metric_logging_exporter_interval_in_mills: i64 = |_: &Env| 10_000, Controller, Ignored;
    /// Prometheus exporter port (not used).
    "metricsPromExporterPort" => metrics_prom_exporter_port: i32 = |_: &Env| 5557, Controller, Ignored;
    /// Prometheus exporter host (not used).
    "metricsPromExporterHost" => metrics_prom_exporter_host: String = |_: &Env| String::new(), Controller, Ignored;
    /// Metric labels `k:v,k:v` (not used).
    "metricsLabel" => metrics_label: String = |_: &Env| String::new(), Controller, Ignored;
    /// Delta temporality (not used).
    "metricsInDelta" => metrics_in_delta: bool = |_: &Env| false, Controller, Ignored;
    /// `;`-separated keys UPDATE_CONTROLLER_CONFIG refuses (read at start).
    "configBlackList" => config_black_list: String = |_: &Env| "configBlackList;configStorePath".to_owned(), Controller, Restart;
}

settings! {
    /// Java's `JraftConfig` keys (its sofa-jraft controller): read from the file, listed by
    /// `-p`, never acted on.
    pub struct JraftKeys;
    /// Election timeout.
    "jRaftElectionTimeoutMs" => j_raft_election_timeout_ms: i32 = |_: &Env| 1000, Jraft, Ignored;
    /// Liveness scan wait.
    "jRaftScanWaitTimeoutMs" => j_raft_scan_wait_timeout_ms: i32 = |_: &Env| 1000, Jraft, Ignored;
    /// Snapshot interval.
    "jRaftSnapshotIntervalSecs" => j_raft_snapshot_interval_secs: i32 = |_: &Env| 3600, Jraft, Ignored;
    /// Group id.
    "jRaftGroupId" => j_raft_group_id: String = |_: &Env| "jRaft-Controller".to_owned(), Jraft, Ignored;
    /// This node's sofa-jraft address.
    "jRaftServerId" => j_raft_server_id: String = |_: &Env| "localhost:9880".to_owned(), Jraft, Ignored;
    /// The group's sofa-jraft addresses.
    "jRaftInitConf" => j_raft_init_conf: String = |_: &Env| "localhost:9880,localhost:9881,localhost:9882".to_owned(), Jraft, Ignored;
    /// The group's request addresses.
    "jRaftControllerRPCAddr" => j_raft_controller_rpc_addr: String = |_: &Env| "localhost:9770,localhost:9771,localhost:9772".to_owned(), Jraft, Ignored;
}

/// Java's `MetricsExporterType`: set by name or by ordinal, listed by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsExporterType {
    /// `DISABLE` (0).
    Disable,
    /// `OTLP_GRPC` (1).
    OtlpGrpc,
    /// `PROM` (2).
    Prom,
    /// `LOG` (3).
    Log,
}

impl MetricsExporterType {
    const ALL: [(MetricsExporterType, &'static str); 4] = [
        (MetricsExporterType::Disable, "DISABLE"),
        (MetricsExporterType::OtlpGrpc, "OTLP_GRPC"),
        (MetricsExporterType::Prom, "PROM"),
        (MetricsExporterType::Log, "LOG"),
    ];
}

impl SettingValue for MetricsExporterType {
    fn parse_setting(text: &str) -> Result<Self, ValueError> {
        let text = crate::java_str::trim(text);
        Self::ALL
            .iter()
            .enumerate()
            .find(|(i, (_, name))| *name == text || i.to_string() == text)
            .map(|(_, (t, _))| *t)
            .ok_or_else(|| ValueError("expected DISABLE, OTLP_GRPC, PROM, LOG or 0-3".to_owned()))
    }
    fn render_setting(&self) -> Option<String> {
        let name = Self::ALL.iter().find(|(t, _)| t == self).map(|(_, n)| *n);
        name.map(str::to_owned)
    }
}
