//! The controller's two shapes and its configuration requests: GET/UPDATE_CONTROLLER_CONFIG
//! (1010/1009) on a controller listener over a real socket (Java's property set, black list,
//! `string2Properties error`, persistence to the controller's own `configStorePath`), name
//! server codes refused with `3` there, and the binary embedded (`enableControllerInNamesrv`)
//! and standalone (`--controller`): boot lines, `-p` of each shape, exit status 255 when the
//! controller cannot start.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;

use namesrv::protocol::code::{request, response};

use crate::harness::process::{self, PATIENCE, Reaped, boot_addr, free_port};
use crate::harness::{Options, TestClient, TestServer, body_text};

const UPDATE_CONTROLLER_CONFIG: i32 = 1009;
const GET_CONTROLLER_CONFIG: i32 = 1010;

/// A one-node group's keys on `port`, storing under `dir`.
fn one_node(port: u16, dir: &Path) -> String {
    format!(
        "controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:{port}\n\
         controllerDLegerSelfId=n0\ncontrollerStorePath={}\n",
        dir.join("raft").display()
    )
}

/// A test server running the controller, configured by `extra` after a one-node group.
async fn embedded(extra: &str) -> (TestServer, TestClient) {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{}{extra}", one_node(9878, dir.path()));
    let server = TestServer::start_in(
        dir,
        Options {
            properties: text,
            controller: true,
            ..Options::default()
        },
    )
    .await;
    let client = TestClient::connect(server.controller_addr.unwrap()).await;
    (server, client)
}

async fn controller_config(c: &mut TestClient) -> String {
    let resp = c.call(GET_CONTROLLER_CONFIG, &[], None).await;
    assert_eq!(resp.code, response::SUCCESS);
    body_text(&resp)
}

#[tokio::test]
async fn get_lists_javas_property_set() {
    let (_server, mut c) = embedded("orderMessageEnable=true\nprocessReadEvent=true\n").await;
    let text = controller_config(&mut c).await;
    let lines: Vec<&str> = text.lines().collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted, "sorted by key");
    for line in [
        "controllerDLegerPeers=n0-127.0.0.1:9878",
        "isProcessReadEvent=true",
        "processReadEvent=true",
        "notifyBrokerRoleChanged=true",
        "configBlackList=configBlackList;configStorePath",
        // The controller's NettyServerConfig: its listener is on the peer port.
        "listenPort=9878",
        "bindAddress=0.0.0.0",
        // The file's other keys, the name server's among them (embedded).
        "orderMessageEnable=true",
    ] {
        assert!(lines.contains(&line), "{line} missing from:\n{text}");
    }
}

#[tokio::test]
async fn update_applies_persists_and_refuses_as_java() {
    let (server, mut c) = embedded("").await;
    let controller = server.controller.clone().unwrap();
    let store = server.home.path().join("controller/controller.properties");

    let absent = c.call(UPDATE_CONTROLLER_CONFIG, &[], None).await;
    assert_eq!((absent.code, absent.remark.as_deref()), (0, None));
    assert!(!store.exists(), "an absent body changes nothing");

    let body = b"notifyBrokerRoleChanged=false\nenableElectUncleanMaster=true\n";
    let ok = c.call(UPDATE_CONTROLLER_CONFIG, &[], Some(body)).await;
    assert_eq!((ok.code, ok.remark.as_deref()), (0, None));
    let settings = controller.settings();
    assert!(!settings.notify_broker_role_changed && settings.enable_elect_unclean_master);
    let text = controller_config(&mut c).await;
    assert!(text.contains("\nnotifyBrokerRoleChanged=false\n"), "{text}");
    let persisted = std::fs::read_to_string(&store).unwrap();
    assert!(
        persisted.contains("enableElectUncleanMaster=true\n"),
        "{persisted}"
    );

    let restart = c
        .call(
            UPDATE_CONTROLLER_CONFIG,
            &[],
            Some(b"scanNotActiveBrokerInterval=9000"),
        )
        .await;
    assert_eq!(restart.code, 0);
    assert!(
        restart
            .remark
            .unwrap()
            .contains("scanNotActiveBrokerInterval")
    );

    for key in ["configBlackList", "configStorePath", "rocketmqHome"] {
        let body = format!("electMasterMaxRetryCount=9\n{key}=x\n");
        let refused = c
            .call(UPDATE_CONTROLLER_CONFIG, &[], Some(body.as_bytes()))
            .await;
        assert_eq!(
            (refused.code, refused.remark.as_deref()),
            (
                response::NO_PERMISSION,
                Some("Can not update config in black list.")
            ),
            "{key}"
        );
    }
    let malformed = c
        .call(UPDATE_CONTROLLER_CONFIG, &[], Some(b"a=\\uZZZZ"))
        .await;
    assert_eq!(
        (malformed.code, malformed.remark.as_deref()),
        (response::SYSTEM_ERROR, Some("string2Properties error"))
    );
    let bad = c
        .call(
            UPDATE_CONTROLLER_CONFIG,
            &[],
            Some(b"electMasterMaxRetryCount=many"),
        )
        .await;
    assert_eq!(bad.code, response::SYSTEM_ERROR);
    assert!(bad.remark.unwrap().contains("electMasterMaxRetryCount"));
    assert_eq!(controller.settings().elect_master_max_retry_count, 3);
}

