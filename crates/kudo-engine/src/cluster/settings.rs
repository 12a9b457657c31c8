//! Provider connection settings -> kube `Config`, following the hashicorp/kubernetes
//! provider: a kubeconfig is read only when one is named (never `~/.kube/config` by
//! default), and explicit attributes override what the kubeconfig says.

use std::path::PathBuf;

use base64::Engine as _;
use kube::Config;
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};

use super::ClusterError;

/// How to reach the cluster. Mirrors the provider block attributes.
#[derive(Clone, Default)]
pub struct ConnectionSettings {
    pub config_path: Option<String>,
    pub config_context: Option<String>,
    pub host: Option<String>,
    pub token: Option<String>,
    /// PEM.
    pub cluster_ca_certificate: Option<String>,
    /// PEM.
    pub client_certificate: Option<String>,
    /// PEM.
    pub client_key: Option<String>,
    pub insecure: bool,
    /// How long one request may wait for the API server (connecting, the TLS handshake,
    /// each answer), and the first contact in all; `None`: [`DEFAULT_REQUEST_TIMEOUT`].
    pub request_timeout: Option<std::time::Duration>,
    /// How many requests may wait for the API server at once (the provider's
    /// `max_requests_in_flight`); `None`: [`DEFAULT_MAX_REQUESTS_IN_FLIGHT`].
    pub max_requests_in_flight: Option<usize>,
}

/// Requests in flight at once by default: enough that a cluster 50 ms away answers a
/// 1,000-object refresh in a few round trips, few enough that a small API server is
/// not flooded (kubectl's own client allows bursts of 300 requests).
pub const DEFAULT_MAX_REQUESTS_IN_FLIGHT: usize = 16;

/// A request the API server has not answered in this long is a hung server, not a slow
/// one: a 1,000-object list answers in well under a second.
pub const DEFAULT_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

impl ConnectionSettings {
    /// The per-request timeout in force.
    pub fn request_timeout(&self) -> std::time::Duration {
        self.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT)
    }

    /// The bound on concurrent requests in force (at least one).
    pub fn max_requests_in_flight(&self) -> usize {
        self.max_requests_in_flight
            .unwrap_or(DEFAULT_MAX_REQUESTS_IN_FLIGHT)
            .max(1)
    }
}

// Secrets must never reach logs (TF_LOG=DEBUG dumps provider state).
impl std::fmt::Debug for ConnectionSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redact = |v: &Option<String>| v.as_ref().map(|_| "<redacted>");
        f.debug_struct("ConnectionSettings")
            .field("config_path", &self.config_path)
            .field("config_context", &self.config_context)
            .field("host", &self.host)
            .field("token", &redact(&self.token))
            .field(
                "cluster_ca_certificate",
                &self.cluster_ca_certificate.is_some(),
            )
            .field("client_certificate", &self.client_certificate.is_some())
            .field("client_key", &redact(&self.client_key))
            .field("insecure", &self.insecure)
            .field("request_timeout", &self.request_timeout)
            .field("max_requests_in_flight", &self.max_requests_in_flight)
            .finish()
    }
}

/// Which kubeconfig file to read and which setting named it (for error messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KubeconfigSource {
    pub path: PathBuf,
    pub setting: &'static str,
}

fn non_empty(v: Option<&str>) -> Option<&str> {
    v.map(str::trim).filter(|s| !s.is_empty())
}

