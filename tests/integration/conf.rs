//! The shipped `conf/namesrv.conf` cannot drift from the code: every key of
//! [`Settings::KEYS`] appears in it with a comment above, every active value is the built-in
//! default, and the `$HOME`-dependent paths stay commented out so the file points nowhere
//! surprising.

use std::path::Path;

use namesrv::config::{Config, Env, Settings, properties};

const CONF: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/conf/namesrv.conf");

/// Keys the file shows commented out: defaults that depend on the environment, and the auth
/// keys (set, they would add lines to GET_NAMESRV_CONFIG's answer).
const COMMENTED: [&str; 11] = [
    "rocketmqHome",
    "kvConfigPath",
    "configStorePath",
    "authMode",
    "authConfigPath",
    "authAuditLog",
    "routeSnapshotPath",
    "namesrvPeers",
    "peerCheckIntervalMillis",
    "peerDivergenceAfterMillis",
    "peerMaxAnswerBytes",
];

/// Keys the shipped file deliberately sets to something other than the built-in default:
/// the HTTP listener is off unless configured, and the shipped file turns it on.
const SHIPPED_ON: [(&str, &str); 1] = [("httpListenPort", "9877")];

fn env() -> Env {
    Env {
        home: "/home/rocketmq".into(),
        rocketmq_home: None,
    }
}

fn text() -> String {
    std::fs::read_to_string(CONF).unwrap()
}

/// The key a line sets, active (`key=value`) or commented out (`#key=value`).
fn key_of(line: &str) -> Option<(&str, bool)> {
    let (active, rest) = match line.trim_start().strip_prefix('#') {
        Some(rest) => (false, rest.trim_start()),
        None => (true, line.trim_start()),
    };
    let end = rest.find(['=', ':', ' '])?;
    let key = &rest[..end];
    Settings::key_info(key).map(|info| (info.name, active))
}

#[test]
fn active_values_are_the_built_in_defaults() {
    let config = Config::load(Some(Path::new(CONF)), &env()).unwrap();
    assert!(
        config.extra.is_empty(),
        "keys the server does not know: {:?}",
        config.extra
    );
    let defaults = Settings::defaults(&env());
    let props = properties::parse(&text()).unwrap();
    assert!(!props.is_empty());
    for (key, _) in &props {
        assert!(
            !COMMENTED.contains(&key.as_str()),
            "{key} must stay commented out"
        );
        let expected = match SHIPPED_ON.iter().find(|(k, _)| k == key) {
            Some((_, shipped)) => Some((*shipped).to_owned()),
            None => defaults.get(key),
        };
        assert_eq!(
            config.settings.get(key),
            expected,
            "{key} differs from its default"
        );
    }
    assert_eq!(config.settings.listen_port, 9876);
    assert_eq!(config.settings.bind_address, "0.0.0.0");
    assert_eq!(
        defaults.http_listen_port, 0,
        "HTTP is off unless configured"
    );
    assert_eq!(config.settings.http_bind_address, "127.0.0.1");
}

#[test]
fn every_key_is_listed_once_under_a_comment() {
    let text = text();
    let lines: Vec<&str> = text.lines().collect();
    for info in Settings::KEYS {
        let found: Vec<(usize, bool)> = lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| match key_of(l) {
                Some((key, active)) if key == info.name => Some((i, active)),
                _ => None,
            })
            .collect();
        assert_eq!(found.len(), 1, "{} should appear exactly once", info.name);
        let (at, active) = found[0];
        assert_eq!(
            active,
            !COMMENTED.contains(&info.name),
            "{} commented out or not",
            info.name
        );
        let above = at.checked_sub(1).map(|i| lines[i]).unwrap_or("");
        assert!(
            above.starts_with("# ") && key_of(above).is_none(),
            "{} needs a describing comment on the line above",
            info.name
        );
    }
}

#[test]
fn home_dependent_paths_show_their_defaults() {
    let text = text();
    assert!(text.contains("\n#kvConfigPath=~/namesrv/kvConfig.json\n"));
    assert!(text.contains("\n#configStorePath=~/namesrv/namesrv.properties\n"));
    assert!(text.contains("\n#rocketmqHome=\n"));
    assert!(
        text.contains("UPDATE_NAMESRV_CONFIG") && text.contains("REWRITES FILE"),
        "the header warns that -c files are rewritten"
    );
}

#[test]
fn ignored_keys_say_so() {
    let text = text();
    let lines: Vec<&str> = text.lines().collect();
    for info in Settings::KEYS {
        if info.apply != namesrv::config::Apply::Ignored || info.name == "rocketmqHome" {
            continue;
        }
        let at = lines
            .iter()
            .position(|l| key_of(l).is_some_and(|(k, _)| k == info.name))
            .unwrap();
        assert!(
            lines[at - 1].contains("not acted on"),
            "{}: the comment should say the key is not acted on",
            info.name
        );
    }
}
