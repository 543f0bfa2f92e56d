//! The typed request headers: each request's ext fields, read once with Java's rules into
//! the struct named after its Java `CommandCustomHeader` (`RegisterBrokerRequestHeader` …).
//!
//! The rules (`Fields`) are those of Java's `RemotingCommand#decodeCommandCustomHeader`: a
//! required field that is absent, or a required number that does not parse, fails the request
//! with the field's name; an optional number that does not parse is ignored, as if absent (Java
//! logs it and keeps the header's default); a Boolean is `Boolean.parseBoolean`. Required
//! fields are read in the order Java's header declares them, so the remark names the same
//! missing field Java's does.

use crate::error::HandlerError;
use crate::protocol::RemotingCommand;
use crate::state::peering::PEER_CHECK_FIELD;

/// Raw ext field carrying a broker's or client's zone.
const ZONE_NAME: &str = "__ZONE_NAME";
/// Raw ext field asking for routes filtered to the client's zone.
const ZONE_MODE: &str = "__ZONE_MODE";

/// REGISTER_BROKER's header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RegisterBrokerHeader<'a> {
    /// `brokerName`.
    pub(crate) broker_name: &'a str,
    /// `brokerAddr`.
    pub(crate) broker_addr: &'a str,
    /// `clusterName`.
    pub(crate) cluster: &'a str,
    /// `haServerAddr`.
    pub(crate) ha_server_addr: &'a str,
    /// `brokerId`.
    pub(crate) broker_id: i64,
    /// `heartbeatTimeoutMillis`, if sent and a number.
    pub(crate) heartbeat_timeout_millis: Option<i64>,
    /// `enableActingMaster`, if sent.
    pub(crate) enable_acting_master: Option<bool>,
    /// `compressed` (false when absent).
    pub(crate) compressed: bool,
    /// `bodyCrc32` (0, meaning unchecked, when absent or not a number).
    pub(crate) body_crc32: i32,
    /// `__ZONE_NAME`, if sent.
    pub(crate) zone_name: Option<&'a str>,
}

impl<'a> RegisterBrokerHeader<'a> {
    /// Reads the header of `req`.
    pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Self, HandlerError> {
        let f = Fields(req);
        Ok(RegisterBrokerHeader {
            broker_name: f.required("brokerName")?,
            broker_addr: f.required("brokerAddr")?,
            cluster: f.required("clusterName")?,
            ha_server_addr: f.required("haServerAddr")?,
            broker_id: f.required_i64("brokerId")?,
            heartbeat_timeout_millis: f.optional_i64("heartbeatTimeoutMillis"),
            enable_acting_master: f.optional_bool("enableActingMaster"),
            compressed: f.optional_bool("compressed").unwrap_or(false),
            body_crc32: f.optional_i32("bodyCrc32").unwrap_or(0),
            zone_name: f.optional(ZONE_NAME),
        })
    }
}

/// UNREGISTER_BROKER's header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UnregisterBrokerHeader<'a> {
    /// `brokerName`.
    pub(crate) broker_name: &'a str,
    /// `brokerAddr`.
    pub(crate) broker_addr: &'a str,
    /// `clusterName`.
    pub(crate) cluster: &'a str,
    /// `brokerId`.
    pub(crate) broker_id: i64,
}

impl<'a> UnregisterBrokerHeader<'a> {
    /// Reads the header of `req`.
    pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Self, HandlerError> {
        let f = Fields(req);
        Ok(UnregisterBrokerHeader {
            broker_name: f.required("brokerName")?,
            broker_addr: f.required("brokerAddr")?,
            cluster: f.required("clusterName")?,
            broker_id: f.required_i64("brokerId")?,
        })
    }
}

/// BROKER_HEARTBEAT's header (`brokerName` must be sent, but is not used).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BrokerHeartbeatHeader<'a> {
    /// `clusterName`.
    pub(crate) cluster: &'a str,
    /// `brokerAddr`.
    pub(crate) broker_addr: &'a str,
}

