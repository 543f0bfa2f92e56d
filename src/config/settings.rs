//! Every configuration key the name server knows, with its Java name, type, default and
//! whether a live update takes effect at once (Java's `NamesrvConfig` and `NettyServerConfig`,
//! and this server's own keys; `conf/namesrv.conf` describes each).
//!
//! The table is written once, in [`settings!`], which generates the typed [`Settings`]
//! struct together with string access by Java key name; everything else (files, `-p`,
//! GET/UPDATE_NAMESRV_CONFIG) works through that access. Each field has its final type —
//! durations as [`Millis`] or [`Seconds`], address lists as [`Parsed`] values — so a value is
//! parsed once, when it is set, and listed as it was written.

use super::value::{InvalidSetting, Millis, Parsed, Seconds, SettingValue, ValueError};
use crate::addr::{AllowList, HostPortList};

/// Which Java object a key belongs to, which decides where it is listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    /// `NamesrvConfig`.
    Namesrv,
    /// `NettyServerConfig`.
    Netty,
    /// This server's own keys (not in Java): listed by GET_NAMESRV_CONFIG only once set.
    Extension,
    /// `ControllerConfig` (`super::controller`).
    Controller,
    /// `JraftConfig`, read from the file only (`super::controller`).
    Jraft,
}

/// When an updated value takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Apply {
    /// At once: the value is read on every use.
    Live,
    /// At the next start (ports, intervals, limits fixed at start-up).
    Restart,
    /// Never: accepted and reported for compatibility, not acted upon.
    Ignored,
}

/// A key's description.
#[derive(Debug, Clone, Copy)]
pub struct KeyInfo {
    /// The Java property name.
    pub name: &'static str,
    /// Where it belongs.
    pub(crate) group: Group,
    /// When updates take effect.
    pub apply: Apply,
}

/// Facts from the environment that defaults depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Env {
    /// The process owner's home directory (Java's `user.home`).
    pub home: String,
    /// `ROCKETMQ_HOME`, if set.
    pub rocketmq_home: Option<String>,
}

impl Env {
    /// Reads `HOME` and `ROCKETMQ_HOME` from the process environment.
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Env {
            home: var("HOME").unwrap_or_else(|| ".".to_owned()),
            rocketmq_home: var("ROCKETMQ_HOME"),
        }
    }

    pub(super) fn under_home(&self, rel: &str) -> String {
        format!("{}/{rel}", self.home.trim_end_matches('/'))
    }
}

#[cfg(test)]
impl Env {
    /// The environment unit tests assume: a fixed home and no `ROCKETMQ_HOME`.
    pub(crate) fn for_tests() -> Env {
        Env {
            home: "/home/rocketmq".into(),
            rocketmq_home: None,
        }
    }
}

