//! Authentication over TCP: the real server with `authMode` set, driven with raw frames that
//! are signed as RocketMQ's `AclClientRPCHook` signs them — every refusal reason in both header
//! encodings, one-way and pipelined requests, audit mode, address trust and reloads.

use std::path::PathBuf;
use std::time::Duration;

use namesrv::auth::Reason;
use namesrv::protocol::code::{FLAG_ONEWAY, request, response};
use namesrv::protocol::{ExtFields, RemotingCommand, SerializeType, signature};

use crate::harness::{TestClient, TestServer, register_body, register_ext};

/// Accounts used by most tests; all secrets are `12345678` except where noted.
const ACCOUNTS: &str = "\
accounts:
  - accessKey: rocketmq2
    secretKey: 12345678
    admin: true
  - accessKey: reader01
    secretKey: 12345678
  - accessKey: pinned01
    secretKey: 12345678
    admin: true
    whiteRemoteAddress: 10.0.0.*
  - accessKey: brokers1
    secretKey: broker-secret
    broker: true
";

struct AuthServer {
    server: TestServer,
    acl: PathBuf,
    _dir: tempfile::TempDir,
}

async fn start(mode: &str, accounts: &str) -> AuthServer {
    let (dir, acl) = crate::harness::temp_file("acl.yml", accounts);
    // No PROXY headers: with them from anyone, the accounts' address rules are refused.
    let server = TestServer::with_properties(&format!(
        "authMode={mode}\nauthConfigPath={}\nproxyProtocolAllowedAddresses=\n",
        acl.display()
    ))
    .await;
    AuthServer {
        server,
        acl,
        _dir: dir,
    }
}

/// Adds `AccessKey` and `Signature` as the client hook does.
pub(crate) fn sign(mut cmd: RemotingCommand, access_key: &str, secret: &str) -> RemotingCommand {
    let body = cmd.body.clone().unwrap_or_default();
    let fields = cmd.ext_fields.get_or_insert_with(ExtFields::new);
    fields.insert(signature::ACCESS_KEY, access_key);
    let content = signature::content(fields.iter(), &body, &[]);
    fields.insert(signature::SIGNATURE, signature::sign(secret, &content));
    cmd
}

/// Sends `cmd` and returns its answer (checked to be the answer to it).
pub(crate) async fn call(c: &mut TestClient, cmd: RemotingCommand) -> RemotingCommand {
    c.send(&cmd).await;
    let resp = c.recv().await.expect("an answer");
    assert_eq!(resp.opaque, cmd.opaque);
    resp
}

fn put_kv(c: &mut TestClient, key: &str) -> RemotingCommand {
    c.command(
        request::PUT_KV_CONFIG,
        &[("namespace", "ns"), ("key", key), ("value", "v")],
        None,
    )
}

async fn get_kv(c: &mut TestClient, key: &str) -> i32 {
    c.ask(request::GET_KV_CONFIG, &[("namespace", "ns"), ("key", key)])
        .await
        .code
}

fn assert_refused(resp: &RemotingCommand, remark: &str) {
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (response::NO_PERMISSION, Some(remark))
    );
}

#[tokio::test]
async fn off_ignores_credentials_as_java_does() {
    let server = TestServer::start().await;
    assert!(server.auth.stats().is_none());
    let mut c = server.client().await;
    let unsigned = c.command(request::GET_BROKER_CLUSTER_INFO, &[], None);
    c.send(&unsigned).await;
    let plain = c.recv_frame().await.unwrap();
    let mut signed = sign(
        c.command(request::GET_BROKER_CLUSTER_INFO, &[], None),
        "stranger",
        "x",
    );
    signed.opaque = unsigned.opaque;
    c.send(&signed).await;
    assert_eq!(c.recv_frame().await.unwrap(), plain, "byte for byte");
    let put = sign(put_kv(&mut c, "k"), "stranger", "wrong");
    assert_eq!(call(&mut c, put).await.code, response::SUCCESS);
}

