//! Certificates and keys: reading the PEM files the `tls.*` keys name, the self-signed
//! certificate of test mode, and the rustls server configuration built from them.
//!
//! Every failure is a [`TlsError`] that names the key and the file, so a start-up error or a
//! failed reload says exactly what to fix. Keys may be PKCS#8 (the documented format), PKCS#8
//! encrypted with PBES2 (what `openssl pkcs8 -topk8` writes) and `tls.server.keyPassword`,
//! PKCS#1 or SEC1, as Netty with BouncyCastle reads them.

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;

use super::settings::{ClientAuth, TlsSettings};
use super::verify::AnyClientCert;

/// Why TLS material could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A key that test mode off needs is not set.
    #[error("{key} is not set (with tls.test.mode.enable=false the server needs {needs})")]
    Missing {
        /// The key.
        key: &'static str,
        /// What the server needs.
        needs: &'static str,
    },
    /// A file could not be read.
    #[error("{key}={path}: cannot read the file: {source}")]
    Read {
        /// The key naming the file.
        key: &'static str,
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file was read but does not hold what the key needs.
    #[error("{key}={path}: {reason}")]
    Content {
        /// The key naming the file.
        key: &'static str,
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// rustls refused the combination (e.g. the key does not match the certificate).
    #[error("{cert_key}={cert} with {key_key}={key}: {reason}")]
    Mismatch {
        /// The certificate's key name.
        cert_key: &'static str,
        /// The certificate file.
        cert: String,
        /// The private key's key name.
        key_key: &'static str,
        /// The key file.
        key: String,
        /// rustls' reason.
        reason: String,
    },
    /// `tls.server.authClient=true` without a trust bundle.
    #[error(
        "tls.server.authClient=true needs tls.server.trustCertPath (this server has no default trust store)"
    )]
    NoTrust,
}

/// The crypto provider every configuration uses: ring.
pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The longest certificate chain served, in DER bytes (64 KiB): the largest Certificate
/// message a rustls client accepts (Java's clients stop at 32 KiB by default,
/// `jdk.tls.maxHandshakeMessageSize`). A longer chain would load and then break every handshake.
pub(crate) const MAX_CHAIN_BYTES: usize = 64 << 10;

/// Reads a PEM file: a regular file of at most [`crate::durable::read::MAX_SMALL_FILE`] bytes,
/// so that a FIFO or a huge file named by mistake fails the load instead of blocking it.
fn read(key: &'static str, path: &str) -> Result<Vec<u8>, TlsError> {
    crate::durable::read::read_small(std::path::Path::new(path)).map_err(|source| TlsError::Read {
        key,
        path: path.to_owned(),
        source,
    })
}

fn content(key: &'static str, path: &str, reason: impl Into<String>) -> TlsError {
    TlsError::Content {
        key,
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// The certificates of a PEM file, in file order (leaf first for a chain).
pub(crate) fn load_certs(
    key: &'static str,
    path: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read(key, path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| content(key, path, format!("not a PEM certificate file: {e}")))?;
    if certs.is_empty() {
        return Err(content(key, path, "no -----BEGIN CERTIFICATE----- block"));
    }
    Ok(certs)
}

/// The CA certificates of a PEM bundle, as a trust store.
pub(crate) fn load_roots(key: &'static str, path: &str) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in load_certs(key, path)? {
        roots
            .add(cert)
            .map_err(|e| content(key, path, format!("not a usable CA certificate: {e}")))?;
    }
    Ok(roots)
}

const ENCRYPTED_BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
const ENCRYPTED_END: &str = "-----END ENCRYPTED PRIVATE KEY-----";

/// The private key of a PEM file, decrypted with `password` when it is encrypted.
pub(crate) fn load_key(
    key: &'static str,
    path: &str,
    password_key: &'static str,
    password: Option<&str>,
) -> Result<PrivateKeyDer<'static>, TlsError> {
    let bytes = read(key, path)?;
    let text = String::from_utf8_lossy(&bytes);
    if let Some(start) = text.find(ENCRYPTED_BEGIN) {
        let end = text[start..]
            .find(ENCRYPTED_END)
            .map(|e| start + e + ENCRYPTED_END.len())
            .ok_or_else(|| content(key, path, "unterminated ENCRYPTED PRIVATE KEY block"))?;
        let Some(password) = password else {
            return Err(content(
                key,
                path,
                format!("the key is encrypted: set {password_key}"),
            ));
        };
        let (_, der) = pkcs8::der::pem::decode_vec(text[start..end].as_bytes())
            .map_err(|e| content(key, path, format!("bad ENCRYPTED PRIVATE KEY block: {e}")))?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
            .map_err(|e| content(key, path, format!("bad encrypted PKCS#8 key: {e}")))?;
        let plain = info.decrypt(password).map_err(|e| {
            content(
                key,
                path,
                format!(
                    "cannot decrypt with {password_key} ({e}); only PBES2 keys are supported \
                     (e.g. openssl pkcs8 -topk8 -v2 aes-256-cbc)"
                ),
            )
        })?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            plain.as_bytes().to_vec(),
        )));
    }
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(content(
            key,
            path,
            "legacy OpenSSL-encrypted PEM is not supported: convert it with \
             openssl pkcs8 -topk8 -v2 aes-256-cbc",
        ));
    }
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        content(
            key,
            path,
            format!("no PKCS#8, PKCS#1 or SEC1 private key in PEM form ({e})"),
        )
    })
}

