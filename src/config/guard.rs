//! What UPDATE_NAMESRV_CONFIG must not store even though it parses: a configuration the next
//! start would fail on, one that would lock clients out, or text that would not read back as
//! written.
//!
//! - Keys listed in `startupOnlyConfigKeys` (by default this server's limits) are set in the
//!   file only.
//! - Keys that decide where clients are sent or whether this server says it is ready
//!   ([`STEERING_KEYS`]) are set in the file only unless `authMode=enforce`: with `off` or
//!   `audit` anyone who reaches the port could otherwise point every address-server client at
//!   their own name server, or keep `/readyz` failing. A reload of the file (SIGHUP) still
//!   applies them: the file is the operator's.
//! - Keys and values may not contain control characters: GET_NAMESRV_CONFIG prints values
//!   raw, as Java does, so a newline would show as a key of its own.
//! - A new `bindAddress` must resolve to an address of this host, and a new `listenPort` must
//!   be free here (or be the current one), since the server binds them at its next start.
//!
//! The limits' own floors are checked with every other value ([`super::Settings::validate`]).

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};

use super::{AuthMode, Config, UpdateError};

/// This server's limits, which only the config file sets unless the operator says otherwise.
pub(super) const DEFAULT_STARTUP_ONLY_KEYS: &str = "frameMaxLength;maxConnections;maxQueuedResponseBytes;maxBufferedBytes;maxKvValueBytes;maxKvTotalBytes";

/// The key that lists the start-up-only keys; always start-up-only itself.
pub(super) const STARTUP_ONLY_KEYS: &str = "startupOnlyConfigKeys";

/// Keys that send clients elsewhere (`httpNsaddrList`, the peers and the limits of their
/// checks), decide whether this server is ready (`/readyz`, route lookups) or which silent
/// brokers routes keep naming: refused over UPDATE_NAMESRV_CONFIG unless `authMode=enforce`,
/// where only a signed admin sends it.
pub const STEERING_KEYS: &[&str] = &[
    "httpNsaddrList",
    "httpReadyMinLiveBrokers",
    "namesrvPeers",
    "peerCheckIntervalMillis",
    "peerMaxAnswerBytes",
    "needWaitForService",
    "waitSecondsForService",
    "evictionProtection",
    "evictionProtectionThresholdPercent",
    "evictionProtectionMinBrokers",
    "evictionProtectionMaxHoldMillis",
];

fn refused(key: &str, reason: impl Into<String>) -> UpdateError {
    UpdateError::Refused {
        key: key.to_owned(),
        reason: reason.into(),
    }
}

/// The first control character in `text`, as `U+XXXX`.
fn control_char(text: &str) -> Option<String> {
    text.chars()
        .find(|c| c.is_control())
        .map(|c| format!("U+{:04X}", c as u32))
}

/// Checks that need nothing but the request: start-up-only keys and control characters.
pub(super) fn check_request(
    config: &Config,
    props: &[(String, String)],
) -> Result<(), UpdateError> {
    for (key, value) in props {
        if key == STARTUP_ONLY_KEYS
            || super::java_split(&config.settings.startup_only_config_keys, ';').any(|k| k == key)
        {
            return Err(UpdateError::StartupOnly {
                key: key.clone(),
                unless: "startupOnlyConfigKeys",
            });
        }
        if let Some(c) = control_char(key) {
            return Err(refused(
                key,
                format!("the key contains the control character {c}"),
            ));
        }
        if let Some(c) = control_char(value) {
            return Err(refused(
                key,
                format!("the value contains the control character {c}"),
            ));
        }
    }
    Ok(())
}

/// Refuses [`STEERING_KEYS`] in a request unless `authMode=enforce`, where the gate has
/// already checked the sender's admin signature.
pub(super) fn check_sender(config: &Config, props: &[(String, String)]) -> Result<(), UpdateError> {
    if config.settings.auth_mode == AuthMode::Enforce {
        return Ok(());
    }
    match props
        .iter()
        .find(|(k, _)| STEERING_KEYS.contains(&k.as_str()))
    {
        Some((key, _)) => Err(UpdateError::StartupOnly {
            key: key.clone(),
            unless: "unless authMode=enforce",
        }),
        None => Ok(()),
    }
}

