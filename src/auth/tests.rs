//! Gate-level tests: modes, counters and reloads (the decision rules are tested in
//! `policy/tests.rs`).

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::Env;
use crate::file_watch::POLL_INTERVAL;
use crate::protocol::ExtFields;
use crate::protocol::code::request as rc;
use crate::reload::Reload;

const ACCOUNTS: &str =
    "accounts:\n  - {accessKey: rocketmq2, secretKey: '12345678', admin: true}\n";

fn settings(mode: AuthMode, path: &Path) -> Settings {
    let mut s = Settings::defaults(&Env {
        home: "/nonexistent".into(),
        rocketmq_home: None,
    });
    s.auth_mode = mode;
    s.auth_config_path = path.display().to_string();
    s
}

fn gate(mode: AuthMode, text: &str) -> (Gate, tempfile::TempDir) {
    let (dir, path) = crate::durable::temp_file("acl.yml", text);
    (Gate::load(&settings(mode, &path)).unwrap(), dir)
}

/// The gate's facts about the codes these tests send, as their rows in the name server's
/// request table give them (the table's own test checks every row).
fn access(code: i32) -> Access {
    match code {
        rc::PUT_KV_CONFIG => Access::audited(Audit {
            request: "PUT_KV_CONFIG",
            fields: &["key", "namespace"],
            config_keys: false,
        }),
        rc::GET_ROUTEINFO_BY_TOPIC => Access::of(Permission::Read),
        rc::REGISTER_BROKER => Access::of(Permission::Broker),
        _ => Access::UNKNOWN,
    }
}

fn admit(gate: &Gate, req: &RemotingCommand, peer: SocketAddr) -> Result<Ticket, Refusal> {
    gate.admit(req, peer, &access(req.code))
}

fn peer() -> SocketAddr {
    "127.0.0.1:40000".parse().unwrap()
}

/// Whether the gate's current accounts let `ak` with `sk` send admin requests from [`peer`].
fn admin_allowed(gate: &Gate, ak: &str, sk: &str) -> bool {
    gate.check_basic(Some((ak, sk)), Permission::Admin, peer().ip())
        .is_ok()
}

fn put_kv(oneway: bool) -> RemotingCommand {
    let mut req = RemotingCommand::request(rc::PUT_KV_CONFIG, 7);
    req.ext_fields = Some(ExtFields::from_iter([
        ("namespace", "n"),
        ("key", "k"),
        ("value", "v"),
    ]));
    if oneway {
        req.flag |= crate::protocol::code::FLAG_ONEWAY;
    }
    req
}

#[test]
fn off_checks_nothing_and_reads_no_file() {
    let s = settings(AuthMode::Off, Path::new("/nonexistent/acl.yml"));
    let gate = Gate::load(&s).unwrap();
    assert_eq!(gate.mode(), AuthMode::Off);
    assert!(admit(&gate, &put_kv(false), peer()).unwrap().0.is_none());
    assert_eq!(gate.stats(), None);
    assert!(!gate.reload());
    // Nothing is checked: any credentials, or none, pass.
    assert_eq!(
        gate.check_basic(None, Permission::Admin, peer().ip()),
        Ok(())
    );
}

