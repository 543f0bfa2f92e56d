//! `namesrv`: a standalone Apache RocketMQ NameServer.
//!
//! # Architecture
//!
//! Layers, with dependencies pointing one way only:
//!
//! ```text
//! main ─▶ server ─▶ dispatch ─▶ handlers ─▶ state / kv ─▶ protocol::body
//! ```
//!
//! - [`protocol`] turns bytes into [`protocol::RemotingCommand`]s and back, and writes JSON the
//!   way the Java name server's fastjson does. Pure, no I/O.
//! - [`server`] owns sockets: the accept loop, one task per connection, idle timeouts, the
//!   connection cap, graceful shutdown and the background liveness scan.
//! - [`dispatch`] maps a request code to a handler and is the one place where handler errors
//!   become wire responses. Before its `match`, every request passes the [`auth`] gate
//!   (off by default; signatures, accounts and policy when `authMode` is set).
//! - [`handlers`] implement the request codes, one file per domain. They take typed input and
//!   the shared [`state::Namesrv`] handle and *return* a response.
//! - [`state`] holds the route tables (one `parking_lot::RwLock` over plain data), the liveness
//!   rules and the route cache; [`kv`] the durable KV store. Neither sees a socket.
//! - [`tls`] holds the `tls.*` settings and the certificates they name; `server::prelude`
//!   uses them per connection (PROXY header, TLS decision, handshake) before any frame.
//! - [`config`] is the Java-compatible configuration (properties files, Java key names);
//!   [`reload`] carries reload requests (SIGHUP) to the tasks that re-read files.
//! - [`admin`] is the `nsadmin` tool: mqadmin's name-server commands over a small client built
//!   on [`protocol`]; it never touches [`state`].
//! - [`metrics`] holds the counters `server`, `dispatch` and `state` record, and renders them
//!   for Prometheus; [`http`] is the HTTP side door (metrics, health, status page, JSON API,
//!   address server), which only reads the state.

#![deny(
    missing_docs,
    rust_2018_idioms,
    clippy::disallowed_methods,
    clippy::disallowed_types
)]
#![forbid(unsafe_code)]

pub mod admin;
pub mod auth;
mod civil;
pub mod cli;
pub mod config;
pub mod dispatch;
pub mod durable;
pub mod error;
mod file_watch;
pub mod handlers;
pub mod http;
pub mod java_str;
pub mod kv;
mod log_limit;
pub mod metrics;
mod offload;
pub mod peers;
pub mod protocol;
pub mod reload;
pub mod remoting_client;
pub mod server;
pub mod shutdown;
pub mod state;
pub mod telemetry;
pub mod tls;