fn expand_home(path: &str, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match (path.strip_prefix("~/"), env("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// `config_path`, else `KUBE_CONFIG_PATH`, else the first entry of `KUBECONFIG`.
pub(crate) fn kubeconfig_source(
    s: &ConnectionSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<KubeconfigSource> {
    if let Some(p) = non_empty(s.config_path.as_deref()) {
        return Some(KubeconfigSource {
            path: expand_home(p, env),
            setting: "config_path",
        });
    }
    if let Some(p) = env("KUBE_CONFIG_PATH")
        .as_deref()
        .and_then(|v| non_empty(Some(v)))
    {
        return Some(KubeconfigSource {
            path: expand_home(p, env),
            setting: "KUBE_CONFIG_PATH",
        });
    }
    let kubeconfig = env("KUBECONFIG")?;
    let first = std::env::split_paths(&kubeconfig).find(|p| !p.as_os_str().is_empty())?;
    let first = first.to_string_lossy().into_owned();
    Some(KubeconfigSource {
        path: expand_home(&first, env),
        setting: "KUBECONFIG",
    })
}

fn parse_part<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    setting: &'static str,
) -> Result<T, ClusterError> {
    serde_json::from_value(value).map_err(|e| ClusterError::Settings {
        setting,
        message: format!("cannot be used: {e}"),
    })
}

fn b64(pem: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(pem.as_bytes())
}

fn check_pem(value: &str, setting: &'static str) -> Result<(), ClusterError> {
    if value.contains("-----BEGIN ") {
        Ok(())
    } else {
        Err(ClusterError::Settings {
            setting,
            message:
                "expected PEM text starting with -----BEGIN (use file(\"...\") in HCL to read a \
                      .pem file)"
                    .into(),
        })
    }
}

/// Applies explicit attributes on top of the context that will be used.
fn apply_overrides(
    kc: &mut Kubeconfig,
    context_name: &str,
    s: &ConnectionSettings,
) -> Result<(), ClusterError> {
    let context = kc
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.clone())
        .ok_or_else(|| ClusterError::Settings {
            setting: "config_context",
            message: format!("context {context_name:?} is not in the kubeconfig"),
        })?;

    if let Some(cluster) = kc
        .clusters
        .iter_mut()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_mut())
    {
        if let Some(host) = non_empty(s.host.as_deref()) {
            cluster.server = Some(host.to_string());
        }
        if let Some(ca) = non_empty(s.cluster_ca_certificate.as_deref()) {
            check_pem(ca, "cluster_ca_certificate")?;
            cluster.certificate_authority = None;
            cluster.certificate_authority_data = Some(b64(ca));
        }
        if s.insecure {
            cluster.insecure_skip_tls_verify = Some(true);
            cluster.certificate_authority = None;
            cluster.certificate_authority_data = None;
        }
    }

    let user_name = context.user.clone().unwrap_or_default();
    if let Some(user) = kc
        .auth_infos
        .iter_mut()
        .find(|u| u.name == user_name)
        .and_then(|u| u.auth_info.as_mut())
    {
        if let Some(token) = non_empty(s.token.as_deref()) {
            let parsed: AuthInfo = parse_part(serde_json::json!({ "token": token }), "token")?;
            user.token = parsed.token;
            user.token_file = None;
            user.exec = None;
            user.auth_provider = None;
        }
        match (
            non_empty(s.client_certificate.as_deref()),
            non_empty(s.client_key.as_deref()),
        ) {
            (Some(cert), Some(key)) => {
                check_pem(cert, "client_certificate")?;
                check_pem(key, "client_key")?;
                let parsed: AuthInfo = parse_part(
                    serde_json::json!({
                        "client-certificate-data": b64(cert),
                        "client-key-data": b64(key),
                    }),
                    "client_key",
                )?;
                user.client_certificate = None;
                user.client_key = None;
                user.client_certificate_data = parsed.client_certificate_data;
                user.client_key_data = parsed.client_key_data;
            }
            (Some(_), None) => {
                return Err(ClusterError::Settings {
                    setting: "client_key",
                    message: "client_certificate is set, so client_key is needed too".into(),
                });
            }
            (None, Some(_)) => {
                return Err(ClusterError::Settings {
                    setting: "client_certificate",
                    message: "client_key is set, so client_certificate is needed too".into(),
                });
            }
            (None, None) => {}
        }
    }
    Ok(())
}

/// Watches wait for events for up to a minute between answers (their `timeoutSeconds`
/// is below this), so reads of a connection are never cut shorter than that.
const WATCH_READ_FLOOR: std::time::Duration = std::time::Duration::from_secs(60);

const EXPLICIT: &str = "terraform-provider-kudo";

/// An in-memory kubeconfig with one empty context; `apply_overrides` fills it in.
fn explicit_kubeconfig() -> Result<Kubeconfig, ClusterError> {
    parse_part(
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{ "name": EXPLICIT, "cluster": {} }],
            "users": [{ "name": EXPLICIT, "user": {} }],
            "contexts": [{ "name": EXPLICIT, "context": { "cluster": EXPLICIT, "user": EXPLICIT } }],
            "current-context": EXPLICIT,
        }),
        "host",
    )
}