impl<'a> BrokerHeartbeatHeader<'a> {
    /// Reads the header of `req`.
    pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Self, HandlerError> {
        let f = Fields(req);
        let cluster = f.required("clusterName")?;
        let broker_addr = f.required("brokerAddr")?;
        f.required("brokerName")?;
        Ok(BrokerHeartbeatHeader {
            cluster,
            broker_addr,
        })
    }
}

/// QUERY_DATA_VERSION's header (`brokerName` and `brokerId` must be sent, but are not used).
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueryDataVersionHeader<'a> {
    /// `brokerAddr`.
    pub(crate) broker_addr: &'a str,
    /// `clusterName`.
    pub(crate) cluster: &'a str,
    /// Sent by a peer name server's check ([`PEER_CHECK_FIELD`]): no heartbeat of the broker.
    pub(crate) peer_check: bool,
}

impl<'a> QueryDataVersionHeader<'a> {
    /// Reads the header of `req`.
    pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Self, HandlerError> {
        let f = Fields(req);
        f.required("brokerName")?;
        let broker_addr = f.required("brokerAddr")?;
        let cluster = f.required("clusterName")?;
        f.required_i64("brokerId")?;
        Ok(QueryDataVersionHeader {
            broker_addr,
            cluster,
            peer_check: f.optional(PEER_CHECK_FIELD).is_some(),
        })
    }
}

/// GET_BROKER_MEMBER_GROUP's header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BrokerMemberGroupHeader<'a> {
    /// `clusterName`.
    pub(crate) cluster: &'a str,
    /// `brokerName`.
    pub(crate) broker_name: &'a str,
}

impl<'a> BrokerMemberGroupHeader<'a> {
    /// Reads the header of `req`.
    pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Self, HandlerError> {
        let f = Fields(req);
        Ok(BrokerMemberGroupHeader {
            cluster: f.required("clusterName")?,
            broker_name: f.required("brokerName")?,
        })
    }
}

/// GET_ROUTEINFO_BY_TOPIC's header, with the zone fields a 5.x client adds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GetRouteInfoHeader<'a> {
    /// `topic`.
    pub(crate) topic: &'a str,
    /// `acceptStandardJsonOnly` is true.
    pub(crate) accept_standard_json_only: bool,
    /// `__ZONE_MODE` is true.
    pub(crate) zone_mode: bool,
    /// `__ZONE_NAME`, if sent.
    pub(crate) zone_name: Option<&'a str>,
}

impl<'a> GetRouteInfoHeader<'a> {
    /// Reads the header of `req`.
    pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Self, HandlerError> {
        let f = Fields(req);
        Ok(GetRouteInfoHeader {
            topic: f.required("topic")?,
            accept_standard_json_only: f.optional_bool("acceptStandardJsonOnly") == Some(true),
            zone_mode: f.optional_bool(ZONE_MODE) == Some(true),
            zone_name: f.optional(ZONE_NAME),
        })
    }
}

/// PUT_KV_CONFIG's header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PutKvConfigHeader<'a> {
    /// `namespace`.
    pub(crate) namespace: &'a str,
    /// `key`.
    pub(crate) key: &'a str,
    /// `value`.
    pub(crate) value: &'a str,
}

impl<'a> PutKvConfigHeader<'a> {
    /// Reads the header of `req`; `None` when `namespace` or `key` is absent, which Java's
    /// handler answers itself before the header's `value` is looked at.
    pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Option<Self>, HandlerError> {
        let f = Fields(req);
        let (Some(namespace), Some(key)) = (f.optional("namespace"), f.optional("key")) else {
            return Ok(None);
        };
        Ok(Some(PutKvConfigHeader {
            namespace,
            key,
            value: f.required("value")?,
        }))
    }
}

/// GET_KV_CONFIG's and DELETE_KV_CONFIG's header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KvConfigHeader<'a> {
    /// `namespace`.
    pub(crate) namespace: &'a str,
    /// `key`.
    pub(crate) key: &'a str,
}