/// A self-signed certificate for test mode: ECDSA P-256, `CN=localhost`, new on every start
/// (Java's test mode generates an RSA one the same way; no client looks at it).
pub(crate) fn self_signed() -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .expect("ring generates P-256 keys");
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .expect("localhost is a valid name");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    let cert = params
        .self_signed(&key)
        .expect("a P-256 key signs its own certificate");
    (
        vec![cert.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

/// The server's certificate chain and key: the generated one in test mode, else the files.
pub(crate) fn server_identity(
    s: &TlsSettings,
    generated: &(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>),
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    if s.test_mode {
        return Ok((generated.0.clone(), generated.1.clone_key()));
    }
    const NEEDS: &str = "tls.server.certPath and tls.server.keyPath";
    let cert_path = s.server_cert_path.as_deref().ok_or(TlsError::Missing {
        key: "tls.server.certPath",
        needs: NEEDS,
    })?;
    let key_path = s.server_key_path.as_deref().ok_or(TlsError::Missing {
        key: "tls.server.keyPath",
        needs: NEEDS,
    })?;
    let certs = load_certs("tls.server.certPath", cert_path)?;
    let chain: usize = certs.iter().map(|c| c.len()).sum();
    if chain > MAX_CHAIN_BYTES {
        return Err(content(
            "tls.server.certPath",
            cert_path,
            format!(
                "the certificate chain has {chain} bytes, more than TLS clients accept \
                 ({MAX_CHAIN_BYTES}); list only the leaf and its intermediates"
            ),
        ));
    }
    let key = load_key(
        "tls.server.keyPath",
        key_path,
        "tls.server.keyPassword",
        s.server_key_password.as_deref(),
    )?;
    Ok((certs, key))
}

/// The rustls server configuration for `s` (TLS 1.2 and 1.3, ring's default suites, no ALPN,
/// no session tickets), with mutual TLS as `tls.server.need.client.auth` asks (Java's
/// `TlsHelper#buildSslContext(false)`).
pub(crate) fn server_config(
    s: &TlsSettings,
    generated: &(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>),
) -> Result<rustls::ServerConfig, TlsError> {
    let (certs, key) = server_identity(s, generated)?;
    let provider = provider();
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default versions");
    // Test mode serves anyone (Java requests an optional certificate there and checks it
    // against the JVM's public CAs, which no test client has; asking for nothing is simpler
    // and lets the same clients in).
    let auth = if s.test_mode {
        ClientAuth::None
    } else {
        s.need_client_auth
    };
    let builder = match auth {
        ClientAuth::None => builder.with_no_client_auth(),
        _ if !s.server_auth_client => builder.with_client_cert_verifier(Arc::new(
            AnyClientCert::new(provider, auth == ClientAuth::Require),
        )),
        _ => {
            let path = s
                .server_trust_cert_path
                .as_deref()
                .ok_or(TlsError::NoTrust)?;
            let key = "tls.server.trustCertPath";
            let verifier = WebPkiClientVerifier::builder_with_provider(
                Arc::new(load_roots(key, path)?),
                provider,
            );
            let verifier = match auth {
                ClientAuth::Optional => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            let verifier = verifier
                .build()
                .map_err(|e| content(key, path, e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Mismatch {
            cert_key: "tls.server.certPath",
            cert: s.server_cert_path.clone().unwrap_or_default(),
            key_key: "tls.server.keyPath",
            key: s.server_key_path.clone().unwrap_or_default(),
            reason: e.to_string(),
        })?;
    // Clients reconnect rarely and Java's never resume: tickets would only cost each handshake.
    config.send_tls13_tickets = 0;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate and its key written as PEM files in `dir`; returns the
    /// settings naming them and the certificate's PEM text.
    fn files(dir: &std::path::Path) -> (TlsSettings, String) {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        let pem = |label, der: &[u8]| {
            pkcs8::der::pem::encode_string(label, pkcs8::der::pem::LineEnding::LF, der).unwrap()
        };
        let cert = pem("CERTIFICATE", params.self_signed(&key).unwrap().der());
        let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
        std::fs::write(&cert_path, &cert).unwrap();
        std::fs::write(&key_path, pem("PRIVATE KEY", &key.serialize_der())).unwrap();
        let s = TlsSettings {
            test_mode: false,
            server_cert_path: Some(cert_path.display().to_string()),
            server_key_path: Some(key_path.display().to_string()),
            ..TlsSettings::default()
        };
        (s, cert)
    }

    #[test]
    fn a_chain_longer_than_clients_accept_or_a_huge_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (s, cert) = files(dir.path());
        let generated = self_signed();
        assert!(server_config(&s, &generated).is_ok());
        let path = s.server_cert_path.clone().unwrap();
        // Would load, then break every handshake.
        std::fs::write(&path, cert.repeat(200)).unwrap();
        let e = server_config(&s, &generated).unwrap_err().to_string();
        assert!(
            e.contains("tls.server.certPath") && e.contains("chain"),
            "{e}"
        );
        let huge = cert.repeat(crate::durable::read::MAX_SMALL_FILE as usize / cert.len() + 1);
        std::fs::write(&path, huge).unwrap();
        let e = server_config(&s, &generated).unwrap_err().to_string();
        assert!(
            e.contains("tls.server.certPath") && e.contains("limit"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_named_as_the_certificate_fails_the_load_instead_of_blocking_it() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = files(dir.path());
        let path = s.server_cert_path.clone().unwrap();
        std::fs::remove_file(&path).unwrap();
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.unwrap().success());
        // On a thread of its own: a read that blocks is seen as a timeout, not a hung test.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(server_config(&s, &self_signed()).map(drop));
        });
        let answer = rx.recv_timeout(std::time::Duration::from_secs(5));
        // Unblock a reader stuck on the FIFO, so that the thread ends either way.
        {
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path);
        }
        let e = answer
            .expect("the load returns at once")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }
}
