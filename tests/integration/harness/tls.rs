//! TLS for tests: the client configuration a Java client with `tls.enable=true` uses, and the
//! `tls.*` base settings a test server starts with.

use std::net::SocketAddr;
use std::sync::Arc;

use namesrv::config::Config;
use namesrv::tls::TlsSettings;

use super::client::TestClient;
use super::server::Options;

/// A client TLS configuration as a Java client's with `tls.enable=true`: any certificate.
pub fn tls_client_config() -> Arc<rustls::ClientConfig> {
    Arc::new(namesrv::tls::client::client_config(&TlsSettings::default()).unwrap())
}

/// A TLS client to `addr` configured by `settings`, as a Java client with those `tls.*` keys.
pub async fn tls_client_with(addr: SocketAddr, settings: &TlsSettings) -> TestClient {
    let config = Arc::new(namesrv::tls::client::client_config(settings).unwrap());
    TestClient::connect_tls(addr, config, b"").await.unwrap()
}

/// The `tls.*` settings a test server starts with (see [`Options::system_properties`]).
pub(super) fn tls_base(opts: &Options, config: &Config, dir: &tempfile::TempDir) -> TlsSettings {
    let mut system: Vec<(String, String)> = opts
        .system_properties
        .iter()
        .map(|p| namesrv::tls::settings::system_property(p))
        .collect();
    let names_file = system
        .iter()
        .chain(&config.tls_lines)
        .any(|(k, _)| k == "tls.config.file");
    if !names_file {
        let absent = dir.path().join("no-tls.properties");
        system.insert(0, ("tls.config.file".into(), absent.display().to_string()));
    }
    TlsSettings::resolve_base(&config.tls_lines, &system)
}
