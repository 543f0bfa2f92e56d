use std::time::Duration;

use super::*;
use crate::config::properties;
use crate::config::value::Millis;
use crate::controller::ControllerSettings;

fn props(text: &str) -> Vec<(String, String)> {
    properties::parse(text).unwrap()
}

fn keys(text: &str) -> Result<ControllerConfig, ControllerConfigError> {
    ControllerConfig::from_properties(&props(text), "test", &Env::for_tests())
}

fn netty() -> Settings {
    Settings::defaults(&Env::for_tests())
}

const THREE: &str = "controllerDLegerGroup = group1\n\
    controllerDLegerPeers = n0-127.0.0.1:9878;n1-127.0.0.1:9868;n2-127.0.0.1:9858\n\
    controllerDLegerSelfId = n1\n";

fn settings(text: &str) -> Result<ControllerSettings, ControllerConfigError> {
    ControllerSettings::from_config(&keys(text)?, &netty())
}

/// [`update`] on the settings `s`, as the handler applies it.
fn update_settings(
    s: &ControllerSettings,
    props: &[(String, String)],
) -> Result<(ControllerSettings, Vec<String>), UpdateError> {
    let u = update(&s.properties, props)?;
    Ok((s.clone().updated(u.properties, u.runtime), u.restart))
}

#[test]
fn javas_defaults() {
    let c = keys("").unwrap();
    let k = &c.keys;
    assert_eq!(k.controller_type, "DLedger");
    assert_eq!(k.scan_not_active_broker_interval, Millis(5000));
    assert_eq!(k.scan_inactive_master_interval, Millis(5000));
    assert_eq!(k.elect_master_max_retry_count, 3);
    assert!(!k.enable_elect_unclean_master && !k.process_read_event);
    assert!(k.notify_broker_role_changed);
    assert_eq!(k.config_black_list, "configBlackList;configStorePath");
    assert_eq!(
        k.config_store_path,
        "/home/rocketmq/controller/controller.properties"
    );
    // Java's getter fills the empty store path from the controller type.
    assert_eq!(k.controller_store_path, "/home/rocketmq/DLedgerController");
    assert_eq!(c.jraft.j_raft_group_id, "jRaft-Controller");
    assert!(c.not_acted_on().is_empty());
}

#[test]
fn three_peers_and_the_runtime_keys_become_settings() {
    let s = settings(&format!(
        "{THREE}scanNotActiveBrokerInterval=2000\nscanInactiveMasterInterval=1500\n\
         electMasterMaxRetryCount=5\nenableElectUncleanMaster=true\nprocessReadEvent=true\n\
         notifyBrokerRoleChanged=false\ncontrollerStorePath=/data/ctl\n"
    ))
    .unwrap();
    assert_eq!(s.group, "group1");
    assert_eq!(s.self_id, "n1");
    let ids: Vec<&str> = s.peers.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(ids, ["n0", "n1", "n2"]);
    assert_eq!(s.self_peer().unwrap().addr, "127.0.0.1:9868");
    assert_eq!(s.store_path, PathBuf::from("/data/ctl"));
    assert_eq!(
        s.scan_not_active_broker_interval,
        Duration::from_millis(2000)
    );
    assert_eq!(s.scan_inactive_master_interval, Duration::from_millis(1500));
    assert_eq!(s.elect_master_max_retry_count, 5);
    assert!(s.enable_elect_unclean_master && s.process_read_event);
    assert!(!s.notify_broker_role_changed);
    // Listed by Java field name, the listener's port replaced by the self peer's.
    assert_eq!(s.properties["isProcessReadEvent"], "true");
    assert_eq!(
        s.properties["processReadEvent"], "true",
        "the file's raw key stays"
    );
    assert_eq!(s.properties["listenPort"], "9868");
    assert_eq!(s.properties["bindAddress"], "0.0.0.0");
    assert!(
        !s.properties.contains_key("rocketmqHome"),
        "null values are left out"
    );
}

#[test]
fn a_peer_id_is_the_text_before_the_first_dash() {
    let peers = parse_peers("n-0-host-a:1;n1-b:2;").unwrap();
    assert_eq!(peers[0], ("n".to_owned(), "0-host-a:1".to_owned()));
    assert_eq!(
        peers.len(),
        2,
        "a trailing ';' adds no peer, as Java's split"
    );
    for bad in [
        "n0",
        "-a:1",
        "n0-a",
        "n0-a:0",
        "n0-a:99999",
        "n0-:1",
        "n0-a:1;;n1-b:2",
        "n0-a:1;n0-b:2",
    ] {
        assert!(
            matches!(parse_peers(bad), Err(ControllerConfigError::BadPeer { .. })),
            "{bad}"
        );
    }
}

#[test]
fn missing_peers_or_self_fail_with_javas_texts() {
    let err = settings("controllerDLegerGroup=g\ncontrollerDLegerSelfId=n0\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Attribute value controllerDLegerPeers of ControllerConfig is null or empty"
    );
    let err = settings("controllerDLegerGroup=g\ncontrollerDLegerPeers=n0-a:1\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Attribute value controllerDLegerSelfId of ControllerConfig is null or empty"
    );
    let err = settings(
        "controllerDLegerGroup=g\ncontrollerDLegerPeers=n0-a:1\ncontrollerDLegerSelfId= \n",
    )
    .unwrap_err();
    assert!(matches!(
        err,
        ControllerConfigError::Missing("controllerDLegerSelfId")
    ));
    let err = settings("controllerDLegerPeers=n0-a:1\ncontrollerDLegerSelfId=n0\n").unwrap_err();
    assert!(matches!(
        err,
        ControllerConfigError::Missing("controllerDLegerGroup")
    ));
    let err = settings(
        "controllerDLegerGroup=g\ncontrollerDLegerPeers=n0-a:1\ncontrollerDLegerSelfId=n3\n",
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("[DLedgerConfig] fail to init self address, config: "),
        "{err}"
    );
}

