//! The deployment artefacts against the server itself: the configuration files they ship
//! (the Kubernetes ConfigMap's, the container image's) load with this server's config loader,
//! and name only keys it knows, with valid values; the command lines they run parse. The
//! schema and tool checks (systemd-analyze, kubernetes-validate, promtool) are
//! `deploy/check.sh`'s, which CI runs; the alert rules name only metrics the server exposes.

use std::collections::BTreeSet;
use std::path::Path;

use namesrv::config::{Config, Env, properties};

use crate::harness::{TestServer, register_master};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn load(text: &str, origin: &str) -> Config {
    let env = Env {
        home: "/var/lib/namesrv".into(),
        rocketmq_home: Some("/var/lib/namesrv".into()),
    };
    let props = properties::parse(text).unwrap();
    let config = Config::from_properties(&props, origin, &env).unwrap_or_else(|e| panic!("{e}"));
    let unknown: Vec<&String> = config.extra.keys().collect();
    assert!(
        unknown.is_empty(),
        "{origin}: keys the server does not know: {unknown:?}"
    );
    config
}

/// The `namesrv.conf` block of the ConfigMap, unindented.
fn configmap_conf() -> String {
    let yaml =
        std::fs::read_to_string(Path::new(REPO).join("deploy/kubernetes/namesrv.yaml")).unwrap();
    let mut lines = yaml
        .lines()
        .skip_while(|l| l.trim() != "namesrv.conf: |")
        .skip(1);
    let mut out = String::new();
    for line in lines.by_ref() {
        match line.strip_prefix("    ") {
            Some(l) => out.extend([l, "\n"]),
            None if line.trim().is_empty() => out.push('\n'),
            None => break,
        }
    }
    assert!(!out.is_empty(), "no namesrv.conf in the ConfigMap");
    out
}

#[test]
fn the_kubernetes_configmap_is_a_valid_config_for_three_peers() {
    let config = load(&configmap_conf(), "the ConfigMap");
    let s = &config.settings;
    assert_eq!((s.bind_address.as_str(), s.listen_port), ("0.0.0.0", 9876));
    assert!(s.restore_routes_on_start);
    assert_eq!(s.namesrv_peers.error(), None);
    assert_eq!(s.namesrv_peers.value().entries().len(), 3);
    assert_eq!(
        s.http_nsaddr_list, s.namesrv_peers,
        "one list of the cluster's nodes"
    );
    assert_eq!(
        s.route_snapshot_file(),
        Path::new("/var/lib/namesrv/routes.snapshot"),
        "the snapshot lives on the pod's volume"
    );
}

#[test]
fn the_container_image_config_is_valid() {
    let text =
        std::fs::read_to_string(Path::new(REPO).join("deploy/container/namesrv.conf")).unwrap();
    let config = load(&text, "deploy/container/namesrv.conf");
    assert_eq!(
        config.settings.kv_config_path,
        "/var/lib/namesrv/kvConfig.json"
    );
}

#[test]
fn the_systemd_unit_verifies_when_systemd_analyze_is_there() {
    let unit =
        std::fs::read_to_string(Path::new(REPO).join("deploy/systemd/namesrv.service")).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart=/usr/local/bin/namesrv "))
        .expect("ExecStart runs /usr/local/bin/namesrv");
    // The unit's command line parses (the file it names does not exist here).
    let mut args: Vec<&str> = exec.split_whitespace().collect();
    args.push("--help");
    let out = std::process::Command::new(crate::harness::process::BIN)
        .args(&args)
        .output()
        .unwrap();
    crate::harness::process::assert_success(&out);
    if std::process::Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("note: systemd-analyze is not installed; deploy/check.sh runs it in CI");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("namesrv.service");
    let unit = unit.replace(
        "ExecStart=/usr/local/bin/namesrv",
        &format!("ExecStart={}", crate::harness::process::BIN),
    );
    std::fs::write(&copy, unit).unwrap();
    let out = std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&copy)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "systemd-analyze verify: {said}"
    );
}

/// The metric names the alert rules' expressions use (Prometheus's own `up` aside).
fn metrics_the_alert_rules_name() -> BTreeSet<String> {
    let rules =
        std::fs::read_to_string(Path::new(REPO).join("deploy/prometheus/namesrv-rules.yml"))
            .unwrap();
    rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr:"))
        .flat_map(|expr| expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|word| word.starts_with("namesrv_"))
        .map(str::to_owned)
        .collect()
}

/// Every metric an alert rule names is one the server exposes, so that a renamed metric
/// cannot leave an alert that never fires. Auth (audit, so the broker may register unsigned),
/// a peer check and an embedded one-node controller are on, since their families appear only
/// then.
#[tokio::test]
async fn every_metric_the_alert_rules_name_is_exposed() {
    let (dir, acl) = crate::harness::temp_file(
        "acl.yml",
        "accounts:\n  - {accessKey: rocketmq2, secretKey: 12345678, admin: true}\n",
    );
    let properties = format!(
        "authMode=audit\nauthConfigPath={}\nnamesrvPeers=127.0.0.1:1\npeerCheckIntervalMillis=100\n\
         controllerDLegerGroup=g\ncontrollerDLegerPeers=n0-127.0.0.1:9878\ncontrollerDLegerSelfId=n0\n\
         controllerStorePath={}\n",
        acl.display(),
        dir.path().join("raft").display()
    );
    let server = TestServer::start_with(crate::harness::Options {
        properties,
        controller: true,
        ..Default::default()
    })
    .await;
    let mut client = server.client().await;
    register_master(&mut client, "broker-a", "127.0.0.1:10911", &["T", "U"]).await;
    let wanted = metrics_the_alert_rules_name();
    assert!(wanted.len() >= 10, "{wanted:?}");
    let mut missing = wanted.clone();
    for _ in 0..250 {
        let controller = server.controller.as_ref();
        let text = namesrv::http::exposition::render_with(&server.state, &server.auth, controller);
        let exposed: BTreeSet<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split(['{', ' ']).next())
            .collect();
        missing.retain(|name| !exposed.contains(name.as_str()));
        if missing.is_empty() {
            return;
        }
        // The peer families appear once the first check has ended.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("the alert rules name metrics the server does not expose: {missing:?}");
}
