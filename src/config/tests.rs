//! Unit tests of [`super::Config`]: loading, listing, updating and persisting.

use super::*;

fn env() -> Env {
    Env {
        home: "/home/rocketmq".into(),
        rocketmq_home: Some("/opt/rocketmq".into()),
    }
}

/// A config file holding `text` in a fresh temporary directory, and the config loaded from it.
fn load_file(text: &str) -> (tempfile::TempDir, std::path::PathBuf, Config) {
    let (dir, file) = crate::durable::temp_file("namesrv.conf", text);
    let config = Config::load(Some(&file), &env()).unwrap();
    (dir, file, config)
}

fn props(text: &str) -> Vec<(String, String)> {
    properties::parse(text).unwrap()
}

#[test]
fn black_list_splits_like_java() {
    let split = |t| java_split(t, ';').collect::<Vec<_>>();
    assert_eq!(split("a;b;"), ["a", "b"]);
    assert_eq!(split("a;;b;;"), ["a", "", "b"]);
    assert_eq!(split(""), [""]);
    assert!(split(";;").is_empty());
}

#[test]
fn default_listing_is_javas_40_keys() {
    let c = Config::defaults(&env());
    let body = c.render([]);
    assert_eq!(body.lines().count(), 40);
    assert!(body.starts_with("bindAddress=0.0.0.0\nclientRequestThreadPoolNums=8\n"));
    assert!(body.contains("rocketmqHome=/opt/rocketmq\n"));
    assert!(body.ends_with("writeBufferLowWaterMark=0\n"));
    assert!(!body.contains("frameMaxLength"));
    assert!(c.render_effective().contains("frameMaxLength=16777216\n"));
}

#[test]
fn file_values_extras_and_extensions() {
    let c = Config::from_properties(
        &props("listenPort=1234\nclientWorkerThreads=4\nframeMaxLength=33554432"),
        "f",
        &env(),
    )
    .unwrap();
    assert_eq!(c.settings.listen_port, 1234);
    assert_eq!(c.settings.frame_max_length, 32 << 20);
    let all = c.all_properties();
    assert_eq!(
        all.get("clientWorkerThreads").map(String::as_str),
        Some("4")
    );
    assert_eq!(
        all.get("frameMaxLength").map(String::as_str),
        Some("33554432")
    );
}

#[test]
fn bad_values_name_origin_key_and_value() {
    let err = Config::from_properties(&props("listenPort=abc"), "config file x.conf", &env())
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("x.conf") && msg.contains("listenPort") && msg.contains("abc"),
        "{msg}"
    );
    let err = Config::from_properties(&props("listenPort=70000"), "config file x.conf", &env())
        .unwrap_err();
    assert!(err.to_string().contains("70000"));
}

#[test]
fn updates_are_all_or_nothing_and_respect_the_black_list() {
    let mut c = Config::from_properties(
        &props("extraKey=1\nconfigBlackList=listenPort"),
        "f",
        &env(),
    )
    .unwrap();
    assert!(matches!(
        c.update(&props("kvConfigPath=/x")),
        Err(UpdateError::BlackListed)
    ));
    assert!(matches!(
        c.update(&props("listenPort=1")),
        Err(UpdateError::BlackListed)
    ));
    assert!(matches!(
        c.update(&props("orderMessageEnable=true\nwaitSecondsForService=-1")),
        Err(UpdateError::Value { .. })
    ));
    assert!(!c.settings.order_message_enable);
    let restart = c
        .update(&props(
            "orderMessageEnable=true\nbindAddress=127.0.0.1\nextraKey=2\nunknownKey=3",
        ))
        .unwrap();
    assert_eq!(restart, vec!["bindAddress".to_owned()]);
    assert!(c.settings.order_message_enable);
    let all = c.all_properties();
    assert_eq!(all.get("extraKey").map(String::as_str), Some("2"));
    assert!(!all.contains_key("unknownKey"));
}

