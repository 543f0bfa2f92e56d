//! Reloading the config file (SIGHUP): what changed between the running configuration and
//! the file as it reads now, and which of those changes can apply without a restart.
//!
//! The file is read and validated whole first; a file that does not read or parse changes
//! nothing (the error names the file, the key and the value). The changes are then applied
//! through [`Config::update`], the path of UPDATE_NAMESRV_CONFIG, so that a reload refuses
//! what that request refuses, except the keys only a client is refused
//! ([`super::STEERING_KEYS`] while `authMode` is not `enforce`): the file is the operator's.
//! Keys on the update black list are not applied (they are named), and neither are keys that
//! only take effect at a restart (named too): the running configuration keeps saying what the
//! server actually does.

use super::{Apply, Config, ConfigError, Settings};

/// What a reload would do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ReloadPlan {
    /// Changed keys applied now, with their new values (as UPDATE_NAMESRV_CONFIG applies them).
    pub(crate) apply: Vec<(String, String)>,
    /// Changed keys that take effect only at a restart; not applied.
    pub(crate) restart: Vec<String>,
    /// Changed keys on the update black list; not applied.
    pub(crate) refused: Vec<String>,
}

impl ReloadPlan {
    /// Whether the file changes nothing at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.apply.is_empty() && self.restart.is_empty() && self.refused.is_empty()
    }
}

impl Config {
    /// Reads the file this configuration came from again (`-c`, else the persisted
    /// `configStorePath`), with the same environment.
    pub(crate) fn reread(&self) -> Result<Config, ConfigError> {
        Config::load(self.config_file.as_deref(), &self.env)
    }

    /// What changed from `self` to `fresh`.
    pub(crate) fn reload_plan(&self, fresh: &Config) -> ReloadPlan {
        let mut plan = ReloadPlan::default();
        let (now, then) = (self.all_properties(), fresh.all_properties());
        for info in Settings::KEYS {
            let value = fresh.settings.get(info.name);
            if value == self.settings.get(info.name) {
                continue;
            }
            let name = info.name.to_owned();
            if self.black_list.contains(info.name) {
                plan.refused.push(name);
            } else if info.apply == Apply::Restart {
                plan.restart.push(name);
            } else {
                plan.apply.push((name, value.unwrap_or_default()));
            }
        }
        // Extra properties the file already had are updated, as UPDATE_NAMESRV_CONFIG does.
        for (key, value) in &fresh.extra {
            if self.extra.contains_key(key) && now.get(key) != then.get(key) {
                if self.black_list.contains(key) {
                    plan.refused.push(key.clone());
                } else {
                    plan.apply.push((key.clone(), value.clone()));
                }
            }
        }
        // tls.* lines: read at start; on SIGHUP the TLS material follows
        // tls.config.file and the certificate files instead, so a changed line needs a restart.
        let lines = |c: &Config| -> std::collections::BTreeMap<String, String> {
            c.tls_lines.iter().cloned().collect()
        };
        let (old, new) = (lines(self), lines(fresh));
        let keys: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
        for key in keys {
            if old.get(key) != new.get(key) {
                plan.restart.push(key.clone());
            }
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Env, properties};
    use super::*;

    fn config(text: &str) -> Config {
        Config::from_properties(&properties::parse(text).unwrap(), "f", &Env::for_tests()).unwrap()
    }

    #[test]
    fn changed_tls_lines_need_a_restart() {
        let now = config("tls.server.mode=permissive\ntls.server.certPath=/a.pem\n");
        let then =
            config("tls.server.mode=enforcing\ntls.server.certPath=/a.pem\ntls.enable=true\n");
        let plan = now.reload_plan(&then);
        assert_eq!(plan.restart, ["tls.enable", "tls.server.mode"]);
        assert!(plan.apply.is_empty() && plan.refused.is_empty());
        assert!(now.reload_plan(&now.clone()).is_empty());
    }

    #[test]
    fn live_keys_apply_and_the_others_are_named() {
        let now = config("extraKey=1\nconfigBlackList=enableTopicList;configBlackList\n");
        let fresh = config(
            "extraKey=2\nconfigBlackList=enableTopicList;configBlackList\norderMessageEnable=true\n\
             listenPort=1234\nenableTopicList=false\nkvConfigPath=/elsewhere\nevictionProtectionMinBrokers=5\n",
        );
        let plan = now.reload_plan(&fresh);
        assert_eq!(
            plan.apply,
            [
                ("orderMessageEnable".to_owned(), "true".to_owned()),
                ("evictionProtectionMinBrokers".to_owned(), "5".to_owned()),
                ("extraKey".to_owned(), "2".to_owned()),
            ]
        );
        // The snapshot's default place follows kvConfigPath, which moved.
        assert_eq!(plan.restart, ["listenPort", "routeSnapshotPath"]);
        assert_eq!(plan.refused, ["kvConfigPath", "enableTopicList"]);
        let mut applied = now.clone();
        applied.update(&plan.apply).unwrap();
        assert!(applied.settings.order_message_enable);
        assert_eq!(applied.settings.listen_port, 9876);
        assert!(now.reload_plan(&now).is_empty());
    }

    #[test]
    fn the_snapshot_path_defaults_beside_kv_config_path() {
        let c = config("kvConfigPath=/data/ns/kv.json\n");
        assert_eq!(c.settings.route_snapshot_path, "/data/ns/routes.snapshot");
        assert!(
            c.render_effective()
                .contains("routeSnapshotPath=/data/ns/routes.snapshot\n")
        );
        assert!(
            !c.render([]).contains("routeSnapshotPath"),
            "listed only once set"
        );
        let set = config("kvConfigPath=/data/ns/kv.json\nrouteSnapshotPath=/elsewhere/r\n");
        assert_eq!(
            set.settings.route_snapshot_file(),
            std::path::Path::new("/elsewhere/r")
        );
        assert_eq!(
            config("").settings.route_snapshot_path,
            "/home/rocketmq/namesrv/routes.snapshot"
        );
    }

    #[test]
    fn a_removed_line_returns_the_key_to_its_default() {
        let now = config("orderMessageEnable=true\n");
        let plan = now.reload_plan(&config(""));
        assert_eq!(
            plan.apply,
            [("orderMessageEnable".to_owned(), "false".to_owned())]
        );
    }
}
