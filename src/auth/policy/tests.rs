use super::*;
use crate::auth::accounts;
use crate::protocol::ExtFields;
use crate::protocol::code::request as rc;

const FILE: &str = "\
signatureRequired: [read, broker, admin]
globalWhiteRemoteAddresses: [10.1.0.*]
accounts:
  - {accessKey: rocketmq2, secretKey: '12345678', admin: true}
  - {accessKey: rocketmq, secretKey: '12345678', broker: true}
  - {accessKey: reader01, secretKey: '12345678'}
  - {accessKey: pinned01, secretKey: '12345678', admin: true, whiteRemoteAddress: 192.168.1.*}
";

fn policy(text: &str) -> Policy {
    accounts::parse(text.as_bytes(), "acl.yml").unwrap()
}

fn request(code: i32, fields: &[(&str, &str)], body: &[u8]) -> RemotingCommand {
    let mut req = RemotingCommand::request(code, 1).with_body(body.to_vec());
    req.ext_fields = Some(fields.iter().copied().collect::<ExtFields>());
    req
}

/// `req` signed as `AclClientRPCHook` signs it.
fn signed(mut req: RemotingCommand, access_key: &str, secret: &str) -> RemotingCommand {
    let fields = req.ext_fields.get_or_insert_with(ExtFields::new);
    fields.insert(signature::ACCESS_KEY, access_key);
    let content = signature::content(fields.iter(), req.body.as_deref().unwrap_or(&[]), &[]);
    let sig = signature::sign(secret, &content);
    req.ext_fields
        .as_mut()
        .unwrap()
        .insert(signature::SIGNATURE, sig);
    req
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// The permission of the codes these tests send, as their rows in the name server's request
/// table give it (the table's own test checks every row).
fn permission_of(code: i32) -> Permission {
    match code {
        rc::GET_ROUTEINFO_BY_TOPIC | rc::GET_KV_CONFIG => Permission::Read,
        rc::REGISTER_BROKER | rc::BROKER_HEARTBEAT => Permission::Broker,
        _ => Permission::Admin,
    }
}

fn judge<'p>(p: &'p Policy, req: &RemotingCommand, peer: IpAddr) -> Result<Admission<'p>, Refusal> {
    decide(p, req, peer, permission_of(req.code))
}

fn reason(p: &Policy, req: &RemotingCommand, peer: &str) -> Option<Reason> {
    judge(p, req, ip(peer)).err().map(|r| r.reason)
}

#[test]
fn worked_examples_are_accepted_and_any_change_is_refused() {
    // The examples sign as rocketmq2 (admin) and rocketmq (broker), both with 12345678.
    let p = policy(FILE);
    for ex in signature::worked_examples::ALL {
        let mut fields = ex.fields.to_vec();
        fields.push(("Signature", ex.signature));
        let req = request(ex.code, &fields, ex.body);
        assert!(judge(&p, &req, ip("127.0.0.1")).is_ok(), "{}", ex.name);
        if let Some(&(key, value)) = ex.fields.iter().find(|(k, _)| *k != "AccessKey") {
            let mut changed = req.clone();
            let fields = changed.ext_fields.as_mut().unwrap();
            fields.insert(key, format!("{value}x"));
            assert_eq!(
                reason(&p, &changed, "127.0.0.1"),
                Some(Reason::BadSignature),
                "{}",
                ex.name
            );
        }
        if !ex.body.is_empty() {
            let tampered = req.clone().with_body([ex.body, b" "].concat());
            assert_eq!(
                reason(&p, &tampered, "127.0.0.1"),
                Some(Reason::BadSignature)
            );
        }
    }
}