#[test]
fn typed_values_follow_updates_and_list_as_written() {
    let mut c = Config::from_properties(
        &props("handshakeTimeoutMillis=7000\nnamesrvPeers= ns1:9876 ;ns2:9876"),
        "f",
        &env(),
    )
    .unwrap();
    let s = &c.settings;
    assert_eq!(s.handshake_timeout_millis.duration().as_millis(), 7000);
    assert_eq!(s.namesrv_peers.value().entries(), ["ns1:9876", "ns2:9876"]);
    let all = c.all_properties();
    assert_eq!(all["handshakeTimeoutMillis"], "7000");
    assert_eq!(all["namesrvPeers"], "ns1:9876 ;ns2:9876");
    assert!(s.proxy_protocol_allowed_addresses.value().admits_everyone());
    c.update(&props(
        "proxyProtocolAllowedAddresses=10.0.0.*\nnamesrvPeers=ns3:9876",
    ))
    .unwrap();
    let s = &c.settings;
    assert!(!s.proxy_protocol_allowed_addresses.value().admits_everyone());
    assert!(
        s.proxy_protocol_allowed_addresses
            .value()
            .allows("10.0.0.7".parse().unwrap())
    );
    assert_eq!(s.namesrv_peers.value().entries(), ["ns3:9876"]);
    // A list that does not parse changes nothing, and says why as before.
    let err = c.update(&props("namesrvPeers=ns4:9876;ns5")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid value for namesrvPeers: \"ns4:9876;ns5\" \
         (expected host:port entries separated by ';', found \"ns5\")"
    );
    assert_eq!(c.settings.namesrv_peers.value().entries(), ["ns3:9876"]);
}

#[test]
fn a_bad_list_in_the_file_names_file_key_value_and_pattern() {
    let err = Config::from_properties(
        &props("proxyProtocolAllowedAddresses=10.0.0 "),
        "config file x.conf",
        &env(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "config file x.conf: invalid value for proxyProtocolAllowedAddresses: \"10.0.0\" \
         (invalid address pattern \"10.0.0\": not a valid IP address)"
    );
}

#[test]
fn load_reads_the_file_and_persist_round_trips() {
    let (dir, file, mut c) = load_file(
        "# comment\nlistenPort = 19876\norderMessageEnable=true\nkvConfigPath=/tmp/kv\\\\x.json\n",
    );
    assert_eq!(c.settings.listen_port, 19876);
    assert_eq!(c.settings.kv_config_path, "/tmp/kv\\x.json");
    assert_eq!(c.settings.config_store_path, file.display().to_string());
    c.update(&props("enableTopicList=false")).unwrap();
    c.persist().unwrap();
    let again = Config::load(Some(&file), &env()).unwrap();
    assert_eq!(again.settings, c.settings);
    assert!(crate::durable::backup_path(&file).exists());
    let missing = Config::load(Some(&dir.path().join("nope.conf")), &env()).unwrap_err();
    assert!(missing.to_string().contains("nope.conf"));
}

#[test]
fn tls_lines_are_kept_and_persisted_but_never_listed() {
    let (_dir, file, mut c) =
        load_file("tls.server.mode=enforcing\ntls.server.keyPassword=secret\nlistenPort=19876\n");
    assert_eq!(c.tls_lines.len(), 2);
    assert!(!c.render([]).contains("tls."));
    assert!(!c.render_effective().contains("secret"));
    c.update(&props("orderMessageEnable=true")).unwrap();
    c.persist().unwrap();
    let mut again = Config::load(Some(&file), &env()).unwrap().tls_lines;
    again.sort();
    c.tls_lines.sort();
    assert_eq!(again, c.tls_lines);
}

#[test]
fn without_a_file_the_persisted_config_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let env = Env {
        home: dir.path().display().to_string(),
        rocketmq_home: None,
    };
    assert_eq!(Config::load(None, &env).unwrap().settings.listen_port, 9876);
    let mut c = Config::defaults(&env);
    c.update(&props("orderMessageEnable=true")).unwrap();
    c.persist().unwrap();
    assert!(
        Config::load(None, &env)
            .unwrap()
            .settings
            .order_message_enable
    );
}