/// Writes a key table: the typed struct `$name` with one field per key, its [`KeyInfo`]
/// list, its defaults and string access by Java key name. The name server's [`Settings`] is
/// one such table; the controller's keys (`super::controller`) are two more.
macro_rules! settings {
    ($(#[doc = $sdoc:literal])* $vis:vis struct $name:ident; $(
        $(#[doc = $doc:literal])*
        $key:literal => $field:ident: $ty:ty = $default:expr, $group:ident, $apply:ident;
    )*) => {
        $(#[doc = $sdoc])*
        #[derive(Debug, Clone, PartialEq)]
        $vis struct $name {
            $( $(#[doc = $doc])* #[doc = concat!("\n\nKey `", $key, "`.")] pub $field: $ty, )*
        }

        impl $name {
            /// Every key, in declaration order.
            pub const KEYS: &'static [KeyInfo] = &[
                $( KeyInfo { name: $key, group: Group::$group, apply: Apply::$apply }, )*
            ];

            /// The key's description, if it is one of this table's.
            pub fn key_info(key: &str) -> Option<&'static KeyInfo> {
                Self::KEYS.iter().find(|k| k.name == key)
            }

            /// The defaults for `env`.
            pub fn defaults(env: &Env) -> $name {
                $name { $( $field: ($default)(env), )* }
            }

            /// A key's current value as text (`None` for unknown keys and null values).
            pub fn get(&self, key: &str) -> Option<String> {
                match key {
                    $( $key => self.$field.render_setting(), )*
                    _ => None,
                }
            }

            /// Sets a key from text; `Ok(false)` for a key this table does not have.
            pub(crate) fn set(&mut self, key: &str, text: &str) -> Result<bool, InvalidSetting> {
                let invalid = |e: ValueError| InvalidSetting {
                    key: key.to_owned(),
                    value: text.to_owned(),
                    reason: e.0,
                };
                match key {
                    $( $key => {
                        self.$field = <$ty as SettingValue>::parse_setting(text).map_err(invalid)?;
                        Ok(true)
                    } )*
                    _ => Ok(false),
                }
            }
        }
    };
}

pub(super) use settings;

settings! {
    /// All settings, typed. Field docs give the Java key.
    pub struct Settings;
    /// Installation directory; not needed by this server.
    "rocketmqHome" => rocketmq_home: Option<String> = |e: &Env| e.rocketmq_home.clone(), Namesrv, Ignored;
    /// The KV store's file.
    "kvConfigPath" => kv_config_path: String = |e: &Env| e.under_home("namesrv/kvConfig.json"), Namesrv, Restart;
    /// Where UPDATE_NAMESRV_CONFIG persists the configuration (the `-c` file when given).
    "configStorePath" => config_store_path: String = |e: &Env| e.under_home("namesrv/namesrv.properties"), Namesrv, Restart;
    /// Only used by Java's cluster-test mode.
    "productEnvName" => product_env_name: String = |_: &Env| "center".to_owned(), Namesrv, Ignored;
    /// Java's cluster-test mode (not supported).
    "clusterTest" => cluster_test: bool = |_: &Env| false, Namesrv, Ignored;
    /// Add ORDER_TOPIC_CONFIG's `orderTopicConf` to routes.
    "orderMessageEnable" => order_message_enable: bool = |_: &Env| false, Namesrv, Live;
    /// Return the ORDER_TOPIC_CONFIG namespace to registering brokers.
    "returnOrderTopicConfigToBroker" => return_order_topic_config_to_broker: bool = |_: &Env| true, Namesrv, Live;
    /// Java's route-query thread pool size.
    "clientRequestThreadPoolNums" => client_request_thread_pool_nums: i32 = |_: &Env| 8, Namesrv, Ignored;
    /// Java's default thread pool size.
    "defaultThreadPoolNums" => default_thread_pool_nums: i32 = |_: &Env| 16, Namesrv, Ignored;
    /// Java's route-query queue bound.
    "clientRequestThreadPoolQueueCapacity" => client_request_thread_pool_queue_capacity: i32 = |_: &Env| 50000, Namesrv, Ignored;
    /// Java's default queue bound.
    "defaultThreadPoolQueueCapacity" => default_thread_pool_queue_capacity: i32 = |_: &Env| 10000, Namesrv, Ignored;
    /// Milliseconds between broker-expiry scans (Java's default is 5000; this server's 10000).
    "scanNotActiveBrokerInterval" => scan_not_active_broker_interval: Millis = |_: &Env| Millis(10_000), Namesrv, Restart;
    /// Java's unregistration queue bound (unregistrations are applied at once here).
    "unRegisterBrokerQueueCapacity" => unregister_broker_queue_capacity: i32 = |_: &Env| 3000, Namesrv, Ignored;
    /// Present a masterless read-only group's smallest-id member as its master in routes.
    "supportActingMaster" => support_acting_master: bool = |_: &Env| false, Namesrv, Live;
    /// Serve GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
    "enableAllTopicList" => enable_all_topic_list: bool = |_: &Env| true, Namesrv, Live;
    /// Serve GET_TOPICS_BY_CLUSTER and the unit-topic lists.
    "enableTopicList" => enable_topic_list: bool = |_: &Env| true, Namesrv, Live;
    /// Send NOTIFY_MIN_BROKER_ID_CHANGE (not supported).
    "notifyMinBrokerIdChanged" => notify_min_broker_id_changed: bool = |_: &Env| false, Namesrv, Ignored;
    /// Also serve the RocketMQ 5 controller, configured by this file's `ControllerConfig`
    /// keys, on the port of this node's `controllerDLegerPeers` entry (read from the `-c`
    /// file only, as Java).
    "enableControllerInNamesrv" => enable_controller_in_namesrv: bool = |_: &Env| false, Namesrv, Restart;
    /// Refuse route queries for `waitSecondsForService` after start-up.
    "needWaitForService" => need_wait_for_service: bool = |_: &Env| false, Namesrv, Live;
    /// See `needWaitForService`.
    "waitSecondsForService" => wait_seconds_for_service: Seconds = |_: &Env| Seconds(45), Namesrv, Live;
    /// Drop a master's topics that its registration no longer lists.
    "deleteTopicWithBrokerRegistration" => delete_topic_with_broker_registration: bool = |_: &Env| false, Namesrv, Live;
    /// `;`-separated keys UPDATE_NAMESRV_CONFIG refuses (read at start).
    "configBlackList" => config_black_list: String = |_: &Env| "configBlackList;configStorePath;kvConfigPath".to_owned(), Namesrv, Restart;

    /// Listen address.
    "bindAddress" => bind_address: String = |_: &Env| "0.0.0.0".to_owned(), Netty, Restart;
    /// Listen port (0 picks a free one).
    "listenPort" => listen_port: i32 = |_: &Env| 9876, Netty, Restart;
    /// Netty handler threads (not used).
    "serverWorkerThreads" => server_worker_threads: i32 = |_: &Env| 8, Netty, Ignored;
    /// Netty callback threads (not used).
    "serverCallbackExecutorThreads" => server_callback_executor_threads: i32 = |_: &Env| 0, Netty, Ignored;
    /// Netty selector threads (not used).
    "serverSelectorThreads" => server_selector_threads: i32 = |_: &Env| 3, Netty, Ignored;
    /// Server-initiated one-way limit (not used).
    "serverOnewaySemaphoreValue" => server_oneway_semaphore_value: i32 = |_: &Env| 256, Netty, Ignored;
    /// Server-initiated async limit (not used).
    "serverAsyncSemaphoreValue" => server_async_semaphore_value: i32 = |_: &Env| 64, Netty, Ignored;
    /// Close connections with no read and no write for this many seconds (0 = never); an
    /// update applies to connections accepted afterwards, as in Java.
    "serverChannelMaxIdleTimeSeconds" => server_channel_max_idle_time_seconds: Seconds = |_: &Env| Seconds(120), Netty, Live;
    /// SO_SNDBUF of accepted connections (0 = system default).
    "serverSocketSndBufSize" => server_socket_snd_buf_size: i32 = |_: &Env| 0, Netty, Restart;
    /// SO_RCVBUF of accepted connections (0 = system default).
    "serverSocketRcvBufSize" => server_socket_rcv_buf_size: i32 = |_: &Env| 0, Netty, Restart;
    /// Netty write-buffer high water mark (not used; see `maxQueuedResponseBytes`).
    "writeBufferHighWaterMark" => write_buffer_high_water_mark: i32 = |_: &Env| 0, Netty, Ignored;
    /// Netty write-buffer low water mark (not used).
    "writeBufferLowWaterMark" => write_buffer_low_water_mark: i32 = |_: &Env| 0, Netty, Ignored;
    /// Listen backlog.
    "serverSocketBacklog" => server_socket_backlog: i32 = |_: &Env| 1024, Netty, Restart;
    /// Netty worker group (not used).
    "serverNettyWorkerGroupEnable" => server_netty_worker_group_enable: bool = |_: &Env| true, Netty, Ignored;
    /// Netty allocator choice (not used).
    "serverPooledByteBufAllocatorEnable" => server_pooled_byte_buf_allocator_enable: bool = |_: &Env| true, Netty, Ignored;
    /// On SIGTERM, keep serving for `shutdownWaitTimeSeconds` and answer clients newer than
    /// 5.3.1 with `GO_AWAY` meanwhile, as Java does, so that they move to another node.
    "enableShutdownGracefully" => enable_shutdown_gracefully: bool = |_: &Env| false, Netty, Live;
    /// Length of the `GO_AWAY` period of `enableShutdownGracefully`, in seconds.
    "shutdownWaitTimeSeconds" => shutdown_wait_time_seconds: Seconds = |_: &Env| Seconds(30), Netty, Live;
    /// Netty epoll transport (not used).
    "useEpollNativeSelector" => use_epoll_native_selector: bool = |_: &Env| false, Netty, Ignored;

    /// Largest frame accepted, counting its 4-byte length prefix (Java's
    /// `com.rocketmq.remoting.frameMaxLength`). Raise it for brokers with very many topics.
    "frameMaxLength" => frame_max_length: i64 = |_: &Env| 16 * 1024 * 1024, Extension, Restart;
    /// Most client connections held at once; further ones are closed at accept.
    "maxConnections" => max_connections: i32 = |_: &Env| 50_000, Extension, Restart;
    /// Most response bytes queued for one connection before the server stops reading it.
    "maxQueuedResponseBytes" => max_queued_response_bytes: i64 = |_: &Env| 4 * 1024 * 1024, Extension, Restart;
    /// How long shutdown waits for in-flight requests before closing connections.
    "shutdownGracePeriodMillis" => shutdown_grace_period_millis: Millis = |_: &Env| Millis(10_000), Extension, Restart;

    // Mass-eviction protection (`crate::state::protection`). Read on every scan.
    /// Keep the routes of brokers that fall silent all at once instead of evicting them
    /// (`false`: Java's behaviour exactly).
    "evictionProtection" => eviction_protection: bool = |_: &Env| true, Extension, Live;
    /// Protection holds when more than this percentage of the live brokers are silent at once.
    "evictionProtectionThresholdPercent" => eviction_protection_threshold_percent: i32 = |_: &Env| 50, Extension, Live;
    /// Protection needs at least this many live brokers (smaller setups behave as Java).
    "evictionProtectionMinBrokers" => eviction_protection_min_brokers: i32 = |_: &Env| 3, Extension, Live;
    /// Longest a silent broker is held past its own timeout.
    "evictionProtectionMaxHoldMillis" => eviction_protection_max_hold_millis: Millis = |_: &Env| Millis(600_000), Extension, Live;

    // --- authentication (auth/) ---
    /// `off` (the default, as Java: nothing is checked), `audit` (check and log what would be
    /// refused, refuse nothing) or `enforce`.
    "authMode" => auth_mode: AuthMode = |_: &Env| AuthMode::Off, Extension, Restart;
    /// The accounts file (YAML, `plain_acl.yml` names); required unless `authMode` is `off`.
    /// Re-read when it changes and on SIGHUP.
    "authConfigPath" => auth_config_path: String = |_: &Env| String::new(), Extension, Restart;
    /// File the audit log of admin requests is appended to; empty: the main log.
    "authAuditLog" => auth_audit_log: String = |_: &Env| String::new(), Extension, Restart;

    // --- Hardening: server-wide memory budget and KV store limits. ---
    /// Most bytes the server buffers for all connections together (queued responses and
    /// partial frames); over it, the heaviest connections stop being read, or are closed.
    "maxBufferedBytes" => max_buffered_bytes: i64 = |_: &Env| 256 * 1024 * 1024, Extension, Restart;
    /// Largest KV value PUT_KV_CONFIG accepts, in bytes.
    "maxKvValueBytes" => max_kv_value_bytes: i64 = |_: &Env| 1024 * 1024, Extension, Restart;
    /// Most bytes the KV store holds (namespaces, keys and values together).
    "maxKvTotalBytes" => max_kv_total_bytes: i64 = |_: &Env| 64 * 1024 * 1024, Extension, Restart;
    /// `;`-separated keys UPDATE_NAMESRV_CONFIG refuses: set in the file only (read at start).
    "startupOnlyConfigKeys" => startup_only_config_keys: String = |_: &Env| super::guard::DEFAULT_STARTUP_ONLY_KEYS.to_owned(), Extension, Restart;

    // --- The HTTP side door (metrics, health, status page, API, address server) ---
    /// Port of the HTTP listener; 0 (the default) turns it off.
    "httpListenPort" => http_listen_port: i32 = |_: &Env| 0, Extension, Restart;
    /// Address the HTTP listener binds.
    "httpBindAddress" => http_bind_address: String = |_: &Env| "127.0.0.1".to_owned(), Extension, Restart;
    /// What the address server (`GET /rocketmq/nsaddr`) answers: this cluster's name servers
    /// as `host:port;host:port`. Empty: this server's own address.
    "httpNsaddrList" => http_nsaddr_list: Parsed<HostPortList> = |_: &Env| Parsed::new(""), Extension, Live;
    /// `/readyz` fails while fewer brokers than this are live (0 = no minimum).
    "httpReadyMinLiveBrokers" => http_ready_min_live_brokers: i32 = |_: &Env| 0, Extension, Live;

    // --- Operations: warm restart (`crate::state::snapshot`). ---
    /// Keep the route table across restarts: snapshot it periodically and at shutdown, and
    /// restore it at start (`false`: start empty as Java does, and write no snapshot).
    "restoreRoutesOnStart" => restore_routes_on_start: bool = |_: &Env| true, Extension, Restart;
    /// The route snapshot's file; empty (the default) means `routes.snapshot` beside
    /// `kvConfigPath`.
    "routeSnapshotPath" => route_snapshot_path: String = |_: &Env| String::new(), Extension, Restart;
    /// Milliseconds between periodic route snapshots (written only when routes or
    /// heartbeats changed).
    "routeSnapshotIntervalMillis" => route_snapshot_interval_millis: Millis = |_: &Env| Millis(10_000), Extension, Restart;

    // --- Operations: peer checks (`crate::peers`). ---
    /// The cluster's name servers, this one may be among them (`host:port;host:port`):
    /// each is asked at an interval for its brokers and their data versions.
    "namesrvPeers" => namesrv_peers: Parsed<HostPortList> = |_: &Env| Parsed::new(""), Extension, Live;
    /// Milliseconds between two rounds of peer checks.
    "peerCheckIntervalMillis" => peer_check_interval_millis: Millis = |_: &Env| Millis(10_000), Extension, Live;
    /// A broker registered here that a peer lacks or holds at an older data version is
    /// reported once the difference has lasted this many milliseconds (one broker heartbeat
    /// period by default).
    "peerDivergenceAfterMillis" => peer_divergence_after_millis: Millis = |_: &Env| Millis(30_000), Extension, Live;
    /// Largest answer a peer may send, in bytes: a larger one is refused from its length
    /// prefix, before it is read, and the peer counts as unreachable.
    "peerMaxAnswerBytes" => peer_max_answer_bytes: i64 = |_: &Env| 4 * 1024 * 1024, Extension, Live;

    // --- TLS and the PROXY protocol (tls/, server/prelude/); the tls.* keys live in tls::settings ---
    /// Longest a PROXY header or TLS handshake may take once it has begun.
    "handshakeTimeoutMillis" => handshake_timeout_millis: Millis = |_: &Env| Millis(5_000), Extension, Restart;
    /// Peers allowed to send a PROXY protocol header (address patterns as in the auth file's
    /// `globalWhiteRemoteAddresses`, `;`-separated); empty: nobody. Default `*`, as Java.
    "proxyProtocolAllowedAddresses" => proxy_protocol_allowed_addresses: Parsed<AllowList> = |_: &Env| Parsed::new("*"), Extension, Restart;
}

/// What the name server does with request signatures (`authMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Nothing is checked (Java's behaviour).
    Off,
    /// Requests are checked and would-be refusals logged and counted; nothing is refused.
    Audit,
    /// Requests that fail the check are refused with `NO_PERMISSION`.
    Enforce,
}

impl AuthMode {
    /// The value's name in the config file.
    pub(crate) fn name(self) -> &'static str {
        match self {
            AuthMode::Off => "off",
            AuthMode::Audit => "audit",
            AuthMode::Enforce => "enforce",
        }
    }
}

