//! go-plugin's start-up contract: the magic cookie in the environment and the
//! handshake line on stdout.

use std::net::SocketAddr;

use base64::Engine as _;

/// Environment variable Terraform sets when it launches a provider.
pub const MAGIC_COOKIE_KEY: &str = "TF_PLUGIN_MAGIC_COOKIE";
/// Its value (Terraform's plugin handshake config).
pub const MAGIC_COOKIE_VALUE: &str =
    "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";

/// go-plugin's core protocol version, first field of the handshake line.
const CORE_PROTOCOL_VERSION: u32 = 1;
/// Terraform plugin protocol major version we speak.
const APP_PROTOCOL_VERSION: u32 = 6;

/// The binary was run without Terraform's magic cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not started by Terraform (no {MAGIC_COOKIE_KEY} in the environment)")]
pub struct NotStartedByTerraform;

impl NotStartedByTerraform {
    /// What a person who runs the binary by hand reads on stderr.
    pub const MESSAGE: &'static str = "This program is a Terraform provider plugin. It is meant to be started by \
Terraform or OpenTofu, not run by hand.\nDeclare the provider in a Terraform configuration and run \
`terraform init` and `terraform plan`; Terraform will start this plugin itself.";
}

/// True when the magic cookie Terraform sets is present and correct.
pub fn started_by_terraform() -> bool {
    std::env::var(MAGIC_COOKIE_KEY).is_ok_and(|v| v == MAGIC_COOKIE_VALUE)
}

/// `1|6|tcp|ADDR|grpc|CERT`: core version, app protocol, network, address,
/// protocol, and (AutoMTLS) the server certificate DER in standard base64
/// without padding, which is how go-plugin's client decodes it.
pub fn handshake_line(address: SocketAddr, server_cert_der: Option<&[u8]>) -> String {
    let mut line = format!("{CORE_PROTOCOL_VERSION}|{APP_PROTOCOL_VERSION}|tcp|{address}|grpc");
    if let Some(der) = server_cert_der {
        line.push('|');
        line.push_str(&base64::engine::general_purpose::STANDARD_NO_PAD.encode(der));
    }
    line
}