/// Checks that the address and port `next` would bind at the next start can be bound here,
/// where the update changed them. Binds sockets: call it off the runtime's workers.
pub(super) fn check_bindable(current: &Config, next: &Config) -> Result<(), UpdateError> {
    let (now, then) = (&current.settings, &next.settings);
    let address_changed = then.bind_address != now.bind_address;
    let port_changed = then.listen_port != now.listen_port;
    if !address_changed && !port_changed {
        return Ok(());
    }
    let port = then.listen_port as u16;
    if port_changed && port == 0 {
        return Err(refused(
            "listenPort",
            "0 would restart the server on a random port",
        ));
    }
    let (key, probe_port) = match port_changed {
        true => ("listenPort", port),
        // The current port is in use by this very server: check the address alone.
        false => ("bindAddress", 0),
    };
    let addrs: Vec<SocketAddr> = match (then.bind_address.as_str(), probe_port).to_socket_addrs() {
        Ok(addrs) => addrs.collect(),
        Err(e) => {
            return Err(refused(
                "bindAddress",
                format!("{:?} does not resolve: {e}", then.bind_address),
            ));
        }
    };
    let mut last = None;
    for addr in &addrs {
        match TcpListener::bind(addr) {
            Ok(_) => return Ok(()),
            Err(e) => last = Some((addr, e)),
        }
    }
    let reason = match last {
        Some((addr, e)) => format!("cannot listen on {addr} here: {e}"),
        None => format!("{:?} resolves to no address", then.bind_address),
    };
    Err(refused(
        if address_changed { "bindAddress" } else { key },
        reason,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Env, properties};

    fn config(text: &str) -> Config {
        let env = Env::for_tests();
        Config::from_properties(&properties::parse(text).unwrap(), "test", &env).unwrap()
    }

    fn props(text: &str) -> Vec<(String, String)> {
        properties::parse(text).unwrap()
    }

    #[test]
    fn limits_are_start_up_only_unless_the_file_says_otherwise() {
        let c = config("");
        for key in DEFAULT_STARTUP_ONLY_KEYS
            .split(';')
            .chain([STARTUP_ONLY_KEYS])
        {
            let err = check_request(&c, &props(&format!("{key}=1"))).unwrap_err();
            assert!(matches!(err, UpdateError::StartupOnly { .. }), "{key}");
            assert!(err.to_string().contains(key), "{err}");
        }
        let open = config("startupOnlyConfigKeys=maxConnections");
        check_request(&open, &props("frameMaxLength=2097152")).unwrap();
        assert!(check_request(&open, &props("maxConnections=100")).is_err());
        assert!(check_request(&open, &props("startupOnlyConfigKeys=")).is_err());
    }

    #[test]
    fn steering_keys_are_refused_to_clients_unless_auth_is_enforced() {
        let dir = tempfile::tempdir().unwrap();
        let accounts = dir.path().join("acl.yml");
        for (mode, open) in [("off", false), ("audit", false), ("enforce", true)] {
            let mut c = config(&format!(
                "authMode={mode}\nauthConfigPath={}",
                accounts.display()
            ));
            for key in STEERING_KEYS {
                let value = c.settings.get(key).unwrap();
                let update = props(&format!("orderMessageEnable=true\n{key}={value}"));
                match c.clone().update_from_request(&update) {
                    Ok(_) => assert!(open, "{mode}: {key} accepted"),
                    Err(e) => {
                        assert!(!open, "{mode}: {key}: {e}");
                        assert_eq!(
                            e.to_string(),
                            format!(
                                "{key} is set at start-up only (unless authMode=enforce): change it in the config file and restart"
                            )
                        );
                    }
                }
                // The file is the operator's: a reload applies them whatever the mode.
                c.clone().update(&update).unwrap();
            }
            let redirect = props("httpNsaddrList=6.6.6.6:9876");
            assert_eq!(c.update_from_request(&redirect).is_ok(), open, "{mode}");
            assert_eq!(
                c.settings.http_nsaddr_list.text().is_empty(),
                !open,
                "{mode}"
            );
        }
        // Other live keys stay live for everyone, as in Java.
        let mut c = config("");
        c.update_from_request(&props("orderMessageEnable=true"))
            .unwrap();
        assert!(matches!(
            c.update_from_request(&props("kvConfigPath=/x")),
            Err(UpdateError::BlackListed)
        ));
    }

    #[test]
    fn control_characters_are_refused_in_keys_and_values() {
        let c = config("");
        let err = check_request(&c, &props("productEnvName=a\\nkvConfigPath=/x")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "productEnvName: the value contains the control character U+000A"
        );
        assert!(check_request(&c, &props("a\\tb=1")).is_err());
        assert!(check_request(&c, &props("productEnvName=x\\u007f")).is_err());
        check_request(&c, &props("productEnvName=ünïcødé 🚀")).unwrap();
    }

    #[test]
    fn addresses_and_ports_must_be_bindable_here() {
        let current = config("bindAddress=127.0.0.1\nlistenPort=9876");
        let mut next = current.clone();
        check_bindable(&current, &next).unwrap();
        for bad in ["256.1.1.1", "no-such-host.invalid", "192.0.2.1"] {
            next.settings.bind_address = bad.into();
            let err = check_bindable(&current, &next).unwrap_err().to_string();
            assert!(err.starts_with("bindAddress: "), "{bad}: {err}");
        }
        next.settings.bind_address = "127.0.0.1".into();
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        next.settings.listen_port = taken.local_addr().unwrap().port() as i32;
        let err = check_bindable(&current, &next).unwrap_err().to_string();
        assert!(err.starts_with("listenPort: cannot listen on"), "{err}");
        next.settings.listen_port = 0;
        assert!(check_bindable(&current, &next).is_err());
        let free = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        next.settings.listen_port = free.port() as i32;
        check_bindable(&current, &next).unwrap();
    }
}
