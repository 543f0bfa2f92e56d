//! Shared test harness, by concern: an in-process server on an ephemeral port with its own
//! temporary home ([`server`]), a raw protocol client ([`client`]), the requests tests send
//! most ([`requests`]), an HTTP client for the side door ([`http`]), TLS client settings
//! ([`tls`]) and the built binary as a child process ([`process`]).

#![allow(dead_code)] // each test module uses a different part of the harness

pub mod client;
pub mod controller;
pub mod http;
pub mod process;
pub mod requests;
pub mod server;
pub mod spawned;
pub mod tls;

pub use client::{TestClient, body_text};
pub use http::{HttpResponse, http_exchange, http_request, http_request_with};
pub use requests::{
    cluster_info, delete_kv, get_kv, kv_list, put_kv, qdv_ext, query_data_version, register,
    register_body, register_broker_a, register_ext, register_master, register_raw, register_with,
    registration, route, update_config, wipe_write_perm,
};
pub use server::{Options, TestServer, apply_config};
pub use tls::{tls_client_config, tls_client_with};

/// A fresh temporary directory holding one file `name` written with `text`: the set-up of
/// every test that hands the server or the binary a file (config, accounts, a blocker).
pub fn temp_file(name: &str, text: impl AsRef<[u8]>) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// A fake peer on an ephemeral loopback port: each connection it accepts is handed to `serve`
/// (called in the accept loop, so it may count the connection at once) and the future it
/// returns runs in a task of its own. Returns the peer's address.
pub async fn fake_peer<F, Fut>(mut serve: F) -> std::net::SocketAddr
where
    F: FnMut(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream));
        }
    });
    addr
}
