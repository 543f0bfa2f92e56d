//! Numeric vocabulary of the protocol: request codes, response codes, language codes,
//! serialize types and the `MQVersion` ordinals the name server's logic depends on.
//!
//! Request codes are kept as plain `i32` constants rather than an enum because the wire may
//! carry any value: an unknown code is not an error, it is answered with
//! [`response::REQUEST_CODE_NOT_SUPPORTED`].

/// Request codes the name server serves on its listening port (RocketMQ 5.x `RequestCode`).
pub mod request {
    #![allow(missing_docs)] // the names are Java's `RequestCode` constants
    pub const PUT_KV_CONFIG: i32 = 100;
    pub const GET_KV_CONFIG: i32 = 101;
    pub const DELETE_KV_CONFIG: i32 = 102;
    pub const REGISTER_BROKER: i32 = 103;
    pub const UNREGISTER_BROKER: i32 = 104;
    pub const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
    pub const GET_BROKER_CLUSTER_INFO: i32 = 106;
    pub const WIPE_WRITE_PERM_OF_BROKER: i32 = 205;
    pub const GET_ALL_TOPIC_LIST_FROM_NAMESERVER: i32 = 206;
    pub const DELETE_TOPIC_IN_NAMESRV: i32 = 216;
    pub const REGISTER_TOPIC_IN_NAMESRV: i32 = 217;
    pub const GET_KVLIST_BY_NAMESPACE: i32 = 219;
    pub const GET_TOPICS_BY_CLUSTER: i32 = 224;
    pub const GET_SYSTEM_TOPIC_LIST_FROM_NS: i32 = 304;
    pub const GET_UNIT_TOPIC_LIST: i32 = 311;
    pub const GET_HAS_UNIT_SUB_TOPIC_LIST: i32 = 312;
    pub const GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: i32 = 313;
    pub const UPDATE_NAMESRV_CONFIG: i32 = 318;
    pub const GET_NAMESRV_CONFIG: i32 = 319;
    pub const QUERY_DATA_VERSION: i32 = 322;
    pub const ADD_WRITE_PERM_OF_BROKER: i32 = 327;
    pub const GET_BROKER_MEMBER_GROUP: i32 = 901;
    pub const BROKER_HEARTBEAT: i32 = 904;
}

/// Response codes the name server answers with (`RemotingSysResponseCode` and `ResponseCode`).
pub mod response {
    /// The request succeeded.
    pub const SUCCESS: i32 = 0;
    /// Handler failure, bad input, a disabled feature, or a server that is not ready.
    pub const SYSTEM_ERROR: i32 = 1;
    /// The server is overloaded.
    pub(crate) const SYSTEM_BUSY: i32 = 2;
    /// The request code is not one the server handles.
    pub const REQUEST_CODE_NOT_SUPPORTED: i32 = 3;
    /// UPDATE_NAMESRV_CONFIG touched a black-listed key.
    pub const NO_PERMISSION: i32 = 16;
    /// GET_ROUTEINFO_BY_TOPIC for a topic without a route.
    pub const TOPIC_NOT_EXIST: i32 = 17;
    /// A KV lookup missed.
    pub const QUERY_NOT_FOUND: i32 = 22;
    /// `GO_AWAY`: the server is shutting down gracefully (`enableShutdownGracefully`); the
    /// client should reconnect and send the request again, elsewhere.
    pub const GO_AWAY: i32 = 1500;
}

/// `MQVersion.Version` ordinals that change the name server's behaviour.
pub mod version {
    /// `V3_0_11`: from here on REGISTER_BROKER carries a `RegisterBrokerBody`.
    pub(crate) const V3_0_11: i32 = 37;
    /// `V4_9_4`: from here on route bodies are written as standard JSON.
    pub(crate) const V4_9_4: i32 = 401;
    /// `V5_0_0`: compressed registration bodies carry the static-topic mapping section.
    pub(crate) const V5_0_0: i32 = 413;
    /// `V5_3_1`: a server shutting down gracefully answers `GO_AWAY` only to newer clients.
    pub(crate) const V5_3_1: i32 = 475;
    /// `V5_3_3`: the version this server stamps on its responses, as Java 5.3.3 does.
    pub(crate) const CURRENT: i32 = 479;