#[test]
fn a_missing_or_broken_file_fails_the_start() {
    let e = Gate::load(&settings(
        AuthMode::Enforce,
        Path::new("/nonexistent/acl.yml"),
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("/nonexistent/acl.yml"), "{e}");
    let (_dir, path) = crate::durable::temp_file("acl.yml", "accounts:\n  - accessKey: [\n");
    let e = Gate::load(&settings(AuthMode::Audit, &path)).unwrap_err();
    assert!(matches!(e, LoadError::Invalid { line: 2.., .. }), "{e}");
}

#[test]
fn enforce_refuses_and_counts_by_reason() {
    let (gate, _dir) = gate(AuthMode::Enforce, ACCOUNTS);
    let refusal = admit(&gate, &put_kv(false), peer()).unwrap_err();
    assert_eq!(refusal.reason, Reason::MissingAccessKey);
    admit(&gate, &put_kv(true), peer()).unwrap_err();
    // Reads stay open by default and are not counted.
    let mut route = RemotingCommand::request(rc::GET_ROUTEINFO_BY_TOPIC, 8);
    route.ext_fields = Some(ExtFields::from_iter([("topic", "T")]));
    assert!(admit(&gate, &route, peer()).unwrap().0.is_none());
    let stats = gate.stats().unwrap();
    assert_eq!(stats.mode, AuthMode::Enforce);
    assert_eq!(stats.accounts, 1);
    assert_eq!(stats.refused_for(Reason::MissingAccessKey), 2);
    assert_eq!(stats.refused_total(), 2);
    assert_eq!(stats.refused_oneway, 1);
    assert_eq!(stats.accepted_signed, 0);
}

#[test]
fn audit_lets_everything_through_and_counts_what_it_would_refuse() {
    let (gate, _dir) = gate(AuthMode::Audit, ACCOUNTS);
    let ticket = admit(&gate, &put_kv(false), peer()).unwrap();
    let entry = ticket.0.as_ref().expect("admin requests are audited");
    assert!(
        entry
            .would_refuse
            .as_deref()
            .unwrap()
            .contains("no AccessKey")
    );
    ticket.record(&put_kv(false), peer(), Some(0));
    let stats = gate.stats().unwrap();
    assert_eq!(stats.refused_total(), 0);
    assert_eq!(stats.would_refuse_for(Reason::MissingAccessKey), 1);
}

#[test]
fn signed_admin_requests_get_an_audit_ticket() {
    let (gate, _dir) = gate(AuthMode::Enforce, ACCOUNTS);
    let mut req = put_kv(false);
    let fields = req.ext_fields.as_mut().unwrap();
    fields.insert("AccessKey", "rocketmq2");
    let sig = crate::protocol::signature::sign(
        "12345678",
        &crate::protocol::signature::content(fields.iter(), b"", &[]),
    );
    fields.insert("Signature", sig);
    let ticket = admit(&gate, &req, peer()).unwrap();
    assert_eq!(ticket.0.as_ref().unwrap().who, "rocketmq2");
    assert_eq!(gate.stats().unwrap().accepted_signed, 1);
    assert!(admin_allowed(&gate, "rocketmq2", "12345678"));
}

#[test]
fn a_broken_reload_keeps_the_previous_accounts() {
    let (gate, dir) = gate(AuthMode::Enforce, ACCOUNTS);
    let path = dir.path().join("acl.yml");
    std::fs::write(&path, "accounts:\n  - {accessKey: x}\n").unwrap();
    assert!(!gate.reload());
    assert!(admin_allowed(&gate, "rocketmq2", "12345678"));
    std::fs::remove_file(&path).unwrap();
    assert!(!gate.reload());
    assert!(admin_allowed(&gate, "rocketmq2", "12345678"));
    std::fs::write(
        &path,
        "accounts:\n  - {accessKey: rocketmq3, secretKey: '87654321', admin: true}\n",
    )
    .unwrap();
    assert!(gate.reload());
    assert!(!admin_allowed(&gate, "rocketmq2", "12345678"));
    assert!(admin_allowed(&gate, "rocketmq3", "87654321"));
    let stats = gate.stats().unwrap();
    assert_eq!((stats.reloads, stats.reload_failures), (1, 2));
}

/// Unsigned broker requests refused, except (in `WHITE`) from 10.0.1.*.
const BROKERS_SIGN: &str = "signatureRequired: [broker, admin]\naccounts:\n  - {accessKey: rocketmq2, secretKey: '12345678', admin: true}\n";
const WHITE: &str = "signatureRequired: [broker, admin]\nglobalWhiteRemoteAddresses: [10.0.1.*]\naccounts:\n  - {accessKey: rocketmq2, secretKey: '12345678', admin: true}\n";
const PINNED: &str = "accounts:\n  - {accessKey: pinned01, secretKey: '12345678', admin: true, whiteRemoteAddress: 10.0.0.*}\n";

#[test]
fn address_rules_are_refused_at_start_while_anyone_may_send_a_proxy_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("acl.yml");
    for (mode, text, rule) in [
        (AuthMode::Enforce, WHITE, "globalWhiteRemoteAddresses"),
        (AuthMode::Audit, PINNED, "whiteRemoteAddress"),
    ] {
        std::fs::write(&path, text).unwrap();
        let mut s = settings(mode, &path);
        for anyone in ["*", "10.9.9.9;*.*.*.*"] {
            s.proxy_protocol_allowed_addresses = anyone.into();
            let err = Gate::load(&s).expect_err("refused").to_string();
            for word in ["proxyProtocolAllowedAddresses", rule, "acl.yml"] {
                assert!(err.contains(word), "{err}");
            }
        }
        // Headers from the proxies only, or from nobody: the rules mean what they say.
        for limited in ["127.0.0.1;10.9.9.*", ""] {
            s.proxy_protocol_allowed_addresses = limited.into();
            Gate::load(&s).unwrap();
        }
        s.auth_mode = AuthMode::Off;
        s.proxy_protocol_allowed_addresses = "*".into();
        Gate::load(&s).unwrap();
    }
    // No address rule, nothing to claim.
    std::fs::write(&path, BROKERS_SIGN).unwrap();
    Gate::load(&settings(AuthMode::Enforce, &path)).unwrap();
}