#[test]
fn bad_values_name_the_key() {
    for (text, key) in [
        ("electMasterMaxRetryCount=x", "electMasterMaxRetryCount"),
        ("enableElectUncleanMaster=yes", "enableElectUncleanMaster"),
        (
            "scanNotActiveBrokerInterval=0",
            "scanNotActiveBrokerInterval",
        ),
        (
            "scanInactiveMasterInterval=-5",
            "scanInactiveMasterInterval",
        ),
        ("electMasterMaxRetryCount=-1", "electMasterMaxRetryCount"),
        ("metricsExporterType=GRAPHITE", "metricsExporterType"),
        ("jRaftElectionTimeoutMs=soon", "jRaftElectionTimeoutMs"),
    ] {
        match keys(text) {
            Err(ControllerConfigError::Value { invalid, .. }) => assert_eq!(invalid.key, key),
            other => panic!("{text}: {other:?}"),
        }
    }
    let c = keys("metricsExporterType=2\ncontrollerDLegerGroup=  g1 \n").unwrap();
    assert_eq!(c.keys.metrics_exporter_type, MetricsExporterType::Prom);
    assert_eq!(
        c.keys.controller_dleger_group.as_deref(),
        Some("g1"),
        "strings trimmed"
    );
}

#[test]
fn keys_not_acted_on_are_named() {
    let c = keys(&format!(
        "{THREE}controllerType=jRaft\nmappedFileSize=1024\njRaftServerId=a:1\n\
         controllerThreadPoolNums=4\nmetricsExporterType=PROM\nrocketmqHome=/opt/rmq\n"
    ))
    .unwrap();
    assert_eq!(
        c.not_acted_on(),
        [
            "controllerType=jRaft",
            "mappedFileSize",
            "jRaftServerId",
            "controllerThreadPoolNums",
            "metricsExporterType"
        ]
    );
    assert!(
        keys("controllerType=DLedger")
            .unwrap()
            .not_acted_on()
            .is_empty()
    );
}

#[test]
fn print_lists_field_names_and_jraft_only_when_asked() {
    let c = keys(THREE).unwrap();
    let embedded = c.render_print(false);
    assert!(embedded.contains("\nisProcessReadEvent=false\n"));
    assert!(
        embedded.contains("\nrocketmqHome=\n"),
        "null printed empty, as Java"
    );
    assert!(embedded.contains("controllerDLegerSelfId=n1\n"));
    assert!(!embedded.contains("jRaft"));
    let standalone = c.render_print(true);
    assert!(standalone.contains("jRaftInitConf=localhost:9880,localhost:9881,localhost:9882\n"));
}

#[test]
fn update_applies_runtime_keys_and_records_restart_ones() {
    let s = settings(THREE).unwrap();
    let (next, restart) = update_settings(
        &s,
        &props("enableElectUncleanMaster=true\nprocessReadEvent=true\nscanNotActiveBrokerInterval=7000\nserverSocketBacklog=10\n"),
    )
    .unwrap();
    assert!(next.enable_elect_unclean_master && next.process_read_event);
    assert_eq!(next.properties["isProcessReadEvent"], "true");
    assert_eq!(next.properties["scanNotActiveBrokerInterval"], "7000");
    assert_eq!(next.properties["serverSocketBacklog"], "10");
    // A restart key is listed as set, and the running value stays.
    assert_eq!(
        next.scan_not_active_broker_interval,
        Duration::from_millis(5000)
    );
    assert_eq!(
        restart,
        ["scanNotActiveBrokerInterval", "serverSocketBacklog"]
    );
    assert_eq!(next.peers, s.peers);
}

#[test]
fn update_refuses_the_black_list_and_bad_values_changing_nothing() {
    let s = settings(&format!(
        "{THREE}configBlackList=configBlackList;electMasterMaxRetryCount\n"
    ))
    .unwrap();
    for key in [
        "configBlackList",
        "configStorePath",
        "rocketmqHome",
        "electMasterMaxRetryCount",
    ] {
        let body = props(&format!("notifyBrokerRoleChanged=false\n{key}=1\n"));
        assert!(
            matches!(update_settings(&s, &body), Err(UpdateError::BlackListed)),
            "{key}"
        );
    }
    let bad = props("notifyBrokerRoleChanged=false\nenableElectUncleanMaster=maybe\n");
    assert!(matches!(
        update_settings(&s, &bad),
        Err(UpdateError::Value(_))
    ));
    let bad = props("scanInactiveMasterInterval=0\n");
    assert!(matches!(
        update_settings(&s, &bad),
        Err(UpdateError::Value(_))
    ));
}

#[test]
fn update_changes_only_extra_keys_already_there() {
    let s = settings(&format!("{THREE}someKey=a\n")).unwrap();
    let (next, restart) = update_settings(&s, &props("someKey=b\nnewKey=c\n")).unwrap();
    assert_eq!(next.properties["someKey"], "b");
    assert!(!next.properties.contains_key("newKey"));
    assert!(restart.is_empty());
}

#[test]
fn tls_lines_are_never_listed() {
    let s = settings(&format!("{THREE}tls.server.keyPassword=secret\n")).unwrap();
    assert!(!render(&s.properties).contains("secret"));
}