    /// Releases after `V3_0_0_FINAL` (ordinal 15), in enum order: each patch `x.y.z` of a
    /// run `(x, y, first z, last z)` has a `_SNAPSHOT` ordinal followed by its own.
    const RUNS: [(i32, i32, i32, i32); 12] = [
        (3, 0, 1, 15),
        (3, 1, 0, 9),
        (3, 2, 0, 9),
        (3, 3, 1, 9),
        (3, 4, 1, 9),
        (3, 5, 1, 9),
        (3, 6, 1, 9),
        (3, 7, 1, 9),
        (3, 8, 1, 9),
        (3, 9, 1, 9),
        (4, 0, 0, 99),
        (5, 0, 0, 99),
    ];

    /// The `MQVersion.Version` constant name of an ordinal (`V5_3_3` for 479), as Java's
    /// `MQVersion.getVersionDesc` gives it; ordinals past the table are `HIGHER_VERSION`.
    pub(crate) fn name(ordinal: i32) -> String {
        const EARLY: [&str; 16] = [
            "V3_0_0_SNAPSHOT",
            "V3_0_0_ALPHA1",
            "V3_0_0_BETA1",
            "V3_0_0_BETA2",
            "V3_0_0_BETA3",
            "V3_0_0_BETA4",
            "V3_0_0_BETA5",
            "V3_0_0_BETA6_SNAPSHOT",
            "V3_0_0_BETA6",
            "V3_0_0_BETA7_SNAPSHOT",
            "V3_0_0_BETA7",
            "V3_0_0_BETA8_SNAPSHOT",
            "V3_0_0_BETA8",
            "V3_0_0_BETA9_SNAPSHOT",
            "V3_0_0_BETA9",
            "V3_0_0_FINAL",
        ];
        if ordinal < 0 {
            return format!("unknown ({ordinal})");
        }
        if let Some(name) = EARLY.get(ordinal as usize) {
            return (*name).to_owned();
        }
        let mut rest = ordinal - EARLY.len() as i32;
        for (major, minor, first, last) in RUNS {
            // Versions 4.x and 5.x number their patches 0..=99 as minor * 10 + patch.
            let span = (last - first + 1) * 2;
            if rest < span {
                let patch = first + rest / 2;
                let (minor, patch) = match major {
                    3 => (minor, patch),
                    _ => (patch / 10, patch % 10),
                };
                let snapshot = if rest % 2 == 0 { "_SNAPSHOT" } else { "" };
                return format!("V{major}_{minor}_{patch}{snapshot}");
            }
            rest -= span;
        }
        "HIGHER_VERSION".to_owned()
    }
}

/// Bit 0 of `flag`: the command is a response.
pub const FLAG_RESPONSE: i32 = 0x1;
/// Bit 1 of `flag`: a one-way request that expects no response.
pub const FLAG_ONEWAY: i32 = 0x2;

/// How a command header is encoded; the top byte of a frame's header-length word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SerializeType {
    /// A fastjson-style JSON object (type byte 0).
    Json,
    /// RocketMQ's own binary layout (type byte 1).
    RocketMq,
}

impl SerializeType {
    /// The type byte written on the wire.
    pub fn code(self) -> u8 {
        match self {
            SerializeType::Json => 0,
            SerializeType::RocketMq => 1,
        }
    }

    /// The type for a wire byte, if it is one of the two known ones.
    pub(crate) fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(SerializeType::Json),
            1 => Some(SerializeType::RocketMq),
            _ => None,
        }
    }

    /// The name Java uses (`JSON`, `ROCKETMQ`), also accepted by `ROCKETMQ_SERIALIZE_TYPE`.
    pub fn name(self) -> &'static str {
        match self {
            SerializeType::Json => "JSON",
            SerializeType::RocketMq => "ROCKETMQ",
        }
    }

    /// Parses a Java serialize-type name, ignoring ASCII case.
    pub fn from_name(name: &str) -> Option<Self> {
        if name.eq_ignore_ascii_case("JSON") {
            Some(SerializeType::Json)
        } else if name.eq_ignore_ascii_case("ROCKETMQ") {
            Some(SerializeType::RocketMq)
        } else {
            None
        }
    }
}

