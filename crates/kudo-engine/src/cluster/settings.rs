//! Provider connection settings -> kube `Config`, following the hashicorp/kubernetes
//! provider: a kubeconfig is read only when one is named (never `~/.kube/config` by
//! default), and explicit attributes override what the kubeconfig says.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use base64::Engine as _;
use kube::Config;
use kube::config::{AuthInfo, ExecConfig, ExecInteractiveMode, KubeConfigOptions, Kubeconfig};

use super::ClusterError;

/// The API versions of `ExecCredential` a credential plugin may speak
/// (client.authentication.k8s.io; v1alpha1 was removed in Kubernetes 1.24).
pub const EXEC_API_VERSIONS: [&str; 2] = [
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
];

/// A credential plugin (the provider's `exec` block): a command that prints an
/// `ExecCredential`, run when connecting, again shortly before the credential it
/// returned expires (`status.expirationTimestamp`), and again when the API server
/// refuses that credential (see `credential_cache`).
#[derive(Clone, Default, PartialEq)]
pub struct ExecSettings {
    /// One of [`EXEC_API_VERSIONS`].
    pub api_version: String,
    pub command: String,
    pub args: Vec<String>,
    /// Added to the provider's environment for the command.
    pub env: BTreeMap<String, String>,
}

impl ExecSettings {
    /// As a kubeconfig user's `exec`: never interactive (the provider has no
    /// terminal), so that the plugin's stderr is captured for error messages.
    fn to_kube(&self) -> ExecConfig {
        let env = self
            .env
            .iter()
            .map(|(name, value)| {
                HashMap::from([
                    ("name".to_string(), name.clone()),
                    ("value".to_string(), value.clone()),
                ])
            })
            .collect::<Vec<_>>();
        ExecConfig {
            api_version: Some(self.api_version.clone()),
            command: Some(self.command.clone()),
            args: Some(self.args.clone()),
            env: (!env.is_empty()).then_some(env),
            drop_env: None,
            install_hint: None,
            interactive_mode: Some(ExecInteractiveMode::Never),
            provide_cluster_info: false,
            cluster: None,
            other: Default::default(),
        }
    }
}

// Arguments and environment may carry secrets (`--token`, AWS keys).
impl std::fmt::Debug for ExecSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecSettings")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field("args", &self.args.len())
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// How to reach the cluster. Mirrors the provider block attributes.
#[derive(Clone, Default)]
pub struct ConnectionSettings {
    pub config_path: Option<String>,
    /// Several kubeconfig files, merged as `KUBECONFIG` merges them (the first to set
    /// a value wins); not together with `config_path`.
    pub config_paths: Vec<String>,
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
    /// The server name the API server's certificate is checked against (and sent in
    /// SNI) instead of `host`'s.
    pub tls_server_name: Option<String>,
    /// An `http://`, `https://` or `socks5://` proxy every request goes through.
    pub proxy_url: Option<String>,
    /// A credential plugin instead of `token` or a client certificate.
    pub exec: Option<ExecSettings>,
    /// How long one request may wait for the API server (connecting, the TLS handshake,
    /// each answer), and the first contact in all; `None`: [`DEFAULT_REQUEST_TIMEOUT`].
    pub request_timeout: Option<std::time::Duration>,
    /// How many requests may wait for the API server at once (the provider's
    /// `max_requests_in_flight`); `None`: [`DEFAULT_MAX_REQUESTS_IN_FLIGHT`].
    pub max_requests_in_flight: Option<usize>,
    /// A directory where discovery (which resource serves each kind) is kept for other
    /// processes talking to the same API server, one file per server; `None`: each
    /// process discovers for itself. Not a provider setting: the provider names a
    /// folder of Terraform's data directory, shared by the processes of one run.
    pub discovery_cache_dir: Option<PathBuf>,
    /// A directory where a plan keeps its dry-run answers, sealed, for a later plan
    /// asking the same server the same question (`terraform apply`'s final plan): see
    /// `dry_run_cache`. `None`: each plan dry-runs for itself. Not a provider setting,
    /// like `discovery_cache_dir`.
    pub dry_run_cache_dir: Option<PathBuf>,
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

    /// Whether the provider block itself names the cluster or how to reach it (any
    /// connection attribute set), rather than leaving it all to the environment.
    pub fn names_connection(&self) -> bool {
        let set = |v: &Option<String>| non_empty(v.as_deref()).is_some();
        [
            &self.config_path,
            &self.config_context,
            &self.host,
            &self.token,
            &self.cluster_ca_certificate,
            &self.client_certificate,
            &self.client_key,
            &self.tls_server_name,
            &self.proxy_url,
        ]
        .into_iter()
        .any(set)
            || !self.config_paths.is_empty()
            || self.insecure
            || self.exec.is_some()
    }

