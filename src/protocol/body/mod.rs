//! Typed request and response bodies (Java's `remoting.protocol.body` and `.route` classes):
//! decoding what brokers and clients send and
//! writing what Java sends back, property for property.

pub(crate) mod controller;
pub mod data_version;
pub(crate) mod lenient;
pub mod lists;
pub(crate) mod mapping;
pub(crate) mod register;
pub(crate) mod register_broker;
pub mod route;
pub(crate) mod scan;
pub(crate) mod topic_config;

pub use data_version::DataVersion;
pub use mapping::MappingInfo;
pub use register::{DecodeOptions, RegisterBody};
pub(crate) use register::{RegisterBodyError, TableHint, TopicSource};
pub use register_broker::RegisterBroker;
pub(crate) use route::{BrokerData, QueueData};
pub use route::{Name, TopicRouteData};
pub use topic_config::TopicConfig;