#[tokio::test]
async fn enforce_with_only_accounts_protects_admin_requests() {
    let s = start("enforce", ACCOUNTS).await;
    let mut c = s.server.client().await;
    let put = put_kv(&mut c, "k");
    assert_refused(
        &call(&mut c, put).await,
        "request code 100 (admin) needs a signature: no AccessKey in the request",
    );
    assert_eq!(get_kv(&mut c, "k").await, response::QUERY_NOT_FOUND);
    // mqadmin's stock tools.yml credentials, here an admin account.
    let put = sign(put_kv(&mut c, "k"), "rocketmq2", "12345678");
    assert_eq!(call(&mut c, put).await.code, response::SUCCESS);
    assert_eq!(get_kv(&mut c, "k").await, response::SUCCESS);
    // Reads and broker requests stay open, signed or not, by anyone.
    crate::harness::register_master(&mut c, "broker-a", "127.0.0.1:10911", &["T1", "T2"]).await;
    let route = crate::harness::route(&mut c, "T1").await;
    assert_eq!(route.code, response::SUCCESS);
    let route = sign(
        c.command(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T1")], None),
        "stranger",
        "junk",
    );
    assert_eq!(call(&mut c, route).await.code, response::SUCCESS);
    let stats = s.server.auth.stats().unwrap();
    assert_eq!((stats.refused_total(), stats.accepted_signed), (1, 1));
    // The auth keys cannot be changed remotely, even by an admin.
    for body in [
        "authMode=off\n",
        "authConfigPath=/tmp/x\n",
        "authAuditLog=/tmp/x\n",
    ] {
        let update = sign(
            c.command(request::UPDATE_NAMESRV_CONFIG, &[], Some(body.as_bytes())),
            "rocketmq2",
            "12345678",
        );
        assert_refused(
            &call(&mut c, update).await,
            "Can not update config in black list.",
        );
    }
}

#[tokio::test]
async fn every_refusal_reason_in_both_header_encodings() {
    let s = start("enforce", ACCOUNTS).await;
    for encoding in [SerializeType::Json, SerializeType::RocketMq] {
        let mut c = s.server.client().await;
        c.serialize_type = encoding;
        let cases: Vec<(RemotingCommand, &str)> = vec![
            (
                put_kv(&mut c, "k"),
                "request code 100 (admin) needs a signature: no AccessKey in the request",
            ),
            (
                sign(put_kv(&mut c, "k"), "nobody01", "12345678"),
                "unknown AccessKey nobody01",
            ),
            (
                sign(put_kv(&mut c, "k"), "rocketmq2", "wrong-secret"),
                "check signature failed for AccessKey rocketmq2",
            ),
            (
                {
                    let mut cmd = put_kv(&mut c, "k");
                    cmd.ext_fields
                        .as_mut()
                        .unwrap()
                        .insert("AccessKey", "rocketmq2");
                    cmd
                },
                "no Signature with AccessKey rocketmq2",
            ),
            (
                sign(put_kv(&mut c, "k"), "pinned01", "12345678"),
                "AccessKey pinned01 is not allowed from address 127.0.0.1",
            ),
            (
                sign(put_kv(&mut c, "k"), "reader01", "12345678"),
                "AccessKey reader01 has no permission for request code 100 (admin)",
            ),
        ];
        for (cmd, remark) in cases {
            let resp = call(&mut c, cmd).await;
            assert_refused(&resp, remark);
            assert!(!format!("{resp:?}").contains("12345678"), "{resp:?}");
            // The connection stays usable: the next request succeeds.
            let ok = sign(put_kv(&mut c, "k"), "rocketmq2", "12345678");
            assert_eq!(
                call(&mut c, ok).await.code,
                response::SUCCESS,
                "{encoding:?}"
            );
        }
        // A request signed as mqadmin's `AclClientRPCHook` signs it: the server signs the decoded
        // fields.
        let mut cmd = c.command(
            request::PUT_KV_CONFIG,
            &[
                ("namespace", "ORDER_TOPIC_CONFIG"),
                ("key", "TopicA"),
                ("value", "broker-a:4"),
                ("AccessKey", "rocketmq2"),
                ("Signature", "BHyL2i6Jhheq2uJ+0fRvM6zcQfU="),
            ],
            None,
        );
        assert_eq!(call(&mut c, cmd.clone()).await.code, response::SUCCESS);
        cmd.ext_fields
            .as_mut()
            .unwrap()
            .insert("value", "broker-a:8");
        cmd.opaque += 1000;
        assert_refused(
            &call(&mut c, cmd).await,
            "check signature failed for AccessKey rocketmq2",
        );
    }
    let stats = s.server.auth.stats().unwrap();
    for reason in Reason::ALL {
        let expected = match reason {
            Reason::BadSignature => 6,
            // The encoders here never repeat a key: `hardening_logs` sends one raw.
            Reason::RepeatedField => 0,
            _ => 2,
        };
        assert_eq!(stats.refused_for(reason), expected, "{reason:?}");
    }
}

#[tokio::test]
async fn one_way_refusals_are_silent_and_counted() {
    let s = start("enforce", ACCOUNTS).await;
    let mut c = s.server.client().await;
    let mut refused = put_kv(&mut c, "one-way");
    refused.flag |= FLAG_ONEWAY;
    c.send(&refused).await;
    let mut accepted = sign(put_kv(&mut c, "signed-one-way"), "rocketmq2", "12345678");
    accepted.flag |= FLAG_ONEWAY;
    c.send(&accepted).await;
    // The first answer on the connection is the one to this request.
    let next = c.command(
        request::GET_KV_CONFIG,
        &[("namespace", "ns"), ("key", "signed-one-way")],
        None,
    );
    assert_eq!(call(&mut c, next).await.code, response::SUCCESS);
    assert_eq!(get_kv(&mut c, "one-way").await, response::QUERY_NOT_FOUND);
    let stats = s.server.auth.stats().unwrap();
    assert_eq!((stats.refused_total(), stats.refused_oneway), (1, 1));
}

fn delete_a(c: &mut TestClient) -> RemotingCommand {
    c.command(
        request::DELETE_KV_CONFIG,
        &[("namespace", "ns"), ("key", "a")],
        None,
    )
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let s = start("enforce", ACCOUNTS).await;
    let mut c = s.server.client().await;
    let cmds = vec![
        sign(put_kv(&mut c, "a"), "rocketmq2", "12345678"),
        put_kv(&mut c, "b"),
        c.command(
            request::GET_KV_CONFIG,
            &[("namespace", "ns"), ("key", "a")],
            None,
        ),
        sign(delete_a(&mut c), "rocketmq2", "wrong"),
        c.command(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "none")], None),
        sign(delete_a(&mut c), "rocketmq2", "12345678"),
    ];
    let mut bytes = bytes::BytesMut::new();
    for cmd in &cmds {
        namesrv::protocol::encode_frame(cmd, SerializeType::Json, &mut bytes);
    }
    c.send_raw(&bytes).await;
    let expected = [
        response::SUCCESS,
        response::NO_PERMISSION,
        response::SUCCESS,
        response::NO_PERMISSION,
        response::TOPIC_NOT_EXIST,
        response::SUCCESS,
    ];
    for (cmd, code) in cmds.iter().zip(expected) {
        let resp = c.recv().await.unwrap();
        assert_eq!((resp.opaque, resp.code), (cmd.opaque, code));
    }
}

