//! Addresses as settings and accounts write them, parsed once into typed values: address
//! patterns ([`AddressPattern`], `10.0.1.*`, `fe80::{1,2}`), allow-lists of them
//! ([`AllowList`], `proxyProtocolAllowedAddresses`) and `host:port` lists ([`HostPortList`],
//! `namesrvPeers`, `httpNsaddrList`).
//!
//! A neutral leaf: it knows text and IP addresses only, so `config`, `auth` and `server` can all
//! use it without using each other.

mod allow_list;
mod host_port;
mod pattern;

pub(crate) use allow_list::AllowList;
pub(crate) use host_port::HostPortList;
pub(crate) use pattern::{AddressPattern, PatternError};
