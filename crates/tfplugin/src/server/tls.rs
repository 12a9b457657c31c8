//! AutoMTLS, server side.
//!
//! Terraform generates a fresh self-signed client certificate per plugin
//! start (ECDSA P-521, CA:TRUE) and passes its PEM in `PLUGIN_CLIENT_CERT`.
//! We generate our own certificate, send it in the handshake line, and accept
//! exactly that one client certificate. A webpki chain check cannot be used:
//! it rejects a CA certificate presented as an end entity.

use std::sync::Arc;

use anyhow::Context as _;
use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{
    CertificateError, DigitallySignedStruct, Error as TlsError, ServerConfig, SignatureScheme,
};

/// Accepts only a client certificate byte-identical to the pinned one, and
/// checks that the client owns its key (handshake signature).
#[derive(Debug)]
pub(crate) struct PinnedClientCert {
    der: CertificateDer<'static>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl PinnedClientCert {
    pub(crate) fn new(der: CertificateDer<'static>, algorithms: WebPkiSupportedAlgorithms) -> Self {
        PinnedClientCert { der, algorithms }
    }
}

impl ClientCertVerifier for PinnedClientCert {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // An empty list lets Go's client offer its certificate whatever its issuer.
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, TlsError> {
        if end_entity.as_ref() == self.der.as_ref() {
            Ok(ClientCertVerified::assertion())
        } else {
            tracing::warn!("refused a client certificate that is not the one Terraform announced");
            Err(TlsError::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Builds the server TLS config for the given client certificate PEM and
/// returns it with the DER of our freshly generated server certificate.
pub(crate) fn server_config(client_cert_pem: &str) -> anyhow::Result<(Arc<ServerConfig>, Vec<u8>)> {
    let client = CertificateDer::from_pem_slice(client_cert_pem.as_bytes())
        .context("PLUGIN_CLIENT_CERT does not hold a PEM certificate")?;
    let (cert, key) = generate_server_cert()?;
    let cert_der = cert.as_ref().to_vec();

    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = Arc::new(PinnedClientCert::new(
        client,
        provider.signature_verification_algorithms,
    ));
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![cert], key)
        .context("installing the server certificate")?;
    // grpc-go refuses TLS connections that did not negotiate h2.
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok((Arc::new(config), cert_der))
}

/// Self-signed certificate shaped like go-plugin's own: SAN and CN
/// `localhost` (the ServerName go-plugin's client verifies), CA:TRUE because
/// the client puts it in its root pool, server+client auth usages.
fn generate_server_cert() -> anyhow::Result<(CertificateDer<'static>, PrivateKeyDer<'static>)> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose,
    };

    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .context("generating the server key")?;
    let mut params =
        CertificateParams::new(vec!["localhost".to_string()]).context("certificate parameters")?;
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "terraform-provider (tfplugin)");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
        KeyUsagePurpose::KeyAgreement,
        KeyUsagePurpose::KeyCertSign,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let now = time::OffsetDateTime::now_utc();
    // A little slack for clock differences, as go-plugin does.
    params.not_before = now - time::Duration::seconds(30);
    params.not_after = now + time::Duration::days(365);
    let cert = params
        .self_signed(&key)
        .context("signing the server certificate")?;
    let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Ok((cert.der().clone(), key_der))
}