/// The sender's implementation language (`LanguageCode`): a name in JSON headers, a byte in
/// binary ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)] // the variants are Java's `LanguageCode` constants
pub enum LanguageCode {
    Java,
    Cpp,
    Dotnet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    Rust,
    NodeJs,
}

const LANGUAGES: [(LanguageCode, &str); 14] = [
    (LanguageCode::Java, "JAVA"),
    (LanguageCode::Cpp, "CPP"),
    (LanguageCode::Dotnet, "DOTNET"),
    (LanguageCode::Python, "PYTHON"),
    (LanguageCode::Delphi, "DELPHI"),
    (LanguageCode::Erlang, "ERLANG"),
    (LanguageCode::Ruby, "RUBY"),
    (LanguageCode::Other, "OTHER"),
    (LanguageCode::Http, "HTTP"),
    (LanguageCode::Go, "GO"),
    (LanguageCode::Php, "PHP"),
    (LanguageCode::Oms, "OMS"),
    (LanguageCode::Rust, "RUST"),
    (LanguageCode::NodeJs, "NODE_JS"),
];

impl LanguageCode {
    /// All known codes, in byte order.
    #[cfg(test)]
    pub(crate) const ALL: [LanguageCode; 14] = [
        LanguageCode::Java,
        LanguageCode::Cpp,
        LanguageCode::Dotnet,
        LanguageCode::Python,
        LanguageCode::Delphi,
        LanguageCode::Erlang,
        LanguageCode::Ruby,
        LanguageCode::Other,
        LanguageCode::Http,
        LanguageCode::Go,
        LanguageCode::Php,
        LanguageCode::Oms,
        LanguageCode::Rust,
        LanguageCode::NodeJs,
    ];

    /// The byte used in binary headers.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The code for a binary-header byte; unknown bytes have no language, as in Java.
    pub(crate) fn from_code(code: u8) -> Option<Self> {
        LANGUAGES.get(code as usize).map(|(lang, _)| *lang)
    }

    /// The enum name used in JSON headers.
    pub(crate) fn name(self) -> &'static str {
        LANGUAGES[self as usize].1
    }

    /// The code for a JSON-header name; unknown names have no language, as in Java.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        LANGUAGES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(lang, _)| *lang)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_round_trip_by_byte_and_name() {
        for (i, lang) in LanguageCode::ALL.iter().enumerate() {
            assert_eq!(lang.code() as usize, i);
            assert_eq!(LanguageCode::from_code(lang.code()), Some(*lang));
            assert_eq!(LanguageCode::from_name(lang.name()), Some(*lang));
        }
        assert_eq!(LanguageCode::from_code(14), None);
        assert_eq!(LanguageCode::from_name("COBOL"), None);
        assert_eq!(LanguageCode::NodeJs.name(), "NODE_JS");
    }

    #[test]
    fn version_names_follow_javas_enum_order() {
        for (ordinal, name) in [
            (0, "V3_0_0_SNAPSHOT"),
            (15, "V3_0_0_FINAL"),
            (16, "V3_0_1_SNAPSHOT"),
            (version::V3_0_11, "V3_0_11"),
            (46, "V3_1_0_SNAPSHOT"),
            (47, "V3_1_0"),
            (317, "V4_5_2"),
            (version::V4_9_4, "V4_9_4"),
            (409, "V4_9_8"),
            (412, "V5_0_0_SNAPSHOT"),
            (version::V5_0_0, "V5_0_0"),
            (475, "V5_3_1"),
            (version::CURRENT, "V5_3_3"),
            (611, "V5_9_9"),
            (612, "HIGHER_VERSION"),
            (30_000, "HIGHER_VERSION"),
            (-1, "unknown (-1)"),
        ] {
            assert_eq!(version::name(ordinal), name, "{ordinal}");
        }
    }

    #[test]
    fn serialize_types_are_the_two_java_ones() {
        assert_eq!(SerializeType::from_code(0), Some(SerializeType::Json));
        assert_eq!(SerializeType::from_code(1), Some(SerializeType::RocketMq));
        assert_eq!(SerializeType::from_code(2), None);
        assert_eq!(
            SerializeType::from_name("rocketmq"),
            Some(SerializeType::RocketMq)
        );
    }
}
