//! REGISTER_BROKER: Java's `RouteInfoManager#registerBroker`, step for step, with one
//! structural difference: registration work is proportional to what changed.
//!
//! The route table decides first, without mutating anything, which of the body's topic
//! configs must be applied (`plan`); configs byte-identical to the ones an entry was built
//! from are skipped without being parsed, and a body identical to the broker's previous one
//! is not even decoded ([`BodyInput::Unchanged`]). Only then are the changes made
//! (`apply`), so a config that fails to parse leaves the table untouched, as a Java decode
//! failure does.

mod apply;
mod plan;
#[cfg(test)]
mod tests;

use tokio::time::Instant;

use super::{BrokerAddr, ConnId, RouteTable};
use crate::protocol::body::{Name, RegisterBody, RegisterBodyError};

/// The header fields of a REGISTER_BROKER request.
#[derive(Debug, Clone)]
pub struct Registration<'a> {
    /// `clusterName`.
    pub cluster: &'a str,
    /// `brokerAddr`.
    pub broker_addr: &'a str,
    /// `brokerName`.
    pub broker_name: &'a str,
    /// `brokerId` (0 = master).
    pub broker_id: i64,
    /// `haServerAddr`.
    pub ha_server_addr: Option<&'a str>,
    /// The raw `__ZONE_NAME` ext field.
    pub zone_name: Option<&'a str>,
    /// `heartbeatTimeoutMillis`, if the broker declared one (applied up to
    /// [`MAX_BROKER_TIMEOUT`](super::MAX_BROKER_TIMEOUT)).
    pub heartbeat_timeout_millis: Option<i64>,
    /// `enableActingMaster`; absent means a pre-5.0 broker.
    pub enable_acting_master: Option<bool>,
    /// The connection the request arrived on.
    pub conn: ConnId,
    /// The request's `version` (the broker's `MQVersion` ordinal).
    pub version: i32,
}

/// Configuration that changes how registrations are applied.
#[derive(Debug, Clone, Default)]
pub struct RegisterSettings {
    /// `deleteTopicWithBrokerRegistration`.
    pub delete_topic_with_broker_registration: bool,
}

/// The body of a registration, as far as the caller has decoded it.
#[derive(Debug, Clone, Copy)]
pub enum BodyInput<'a> {
    /// Not decoded: only its digest is known. Succeeds only if the broker re-sends exactly
    /// the body it registered last and nothing has touched its routes since; otherwise the
    /// answer is [`RegisterError::NeedsBody`].
    Unchanged {
        /// Digest of the raw body bytes.
        digest: u64,
    },
    /// Fully decoded.
    Decoded {
        /// The body.
        body: &'a RegisterBody,
        /// Digest of the raw body bytes.
        digest: u64,
    },
}

/// What a registration produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterOutcome {
    /// Registered (or ignored as stale); for a slave, its live master's address and HA
    /// address.
    Registered {
        /// The master's address.
        master_addr: Option<Name>,
        /// The master's HA address.
        ha_server_addr: Option<String>,
    },
    /// Java's null result: a first registration carrying exactly one topic.
    Rejected,
}

impl RegisterOutcome {
    /// Registered, with no live master to report (a master, or a slave whose master is not
    /// live, or a stale registration that was ignored).
    fn without_master() -> Self {
        RegisterOutcome::Registered {
            master_addr: None,
            ha_server_addr: None,
        }
    }
}

/// Why a registration could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// The caller must decode the body and call again with [`BodyInput::Decoded`].
    #[error("the registration body must be decoded")]
    NeedsBody,
    /// The body's topic table or a topic config in it is malformed; nothing was changed.
    #[error(transparent)]
    BadBody(#[from] RegisterBodyError),
}

impl RouteTable {
    /// Applies a REGISTER_BROKER.
    pub fn register(
        &mut self,
        reg: &Registration<'_>,
        input: BodyInput<'_>,
        settings: &RegisterSettings,
        now: Instant,
    ) -> Result<RegisterOutcome, RegisterError> {
        let key = BrokerAddr {
            cluster: reg.cluster.into(),
            addr: reg.broker_addr.into(),
        };
        let plan = self.plan(reg, &key, input, settings)?;
        Ok(self.apply(reg, key, input, plan, now))
    }
}
