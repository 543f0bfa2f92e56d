//! The deployment artefacts against the server itself: the configuration files they ship
//! (the Kubernetes ConfigMap's, the container image's) load with this server's config loader,
//! and name only keys it knows, with valid values; the command lines they run parse. The
//! schema and tool checks (systemd-analyze, kubernetes-validate) are `deploy/check.sh`'s,
//! which CI runs.

use std::path::Path;

use namesrv::config::{Config, Env, properties};

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