    /// Checks, without contacting the API server, that these settings make a client
    /// configuration: the kubeconfig files read, the context exists, PEM texts, proxy
    /// and exec are usable. The same check [`Cluster::connect`] starts with, so a
    /// mistake found here is found before any resource needs the cluster, once.
    ///
    /// Only when the provider block names a connection ([`Self::names_connection`]): a
    /// configuration that leaves it all to the environment may need no cluster at all
    /// (package data sources, functions), and is told when something does need one.
    pub async fn check(&self) -> Result<(), ClusterError> {
        if !self.names_connection() {
            return Ok(());
        }
        let env = |k: &str| std::env::var(k).ok();
        build_config(self, &env).await.map(|_| ())
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
            .field("config_paths", &self.config_paths)
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
            .field("tls_server_name", &self.tls_server_name)
            .field("proxy_url", &self.proxy_url.as_ref().map(|_| "<set>"))
            .field("exec", &self.exec)
            .field("request_timeout", &self.request_timeout)
            .field("max_requests_in_flight", &self.max_requests_in_flight)
            .field("discovery_cache_dir", &self.discovery_cache_dir)
            .field("dry_run_cache_dir", &self.dry_run_cache_dir)
            .finish()
    }
}

/// Which kubeconfig files to read (merged, the first to set a value winning) and
/// which setting named them (for error messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KubeconfigSource {
    pub paths: Vec<PathBuf>,
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