#[tokio::test]
async fn the_controller_port_refuses_name_server_codes_and_the_name_server_port_controller_codes() {
    let (server, mut c) = embedded("").await;
    let route = c
        .call(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "t")], None)
        .await;
    assert_eq!(
        (route.code, route.remark.as_deref()),
        (3, Some(" request type 105 not supported"))
    );
    let mut ns = server.client().await;
    let config = ns.call(GET_CONTROLLER_CONFIG, &[], None).await;
    assert_eq!(
        (config.code, config.remark.as_deref()),
        (3, Some(" request type 1010 not supported"))
    );
}

/// Starts the binary with `args` and `HOME=home`, and waits for a stdout line containing
/// `boot`: the address it names, and every line read until then.
fn start(home: &Path, args: &[&str], boot: &str) -> (Reaped, SocketAddr, Vec<String>) {
    let mut child: Child = process::namesrv(home)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let child = Reaped(child);
    let mut seen = Vec::new();
    loop {
        let line = rx.recv_timeout(PATIENCE).expect("the boot line");
        seen.push(line.clone());
        if line.contains(boot) {
            return (child, boot_addr(&line), seen);
        }
    }
}

#[tokio::test]
async fn standalone_serves_only_the_controller_on_its_peer_port() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let conf = dir.path().join("controller.conf");
    std::fs::write(
        &conf,
        format!("bindAddress=127.0.0.1\n{}", one_node(port, dir.path())),
    )
    .unwrap();
    let args = ["--controller", "-c", conf.to_str().unwrap()];
    let (_child, addr, lines) = start(dir.path(), &args, "The Controller Server boot success");
    assert_eq!(addr.port(), port);
    assert_eq!(
        lines[0],
        format!("load config properties file OK, {}", conf.display())
    );
    assert!(lines[1].starts_with("The Controller Server boot success. serializeType=JSON"));
    let mut c = TestClient::connect(addr).await;
    assert!(
        controller_config(&mut c)
            .await
            .contains(&format!("listenPort={port}\n"))
    );
    let route = c
        .call(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "t")], None)
        .await;
    assert_eq!(
        (route.code, route.remark.as_deref()),
        (3, Some(" request type 105 not supported"))
    );
}

#[tokio::test]
async fn embedded_serves_both_and_announces_both() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let extra = format!(
        "enableControllerInNamesrv=true\n{}",
        one_node(port, dir.path())
    );
    let conf = process::config(dir.path(), &extra);
    let args = ["-c", conf.to_str().unwrap()];
    let (_child, _, lines) = start(dir.path(), &args, "The ControllerManager boot success");
    let name_server = lines
        .iter()
        .find(|l| l.starts_with(process::BOOT_LINE))
        .expect("the name server's boot line comes first");
    let mut ns = TestClient::connect(boot_addr(name_server)).await;
    let route = ns
        .call(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "t")], None)
        .await;
    assert_eq!(route.code, 17, "the name server answers: topic not exist");
    let mut c = TestClient::connect(SocketAddr::from(([127, 0, 0, 1], port))).await;
    assert!(
        controller_config(&mut c)
            .await
            .contains("enableControllerInNamesrv=true\n")
    );
}

