//! Java's lenient certificate checks, expressed as rustls verifiers: accept any peer
//! certificate (the handshake signature is still checked, so the peer must hold the key), and
//! verify a server's chain without looking at its name (Java clients send no host name).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};

/// The handshake-signature checks both verifiers keep, with the provider's algorithms: the
/// three trait methods are the same in `ClientCertVerifier` and `ServerCertVerifier`, so one
/// macro writes them into both impls (each type holds its `provider`).
macro_rules! handshake_signature_checks {
    () => {
        handshake_signature_checks!(@check verify_tls12_signature);
        handshake_signature_checks!(@check verify_tls13_signature);

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.provider
                .signature_verification_algorithms
                .supported_schemes()
        }
    };
    // The trait method and the rustls function that checks it share their name.
    (@check $check:ident) => {
        fn $check(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, Error> {
            $check(
                message,
                cert,
                dss,
                &self.provider.signature_verification_algorithms,
            )
        }
    };
}

/// Server side, `tls.server.authClient=false`: a certificate is requested and any one is
/// accepted (Java's trust-all manager).
#[derive(Debug)]
pub(crate) struct AnyClientCert {
    provider: Arc<CryptoProvider>,
    mandatory: bool,
}

impl AnyClientCert {
    /// Requests a certificate; `mandatory` fails clients that send none.
    pub(crate) fn new(provider: Arc<CryptoProvider>, mandatory: bool) -> AnyClientCert {
        AnyClientCert {
            provider,
            mandatory,
        }
    }
}

impl ClientCertVerifier for AnyClientCert {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        Ok(ClientCertVerified::assertion())
    }

    handshake_signature_checks!();
}

/// Client side: any server certificate (`tls.client.authServer=false`, or test mode), or,
/// with `chain`, a chain that verifies against the trust bundle whatever name it carries.
#[derive(Debug)]
pub(crate) struct ServerCert {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<rustls::client::WebPkiServerVerifier>>,
}

impl ServerCert {
    /// Accepts any server certificate.
    pub(crate) fn any(provider: Arc<CryptoProvider>) -> ServerCert {
        ServerCert {
            provider,
            chain: None,
        }
    }

    /// Verifies the chain with `verifier`, ignoring the name.
    pub(crate) fn chain(
        provider: Arc<CryptoProvider>,
        verifier: Arc<rustls::client::WebPkiServerVerifier>,
    ) -> ServerCert {
        ServerCert {
            provider,
            chain: Some(verifier),
        }
    }
}

impl ServerCertVerifier for ServerCert {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(CertificateError::NotValidForName))
            | Err(Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })) => {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    handshake_signature_checks!();
}