impl<'a> KvConfigHeader<'a> {
    /// Reads the header of `req`.
    pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Self, HandlerError> {
        let f = Fields(req);
        Ok(KvConfigHeader {
            namespace: f.required("namespace")?,
            key: f.required("key")?,
        })
    }
}

/// A header of one required string field: the headers that say only which namespace,
/// cluster, topic or broker.
macro_rules! one_field_header {
    ($(#[$doc:meta])* $name:ident { $field:ident: $key:literal }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct $name<'a> {
            #[doc = concat!("`", $key, "`.")]
            pub(crate) $field: &'a str,
        }

        impl<'a> $name<'a> {
            /// Reads the header of `req`.
            pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Self, HandlerError> {
                Ok($name {
                    $field: Fields(req).required($key)?,
                })
            }
        }
    };
}

one_field_header!(
    /// GET_KVLIST_BY_NAMESPACE's header.
    NamespaceHeader { namespace: "namespace" }
);
one_field_header!(
    /// GET_TOPICS_BY_CLUSTER's header.
    TopicsByClusterHeader { cluster: "cluster" }
);
one_field_header!(
    /// REGISTER_TOPIC_IN_NAMESRV's header.
    RegisterTopicHeader { topic: "topic" }
);
one_field_header!(
    /// WIPE_WRITE_PERM_OF_BROKER's and ADD_WRITE_PERM_OF_BROKER's header.
    WritePermHeader { broker_name: "brokerName" }
);

/// DELETE_TOPIC_IN_NAMESRV's header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeleteTopicHeader<'a> {
    /// `topic`.
    pub(crate) topic: &'a str,
    /// `clusterName`: delete only in this cluster's groups; everywhere when absent.
    pub(crate) cluster: Option<&'a str>,
}

impl<'a> DeleteTopicHeader<'a> {
    /// Reads the header of `req`.
    pub(crate) fn from_ext(req: &'a RemotingCommand) -> Result<Self, HandlerError> {
        let f = Fields(req);
        Ok(DeleteTopicHeader {
            topic: f.required("topic")?,
            cluster: f.optional("clusterName"),
        })
    }
}

/// Typed access to a request's ext fields, with Java's parsing rules.
struct Fields<'a>(&'a RemotingCommand);

impl<'a> Fields<'a> {
    /// A field that must be present.
    fn required(&self, name: &'static str) -> Result<&'a str, HandlerError> {
        self.0.ext(name).ok_or(HandlerError::MissingField(name))
    }

    /// A field that may be absent.
    fn optional(&self, name: &str) -> Option<&'a str> {
        self.0.ext(name)
    }

    fn parse<T: std::str::FromStr>(name: &'static str, value: &str) -> Result<T, HandlerError> {
        value.parse::<T>().map_err(|_| HandlerError::InvalidField {
            field: name,
            value: value.to_owned(),
        })
    }

    /// A required `Long` field.
    fn required_i64(&self, name: &'static str) -> Result<i64, HandlerError> {
        Self::parse(name, self.required(name)?)
    }

    /// An optional `Long` field. As in Java, a value that does not parse is ignored, as if
    /// absent (Java logs it and keeps the header's default).
    fn optional_i64(&self, name: &'static str) -> Option<i64> {
        self.optional_number(name)
    }

    /// An optional `Integer` field, read like [`Fields::optional_i64`].
    fn optional_i32(&self, name: &'static str) -> Option<i32> {
        self.optional_number(name)
    }

    fn optional_number<T: std::str::FromStr>(&self, name: &'static str) -> Option<T> {
        let value = self.optional(name)?;
        let parsed = Self::parse(name, value);
        if parsed.is_err() {
            tracing::debug!(
                field = name,
                value,
                "ignoring an optional field that does not parse"
            );
        }
        parsed.ok()
    }

    /// An optional `Boolean` field, read as Java's `Boolean.parseBoolean` (only a
    /// case-insensitive `true` is true).
    fn optional_bool(&self, name: &str) -> Option<bool> {
        self.optional(name).map(|v| v.eq_ignore_ascii_case("true"))
    }
}
