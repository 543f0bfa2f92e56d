//! The request-signing rule of RocketMQ's `AclClientRPCHook` (`AclUtils#calSignature`), shared by the
//! server's verifier and by clients that sign (the admin tool).
//!
//! A signer adds ext field [`ACCESS_KEY`] (and [`SECURITY_TOKEN`] when it has one), sorts every
//! ext field by key in Java `String` order, concatenates the *values* (skipping
//! [`SIGNATURE`]), appends the raw body bytes, and puts
//! `Base64(HMAC-SHA1(secret, content))` into [`SIGNATURE`]. The rule works on decoded strings,
//! so it is the same for JSON and ROCKETMQ headers. Nothing here performs I/O or knows about
//! accounts or policy.
//!
//! The values are concatenated without separators, so whoever captures a signed request can
//! move characters between fields that are neighbours in key order and keep the signature
//! valid: `haServerAddr=…:10912` plus `heartbeatTimeoutMillis=120000` becomes `…:` plus
//! `10912120000`. Java shares this, and clients sign this way, so it cannot change here. The
//! mitigations: TLS, so that signed requests cannot be captured; and values bounded where
//! they are used, so a re-split one is refused or harmless (a broker timeout is capped at
//! [`crate::state::route_table::MAX_BROKER_TIMEOUT`]).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha1::Sha1;

/// Ext field carrying the signer's access key.
pub const ACCESS_KEY: &str = "AccessKey";
/// Ext field carrying the signature.
pub const SIGNATURE: &str = "Signature";
/// Ext field carrying an optional security token (signed like any other field).
pub const SECURITY_TOKEN: &str = "SecurityToken";

type HmacSha1 = Hmac<Sha1>;

/// The bytes a signer signs: the values of `fields` in Java `String` key order, without
/// [`SIGNATURE`] and without any key `skip` names, as UTF-8, then `body`.
pub fn content<'a>(
    fields: impl IntoIterator<Item = (&'a str, &'a str)>,
    body: &[u8],
    skip: &[&str],
) -> Vec<u8> {
    let mut sorted: Vec<(&str, &str)> = fields
        .into_iter()
        .filter(|(k, _)| *k != SIGNATURE && !skip.contains(k))
        .collect();
    sorted.sort_by(|a, b| java_order(a.0, b.0));
    let len = sorted.iter().map(|(_, v)| v.len()).sum::<usize>() + body.len();
    let mut out = Vec::with_capacity(len);
    for (_, v) in sorted {
        out.extend_from_slice(v.as_bytes());
    }
    out.extend_from_slice(body);
    out
}

