//! The provider binary's start-up contract with Terraform (go-plugin).

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{echo_provider_binary, terraform_like_client_cert, tls_channel};
use base64::Engine as _;
use tfplugin::proto::plugin::Empty;
use tfplugin::proto::plugin::grpc_controller_client::GrpcControllerClient;
use tfplugin::{MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE, handshake_line};

#[test]
fn handshake_line_format() {
    let addr: SocketAddr = "127.0.0.1:10001".parse().unwrap();
    assert_eq!(handshake_line(addr, None), "1|6|tcp|127.0.0.1:10001|grpc");
    let line = handshake_line(addr, Some(&[0xff, 0xee, 0xdd, 0xcc]));
    assert_eq!(line, "1|6|tcp|127.0.0.1:10001|grpc|/+7dzA");
}

#[test]
fn refuses_to_run_without_terraform() {
    let out = Command::new(echo_provider_binary())
        .env_remove(MAGIC_COOKIE_KEY)
        .env("TF_LOG", "TRACE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "stdout must stay empty: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("This program is a Terraform provider plugin"),
        "{stderr}"
    );
    assert!(
        stderr.contains("meant to be started by Terraform"),
        "{stderr}"
    );

    let wrong = Command::new(echo_provider_binary())
        .env(MAGIC_COOKIE_KEY, "wrong")
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(1));
}

#[tokio::test]
async fn prints_one_handshake_line_and_exits_on_shutdown() {
    let (pem, der, key) = terraform_like_client_cert();
    let mut child = Command::new(echo_provider_binary())
        .env(MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE)
        .env("PLUGIN_PROTOCOL_VERSIONS", "5,6")
        .env("PLUGIN_MIN_PORT", "10000")
        .env("PLUGIN_MAX_PORT", "25000")
        .env("PLUGIN_CLIENT_CERT", &pem)
        .env("TF_LOG", "DEBUG")
        .stdout(Stdio::piped())
        // Not read by the test; a full pipe would block the provider.
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let line = line.trim_end_matches('\n');
    let fields: Vec<&str> = line.split('|').collect();
    assert_eq!(fields.len(), 6, "{line:?}");
    assert_eq!(&fields[..3], &["1", "6", "tcp"]);
    assert_eq!(fields[4], "grpc");
    let addr: SocketAddr = fields[3].parse().unwrap();
    assert!(addr.ip().is_loopback());
    assert!((10000..=25000).contains(&addr.port()));
    let server_der = base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(fields[5])
        .unwrap();

    let ch = tokio::time::timeout(
        Duration::from_secs(20),
        tls_channel(addr, &server_der, Some((&der, &key))),
    )
    .await
    .unwrap()
    .unwrap();
    GrpcControllerClient::new(ch)
        .shutdown(Empty {})
        .await
        .unwrap();

    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "", "nothing but the handshake line on stdout");
}
