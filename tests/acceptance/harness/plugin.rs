//! The provider binary driven over the plugin protocol directly, as Terraform drives
//! it: for what a newer Terraform than the one installed here sends (Terraform 1.16's
//! `planned_private` on the second plan of a change, protocol 6.11).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use tfplugin::Value;
use tfplugin::proto::tfplugin6 as pb;
use tfplugin::proto::tfplugin6::provider_client::ProviderClient;
use tonic::transport::Channel;

use super::provider_binary;

/// go-plugin's handshake cookie, as Terraform sets it.
const MAGIC_COOKIE: &str = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";

/// One provider process serving in a working folder (plain TCP: Terraform without
/// AutoMTLS), stopped when dropped.
pub struct Plugin {
    child: Child,
    url: String,
}

impl Plugin {
    /// Starts the provider in `dir` with `env` on top of the test's own environment, and
    /// reads its handshake line. Its log goes to `dir/plugin.log`.
    pub fn start(dir: &Path, env: &BTreeMap<String, OsString>) -> Plugin {
        let log = std::fs::File::create(dir.join("plugin.log")).expect("plugin log");
        let mut child = Command::new(provider_binary())
            .current_dir(dir)
            .envs(env)
            .env("TF_PLUGIN_MAGIC_COOKIE", MAGIC_COOKIE)
            .env("PLUGIN_PROTOCOL_VERSIONS", "6")
            .env_remove("PLUGIN_CLIENT_CERT")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start the provider");
        let stdout = child.stdout.take().expect("provider stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("handshake line");
        let addr = line.split('|').nth(3).unwrap_or_default().to_string();
        assert!(
            line.starts_with("1|6|tcp|") && !addr.is_empty(),
            "unexpected handshake {line:?}"
        );
        Plugin {
            child,
            url: format!("http://{addr}"),
        }
    }

    /// A configured client (`ConfigureProvider` with `config`, as Terraform `version`).
    pub async fn configured(&self, config: &Value, version: &str) -> ProviderClient<Channel> {
        let mut client = ProviderClient::connect(self.url.clone())
            .await
            .expect("connect to the provider");
        let ty = terraform_provider_kudo::provider::schema::provider().value_type();
        let configured = client
            .configure_provider(pb::configure_provider::Request {
                terraform_version: version.to_string(),
                config: dynamic(config, &ty),
                client_capabilities: Some(capabilities()),
            })
            .await
            .expect("ConfigureProvider")
            .into_inner();
        assert!(
            configured.diagnostics.is_empty(),
            "{:?}",
            configured.diagnostics
        );
        client
    }
}

impl Drop for Plugin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What Terraform 1.16 says it supports.
pub fn capabilities() -> pb::ClientCapabilities {
    pb::ClientCapabilities {
        deferral_allowed: false,
        write_only_attributes_allowed: true,
        store_planned_private: true,
        computed_blocks_allowed: true,
    }
}

/// `value` encoded against `ty`.
pub fn dynamic(value: &Value, ty: &tfplugin::Type) -> Option<pb::DynamicValue> {
    Some(pb::DynamicValue {
        msgpack: value.to_msgpack(ty).expect("value fits its type"),
        json: Vec::new(),
    })
}

/// Error diagnostics as text (`summary: detail`), empty when there are none.
pub fn errors(diagnostics: &[pb::Diagnostic]) -> String {
    diagnostics
        .iter()
        .filter(|d| d.severity == pb::diagnostic::Severity::Error as i32)
        .map(|d| format!("{}: {}", d.summary, d.detail))
        .collect::<Vec<_>>()
        .join("\n")
}
