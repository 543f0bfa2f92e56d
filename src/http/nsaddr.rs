//! The address server Java clients and brokers poll when `rocketmq.namesrv.domain` points
//! here: `GET /rocketmq/<subgroup>` answers `host:port;host:port`, the
//! body Java's `DefaultTopAddressing#fetchNSAddr` reads.
//!
//! Every subgroup gets the same answer (`nsaddr` by default, a custom
//! `rocketmq.namesrv.domain.subgroup`, and the `-<unitName>` form of unit clients): this server
//! knows one cluster of name servers, `httpNsaddrList`, or when that is empty, itself.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::{App, Peer, text};

/// `GET /rocketmq/<subgroup>`.
pub(super) async fn nsaddr(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<Peer>,
) -> Response {
    let configured = app.state.config().settings.http_nsaddr_list.value().clone();
    let body = if configured.is_empty() {
        own_address(app.remoting, peer.local)
    } else {
        configured.entries().join(";")
    };
    text(StatusCode::OK, body)
}

/// This server's remoting address as the client can reach it: the bound address, or when
/// bound to all interfaces, the address the client's HTTP request arrived at.
fn own_address(remoting: SocketAddr, local: SocketAddr) -> String {
    let ip = if remoting.ip().is_unspecified() {
        local.ip().to_canonical()
    } else {
        remoting.ip()
    };
    SocketAddr::new(ip, remoting.port()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wildcard_bind_answers_with_the_address_the_client_reached() {
        let sa = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            own_address(sa("0.0.0.0:9876"), sa("10.1.2.3:8080")),
            "10.1.2.3:9876"
        );
        assert_eq!(
            own_address(sa("[::]:9876"), sa("[::ffff:10.1.2.3]:8080")),
            "10.1.2.3:9876"
        );
        assert_eq!(
            own_address(sa("192.168.0.7:9876"), sa("127.0.0.1:8080")),
            "192.168.0.7:9876"
        );
    }
}
