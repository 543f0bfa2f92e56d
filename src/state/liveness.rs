//! What names a live broker and how long it may stay silent by default: the key of the
//! broker-live table (Java's `BrokerAddrInfo`) and `RouteInfoManager`'s default expiry.
//! The route table keys its tables by them and eviction protection judges brokers by them,
//! so they sit below both.

use std::time::Duration;

use crate::protocol::body::Name;

/// Key of the broker-live and filter-server tables: Java's `BrokerAddrInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BrokerAddr {
    /// Cluster the broker registered under.
    pub(crate) cluster: Name,
    /// The broker's `ip:port`.
    pub(crate) addr: Name,
}

/// The default broker expiry, `RouteInfoManager.DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`.
pub(crate) const DEFAULT_BROKER_TIMEOUT: Duration = Duration::from_secs(120);