#[test]
fn a_reload_that_adds_address_rules_while_anyone_may_send_a_proxy_header_is_refused() {
    let (gate, dir) = gate(AuthMode::Enforce, BROKERS_SIGN);
    let register = RemotingCommand::request(rc::REGISTER_BROKER, 1);
    // The address a PROXY header from anyone may claim.
    let claimed: SocketAddr = "10.0.1.7:40000".parse().unwrap();
    assert!(admit(&gate, &register, claimed).is_err());
    std::fs::write(dir.path().join("acl.yml"), WHITE).unwrap();
    assert!(!gate.reload(), "refused, the previous accounts kept");
    assert!(admit(&gate, &register, claimed).is_err());
    assert_eq!(gate.stats().unwrap().reload_failures, 1);
    // With headers limited to the proxies, the same file loads.
    let path = dir.path().join("acl.yml");
    let mut s = settings(AuthMode::Enforce, &path);
    s.proxy_protocol_allowed_addresses = "127.0.0.1".into();
    let limited = Gate::load(&s).unwrap();
    assert!(admit(&limited, &register, claimed).is_ok());
}

/// Lets the watcher task run until it is idle again (its file reads run on the blocking
/// pool; paused time does not advance while one is under way).
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn the_watcher_follows_file_changes_and_reload_requests() {
    let (gate, dir) = gate(AuthMode::Enforce, ACCOUNTS);
    let path = dir.path().join("acl.yml");
    let reload = Reload::new();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(watch::run(gate.clone(), reload.subscribe(), cancel.clone()));
    settle().await;

    // An unchanged file is not re-read.
    tokio::time::advance(POLL_INTERVAL * 3).await;
    settle().await;
    assert_eq!(gate.stats().unwrap().reloads, 0);

    // A change is picked up once it has looked the same for one poll.
    std::fs::write(
        &path,
        "accounts:\n  - {accessKey: rocketmq3, secretKey: '87654321', admin: true}\n  - {accessKey: rocketmq4, secretKey: '87654321'}\n",
    )
    .unwrap();
    tokio::time::advance(POLL_INTERVAL).await;
    settle().await;
    assert_eq!(gate.stats().unwrap().reloads, 0, "not settled yet");
    tokio::time::advance(POLL_INTERVAL).await;
    settle().await;
    let stats = gate.stats().unwrap();
    assert_eq!((stats.reloads, stats.accounts), (1, 2));

    // A broken edit is reported once and changes nothing.
    std::fs::write(&path, "accounts: [\n").unwrap();
    for _ in 0..3 {
        tokio::time::advance(POLL_INTERVAL).await;
        settle().await;
    }
    let stats = gate.stats().unwrap();
    assert_eq!((stats.reload_failures, stats.accounts), (1, 2));

    // A reload request (SIGHUP) re-reads even an unchanged file.
    reload.request();
    settle().await;
    assert_eq!(gate.stats().unwrap().reload_failures, 2);

    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(1), task)
        .await
        .unwrap()
        .unwrap();
}

