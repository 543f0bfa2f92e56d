//! Files on disk and the reload of accounts and TLS material, tried as an attacker would: links
//! planted beside the KV file, a `routeSnapshotPath` naming someone else's file, a FIFO put
//! where the certificate was, a chain too long for any client, and an accounts file emptied
//! while the server runs.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Duration;

use namesrv::protocol::code::{request, response};

use crate::harness::spawned::{self, Spawned};
use crate::harness::{Options, TestClient, TestServer, cluster_info, put_kv, tls_client_config};
use crate::tls::Pki;

fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success(), "mkfifo {}", path.display());
}

#[tokio::test]
async fn planted_links_and_a_foreign_snapshot_path_redirect_no_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let kv = store.join("kvConfig.json");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "system file").unwrap();
    // A snapshot path that names another file (a typo, or a planted link).
    let foreign = dir.path().join("operator-notes.txt");
    std::fs::write(&foreign, "not a snapshot").unwrap();
    let snapshot = store.join("routes.snapshot");
    symlink(&victim, &snapshot).unwrap();
    let opts = Options {
        properties: format!(
            "kvConfigPath={}\nrouteSnapshotPath={}\n",
            kv.display(),
            foreign.display()
        ),
        kv_path: Some(kv.clone()),
        warm_restart: true,
        ..Options::default()
    };
    let server = TestServer::start_in(dir, opts).await;
    // Planted while the server runs (a start removes stale temporary files): the names the
    // temporary files used to have, as links to the victim.
    let planted = [
        store.join("kvConfig.json.tmp"),
        store.join("kvConfig.json.bak.tmp"),
        store.join("kvConfig.json.journal"),
        foreign.with_extension("txt.tmp"),
    ];
    for name in &planted {
        symlink(&victim, name).unwrap();
    }
    let mut c = server.client().await;
    for n in 0..3 {
        let value = n.to_string();
        let put = put_kv(&mut c, "ns", "k", &value).await;
        assert_eq!(put.code, response::SUCCESS);
    }
    crate::harness::register_master(&mut c, "broker-a", "127.0.0.1:10911", &["T1", "T2"]).await;
    let home = server.stop_keeping_home().await;
    assert_eq!(std::fs::read(&victim).unwrap(), b"system file");
    assert!(std::fs::symlink_metadata(&kv).unwrap().is_file());
    // The foreign file was moved aside, not overwritten, and the shutdown snapshot written.
    let aside = home.path().join("operator-notes.txt.not-a-snapshot");
    assert_eq!(std::fs::read(&aside).unwrap(), b"not a snapshot");
    assert!(
        std::fs::read(&foreign)
            .unwrap()
            .starts_with(b"namesrv-routes ")
    );
    // The planted snapshot link at the default name was never touched, nor its target.
    assert!(std::fs::symlink_metadata(&snapshot).unwrap().is_symlink());
}

/// Calls GET_BROKER_CLUSTER_INFO over a new TLS connection.
async fn tls_call(addr: std::net::SocketAddr) -> i32 {
    let mut c = TestClient::connect_tls(addr, tls_client_config(), b"")
        .await
        .expect("TLS handshake");
    cluster_info(&mut c).await.code
}

#[tokio::test]
async fn a_fifo_or_an_oversized_chain_at_the_certificate_path_fails_the_reload_not_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new();
    pki.leaf("live");
    let conf = spawned::config(dir.path(), &pki.server_properties("live"));
    let mut server = Spawned::start(&conf, dir.path(), &[]);
    assert_eq!(tls_call(server.addr).await, response::SUCCESS);
    let cert = pki.path("live.pem");
    let pem = std::fs::read_to_string(&cert).unwrap();
    let mut failed = 0;
    let mut reload_fails = |server: &mut Spawned| {
        server.signal("HUP");
        failed += 1;
        let line = server.wait_for(|l| l.contains("TLS reload failed"));
        assert!(line.is_some(), "log:\n{}", server.log_text());
        let deadline = std::time::Instant::now() + spawned::PATIENCE;
        while server.log_text().matches("TLS reload failed").count() < failed {
            assert!(
                std::time::Instant::now() < deadline,
                "reload {failed} never failed; log:\n{}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };

    // A chain that would load and then break every handshake, then a file over the cap.
    for text in [pem.repeat(400), pem.repeat(4 * 1024 * 1024 / pem.len() + 1)] {
        std::fs::write(&cert, text).unwrap();
        reload_fails(&mut server);
        assert_eq!(tls_call(server.addr).await, response::SUCCESS);
    }

    // A FIFO: refused at once, not waited on; SIGTERM then stops the server as usual.
    mkfifo(Path::new(&cert));
    reload_fails(&mut server);
    assert!(server.log_text().contains("not a regular file"));
    assert_eq!(tls_call(server.addr).await, response::SUCCESS);
    server.signal("TERM");
    assert!(server.wait_exit().success());
}

#[tokio::test]
async fn an_accounts_file_emptied_while_running_is_not_applied_until_sighup() {
    let strict = "signatureRequired: [read, broker, admin]\naccounts:\n\
        \x20 - {accessKey: rocketmq2, secretKey: '12345678', admin: true}\n";
    let (_dir, acl) = crate::harness::temp_file("acl.yml", strict);
    let props = format!("authMode=enforce\nauthConfigPath={}\n", acl.display());
    let (server, mut c) = TestServer::with_client(&props).await;
    let unsigned_read = async |c: &mut TestClient| {
        c.call(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T1")], None)
            .await
            .code
    };
    assert_eq!(unsigned_read(&mut c).await, response::NO_PERMISSION);
    // Emptied (or cut short) on disk: the watcher notices and keeps the previous accounts.
    std::fs::write(&acl, "").unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while server.auth.stats().unwrap().reload_failures == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the change was not noticed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.auth.stats().unwrap().reloads, 0);
    assert_eq!(unsigned_read(&mut c).await, response::NO_PERMISSION);
    // SIGHUP is the operator's decision: then it applies.
    server.reload.request();
    while server.auth.stats().unwrap().reloads == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the reload was not applied"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_ne!(unsigned_read(&mut c).await, response::NO_PERMISSION);
}
