//! Integration tests: the real server on 127.0.0.1:0, driven with raw frames.

// The clock bans of clippy.toml keep the server on tokio's (pausable) clock; these tests also
// wait on real child processes, which needs the wall clock.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod harness;

mod auth;
mod auth_cli;
mod bad_input;
mod broker;
mod budget;
mod cli;
mod conf;
mod config_update;
mod controller_config;
mod controller_failover;
mod controller_group;
mod crash;
mod deploy;
mod ext_fields;
mod go_away;
mod hardening_config;
mod hardening_files;
mod hardening_http;
mod hardening_logs;
mod hardening_peers;
mod hardening_prelude;
mod hardening_takeover;
mod history;
mod http;
mod http_controller;
mod idle_memory;
mod kv;
mod kv_limits;
mod listeners;
mod logs;
mod nsadmin;
mod nsadmin_controller;
mod nsadmin_diff;
mod outbound;
mod peers;
mod protection;
mod protocol;
mod proxy;
mod reload;
mod restart;
mod scale;
mod shutdown;
mod tls;
mod topics;
mod upgrade;
mod warm_restart;
mod wire;