#[test]
fn audit_lines_are_limited_per_window_and_skip_unknown_codes() {
    let (gate, _dir) = gate(AuthMode::Audit, ACCOUNTS);
    // Unknown codes are refused in enforce mode, but not worth an audit line.
    let mut unknown = RemotingCommand::request(9999, 1);
    unknown.ext_fields = Some(ExtFields::from_iter([("x", "y")]));
    assert!(admit(&gate, &unknown, peer()).unwrap().0.is_none());
    assert_eq!(
        gate.stats()
            .unwrap()
            .would_refuse_for(Reason::MissingAccessKey),
        1,
        "still counted"
    );
    // A flood of admin requests writes a bounded number of lines.
    let audited = (0..1000)
        .filter(|_| admit(&gate, &put_kv(false), peer()).unwrap().0.is_some())
        .count();
    assert!((1..=50).contains(&audited), "{audited} audit lines");
}

#[tokio::test(start_paused = true)]
async fn a_file_change_that_loosens_the_policy_waits_for_a_reload_request() {
    let strict = "signatureRequired: [read, broker, admin]\naccounts:\n\
        \x20 - {accessKey: rocketmq2, secretKey: '12345678', admin: true, whiteRemoteAddress: 10.9.9.9}\n";
    let (_dir, path) = crate::durable::temp_file("acl.yml", strict);
    // Address rules need PROXY headers limited to the proxies.
    let mut s = settings(AuthMode::Enforce, &path);
    s.proxy_protocol_allowed_addresses = "".into();
    let gate = Gate::load(&s).unwrap();
    let reload = Reload::new();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(watch::run(gate.clone(), reload.subscribe(), cancel.clone()));
    settle().await;
    let route = || {
        let mut req = RemotingCommand::request(rc::GET_ROUTEINFO_BY_TOPIC, 1);
        req.ext_fields = Some(ExtFields::from_iter([("topic", "T")]));
        req
    };
    let polls = || async {
        for _ in 0..3 {
            tokio::time::advance(POLL_INTERVAL).await;
            settle().await;
        }
    };
    // Emptied, cut short before an address rule's value, or cut before the list of classes:
    // the previous accounts stay (an unsigned read is still refused).
    for (n, text) in [
        "",
        "signatureRequired: [read, broker, admin]\naccounts:\n  - accessKey: rocketmq2\n    secretKey: '12345678'\n    admin: true\n    whiteRemoteAddress: ",
        "accounts:\n  - {accessKey: rocketmq2, secretKey: '12345678', admin: true, whiteRemoteAddress: 10.9.9.9}\n",
    ]
    .into_iter()
    .enumerate()
    {
        std::fs::write(&path, text).unwrap();
        polls().await;
        let stats = gate.stats().unwrap();
        assert_eq!((stats.reloads, stats.reload_failures), (0, n as u64 + 1), "{text:?}");
        assert!(admit(&gate, &route(), peer()).is_err(), "{text:?}");
    }
    // A reload request (SIGHUP) is the operator's decision: it applies the lowered policy.
    reload.request();
    settle().await;
    assert_eq!(gate.stats().unwrap().reloads, 1);
    assert!(admit(&gate, &route(), peer()).is_ok());

    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(1), task)
        .await
        .unwrap()
        .unwrap();
}
