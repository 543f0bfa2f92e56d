//! The client side, as a Java client with `tls.enable=true` behaves (`TlsHelper#buildSslContext(true)`): no host name
//! sent and none checked; in test mode (the default) any server certificate is accepted and no
//! client certificate is sent; otherwise `tls.client.authServer=true` verifies the chain
//! against `tls.client.trustCertPath`, and `tls.client.certPath`/`keyPath` give a client
//! certificate for mutual TLS. Used by `nsadmin` and by the tests.

use std::sync::Arc;

use rustls::pki_types::ServerName;

use super::material::{TlsError, load_certs, load_key, load_roots, provider};
use super::settings::TlsSettings;
use super::verify::ServerCert;

/// The rustls client configuration for `s`.
pub fn client_config(s: &TlsSettings) -> Result<rustls::ClientConfig, TlsError> {
    let provider = provider();
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions");
    let verifier = match (
        &s.client_trust_cert_path,
        s.client_auth_server && !s.test_mode,
    ) {
        (_, false) => ServerCert::any(provider.clone()),
        (None, true) => {
            return Err(TlsError::Missing {
                key: "tls.client.trustCertPath",
                needs: "it when tls.client.authServer=true (there is no default trust store)",
            });
        }
        (Some(path), true) => {
            let key = "tls.client.trustCertPath";
            let chain = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(load_roots(key, path)?),
                provider.clone(),
            )
            .build()
            .map_err(|e| TlsError::Content {
                key,
                path: path.clone(),
                reason: e.to_string(),
            })?;
            ServerCert::chain(provider.clone(), chain)
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let mut config = match (&s.client_cert_path, &s.client_key_path, s.test_mode) {
        (Some(cert), Some(key), false) => {
            let certs = load_certs("tls.client.certPath", cert)?;
            let key_der = load_key(
                "tls.client.keyPath",
                key,
                "tls.client.keyPassword",
                s.client_key_password.as_deref(),
            )?;
            builder
                .with_client_auth_cert(certs, key_der)
                .map_err(|e| TlsError::Mismatch {
                    cert_key: "tls.client.certPath",
                    cert: cert.clone(),
                    key_key: "tls.client.keyPath",
                    key: key.clone(),
                    reason: e.to_string(),
                })?
        }
        _ => builder.with_no_client_auth(),
    };
    // Java's client engine has no peer host: no SNI.
    config.enable_sni = false;
    Ok(config)
}

/// The name rustls needs for `addr` (`host:port`); with SNI off it is never sent.
pub fn server_name(addr: &str) -> ServerName<'static> {
    let host = addr
        .rsplit_once(':')
        .map_or(addr, |(h, _)| h)
        .trim_start_matches('[')
        .trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(host.to_owned())
            .unwrap_or_else(|_| ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into())),
    }
}
