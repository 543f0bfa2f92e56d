//! The typed headers read ext fields with Java's rules: required fields in declaration
//! order, optional numbers that do not parse ignored, Booleans as `Boolean.parseBoolean`.

use super::headers::*;
use crate::error::HandlerError;
use crate::protocol::{ExtFields, RemotingCommand};

/// Asserts that reading a header failed on the missing required `field`.
fn assert_missing<T: std::fmt::Debug>(read: Result<T, HandlerError>, field: &str) {
    let err = read.unwrap_err();
    assert!(
        matches!(err, HandlerError::MissingField(f) if f == field),
        "{err}"
    );
}

fn request(fields: &[(&str, &str)]) -> RemotingCommand {
    let mut req = RemotingCommand::request(103, 1);
    req.ext_fields = Some(fields.iter().copied().collect::<ExtFields>());
    req
}

const REGISTER: [(&str, &str); 5] = [
    ("brokerName", "b"),
    ("brokerAddr", "1.2.3.4:10911"),
    ("clusterName", "c"),
    ("haServerAddr", "1.2.3.4:10912"),
    ("brokerId", "0"),
];

#[test]
fn the_first_missing_required_field_is_named() {
    assert_missing(RegisterBrokerHeader::from_ext(&request(&[])), "brokerName");
    assert_missing(
        RegisterBrokerHeader::from_ext(&request(&REGISTER[..3])),
        "haServerAddr",
    );
    assert_missing(
        BrokerHeartbeatHeader::from_ext(&request(&[("brokerName", "b")])),
        "clusterName",
    );
    assert_missing(
        QueryDataVersionHeader::from_ext(&request(&REGISTER[..3])),
        "brokerId",
    );
}

#[test]
fn a_required_number_must_parse_and_an_optional_one_is_ignored_if_it_does_not() {
    let mut fields = REGISTER.to_vec();
    fields[4] = ("brokerId", "x");
    let err = RegisterBrokerHeader::from_ext(&request(&fields)).unwrap_err();
    assert!(
        matches!(&err, HandlerError::InvalidField { field: "brokerId", value } if value == "x"),
        "{err}"
    );
    let mut fields = REGISTER.to_vec();
    fields.extend([
        ("heartbeatTimeoutMillis", "soon"),
        ("bodyCrc32", "12ab"),
        ("compressed", "TRUE"),
        ("enableActingMaster", "yes"),
        ("__ZONE_NAME", "z1"),
    ]);
    let req = request(&fields);
    let h = RegisterBrokerHeader::from_ext(&req).unwrap();
    assert_eq!(h.heartbeat_timeout_millis, None);
    assert_eq!(h.body_crc32, 0);
    assert!(h.compressed, "Boolean.parseBoolean ignores case");
    assert_eq!(h.enable_acting_master, Some(false), "only \"true\" is true");
    assert_eq!(h.zone_name, Some("z1"));
    assert_eq!((h.broker_id, h.cluster), (0, "c"));
}

#[test]
fn put_kv_config_answers_a_missing_namespace_or_key_before_the_value() {
    assert!(
        PutKvConfigHeader::from_ext(&request(&[("key", "k")]))
            .unwrap()
            .is_none()
    );
    let err =
        PutKvConfigHeader::from_ext(&request(&[("namespace", "n"), ("key", "k")])).unwrap_err();
    assert!(matches!(err, HandlerError::MissingField("value")), "{err}");
    let req = request(&[("namespace", "n"), ("key", "k"), ("value", "v")]);
    let h = PutKvConfigHeader::from_ext(&req).unwrap().unwrap();
    assert_eq!((h.namespace, h.key, h.value), ("n", "k", "v"));
}

#[test]
fn route_and_topic_headers() {
    let req = request(&[
        ("topic", "T"),
        ("acceptStandardJsonOnly", "True"),
        ("__ZONE_MODE", "false"),
    ]);
    let h = GetRouteInfoHeader::from_ext(&req).unwrap();
    assert_eq!(h.topic, "T");
    assert!(h.accept_standard_json_only && !h.zone_mode);
    assert_eq!(h.zone_name, None);
    let req = request(&[("topic", "T")]);
    let h = DeleteTopicHeader::from_ext(&req).unwrap();
    assert_eq!((h.topic, h.cluster), ("T", None));
    assert_missing(
        TopicsByClusterHeader::from_ext(&request(&[("clusterName", "c")])),
        "cluster",
    );
    let req = request(&[("brokerName", "b")]);
    let h = WritePermHeader::from_ext(&req).unwrap();
    assert_eq!(h.broker_name, "b");
}