/// Builds the client configuration. `env` is injected so tests need not touch the
/// process environment.
pub(crate) async fn build_config(
    s: &ConnectionSettings,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Config, ClusterError> {
    let source = kubeconfig_source(s, env);
    let mut kc = match &source {
        Some(src) => Kubeconfig::read_from(&src.path).map_err(|e| ClusterError::Settings {
            setting: src.setting,
            message: format!("cannot read kubeconfig {}: {e}", src.path.display()),
        })?,
        None if non_empty(s.host.as_deref()).is_some() => explicit_kubeconfig()?,
        None => {
            return Err(ClusterError::Settings {
                setting: "host",
                message: "no cluster configured: set `config_path` (or the KUBE_CONFIG_PATH / \
                          KUBECONFIG environment variable), or `host` with credentials"
                    .into(),
            });
        }
    };

    let context_name = match non_empty(s.config_context.as_deref()) {
        Some(c) => c.to_string(),
        None => kc
            .current_context
            .clone()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| ClusterError::Settings {
                setting: "config_context",
                message: "the kubeconfig has no current-context; name one with config_context"
                    .into(),
            })?,
    };
    if !kc.contexts.iter().any(|c| c.name == context_name) {
        let known: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
        return Err(ClusterError::Settings {
            setting: "config_context",
            message: format!(
                "context {context_name:?} is not in the kubeconfig (it has {known:?})"
            ),
        });
    }
    apply_overrides(&mut kc, &context_name, s)?;

    let setting = source.as_ref().map(|s| s.setting).unwrap_or("host");
    let options = KubeConfigOptions {
        context: Some(context_name),
        ..Default::default()
    };
    let mut config = Config::from_custom_kubeconfig(kc, &options)
        .await
        .map_err(|e| ClusterError::Settings {
            setting,
            message: e.to_string(),
        })?;
    // One retry policy (ours, in `retry`), not two stacked ones.
    config.default_retry = false;
    // Watches end on their own within their timeoutSeconds, so a request that gets no
    // answer for this long is a hung server; the error is then retried like any broken
    // connection. Connecting and sending are bounded the same way.
    let timeout = s.request_timeout();
    config.read_timeout = Some(timeout.max(WATCH_READ_FLOOR));
    config.connect_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn config_path_wins_over_environment() {
        let s = ConnectionSettings {
            config_path: Some("/a".into()),
            ..Default::default()
        };
        let env = env_of(&[("KUBE_CONFIG_PATH", "/b"), ("KUBECONFIG", "/c")]);
        assert_eq!(
            kubeconfig_source(&s, &env),
            Some(KubeconfigSource {
                path: "/a".into(),
                setting: "config_path"
            })
        );
    }

    #[test]
    fn kubeconfig_env_uses_first_path_and_home_is_expanded() {
        let env = env_of(&[("KUBECONFIG", "~/one:/two"), ("HOME", "/home/u")]);
        assert_eq!(
            kubeconfig_source(&ConnectionSettings::default(), &env),
            Some(KubeconfigSource {
                path: "/home/u/one".into(),
                setting: "KUBECONFIG"
            })
        );
        let env = env_of(&[("KUBE_CONFIG_PATH", "/b"), ("KUBECONFIG", "/c")]);
        assert_eq!(
            kubeconfig_source(&ConnectionSettings::default(), &env).map(|s| s.setting),
            Some("KUBE_CONFIG_PATH")
        );
    }

    #[test]
    fn nothing_configured_means_no_default_kubeconfig() {
        assert_eq!(
            kubeconfig_source(&ConnectionSettings::default(), &env_of(&[])),
            None
        );
    }

    #[tokio::test]
    async fn no_settings_is_an_error_naming_host() {
        let err = build_config(&ConnectionSettings::default(), &env_of(&[]))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                ClusterError::Settings {
                    setting: "host",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[tokio::test]
    async fn explicit_host_and_token() {
        let s = ConnectionSettings {
            host: Some("https://127.0.0.1:6443".into()),
            token: Some("abc".into()),
            insecure: true,
            ..Default::default()
        };
        let c = build_config(&s, &env_of(&[])).await.unwrap();
        assert_eq!(c.cluster_url.to_string(), "https://127.0.0.1:6443/");
        assert!(c.accept_invalid_certs);
        assert!(c.auth_info.token.is_some());
    }

    #[tokio::test]
    async fn missing_file_names_the_setting() {
        let s = ConnectionSettings {
            config_path: Some("/nonexistent/kc".into()),
            ..Default::default()
        };
        let err = build_config(&s, &env_of(&[])).await.unwrap_err();
        assert!(
            matches!(
                err,
                ClusterError::Settings {
                    setting: "config_path",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("/nonexistent/kc"));
    }

    #[tokio::test]
    async fn unknown_context_and_half_client_cert_are_errors() {
        let dir = std::env::temp_dir().join(format!("kudo-engine-kc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1\ncontexts:\n- name: a\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: t\n",
        )
        .unwrap();
        let p = path.to_string_lossy().into_owned();
        let s = ConnectionSettings {
            config_path: Some(p.clone()),
            config_context: Some("nope".into()),
            ..Default::default()
        };
        let err = build_config(&s, &env_of(&[])).await.unwrap_err();
        assert!(
            matches!(
                err,
                ClusterError::Settings {
                    setting: "config_context",
                    ..
                }
            ),
            "{err}"
        );

        let s = ConnectionSettings {
            config_path: Some(p.clone()),
            client_certificate: Some("-----BEGIN CERTIFICATE-----\n".into()),
            ..Default::default()
        };
        let err = build_config(&s, &env_of(&[])).await.unwrap_err();
        assert!(
            matches!(
                err,
                ClusterError::Settings {
                    setting: "client_key",
                    ..
                }
            ),
            "{err}"
        );

        let s = ConnectionSettings {
            config_path: Some(p),
            host: Some("https://10.9.9.9:443".into()),
            ..Default::default()
        };
        let c = build_config(&s, &env_of(&[])).await.unwrap();
        assert_eq!(c.cluster_url.host(), Some("10.9.9.9"));
    }
}