/// `Base64(HMAC-SHA1(secret_key, content))`, as `AclClientRPCHook` writes it (28 characters).
pub fn sign(secret_key: &str, content: &[u8]) -> String {
    let mut mac = keyed(secret_key);
    mac.update(content);
    STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `signature` is the signature of `content` under `secret_key`. The comparison of
/// the MACs takes the same time wherever they differ.
pub fn verify(secret_key: &str, content: &[u8], signature: &str) -> bool {
    let Ok(given) = STANDARD.decode(signature.trim()) else {
        return false;
    };
    let mut mac = keyed(secret_key);
    mac.update(content);
    mac.verify_slice(&given).is_ok()
}

fn keyed(secret_key: &str) -> HmacSha1 {
    // HMAC accepts keys of any length; this cannot fail.
    HmacSha1::new_from_slice(secret_key.as_bytes()).expect("HMAC takes keys of any length")
}

/// Java's `String.compareTo`: UTF-16 code-unit order, which differs from byte order only for
/// characters above U+FFFF against U+E000..=U+FFFF.
fn java_order(a: &str, b: &str) -> std::cmp::Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

#[cfg(test)]
mod tests {
    use super::*;

    use worked_examples::SECRET;

    fn signed(fields: &[(&str, &str)], body: &[u8]) -> String {
        sign(SECRET, &content(fields.iter().copied(), body, &[]))
    }

    #[test]
    fn worked_examples_sign_as_auth_md_says() {
        for ex in worked_examples::ALL {
            assert_eq!(signed(ex.fields, ex.body), ex.signature, "{}", ex.name);
        }
        assert_eq!(
            content(worked_examples::A.fields.iter().copied(), b"", &[]),
            b"rocketmq2TopicAORDER_TOPIC_CONFIGbroker-a:4"
        );
        let d = &worked_examples::D;
        assert_eq!(content(d.fields.iter().copied(), d.body, &[]).len(), 121);
        assert_eq!(
            content(worked_examples::E.fields.iter().copied(), b"", &[]),
            b"rocketmq2k\xc3\xa9ns\xe4\xb8\xad"
        );
    }

    #[test]
    fn signature_field_and_skipped_keys_are_not_signed() {
        let plain = [("AccessKey", "ak"), ("topic", "T")];
        let extra = [
            ("AccessKey", "ak"),
            ("topic", "T"),
            ("Signature", "x"),
            ("__ZONE_NAME", "z"),
        ];
        assert_eq!(
            content(extra, b"", &["__ZONE_NAME"]),
            content(plain, b"", &[])
        );
    }

    #[test]
    fn verify_accepts_only_the_right_signature() {
        let c = content(
            [("AccessKey", "rocketmq2"), ("topic", "TopicTest")],
            b"",
            &[],
        );
        assert!(verify(SECRET, &c, "GeeGoP9mRvDhoVp4PD5omX0prgE="));
        assert!(!verify("wrong", &c, "GeeGoP9mRvDhoVp4PD5omX0prgE="));
        assert!(!verify(SECRET, &c, "GeeGoP9mRvDhoVp4PD5omX0prgA="));
        assert!(!verify(SECRET, &c, "not base64!"));
        assert!(!verify(SECRET, &c, ""));
    }

    #[test]
    fn java_order_is_utf16_order() {
        // U+FF21 sorts before U+1F600 in UTF-8 byte order, but after it in UTF-16, where
        // U+1F600 is the surrogate pair D83D DE00.
        assert_eq!(
            java_order("\u{ff21}", "\u{1f600}"),
            std::cmp::Ordering::Greater
        );
        assert_eq!(java_order("AccessKey", "_x"), std::cmp::Ordering::Less);
        assert_eq!(java_order("_x", "a"), std::cmp::Ordering::Less);
    }
}

/// Worked examples of the signature (secret key [`worked_examples::SECRET`]), shared by the
/// signer's tests here and the verifier's in `auth`.
#[cfg(test)]
pub(crate) mod worked_examples {
    use crate::protocol::code::request as rc;

    /// The secret key of every example.
    pub(crate) const SECRET: &str = "12345678";

    /// One signed request.
    pub(crate) struct Example {
        pub(crate) name: &'static str,
        pub(crate) code: i32,
        /// Ext fields before signing, `AccessKey` included.
        pub(crate) fields: &'static [(&'static str, &'static str)],
        pub(crate) body: &'static [u8],
        pub(crate) signature: &'static str,
    }

    /// A: `mqadmin updateKvConfig` with the stock tools.yml.
    pub(crate) const A: Example = Example {
        name: "A PUT_KV_CONFIG",
        code: rc::PUT_KV_CONFIG,
        fields: &[
            ("namespace", "ORDER_TOPIC_CONFIG"),
            ("key", "TopicA"),
            ("value", "broker-a:4"),
            ("AccessKey", "rocketmq2"),
        ],
        body: b"",
        signature: "BHyL2i6Jhheq2uJ+0fRvM6zcQfU=",
    };

    /// B: the body is signed.
    pub(crate) const B: Example = Example {
        name: "B UPDATE_NAMESRV_CONFIG",
        code: rc::UPDATE_NAMESRV_CONFIG,
        fields: &[("AccessKey", "rocketmq2")],
        body: b"serverChannelMaxIdleTimeSeconds=120\n",
        signature: "kpr5dx+9GhE4tL5ihVcLen9MxaM=",
    };

    /// C: a route lookup.
    pub(crate) const C: Example = Example {
        name: "C GET_ROUTEINFO_BY_TOPIC",
        code: rc::GET_ROUTEINFO_BY_TOPIC,
        fields: &[("topic", "TopicTest"), ("AccessKey", "rocketmq2")],
        body: b"",
        signature: "GeeGoP9mRvDhoVp4PD5omX0prgE=",
    };

    /// D: a 5.3.3 broker's registration with a security token.
    pub(crate) const D: Example = Example {
        name: "D REGISTER_BROKER",
        code: rc::REGISTER_BROKER,
        fields: &[
            ("brokerName", "broker-a"),
            ("brokerAddr", "192.168.0.10:10911"),
            ("clusterName", "DefaultCluster"),
            ("haServerAddr", "192.168.0.10:10912"),
            ("brokerId", "0"),
            ("heartbeatTimeoutMillis", "120000"),
            ("enableActingMaster", "false"),
            ("compressed", "false"),
            ("bodyCrc32", "1234567890"),
            ("AccessKey", "rocketmq"),
            ("SecurityToken", "tok-1"),
        ],
        body: br#"{"filterServerList":[]}"#,
        signature: "t3ySxljka5ne2Gv0KuPAicnLRHM=",
    };

    /// E: non-ASCII values are signed as UTF-8.
    pub(crate) const E: Example = Example {
        name: "E UTF-8",
        code: rc::PUT_KV_CONFIG,
        fields: &[
            ("namespace", "ns"),
            ("key", "k\u{e9}"),
            ("value", "\u{4e2d}"),
            ("AccessKey", "rocketmq2"),
        ],
        body: b"",
        signature: "ReVIllxok7dRTtEe07FbGpfakVw=",
    };

    /// Every example.
    pub(crate) const ALL: [&Example; 5] = [&A, &B, &C, &D, &E];
}
