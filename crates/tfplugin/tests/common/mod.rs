//! Shared pieces of the server tests: a small provider and gRPC clients.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tfplugin::proto::tfplugin6::provider_client::ProviderClient;
use tfplugin::{
    ApplyRequest, ApplyResponse, Attribute, Block, Diagnostic, PlanRequest, PlanResponse, Provider,
    ProviderSchemas, ReadRequest, ReadResponse, Schema, Type, Value,
};
use tonic::transport::{Channel, Endpoint};

#[derive(Default)]
pub struct TestProvider {
    pub stops: Arc<AtomicUsize>,
}

pub fn thing_schema() -> Schema {
    Schema::new(
        1,
        Block::new()
            .attribute(
                Attribute::new("name", Type::String)
                    .required()
                    .requires_replace(),
            )
            .attribute(Attribute::new("labels", Type::map(Type::String)).optional())
            .attribute(Attribute::new("id", Type::String).computed()),
    )
}

#[async_trait]
impl Provider for TestProvider {
    fn schemas(&self) -> ProviderSchemas {
        let mut s = ProviderSchemas {
            provider: Schema::new(
                0,
                Block::new().attribute(Attribute::new("endpoint", Type::String).optional()),
            ),
            ..Default::default()
        };
        s.resources.insert("test_thing".into(), thing_schema());
        s.data_sources.insert(
            "test_info".into(),
            Schema::new(
                0,
                Block::new().attribute(Attribute::new("value", Type::String).computed()),
            ),
        );
        s
    }
    async fn configure(&self, config: Value, _tf: String) -> Vec<Diagnostic> {
        if config.get("endpoint").as_str() == Some("bad") {
            vec![Diagnostic::error("Bad endpoint", "nope")]
        } else {
            Vec::new()
        }
    }
    async fn read_resource(&self, req: ReadRequest) -> ReadResponse {
        ReadResponse {
            new_state: req.current_state,
            private: req.private,
            diagnostics: Vec::new(),
        }
    }
    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse {
        let s = thing_schema();
        let planned = s.mark_computed_unknown(&req.proposed_new_state);
        PlanResponse {
            requires_replace: s.requires_replace(&req.prior_state, &planned),
            planned_state: planned,
            planned_private: b"plan-private".to_vec(),
            diagnostics: Vec::new(),
        }
    }
    async fn apply_resource_change(&self, req: ApplyRequest) -> ApplyResponse {
        if req.planned_state.is_null() {
            return ApplyResponse::default();
        }
        let name = req
            .planned_state
            .get("name")
            .as_str()
            .unwrap_or("")
            .to_string();
        ApplyResponse {
            new_state: req
                .planned_state
                .with("id", Value::string(format!("id-{name}"))),
            private: req.planned_private,
            diagnostics: Vec::new(),
        }
    }
    async fn read_data_source(&self, _t: &str, config: Value) -> (Value, Vec<Diagnostic>) {
        if config.get("value").is_null() {
            // Deliberately wrong shape, to check that the server reports it.
            return (Value::object([("nope", Value::Null)]), Vec::new());
        }
        (config, Vec::new())
    }
    fn stop(&self) {
        self.stops.fetch_add(1, Ordering::SeqCst);
    }
}

pub async fn plain_client(addr: SocketAddr) -> ProviderClient<Channel> {
    let ch = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    ProviderClient::new(ch)
}

pub async fn plain_channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// A self-signed ECDSA P-521 certificate with CA:TRUE, like the one Terraform
/// generates for AutoMTLS. Returns (PEM, DER, PKCS#8 key DER).
pub fn terraform_like_client_cert() -> (String, Vec<u8>, Vec<u8>) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P521_SHA512).unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ClientAuth,
        ExtendedKeyUsagePurpose::ServerAuth,
    ];
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), cert.der().to_vec(), key.serialize_der())
}

/// Trusts exactly one server certificate, as go-plugin's client does.
#[derive(Debug)]
struct PinnedServer {
    der: Vec<u8>,
    algs: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinnedServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _i: &[CertificateDer<'_>],
        _n: &ServerName<'_>,
        _o: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.der.as_slice() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(
                "unexpected server certificate".into(),
            ))
        }
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.algs)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.algs)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// Connects over TLS, presenting `client` (cert DER, key DER) if given.
pub async fn tls_client(
    addr: SocketAddr,
    server_cert_der: &[u8],
    client: Option<(&[u8], &[u8])>,
) -> Result<ProviderClient<Channel>, String> {
    Ok(ProviderClient::new(
        tls_channel(addr, server_cert_der, client).await?,
    ))
}

