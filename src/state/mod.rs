//! Shared server state: the route table, the KV store and the live configuration, behind one
//! cheap-to-clone handle.

pub mod route_cache;
pub mod route_table;

pub use route_table::{ConnId, RouteTable};
