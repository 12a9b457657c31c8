//! Running a credential plugin (the provider's `exec` block, or a kubeconfig user's
//! `exec`) and reading the `ExecCredential` it prints, as client-go's exec authenticator
//! does (`plugin/pkg/client/auth/exec`, `Authenticator.refreshCredsLocked`): the
//! command with its arguments and environment, `KUBERNETES_EXEC_INFO` describing the
//! request, never interactive (the provider has no terminal), stderr kept for messages.
//!
//! The provider runs the plugin itself rather than through kube-rs, whose client runs
//! it three times while being built and then on every request once the credential is
//! within 60 s of its expiry, and never after the server refuses the credential (see
//! `credential_cache`).

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::SystemTime;

use k8s_openapi::jiff::Timestamp;
use kube::config::ExecConfig;
use serde::{Deserialize, Serialize};

use super::credential::Credential;

/// A plugin as it will be run.
#[derive(Clone)]
pub(crate) struct CredentialPlugin {
    command: String,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    drop_env: Vec<String>,
    install_hint: Option<String>,
    /// `KUBERNETES_EXEC_INFO`: the ExecCredential the plugin is given.
    exec_info: String,
}

// Arguments and environment may carry secrets (`--token`, AWS keys).
impl std::fmt::Debug for CredentialPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialPlugin")
            .field("command", &self.command)
            .field("args", &self.args.len())
            .finish_non_exhaustive()
    }
}

/// What the plugin is given in `KUBERNETES_EXEC_INFO` and prints on stdout
/// (client.authentication.k8s.io `ExecCredential`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredential {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    spec: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<ExecCredentialStatus>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredentialStatus {
    #[serde(default)]
    expiration_timestamp: Option<String>,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    client_key_data: Option<String>,
}

/// How a plugin run failed. The text follows the plugin's command line in messages
/// (`the credential plugin \`aws eks get-token\` failed (exit status: 255): ...`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PluginError {
    #[error("has no command")]
    MissingCommand,
    #[error(
        "could not be started: the command was not found ({0}); install it, or give its full path in `command`{hint}",
        hint = .1.as_deref().map(|h| format!(" ({h})")).unwrap_or_default()
    )]
    NotFound(std::io::Error, Option<String>),
    #[error("could not be started: {0}")]
    Start(std::io::Error),
    #[error("{}", describe_exit(.status, .stderr))]
    Failed {
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("did not print an ExecCredential (client.authentication.k8s.io) on stdout: {0}")]
    Parse(String),
    #[error("printed an ExecCredential without `status` (no token or certificate)")]
    NoStatus,
    #[error("printed an ExecCredential with neither a token nor a client certificate and key")]
    NoCredential,
    #[error("printed only one of `clientCertificateData` and `clientKeyData`; both are needed")]
    HalfCertificate,
    #[error(
        "printed an ExecCredential whose `status.expirationTimestamp` is not an RFC 3339 time: {0}"
    )]
    MalformedExpiry(String),
}

fn describe_exit(status: &std::process::ExitStatus, stderr: &str) -> String {
    match stderr.trim() {
        "" => format!("failed ({status}) and wrote nothing on stderr"),
        text => format!("failed ({status}): {text}"),
    }
}

impl CredentialPlugin {
    /// The plugin `exec` describes. `api_version` is checked with the other settings.
    pub(crate) fn new(exec: &ExecConfig) -> CredentialPlugin {
        let env = exec
            .env
            .iter()
            .flatten()
            .filter_map(|pair| Some((pair.get("name")?.clone(), pair.get("value")?.clone())))
            .collect();
        let mut spec = serde_json::json!({ "interactive": false });
        if exec.provide_cluster_info
            && let Some(cluster) = &exec.cluster
            && let Ok(cluster) = serde_json::to_value(cluster)
        {
            spec["cluster"] = cluster;
        }
        let info = ExecCredential {
            api_version: exec.api_version.clone(),
            kind: Some("ExecCredential".into()),
            spec: Some(spec),
            status: None,
        };
        CredentialPlugin {
            command: exec.command.clone().unwrap_or_default(),
            args: exec.args.clone().unwrap_or_default(),
            env,
            drop_env: exec.drop_env.clone().unwrap_or_default(),
            install_hint: exec.install_hint.clone(),
            exec_info: serde_json::to_string(&info).unwrap_or_default(),
        }
    }