impl SettingValue for AuthMode {
    fn parse_setting(text: &str) -> Result<Self, ValueError> {
        let text = crate::java_str::trim(text);
        [AuthMode::Off, AuthMode::Audit, AuthMode::Enforce]
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| ValueError("expected off, audit or enforce".to_owned()))
    }
    fn render_setting(&self) -> Option<String> {
        Some(self.name().to_owned())
    }
}

impl Settings {
    /// How long after start route lookups are refused (`needWaitForService`), if at all.
    pub(crate) fn service_wait(&self) -> Option<std::time::Duration> {
        self.need_wait_for_service
            .then(|| self.wait_seconds_for_service.duration())
    }

    /// The route snapshot's file: `routeSnapshotPath`, else `routes.snapshot` in the
    /// directory of `kvConfigPath`.
    pub fn route_snapshot_file(&self) -> std::path::PathBuf {
        if !self.route_snapshot_path.is_empty() {
            return std::path::PathBuf::from(&self.route_snapshot_path);
        }
        let kv = std::path::Path::new(&self.kv_config_path);
        kv.parent()
            .unwrap_or(std::path::Path::new(""))
            .join("routes.snapshot")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_java_where_java_has_the_key() {
        let s = Settings::defaults(&Env::for_tests());
        assert_eq!(
            s.get("kvConfigPath").as_deref(),
            Some("/home/rocketmq/namesrv/kvConfig.json")
        );
        assert_eq!(s.get("listenPort").as_deref(), Some("9876"));
        assert_eq!(s.get("rocketmqHome"), None);
        assert_eq!(
            s.get("configBlackList").as_deref(),
            Some("configBlackList;configStorePath;kvConfigPath")
        );
        assert_eq!(
            Settings::KEYS
                .iter()
                .filter(|k| k.group != Group::Extension)
                .count(),
            40
        );
        s.validate().unwrap();
    }

    #[test]
    fn set_parses_by_type() {
        let mut s = Settings::defaults(&Env::for_tests());
        assert_eq!(s.set("listenPort", "9877"), Ok(true));
        assert_eq!(s.listen_port, 9877);
        // Java parses numbers and booleans untrimmed: `true ` would be false there.
        assert!(s.set("listenPort", "9878 ").is_err());
        assert!(s.set("orderMessageEnable", "true ").is_err());
        assert_eq!(s.set("orderMessageEnable", "TRUE"), Ok(true));
        assert!(s.order_message_enable);
        assert!(s.set("orderMessageEnable", "yes").is_err());
        assert!(s.set("listenPort", "98x").is_err());
        assert!(s.set("listenPort", "99999999999").is_err());
        assert_eq!(s.set("noSuchKey", "1"), Ok(false));
        assert_eq!(s.set("bindAddress", " 127.0.0.1\u{1} "), Ok(true));
        assert_eq!(s.bind_address, "127.0.0.1");
        assert_eq!(s.set("productEnvName", "x\u{a0}"), Ok(true));
        assert_eq!(s.product_env_name, "x\u{a0}");
        s.listen_port = 70000;
        assert_eq!(s.validate().unwrap_err().key, "listenPort");
    }

    #[test]
    fn http_keys_are_off_by_default_and_validated() {
        let mut s = Settings::defaults(&Env::for_tests());
        assert_eq!(s.http_listen_port, 0);
        assert_eq!(s.http_bind_address, "127.0.0.1");
        assert_eq!(
            s.set("httpNsaddrList", "10.0.0.1:9876; ns2:9876;"),
            Ok(true)
        );
        s.validate().unwrap();
        assert_eq!(
            s.http_nsaddr_list.value().entries(),
            ["10.0.0.1:9876", "ns2:9876"]
        );
        for bad in ["ns1", "ns1:0", ":9876", "ns1:port", "a b:1"] {
            s.http_nsaddr_list = bad.into();
            assert_eq!(s.validate().unwrap_err().key, "httpNsaddrList", "{bad}");
        }
        s.http_nsaddr_list = "".into();
        s.http_listen_port = 65536;
        assert_eq!(s.validate().unwrap_err().key, "httpListenPort");
        s.http_listen_port = 8080;
        s.http_ready_min_live_brokers = -1;
        assert_eq!(s.validate().unwrap_err().key, "httpReadyMinLiveBrokers");
    }
}
