//! The configuration keys that identify a node rather than the cluster: where it listens and
//! where its files are. Two healthy name servers differ in them by nature (on one host they
//! must), so `diff` leaves them out of the config comparison unless `--compareAll` is given,
//! and names them as "not compared (node-local)".
//!
//! Every other key stays compared, because it decides what clients and brokers see and should
//! be equal on every node: `productEnvName` names the cluster's environment,
//! `httpNsaddrList` is the cluster's own address list (a node answering another would steer
//! clients elsewhere), `configBlackList` and `startupOnlyConfigKeys` are the cluster's
//! policy, and the live status lines (eviction protection holding, peers diverged) are state
//! worth seeing when it differs.

use super::Section;

/// The node-local keys.
pub(super) const NODE_LOCAL_KEYS: &[&str] = &[
    // Where the node listens, for remoting and for HTTP.
    "listenPort",
    "bindAddress",
    "httpListenPort",
    "httpBindAddress",
    // Places on the node's disk; what they hold is compared where it matters (KV namespaces
    // with -s, routes; `authMode` for the accounts file).
    "rocketmqHome",
    "kvConfigPath",
    "configStorePath",
    "routeSnapshotPath",
    "authConfigPath",
    "authAuditLog",
    // Each node lists the others, itself possibly not.
    "namesrvPeers",
    // TLS files. Our server never lists `tls.*` keys (one may hold a key password), but a
    // Java name server lists every property of its `-c` file, these among them.
    "tls.config.file",
    "tls.server.keyPath",
    "tls.server.certPath",
    "tls.server.trustCertPath",
    "tls.client.keyPath",
    "tls.client.certPath",
    "tls.client.trustCertPath",
];

/// Whether `key` identifies the node rather than the cluster.
fn is_node_local(key: &str) -> bool {
    NODE_LOCAL_KEYS.contains(&key)
}

/// Removes the node-local keys from one node's config section; returns the keys removed.
pub(super) fn split_off(config: &mut Section) -> Vec<String> {
    let keys: Vec<String> = config
        .keys()
        .filter(|k| is_node_local(k))
        .cloned()
        .collect();
    for k in &keys {
        config.remove(k);
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::Settings;

    #[test]
    fn every_key_is_one_the_server_or_its_tls_settings_know() {
        for key in NODE_LOCAL_KEYS {
            let known = Settings::key_info(key).is_some() || key.starts_with("tls.");
            assert!(known, "{key} is not a config key");
        }
    }

    #[test]
    fn keys_the_cluster_shares_stay_compared() {
        for key in [
            "orderMessageEnable",
            "productEnvName",
            "httpNsaddrList",
            "configBlackList",
            "startupOnlyConfigKeys",
            "authMode",
            "evictionProtectionHeldBrokers",
            "tls.server.mode",
        ] {
            assert!(!is_node_local(key), "{key}");
        }
    }

    #[test]
    fn split_off_removes_only_node_local_keys() {
        let mut config: Section = [
            ("listenPort", "9876"),
            ("kvConfigPath", "/a/kvConfig.json"),
            ("orderMessageEnable", "false"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(split_off(&mut config), ["kvConfigPath", "listenPort"]);
        assert_eq!(config.keys().collect::<Vec<_>>(), ["orderMessageEnable"]);
    }
}
