//! `namesrv`: a standalone Apache RocketMQ NameServer.
//!
//! # Architecture
//!
//! Layers, with dependencies pointing one way only (`tools/modcycles.py`, run by CI, fails on
//! any import cycle between sibling modules, at every level of the tree):
//!
//! ```text
//! main ─▶ server ─▶ dispatch ─▶ handlers ─▶ state / kv ─▶ protocol::body
//!         server ─▶ http, peers              (the background work the server runs)
//! nsadmin ─▶ admin ─▶ remoting_client ─▶ protocol        (peers use the same client)
//! any layer ─▶ the neutral pieces listed last
//! ```
//!
//! - [`protocol`] turns bytes into [`protocol::RemotingCommand`]s and back, and writes JSON the
//!   way the Java name server's fastjson does. Pure, no I/O.
//! - [`server`] owns sockets: the accept loop, one task per connection, idle timeouts, the
//!   connection cap, the TLS/PROXY prelude, graceful shutdown and hand-over to a new
//!   process, and the background services it runs on its tracker. One process may serve
//!   several remoting listeners, each with its own request table, through the same connection
//!   code. [`server::outbound`] carries the requests the server sends its connected clients
//!   (one-way, or answered by opaque within a timeout).
//! - [`dispatch`] is the request table: one row per request code with its handler, cost lane,
//!   metric series, permission, audit fields and write kind ([`dispatch::NAMESRV`] is the
//!   name server's; each remoting listener has its own table). It is the one place where
//!   handler errors (`error`) become wire responses, and before a handler runs every request
//!   passes the [`auth`] gate (off by default; signatures, accounts and policy when `authMode`
//!   is set).
//! - [`handlers`] implement the request codes, one file per domain. They take typed input and
//!   the shared [`state::Namesrv`] handle and *return* a response and its effects.
//! - [`state`] holds the route tables (one `parking_lot::RwLock` over plain data), the liveness
//!   rules, eviction protection, the route cache, the broker-expiry scan
//!   (`state/housekeeping.rs`) and the route snapshot for warm restarts; [`kv`] the durable KV
//!   store, written through `durable`'s crash-safe file replacement. Neither sees a socket.
//! - [`http`] is the HTTP side door (the `/metrics` exposition, health, status page, JSON API,
//!   address server), which only reads the state; `peers` checks that the other name
//!   servers of `namesrvPeers` know the brokers registered here.
//! - [`admin`] is the `nsadmin` tool: mqadmin's name-server commands and `diff`; it never
//!   touches [`state`]. It talks through `remoting_client`, the one RocketMQ client of the
//!   crate (with the decoders of the answers' bodies), which the peer checks use too.
//!
//! Neutral pieces, used from above and using nothing above [`protocol`] but each other:
//! [`auth`] (the request gate), [`config`] (the Java-compatible configuration: properties
//! files, Java key names, parsed into typed values when loaded or updated), `addr` (address
//! patterns, allow-lists and `host:port` lists), `durable` (crash-safe files), [`tls`] (the
//! `tls.*` settings and the certificates they name), [`metrics`] (the counters `server`,
//! `dispatch` and `state` record), [`reload`] (reload requests, SIGHUP), `file_watch` (file
//! fingerprints and the reload-on-change loop of the accounts and the TLS material), `offload`
//! (the blocking-pool lanes), [`telemetry`] (logging setup, the audit log's target),
//! [`shutdown`] (signals), `log_limit` (rate-limited log lines), `java_str` and `civil` (Java
//! string rules, calendar dates), and [`cli`] (the daemon's flags).
//!
//! Only what the binaries, the integration tests, the benches, the examples and the fuzz
//! targets use is `pub`; everything else is `pub(crate)`.
//!
//! Unit tests: a file's unit tests are an inline `#[cfg(test)] mod tests { … }` at its end
//! while short (under ~150 lines); longer ones, and tests spanning a directory module's files,
//! live in that directory: `tests.rs`, or `tests/` with one file per topic (e.g.
//! `route_table/tests/`, `kv/tests/`); never `foo_tests.rs` beside `foo.rs`. Shared test
//! builders live in one `#[cfg(test)] pub(crate) mod testing`.

#![deny(
    missing_docs,
    rust_2018_idioms,
    clippy::disallowed_methods,
    clippy::disallowed_types
)]
#![forbid(unsafe_code)]

mod addr;
pub mod admin;
pub mod auth;
mod civil;
pub mod cli;
pub mod config;
pub mod controller;
pub mod dispatch;
mod durable;
mod error;
mod file_watch;
pub mod handlers;
pub mod http;
mod java_str;
pub mod kv;
mod log_limit;
pub mod metrics;
mod offload;
mod peers;
pub mod protocol;
pub mod reload;
mod remoting_client;
pub mod server;
pub mod shutdown;
pub mod state;
pub mod telemetry;
pub mod tls;