#[test]
fn print_shows_each_shapes_objects() {
    let dir = tempfile::tempdir().unwrap();
    let keys = one_node(9878, dir.path());
    let conf = process::config(
        dir.path(),
        &format!("enableControllerInNamesrv=true\n{keys}"),
    );
    let out = process::run_namesrv(dir.path(), &["-p"], Some(&conf));
    process::assert_success(&out);
    let text = process::stdout(&out);
    for line in [
        "\norderMessageEnable=false\n",
        "\nisProcessReadEvent=false\n",
        "\ncontrollerDLegerSelfId=n0\n",
    ] {
        assert!(text.contains(line), "embedded -p lacks {line:?}:\n{text}");
    }
    assert!(!text.contains("jRaft"), "embedded -p has no JraftConfig");

    let conf = dir.path().join("controller.conf");
    std::fs::write(&conf, &keys).unwrap();
    let out = process::run_namesrv(dir.path(), &["--controller", "-p"], Some(&conf));
    process::assert_success(&out);
    let text = process::stdout(&out);
    for line in [
        "\nisProcessReadEvent=false\n",
        "\njRaftGroupId=jRaft-Controller\n",
        "\nlistenPort=19876\n",
    ] {
        assert!(text.contains(line), "standalone -p lacks {line:?}:\n{text}");
    }
    assert!(
        !text.contains("orderMessageEnable"),
        "standalone -p has no NamesrvConfig"
    );
}

#[test]
fn a_controller_that_cannot_start_exits_255_with_javas_text() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("controller.conf");
    for (text, expected) in [
        (
            "controllerDLegerGroup=g\ncontrollerDLegerSelfId=n0\n",
            "Attribute value controllerDLegerPeers of ControllerConfig is null or empty",
        ),
        (
            "controllerDLegerGroup=g\ncontrollerDLegerPeers=n0-127.0.0.1:1\n",
            "Attribute value controllerDLegerSelfId of ControllerConfig is null or empty",
        ),
        (
            "controllerDLegerGroup=g\ncontrollerDLegerPeers=n0-127.0.0.1:1\ncontrollerDLegerSelfId=n1\n",
            "[DLedgerConfig] fail to init self address",
        ),
    ] {
        std::fs::write(&conf, text).unwrap();
        let out = process::run_namesrv(dir.path(), &["--controller"], Some(&conf));
        assert_eq!(out.status.code(), Some(255), "{text}");
        assert!(
            process::stderr(&out).contains(expected),
            "{}",
            process::stderr(&out)
        );
        // Embedded, the same keys stop the name server too.
        let conf = process::config(
            dir.path(),
            &format!("enableControllerInNamesrv=true\n{text}"),
        );
        let out = process::run_namesrv(dir.path(), &[], Some(&conf));
        assert_eq!(out.status.code(), Some(255), "embedded {text}");
    }
}

#[test]
fn a_takeover_of_a_controller_node_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("controller.conf");
    std::fs::write(&conf, one_node(free_port(), dir.path())).unwrap();
    let out = process::run_namesrv(
        dir.path(),
        &["--controller", "--takeover", "1"],
        Some(&conf),
    );
    assert!(!out.status.success());
    assert!(
        process::stderr(&out).contains("not handed over"),
        "{}",
        process::stderr(&out)
    );
}

#[test]
fn the_shipped_controller_conf_is_a_one_node_group() {
    let conf = Path::new(env!("CARGO_MANIFEST_DIR")).join("conf/controller.conf");
    let dir = tempfile::tempdir().unwrap();
    let out = process::run_namesrv(dir.path(), &["--controller", "-p"], Some(&conf));
    process::assert_success(&out);
    let text = process::stdout(&out);
    for line in [
        "\ncontrollerDLegerPeers=n0-127.0.0.1:9878\n",
        "\ncontrollerDLegerSelfId=n0\n",
        "\ncontrollerDLegerGroup=group1\n",
    ] {
        assert!(text.contains(line), "{line:?} missing:\n{text}");
    }
}