    /// The command line, for messages (`aws eks get-token --cluster-name prod`).
    pub(crate) fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Runs the plugin once and reads its credential.
    pub(crate) async fn run(&self) -> Result<Credential, PluginError> {
        if self.command.is_empty() {
            return Err(PluginError::MissingCommand);
        }
        let mut command = tokio::process::Command::new(&self.command);
        command
            .args(&self.args)
            .envs(&self.env)
            .env("KUBERNETES_EXEC_INFO", &self.exec_info)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A request that gave up waiting (a cancelled run) leaves no plugin behind.
            .kill_on_drop(true);
        for name in &self.drop_env {
            command.env_remove(name);
        }
        let out = command.output().await.map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => PluginError::NotFound(e, self.install_hint.clone()),
            _ => PluginError::Start(e),
        })?;
        if !out.status.success() {
            return Err(PluginError::Failed {
                status: out.status,
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        parse(&out.stdout, SystemTime::now())
    }
}

/// The credential in a plugin's stdout, received at `now`.
fn parse(stdout: &[u8], now: SystemTime) -> Result<Credential, PluginError> {
    let text = String::from_utf8_lossy(stdout);
    // Plugins print JSON; client-go (and kube-rs) also read YAML, which the loader reads
    // with JSON as a subset.
    let value = kudo_yaml::to_json(&text).map_err(|e| PluginError::Parse(e.to_string()))?;
    let credential: ExecCredential =
        serde_json::from_value(value).map_err(|e| PluginError::Parse(e.to_string()))?;
    let status = credential.status.ok_or(PluginError::NoStatus)?;
    let non_empty = |v: Option<String>| v.filter(|s| !s.is_empty());
    let token = non_empty(status.token);
    let certificate = match (
        non_empty(status.client_certificate_data),
        non_empty(status.client_key_data),
    ) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err(PluginError::HalfCertificate),
    };
    if token.is_none() && certificate.is_none() {
        return Err(PluginError::NoCredential);
    }
    let expires = non_empty(status.expiration_timestamp)
        .map(|t| {
            t.parse::<Timestamp>()
                .map(SystemTime::from)
                .map_err(|e| PluginError::MalformedExpiry(format!("{t:?} ({e})")))
        })
        .transpose()?;
    Ok(Credential::new(token, certificate, expires, now))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000)
    }

    #[test]
    fn a_token_and_its_expiry_are_read() {
        let c = parse(
            br#"{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                 "status": {"token": "t", "expirationTimestamp": "2027-01-15T08:00:15Z"}}"#,
            now(),
        )
        .expect("a credential");
        assert_eq!(c.token(), Some("t"));
        assert_eq!(
            c.expires(),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_015))
        );
        let yaml = parse(b"status:\n  token: abc\n", now()).expect("YAML too");
        assert_eq!((yaml.token(), yaml.expires()), (Some("abc"), None));
    }

    #[test]
    fn what_is_not_a_credential_is_told() {
        let err = |text: &str| parse(text.as_bytes(), now()).unwrap_err().to_string();
        assert!(err(r#"{"kind": "ExecCredential"}"#).contains("without `status`"));
        assert!(err(r#"{"status": {}}"#).contains("neither a token"));
        assert!(err(r#"{"status": {"clientKeyData": "k"}}"#).contains("only one of"));
        assert!(
            err(r#"{"status": {"token": "t", "expirationTimestamp": "soon"}}"#)
                .contains("not an RFC 3339 time: \"soon\"")
        );
        assert!(err("[1, 2").contains("did not print an ExecCredential"));
    }

    #[tokio::test]
    async fn a_failed_run_is_told_by_its_exit_status_and_stderr() {
        let exec = |command: &str, args: &[&str]| ExecConfig {
            api_version: Some("client.authentication.k8s.io/v1".into()),
            command: Some(command.into()),
            args: Some(args.iter().map(|a| a.to_string()).collect()),
            env: None,
            drop_env: None,
            install_hint: Some("brew install aws".into()),
            interactive_mode: None,
            provide_cluster_info: false,
            cluster: None,
            other: Default::default(),
        };
        let failing = CredentialPlugin::new(&exec(
            "sh",
            &["-c", "echo 'token expired: run aws sso login' >&2; exit 3"],
        ));
        assert_eq!(
            failing.run().await.unwrap_err().to_string(),
            "failed (exit status: 3): token expired: run aws sso login"
        );
        let missing = CredentialPlugin::new(&exec("/nonexistent/kudo-test-plugin", &["get"]));
        let text = missing.run().await.unwrap_err().to_string();
        assert!(text.contains("the command was not found"), "{text}");
        assert!(text.ends_with("(brew install aws)"), "{text}");
        assert_eq!(missing.command_line(), "/nonexistent/kudo-test-plugin get");
        // The plugin is told it cannot prompt.
        let info = CredentialPlugin::new(&exec(
            "sh",
            &[
                "-c",
                r#"case "$KUBERNETES_EXEC_INFO" in *'"interactive":false'*) echo '{"status": {"token": "ok"}}';; *) exit 1;; esac"#,
            ],
        ));
        assert_eq!(info.run().await.expect("runs").token(), Some("ok"));
    }
}
