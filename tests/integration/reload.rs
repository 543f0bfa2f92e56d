//! Reload without restart: SIGHUP re-reads the config file of the running binary. Live keys
//! apply at once, restart-only keys are named and not applied, a file that does not parse
//! changes nothing and the log names the file, the key and the value, and a storm of SIGHUPs
//! is survived.

use namesrv::protocol::code::request;

use crate::harness::spawned::{self, Spawned};
use crate::harness::{TestClient, body_text};

async fn config_value(addr: std::net::SocketAddr, key: &str) -> Option<String> {
    let mut client = TestClient::connect(addr).await;
    let body = body_text(&client.call(request::GET_NAMESRV_CONFIG, &[], None).await);
    body.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")).map(str::to_owned))
}

/// Asserts that the server at `addr` reports `key=expected`.
async fn assert_config(addr: std::net::SocketAddr, key: &str, expected: &str) {
    assert_eq!(
        config_value(addr, key).await.as_deref(),
        Some(expected),
        "{key}"
    );
}

/// Sends SIGHUP and waits for the reload's log line number `nth` (1-based) containing `needle`.
fn hup_and_wait(server: &mut Spawned, needle: &str, nth: usize) -> String {
    server.signal("HUP");
    let deadline = std::time::Instant::now() + spawned::PATIENCE;
    loop {
        let log = server.log_text();
        if let Some(line) = log.lines().filter(|l| l.contains(needle)).nth(nth - 1) {
            return line.to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {needle:?} after SIGHUP; log:\n{log}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test]
async fn sighup_applies_live_keys_and_names_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let conf = spawned::config(dir.path(), "orderMessageEnable=false");
    let mut server = Spawned::start(&conf, dir.path(), &[]);
    assert_config(server.addr, "orderMessageEnable", "false").await;

    spawned::config(
        dir.path(),
        "orderMessageEnable=true\nevictionProtectionMinBrokers=7\nlistenPort=1\nkvConfigPath=/elsewhere.json",
    );
    let line = hup_and_wait(&mut server, "config reloaded: applied", 1);
    assert!(
        line.contains("orderMessageEnable") && line.contains("evictionProtectionMinBrokers"),
        "{line}"
    );
    assert_config(server.addr, "orderMessageEnable", "true").await;
    assert_config(server.addr, "evictionProtectionMinBrokers", "7").await;
    let log = server.log_text();
    let restart = log
        .lines()
        .find(|l| l.contains("take effect only at a restart"))
        .expect(&log);
    assert!(restart.contains("listenPort"), "{restart}");
    let refused = log.lines().find(|l| l.contains("black list")).expect(&log);
    assert!(refused.contains("kvConfigPath"), "{refused}");
    assert_eq!(
        config_value(server.addr, "listenPort").await.as_deref(),
        Some("0"),
        "not applied"
    );

    // A file that does not parse changes nothing, and says where.
    spawned::config(
        dir.path(),
        "orderMessageEnable=false\nwaitSecondsForService=abc",
    );
    let line = hup_and_wait(&mut server, "config reload failed", 1);
    let file = conf.display().to_string();
    assert!(
        line.contains(&file) && line.contains("waitSecondsForService") && line.contains("abc"),
        "{line}"
    );
    assert_config(server.addr, "orderMessageEnable", "true").await;
    // Neither does one UPDATE_NAMESRV_CONFIG would refuse.
    spawned::config(
        dir.path(),
        "orderMessageEnable=false\nwaitSecondsForService=-5",
    );
    hup_and_wait(&mut server, "config reload failed", 2);
    assert_config(server.addr, "orderMessageEnable", "true").await;
    server.signal("TERM");
    assert!(server.wait_exit().success());
}

#[tokio::test]
async fn a_sighup_storm_is_survived() {
    let dir = tempfile::tempdir().unwrap();
    let conf = spawned::config(dir.path(), "orderMessageEnable=false");
    let mut server = Spawned::start(&conf, dir.path(), &[]);
    spawned::config(dir.path(), "orderMessageEnable=true");
    let pid = nix::unistd::Pid::from_raw(server.pid() as i32);
    const STORM: usize = 500;
    for _ in 0..STORM {
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    }
    server
        .wait_for_log("config reloaded: applied")
        .expect("reloaded");
    // Still serving, with the new value; the storm coalesced into a few reloads.
    assert_config(server.addr, "orderMessageEnable", "true").await;
    std::thread::sleep(std::time::Duration::from_millis(300));
    let reloads = server.log_text().matches("config reload").count();
    assert!(
        (1..STORM).contains(&reloads),
        "{reloads} reload lines for {STORM} signals"
    );
    server.signal("TERM");
    assert!(server.wait_exit().success());
}