#[test]
fn zone_fields_added_after_signing_do_not_fail_a_valid_client() {
    let p = policy(FILE);
    let mut req = signed(
        request(rc::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")], b""),
        "reader01",
        "12345678",
    );
    let fields = req.ext_fields.as_mut().unwrap();
    fields.insert("__ZONE_NAME", "zone-a");
    fields.insert("__ZONE_MODE", "true");
    assert!(judge(&p, &req, ip("127.0.0.1")).is_ok());
    // A broker that signs the zone fields too is accepted as well.
    let req = signed(
        request(
            rc::GET_ROUTEINFO_BY_TOPIC,
            &[("topic", "T"), ("__ZONE_NAME", "zone-a")],
            b"",
        ),
        "reader01",
        "12345678",
    );
    assert!(judge(&p, &req, ip("127.0.0.1")).is_ok());
    // Other unsigned additions are not forgiven.
    let mut req = signed(
        request(rc::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")], b""),
        "reader01",
        "12345678",
    );
    req.ext_fields.as_mut().unwrap().insert("lo", "true");
    assert_eq!(reason(&p, &req, "127.0.0.1"), Some(Reason::BadSignature));
}

#[test]
fn every_refusal_reason() {
    let p = policy(FILE);
    let route = || request(rc::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")], b"");
    let put = || {
        request(
            rc::PUT_KV_CONFIG,
            &[("namespace", "n"), ("key", "k"), ("value", "v")],
            b"",
        )
    };
    assert_eq!(
        reason(&p, &route(), "127.0.0.1"),
        Some(Reason::MissingAccessKey)
    );
    assert_eq!(
        reason(&p, &signed(route(), "nobody01", "12345678"), "127.0.0.1"),
        Some(Reason::UnknownAccessKey)
    );
    assert_eq!(
        reason(
            &p,
            &signed(route(), "reader01", "wrong-secret"),
            "127.0.0.1"
        ),
        Some(Reason::BadSignature)
    );
    let mut unsigned = route();
    unsigned
        .ext_fields
        .as_mut()
        .unwrap()
        .insert("AccessKey", "reader01");
    let refusal = judge(&p, &unsigned, ip("127.0.0.1")).unwrap_err();
    assert_eq!(refusal.reason, Reason::BadSignature);
    assert!(refusal.signature_missing);
    let mut garbled = signed(route(), "reader01", "12345678");
    garbled
        .ext_fields
        .as_mut()
        .unwrap()
        .insert("Signature", "%%%");
    assert_eq!(
        reason(&p, &garbled, "127.0.0.1"),
        Some(Reason::BadSignature)
    );
    assert_eq!(
        reason(&p, &signed(put(), "pinned01", "12345678"), "192.168.2.1"),
        Some(Reason::AddressNotAllowed)
    );
    assert!(
        judge(
            &p,
            &signed(put(), "pinned01", "12345678"),
            ip("192.168.1.9")
        )
        .is_ok()
    );
    assert_eq!(
        reason(&p, &signed(put(), "reader01", "12345678"), "127.0.0.1"),
        Some(Reason::NoPermission)
    );
    let register = request(rc::BROKER_HEARTBEAT, &[("brokerName", "b")], b"");
    assert_eq!(
        reason(
            &p,
            &signed(register.clone(), "reader01", "12345678"),
            "127.0.0.1"
        ),
        Some(Reason::NoPermission)
    );
    assert!(
        judge(
            &p,
            &signed(register, "rocketmq", "12345678"),
            ip("127.0.0.1")
        )
        .is_ok()
    );
}

#[test]
fn remarks_say_what_is_wrong_and_never_the_secret() {
    let p = policy(FILE);
    let route = || request(rc::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")], b"");
    let remark =
        |req: &RemotingCommand, peer: &str| judge(&p, req, ip(peer)).unwrap_err().to_string();
    assert_eq!(
        remark(&route(), "127.0.0.1"),
        "request code 105 (read) needs a signature: no AccessKey in the request"
    );
    assert_eq!(
        remark(&signed(route(), "nobody01", "x"), "127.0.0.1"),
        "unknown AccessKey nobody01"
    );
    assert_eq!(
        remark(&signed(route(), "reader01", "wrong"), "127.0.0.1"),
        "check signature failed for AccessKey reader01"
    );
    let put = request(
        rc::DELETE_KV_CONFIG,
        &[("namespace", "n"), ("key", "k")],
        b"",
    );
    assert_eq!(
        remark(&signed(put.clone(), "reader01", "12345678"), "127.0.0.1"),
        "AccessKey reader01 has no permission for request code 102 (admin)"
    );
    assert_eq!(
        remark(&signed(put, "pinned01", "12345678"), "10.9.8.7"),
        "AccessKey pinned01 is not allowed from address 10.9.8.7"
    );
    let long = "k".repeat(1000);
    let r = remark(&signed(route(), &long, "x"), "127.0.0.1");
    assert!(r.len() < 100, "{r}");
    for r in [
        remark(&signed(route(), "reader01", "wrong"), "127.0.0.1"),
        format!(
            "{:?}",
            judge(&p, &signed(route(), "reader01", "wrong"), ip("::1"))
        ),
    ] {
        assert!(!r.contains("12345678"), "{r}");
    }
}

#[test]
fn open_classes_and_trusted_addresses() {
    // Defaults: only admin needs a signature, and nothing else is looked at.
    let p = policy("accounts: [{accessKey: rocketmq2, secretKey: '12345678', admin: true}]\n");
    let route = request(
        rc::GET_ROUTEINFO_BY_TOPIC,
        &[
            ("topic", "T"),
            ("AccessKey", "stranger"),
            ("Signature", "junk"),
        ],
        b"",
    );
    assert_eq!(judge(&p, &route, ip("127.0.0.1")), Ok(Admission::Open));
    let reg = request(rc::REGISTER_BROKER, &[], b"");
    assert_eq!(judge(&p, &reg, ip("127.0.0.1")), Ok(Admission::Open));
    let wipe = request(rc::WIPE_WRITE_PERM_OF_BROKER, &[("brokerName", "b")], b"");
    assert_eq!(
        reason(&p, &wipe, "127.0.0.1"),
        Some(Reason::MissingAccessKey)
    );
    // Trusted addresses pass read and broker requests unsigned, never admin ones.
    let p = policy(FILE);
    assert_eq!(judge(&p, &reg, ip("10.1.0.9")), Ok(Admission::ByAddress));
    assert_eq!(
        judge(&p, &reg, ip("::ffff:10.1.0.9")),
        Ok(Admission::ByAddress)
    );
    assert_eq!(reason(&p, &reg, "10.2.0.9"), Some(Reason::MissingAccessKey));
    assert_eq!(
        reason(&p, &wipe, "10.1.0.9"),
        Some(Reason::MissingAccessKey)
    );
    assert_eq!(
        reason(&p, &signed(wipe, "rocketmq2", "wrong"), "10.1.0.9"),
        Some(Reason::BadSignature)
    );
}

#[test]
fn credentials_are_checked_like_signatures() {
    let p = policy(FILE);
    let allows = |ak, sk, class| p.check_credentials(ak, sk, class, ip("10.1.0.9")).is_ok();
    assert!(allows("rocketmq2", "12345678", Permission::Admin));
    assert!(!allows("rocketmq2", "12345679", Permission::Admin));
    assert!(!allows("rocketmq2", "1234567", Permission::Admin));
    assert!(!allows("reader01", "12345678", Permission::Admin));
    assert!(allows("reader01", "12345678", Permission::Read));
    assert!(!allows("nobody01", "12345678", Permission::Read));
}

#[test]
fn a_signed_request_with_a_repeated_field_is_refused() {
    let p = policy(FILE);
    // A valid signature over the decoded (last-wins) fields: the repeat changes nothing the
    // verifier sees, yet another reader of the same bytes might take the first value.
    let valid = signed(
        request(rc::DELETE_TOPIC_IN_NAMESRV, &[("topic", "TopicB")], b""),
        "rocketmq2",
        "12345678",
    );
    let mut pairs: Vec<(String, String)> = vec![("topic".into(), "TopicA".into())];
    pairs.extend(
        valid
            .ext_fields
            .as_ref()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.into(), v.into())),
    );
    let mut repeated = valid.clone();
    repeated.ext_fields = Some(ExtFields::from_pairs(pairs));
    assert_eq!(repeated.ext("topic"), Some("TopicB"));
    assert_eq!(judge(&p, &valid, ip("127.0.0.1")).err(), None);
    let refusal = judge(&p, &repeated, ip("127.0.0.1")).unwrap_err();
    assert_eq!(refusal.reason.label(), "repeated_field");
    assert!(refusal.to_string().contains("more than once"), "{refusal}");
    // Unsigned requests of open classes are not checked at all.
    let open = policy("signatureRequired: [read]\naccounts: []\n");
    assert_eq!(judge(&open, &repeated, ip("127.0.0.1")).err(), None);
}

#[test]
fn control_characters_in_an_access_key_are_escaped_in_remarks() {
    let p = policy(FILE);
    let req = signed(
        request(rc::GET_ROUTEINFO_BY_TOPIC, &[("topic", "T")], b""),
        "evil\n2026-12-01T00:00:00Z  INFO forged\r\u{1b}[31m",
        "x",
    );
    let remark = judge(&p, &req, ip("127.0.0.1")).unwrap_err().to_string();
    assert!(
        !remark.chars().any(char::is_control),
        "no control character: {remark:?}"
    );
    assert!(remark.contains(r"evil\n2026"), "{remark}");
}