/// The entries of a path list (`:`-separated on Unix), empty ones left out.
fn path_list(list: &str) -> Vec<String> {
    std::env::split_paths(list)
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

/// The environment variables a kubeconfig may be named by: a [`ClusterError::Settings`]
/// naming one of them is about the environment, not an attribute of the provider block.
pub const KUBECONFIG_VARIABLES: [&str; 3] = ["KUBE_CONFIG_PATH", "KUBE_CONFIG_PATHS", "KUBECONFIG"];

/// `config_path`, else `config_paths`, else `KUBE_CONFIG_PATH`, else
/// `KUBE_CONFIG_PATHS`, else the first entry of `KUBECONFIG`.
pub(crate) fn kubeconfig_source(
    s: &ConnectionSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<KubeconfigSource> {
    let source = |paths: Vec<String>, setting| {
        (!paths.is_empty()).then(|| KubeconfigSource {
            paths: paths.iter().map(|p| expand_home(p, env)).collect(),
            setting,
        })
    };
    let one = |v: Option<&str>| {
        non_empty(v)
            .map(|p| vec![p.to_string()])
            .unwrap_or_default()
    };
    let listed: Vec<String> = s
        .config_paths
        .iter()
        .filter_map(|p| non_empty(Some(p)).map(str::to_string))
        .collect();
    source(one(s.config_path.as_deref()), "config_path")
        .or_else(|| source(listed, "config_paths"))
        .or_else(|| source(one(env("KUBE_CONFIG_PATH").as_deref()), "KUBE_CONFIG_PATH"))
        .or_else(|| {
            let paths = env("KUBE_CONFIG_PATHS").map(|v| path_list(&v));
            source(paths.unwrap_or_default(), "KUBE_CONFIG_PATHS")
        })
        .or_else(|| {
            let first = env("KUBECONFIG").and_then(|v| path_list(&v).into_iter().next());
            source(first.into_iter().collect(), "KUBECONFIG")
        })
}

/// Every file of `source`, merged as client-go merges `KUBECONFIG`: the first file to
/// name a cluster, user or context (or to set `current-context`) wins.
fn read_kubeconfigs(source: &KubeconfigSource) -> Result<Kubeconfig, ClusterError> {
    let mut merged: Option<Kubeconfig> = None;
    for path in &source.paths {
        let next = Kubeconfig::read_from(path).map_err(|e| ClusterError::Settings {
            setting: source.setting,
            message: format!("cannot read kubeconfig {}: {e}", path.display()),
        })?;
        merged = Some(match merged {
            None => next,
            Some(first) => first.merge(next).map_err(|e| ClusterError::Settings {
                setting: source.setting,
                message: format!("cannot merge kubeconfig {}: {e}", path.display()),
            })?,
        });
    }
    merged.ok_or_else(|| ClusterError::Settings {
        setting: source.setting,
        message: "names no kubeconfig file".into(),
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
        if let Some(name) = non_empty(s.tls_server_name.as_deref()) {
            cluster.tls_server_name = Some(name.to_string());
        }
        if let Some(proxy) = non_empty(s.proxy_url.as_deref()) {
            check_proxy(proxy)?;
            cluster.proxy_url = Some(proxy.to_string());
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
        if let Some(exec) = &s.exec {
            check_exec(exec)?;
            // kube-rs asks a token before a plugin: the plugin replaces them.
            user.exec = Some(exec.to_kube());
            user.token = None;
            user.token_file = None;
            user.auth_provider = None;
        }
        // A kubeconfig user's plugin runs as the provider block's does: the provider
        // has no terminal, and the plugin's stderr is wanted for error messages.
        if let Some(exec) = user.exec.as_mut() {
            exec.interactive_mode = Some(ExecInteractiveMode::Never);
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

/// A proxy kube-rs can use: `http://`, `https://` or `socks5://` with a host.
fn check_proxy(url: &str) -> Result<(), ClusterError> {
    let host = match url.split_once("://") {
        Some(("http" | "https" | "socks5", rest)) => rest.split(['/', '?']).next(),
        _ => None,
    };
    match host.filter(|h| !h.is_empty()) {
        Some(_) => Ok(()),
        None => Err(ClusterError::Settings {
            setting: "proxy_url",
            message: format!(
                "{url:?} is not a proxy URL: write it as http://host:port, https://host:port or socks5://host:port"
            ),
        }),
    }
}

/// What kube-rs would run: a command, and an ExecCredential version it understands.
fn check_exec(exec: &ExecSettings) -> Result<(), ClusterError> {
    match exec.problems().into_iter().next() {
        Some(problem) => Err(ClusterError::Settings {
            setting: "exec",
            message: problem.to_string(),
        }),
        None => Ok(()),
    }
}

/// The kubeconfig setting (or variable) `s` reads its kubeconfig through, `host` when it
/// reads none: what a problem with the kubeconfig's user names.
pub(crate) fn kubeconfig_setting(
    s: &ConnectionSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> &'static str {
    kubeconfig_source(s, env).map_or("host", |source| source.setting)
}

/// Presents the client certificate and key (PEM) a credential plugin printed, as a
/// kubeconfig user's `client-certificate-data` and `client-key-data` would.
pub(crate) fn set_client_certificate(
    auth: &mut AuthInfo,
    cert: &str,
    key: &str,
) -> Result<(), ClusterError> {
    let parsed: AuthInfo = parse_part(
        serde_json::json!({
            "client-certificate-data": b64(cert),
            "client-key-data": b64(key),
        }),
        "exec",
    )?;
    auth.client_certificate = None;
    auth.client_key = None;
    auth.client_certificate_data = parsed.client_certificate_data;
    auth.client_key_data = parsed.client_key_data;
    Ok(())
}

/// The credential plugin a configuration runs, as a command line for messages.
pub(crate) fn exec_command_line(config: &Config) -> Option<String> {
    let exec = config.auth_info.exec.as_ref()?;
    let mut line = vec![exec.command.clone().unwrap_or_default()];
    line.extend(exec.args.iter().flatten().cloned());
    Some(line.join(" "))
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
    if s.config_path
        .as_deref()
        .and_then(|p| non_empty(Some(p)))
        .is_some()
        && !s.config_paths.is_empty()
    {
        return Err(ClusterError::Settings {
            setting: "config_paths",
            message: "`config_path` and `config_paths` name kubeconfigs both; set one of them"
                .into(),
        });
    }
    let source = kubeconfig_source(s, env);
    let mut kc = match &source {
        Some(src) => read_kubeconfigs(src)?,
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
                paths: vec!["/a".into()],
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
                paths: vec!["/home/u/one".into()],
                setting: "KUBECONFIG"
            })
        );
        let env = env_of(&[("KUBE_CONFIG_PATH", "/b"), ("KUBECONFIG", "/c")]);
        assert_eq!(
            kubeconfig_source(&ConnectionSettings::default(), &env).map(|s| s.setting),
            Some("KUBE_CONFIG_PATH")
        );
    }

    // hashicorp/kubernetes' `config_paths` and `KUBE_CONFIG_PATHS`: several files, after
    // `config_path` and before the single-path variable's fallbacks.
    #[test]
    fn config_paths_and_kube_config_paths_name_several_files() {
        let s = ConnectionSettings {
            config_paths: vec!["~/a".into(), "/b".into()],
            ..Default::default()
        };
        let env = env_of(&[("HOME", "/home/u"), ("KUBE_CONFIG_PATHS", "/c:/d")]);
        assert_eq!(
            kubeconfig_source(&s, &env),
            Some(KubeconfigSource {
                paths: vec!["/home/u/a".into(), "/b".into()],
                setting: "config_paths"
            })
        );
        assert_eq!(
            kubeconfig_source(&ConnectionSettings::default(), &env),
            Some(KubeconfigSource {
                paths: vec!["/c".into(), "/d".into()],
                setting: "KUBE_CONFIG_PATHS"
            })
        );
    }

    fn write_kubeconfig(dir: &std::path::Path, name: &str, text: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    // Merged as KUBECONFIG is: the first file's current-context and clusters win; a
    // context only the second file has is found.
    #[tokio::test]
    async fn several_kubeconfigs_merge_the_first_winning() {
        let dir = std::env::temp_dir().join(format!("kudo-engine-kcs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let first = write_kubeconfig(
            &dir,
            "first",
            "apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1\ncontexts:\n- name: a\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: first\n",
        );
        let second = write_kubeconfig(
            &dir,
            "second",
            "apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.9\n- name: d\n  cluster:\n    server: https://10.0.0.2\ncontexts:\n- name: b\n  context:\n    cluster: d\n    user: u\n- name: e\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user:\n    token: second\n",
        );
        let s = ConnectionSettings {
            config_paths: vec![first.clone(), second.clone()],
            ..Default::default()
        };
        let c = build_config(&s, &env_of(&[])).await.unwrap();
        assert_eq!(c.cluster_url.to_string(), "https://10.0.0.1/");
        let url_of = |context: &str| {
            let s = ConnectionSettings {
                config_context: Some(context.into()),
                ..s.clone()
            };
            async move {
                build_config(&s, &env_of(&[]))
                    .await
                    .unwrap()
                    .cluster_url
                    .to_string()
            }
        };
        assert_eq!(url_of("b").await, "https://10.0.0.2/");
        assert_eq!(
            url_of("e").await,
            "https://10.0.0.1/",
            "the first file's cluster c wins"
        );
        let both = ConnectionSettings {
            config_path: Some(first),
            config_paths: vec![second],
            ..Default::default()
        };
        let err = build_config(&both, &env_of(&[])).await.unwrap_err();
        assert!(
            err.to_string().contains("`config_path` and `config_paths`"),
            "{err}"
        );
    }

    // tls_server_name and proxy_url override the cluster's; an exec block replaces the
    // user's credentials and never runs interactively.
    #[tokio::test]
    async fn tls_server_name_proxy_and_exec_override_the_kubeconfig() {
        let s = ConnectionSettings {
            host: Some("https://127.0.0.1:6443".into()),
            tls_server_name: Some("kubernetes.example.com".into()),
            proxy_url: Some("http://proxy.example.com:3128".into()),
            exec: Some(ExecSettings {
                api_version: "client.authentication.k8s.io/v1".into(),
                command: "/bin/true".into(),
                args: vec!["a".into()],
                env: BTreeMap::from([("K".to_string(), "V".to_string())]),
            }),
            ..Default::default()
        };
        let c = build_config(&s, &env_of(&[])).await.unwrap();
        assert_eq!(c.tls_server_name.as_deref(), Some("kubernetes.example.com"));
        assert_eq!(
            c.proxy_url.as_ref().map(|u| u.to_string()),
            Some("http://proxy.example.com:3128/".to_string())
        );
        let exec = c.auth_info.exec.as_ref().expect("exec");
        assert_eq!(exec.command.as_deref(), Some("/bin/true"));
        assert_eq!(exec.interactive_mode, Some(ExecInteractiveMode::Never));
        assert_eq!(exec_command_line(&c).as_deref(), Some("/bin/true a"));
        assert!(c.auth_info.token.is_none());

        let bad = |f: fn(&mut ConnectionSettings)| {
            let mut s = s.clone();
            f(&mut s);
            s
        };
        for (settings, setting, words) in [
            (
                bad(|s| s.proxy_url = Some("ftp://x".into())),
                "proxy_url",
                "http://host:port",
            ),
            (
                bad(|s| {
                    if let Some(e) = s.exec.as_mut() {
                        e.api_version = "client.authentication.k8s.io/v1alpha1".into()
                    }
                }),
                "exec",
                "client.authentication.k8s.io/v1beta1",
            ),
        ] {
            let err = build_config(&settings, &env_of(&[])).await.unwrap_err();
            assert!(
                matches!(&err, ClusterError::Settings { setting: s, .. } if *s == setting),
                "{err}"
            );
            assert!(err.to_string().contains(words), "{err}");
        }
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