#[tokio::test]
async fn audit_mode_refuses_nothing_and_counts_what_it_would() {
    let s = start("audit", ACCOUNTS).await;
    let mut c = s.server.client().await;
    let put = put_kv(&mut c, "k");
    assert_eq!(call(&mut c, put).await.code, response::SUCCESS);
    let put = sign(put_kv(&mut c, "k"), "reader01", "12345678");
    assert_eq!(call(&mut c, put).await.code, response::SUCCESS);
    let stats = s.server.auth.stats().unwrap();
    assert_eq!(stats.refused_total(), 0);
    assert_eq!(stats.would_refuse_for(Reason::MissingAccessKey), 1);
    assert_eq!(stats.would_refuse_for(Reason::NoPermission), 1);
}

#[tokio::test]
async fn brokers_pass_by_address_or_by_signature() {
    let everything_signed = |white: &str| {
        format!(
            "signatureRequired: [read, broker, admin]\nglobalWhiteRemoteAddresses: [{white}]\n{ACCOUNTS}"
        )
    };
    let s = start("enforce", &everything_signed("127.0.0.*")).await;
    let mut c = s.server.client().await;
    // A 4.9.x broker never signs: let in by its address, for broker and read requests.
    crate::harness::register_master(&mut c, "broker-a", "127.0.0.1:10911", &["T1", "T2"]).await;
    assert_eq!(
        crate::harness::route(&mut c, "T1").await.code,
        response::SUCCESS
    );
    // Admin requests always need a signature, trusted address or not.
    let wipe = c.command(
        request::WIPE_WRITE_PERM_OF_BROKER,
        &[("brokerName", "broker-a")],
        None,
    );
    assert_eq!(call(&mut c, wipe).await.code, response::NO_PERMISSION);
    assert_eq!(s.server.auth.stats().unwrap().accepted_by_address, 2);

    // Elsewhere, a broker must sign with an account allowed to register brokers.
    std::fs::write(&s.acl, everything_signed("10.9.9.9")).unwrap();
    s.server.reload.request();
    let body = register_body(2, &["T1", "T2"]);
    let ext = register_ext("broker-a", "127.0.0.1:10911", "0");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let unsigned = c.command(request::REGISTER_BROKER, &ext, Some(&body));
        if call(&mut c, unsigned).await.code == response::NO_PERMISSION {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "reload not applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let by_reader = sign(
        c.command(request::REGISTER_BROKER, &ext, Some(&body)),
        "reader01",
        "12345678",
    );
    assert_refused(
        &call(&mut c, by_reader).await,
        "AccessKey reader01 has no permission for request code 103 (broker)",
    );
    let signed = sign(
        c.command(request::REGISTER_BROKER, &ext, Some(&body)),
        "brokers1",
        "broker-secret",
    );
    assert_eq!(call(&mut c, signed).await.code, response::SUCCESS);
    let route = c.command(request::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T1")], None);
    assert_eq!(call(&mut c, route).await.code, response::NO_PERMISSION);
}

#[tokio::test]
async fn a_reload_swaps_the_accounts_and_a_broken_file_keeps_them() {
    let s = start("enforce", ACCOUNTS).await;
    let mut c = s.server.client().await;
    let wait_reloads = |n: u64| {
        let auth = s.server.auth.clone();
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                let st = auth.stats().unwrap();
                if st.reloads + st.reload_failures >= n {
                    return;
                }
                assert!(tokio::time::Instant::now() < deadline, "no reload");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    std::fs::write(
        &s.acl,
        "accounts:\n  - {accessKey: rocketmq2, secretKey: new-secret, admin: true}\n",
    )
    .unwrap();
    s.server.reload.request();
    wait_reloads(1).await;
    let old = sign(put_kv(&mut c, "k"), "rocketmq2", "12345678");
    assert_eq!(call(&mut c, old).await.code, response::NO_PERMISSION);
    let new = sign(put_kv(&mut c, "k"), "rocketmq2", "new-secret");
    assert_eq!(call(&mut c, new).await.code, response::SUCCESS);

    std::fs::write(&s.acl, "accounts:\n  - {accessKey: rocketmq2\n").unwrap();
    s.server.reload.request();
    wait_reloads(2).await;
    assert!(s.server.auth.stats().unwrap().reload_failures >= 1);
    let still = sign(put_kv(&mut c, "k"), "rocketmq2", "new-secret");
    assert_eq!(call(&mut c, still).await.code, response::SUCCESS);
}
