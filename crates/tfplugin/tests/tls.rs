//! AutoMTLS: only the client certificate announced in PLUGIN_CLIENT_CERT may connect.

use std::time::Duration;

use crate::common::{TestProvider, terraform_like_client_cert, tls_client};
use tfplugin::proto::tfplugin6::get_provider_schema;
use tfplugin::{ServeConfig, start};

/// Bounds a call that must finish; a hang is a failure, not something to wait out.
const LIMIT: Duration = Duration::from_secs(20);

async fn schema_call(
    server: &tfplugin::RunningServer,
    client: Option<(&[u8], &[u8])>,
) -> Result<usize, String> {
    let der = server
        .server_cert_der
        .clone()
        .expect("TLS server has a certificate");
    let attempt = async {
        let mut c = tls_client(server.address, &der, client).await?;
        let r = c
            .get_provider_schema(get_provider_schema::Request {})
            .await
            .map_err(|e| format!("rpc: {e}"))?;
        Ok(r.into_inner().resource_schemas.len())
    };
    tokio::time::timeout(LIMIT, attempt)
        .await
        .map_err(|_| "timed out".to_string())?
}

#[tokio::test]
async fn only_the_announced_client_certificate_is_accepted() {
    let (pem, der, key) = terraform_like_client_cert();
    let (_other_pem, other_der, other_key) = terraform_like_client_cert();
    let server = start(
        TestProvider::default(),
        ServeConfig {
            client_cert_pem: Some(pem),
            port_range: None,
        },
    )
    .await
    .unwrap();

    let line = server.handshake_line();
    let fields: Vec<&str> = line.split('|').collect();
    assert_eq!(fields.len(), 6, "{line}");
    assert_eq!(&fields[..3], &["1", "6", "tcp"]);
    assert_eq!(fields[3], server.address.to_string());
    assert!(fields[3].starts_with("127.0.0.1:"));
    assert_eq!(fields[4], "grpc");
    assert!(!fields[5].ends_with('='), "no base64 padding");

    let wrong = schema_call(&server, Some((&other_der, &other_key))).await;
    assert!(
        wrong.is_err(),
        "a different certificate must be refused: {wrong:?}"
    );

    let none = schema_call(&server, None).await;
    assert!(
        none.is_err(),
        "a client without certificate must be refused: {none:?}"
    );

    let right = schema_call(&server, Some((&der, &key))).await;
    assert_eq!(
        right,
        Ok(1),
        "the announced P-521 certificate must be accepted"
    );

    server.shutdown();
    tokio::time::timeout(LIMIT, server.wait())
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn server_certificate_is_what_go_plugin_expects() {
    let (pem, _, _) = terraform_like_client_cert();
    let server = start(
        TestProvider::default(),
        ServeConfig {
            client_cert_pem: Some(pem),
            port_range: None,
        },
    )
    .await
    .unwrap();
    let der = server.server_cert_der.clone().unwrap();
    let line = server.handshake_line();
    let b64 = line.rsplit('|').next().unwrap();
    use base64::Engine as _;
    assert_eq!(
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(b64)
            .unwrap(),
        der
    );
    // go-plugin's client checks the name "localhost" against the SANs.
    assert!(der.windows(9).any(|w| w == b"localhost"));
    server.shutdown();
}

#[tokio::test]
async fn garbage_client_cert_is_an_error() {
    let r = start(
        TestProvider::default(),
        ServeConfig {
            client_cert_pem: Some("not a pem".into()),
            port_range: None,
        },
    )
    .await;
    let e = r.err().expect("must fail").to_string();
    assert!(e.contains("PLUGIN_CLIENT_CERT"), "{e}");
}