pub async fn tls_channel(
    addr: SocketAddr,
    server_cert_der: &[u8],
    client: Option<(&[u8], &[u8])>,
) -> Result<Channel, String> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = Arc::new(PinnedServer {
        der: server_cert_der.to_vec(),
        algs: provider.signature_verification_algorithms,
    });
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match client {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from(cert.to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.to_vec())),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let channel = Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_uri| {
            let connector = connector.clone();
            async move {
                let tcp = tokio::net::TcpStream::connect(addr).await?;
                let name = ServerName::try_from("localhost").map_err(std::io::Error::other)?;
                let tls = connector.connect(name, tcp).await?;
                Ok::<_, std::io::Error>(TokioIo::new(tls))
            }
        }))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    Ok(channel)
}

/// The example provider binary; `cargo test` builds examples next to the test binaries.
pub fn echo_provider_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|p| p.parent()).unwrap();
    let bin = dir
        .join("examples")
        .join(format!("echo_provider{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} missing: run the tests with `cargo test` (which builds examples)",
        bin.display()
    );
    bin
}

/// A resource with a write-only attribute (protocol 6.9) and a function (6.5), served
/// by [`FeatureProvider`].
pub fn secret_schema() -> Schema {
    Schema::new(
        0,
        Block::new()
            .attribute(Attribute::new("name", Type::String).required())
            .attribute(
                Attribute::new("password_wo", Type::String)
                    .optional()
                    .write_only(),
            ),
    )
}

#[derive(Default)]
pub struct FeatureProvider;

#[async_trait]
impl Provider for FeatureProvider {
    fn schemas(&self) -> ProviderSchemas {
        let mut s = ProviderSchemas::default();
        s.resources.insert("test_secret".into(), secret_schema());
        s
    }
    async fn configure(&self, _config: Value, _tf: String) -> Vec<Diagnostic> {
        Vec::new()
    }
    async fn validate_resource_config(
        &self,
        _type_name: &str,
        config: Value,
        client: tfplugin::ClientCapabilities,
    ) -> Vec<Diagnostic> {
        if !config.get("password_wo").is_null() && !client.write_only_attributes_allowed {
            return vec![Diagnostic::error("Write-only not supported", "upgrade")];
        }
        Vec::new()
    }
    fn functions(&self) -> std::collections::BTreeMap<String, tfplugin::Function> {
        std::collections::BTreeMap::from([(
            "double".to_string(),
            tfplugin::Function {
                parameters: vec![tfplugin::FunctionParameter::new("n", Type::Number)],
                return_type: Type::Number,
                summary: "Twice n".into(),
                description: "Returns n + n.".into(),
            },
        )])
    }
    async fn call_function(
        &self,
        name: &str,
        arguments: Vec<Value>,
    ) -> Result<Value, tfplugin::FunctionError> {
        match (name, arguments.first().and_then(Value::as_i64)) {
            ("double", Some(n)) if n >= 0 => Ok(Value::int(2 * n)),
            ("double", _) => {
                Err(tfplugin::FunctionError::new("n must not be negative").at_argument(0))
            }
            _ => Err(tfplugin::FunctionError::new("no such function")),
        }
    }
    async fn read_resource(&self, req: ReadRequest) -> ReadResponse {
        ReadResponse {
            new_state: req.current_state,
            private: req.private,
            diagnostics: Vec::new(),
        }
    }
    async fn plan_resource_change(&self, req: PlanRequest) -> PlanResponse {
        // Hands the write-only value back on purpose: the server must null it.
        PlanResponse {
            planned_state: req.proposed_new_state,
            ..Default::default()
        }
    }
    async fn apply_resource_change(&self, req: ApplyRequest) -> ApplyResponse {
        ApplyResponse {
            new_state: req.planned_state,
            ..Default::default()
        }
    }
    async fn read_data_source(&self, _t: &str, config: Value) -> (Value, Vec<Diagnostic>) {
        (config, Vec::new())
    }
}
