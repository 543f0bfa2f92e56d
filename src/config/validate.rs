//! [`Settings::validate`]: the ranges that parsing a value cannot check (a value of the right
//! type can still be unusable), and the address lists that did not parse. The checks run in one
//! fixed order and the first that fails is reported, so an operator with several bad values
//! sees the same one first every time.

use super::settings::{AuthMode, Settings};
use super::value::{InvalidSetting, Parsed};

/// Refuses `value` of `key` with `reason` unless `ok`.
fn check(ok: bool, key: &str, value: impl ToString, reason: &str) -> Result<(), InvalidSetting> {
    if ok {
        return Ok(());
    }
    Err(InvalidSetting {
        key: key.to_owned(),
        value: value.to_string(),
        reason: reason.to_owned(),
    })
}

/// Refuses a list setting whose text did not parse, with the parser's reason.
fn parsed<T>(key: &str, setting: &Parsed<T>) -> Result<(), InvalidSetting> {
    match setting.error() {
        None => Ok(()),
        Some(reason) => Err(InvalidSetting {
            key: key.to_owned(),
            value: setting.text().to_owned(),
            reason: reason.to_owned(),
        }),
    }
}

impl Settings {
    /// Checks ranges that parsing cannot, and the lists that did not parse.
    pub(crate) fn validate(&self) -> Result<(), InvalidSetting> {
        self.check_network()?;
        self.check_limits()?;
        self.check_services()?;
        self.check_operations()?;
        self.check_connections()?;
        self.check_protection()
    }

    fn check_network(&self) -> Result<(), InvalidSetting> {
        let s = self;
        check(
            (0..=65535).contains(&s.listen_port),
            "listenPort",
            s.listen_port,
            "expected a port between 0 and 65535",
        )?;
        check(
            s.scan_not_active_broker_interval.get() > 0,
            "scanNotActiveBrokerInterval",
            s.scan_not_active_broker_interval,
            "expected a positive number of milliseconds",
        )?;
        check(
            s.server_channel_max_idle_time_seconds.get() >= 0,
            "serverChannelMaxIdleTimeSeconds",
            s.server_channel_max_idle_time_seconds,
            "expected 0 (never) or a positive number of seconds",
        )?;
        check(
            s.wait_seconds_for_service.get() >= 0,
            "waitSecondsForService",
            s.wait_seconds_for_service,
            "expected a non-negative number of seconds",
        )
    }

    fn check_limits(&self) -> Result<(), InvalidSetting> {
        let s = self;
        check(
            (1024 * 1024..=i32::MAX as i64).contains(&s.frame_max_length),
            "frameMaxLength",
            s.frame_max_length,
            "expected between 1048576 and 2147483647 bytes (a smaller limit refuses real broker registrations)",
        )?;
        check(
            s.max_connections >= 64,
            "maxConnections",
            s.max_connections,
            "expected at least 64 (fewer lets a few idle sockets lock every client out)",
        )?;
        check(
            s.max_queued_response_bytes >= 64 * 1024
                && s.max_queued_response_bytes <= s.max_buffered_bytes / 2,
            "maxQueuedResponseBytes",
            s.max_queued_response_bytes,
            "expected between 65536 bytes and half of maxBufferedBytes",
        )?;
        check(
            s.max_buffered_bytes >= s.frame_max_length.saturating_mul(2),
            "maxBufferedBytes",
            s.max_buffered_bytes,
            "expected at least twice frameMaxLength",
        )?;
        check(
            (1024..=i32::MAX as i64).contains(&s.max_kv_value_bytes),
            "maxKvValueBytes",
            s.max_kv_value_bytes,
            "expected between 1024 and 2147483647 bytes",
        )?;
        check(
            s.max_kv_total_bytes >= s.max_kv_value_bytes,
            "maxKvTotalBytes",
            s.max_kv_total_bytes,
            "expected at least maxKvValueBytes",
        )?;
        check(
            s.shutdown_grace_period_millis.get() >= 0,
            "shutdownGracePeriodMillis",
            s.shutdown_grace_period_millis,
            "expected a non-negative number of milliseconds",
        )
    }

    fn check_services(&self) -> Result<(), InvalidSetting> {
        let s = self;
        check(
            s.auth_mode == AuthMode::Off || !s.auth_config_path.is_empty(),
            "authConfigPath",
            &s.auth_config_path,
            "authMode audit or enforce needs the accounts file",
        )?;
        check(
            (0..=65535).contains(&s.http_listen_port),
            "httpListenPort",
            s.http_listen_port,
            "expected 0 (off) or a port between 1 and 65535",
        )?;
        check(
            s.http_ready_min_live_brokers >= 0,
            "httpReadyMinLiveBrokers",
            s.http_ready_min_live_brokers,
            "expected 0 (no minimum) or a positive number of brokers",
        )?;
        parsed("httpNsaddrList", &s.http_nsaddr_list)?;
        check(
            s.server_socket_backlog > 0,
            "serverSocketBacklog",
            s.server_socket_backlog,
            "expected a positive number",
        )
    }

    fn check_operations(&self) -> Result<(), InvalidSetting> {
        let s = self;
        check(
            s.shutdown_wait_time_seconds.get() >= 0,
            "shutdownWaitTimeSeconds",
            s.shutdown_wait_time_seconds,
            "expected a non-negative number of seconds",
        )?;
        check(
            s.route_snapshot_interval_millis.get() >= 100,
            "routeSnapshotIntervalMillis",
            s.route_snapshot_interval_millis,
            "expected at least 100 milliseconds",
        )?;
        check(
            s.peer_check_interval_millis.get() >= 100,
            "peerCheckIntervalMillis",
            s.peer_check_interval_millis,
            "expected at least 100 milliseconds",
        )?;
        check(
            s.peer_divergence_after_millis.get() >= 0,
            "peerDivergenceAfterMillis",
            s.peer_divergence_after_millis,
            "expected a non-negative number of milliseconds",
        )?;
        check(
            (64 * 1024..=1 << 30).contains(&s.peer_max_answer_bytes),
            "peerMaxAnswerBytes",
            s.peer_max_answer_bytes,
            "expected 65536 to 1073741824 bytes",
        )?;
        parsed("namesrvPeers", &s.namesrv_peers)
    }

    fn check_connections(&self) -> Result<(), InvalidSetting> {
        let s = self;
        check(
            s.handshake_timeout_millis.get() > 0,
            "handshakeTimeoutMillis",
            s.handshake_timeout_millis,
            "expected a positive number of milliseconds",
        )?;
        parsed(
            "proxyProtocolAllowedAddresses",
            &s.proxy_protocol_allowed_addresses,
        )
    }

    fn check_protection(&self) -> Result<(), InvalidSetting> {
        let s = self;
        check(
            (1..=99).contains(&s.eviction_protection_threshold_percent),
            "evictionProtectionThresholdPercent",
            s.eviction_protection_threshold_percent,
            "expected a percentage between 1 and 99 (evictionProtection=false turns protection off)",
        )?;
        check(
            s.eviction_protection_min_brokers > 0,
            "evictionProtectionMinBrokers",
            s.eviction_protection_min_brokers,
            "expected a positive number of brokers",
        )?;
        check(
            s.eviction_protection_max_hold_millis.get() > 0,
            "evictionProtectionMaxHoldMillis",
            s.eviction_protection_max_hold_millis,
            "expected a positive number of milliseconds",
        )
    }
}
