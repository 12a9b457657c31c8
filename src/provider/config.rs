//! The provider block: how to reach the cluster and which repositories to search.

use std::collections::BTreeMap;

use tfplugin::{Attr, AttributePath, Diagnostic, FromValue, Value};

use kube_api_versions::{Mapping, MappingField, Translator};
use kudo_engine::cluster::{self, ConnectionSettings, ExecSettings, SettingPath, SettingProblem};
use kudo_package::{Repository, RepositoryProblem};

use super::drift::{DriftSettings, IgnoreBlock};

#[derive(Debug, Clone, Default)]
pub struct ProviderConfig {
    pub connection: ConnectionSettings,
    pub repositories: Vec<Repository>,
    /// `translate_api_versions` and the `api_version_mapping` blocks.
    pub translator: Translator,
    /// `allow_insecure_webhooks` (default false): Webhook tasks may call http:// URLs
    /// of other machines.
    pub allow_insecure_webhooks: bool,
    /// `drift` and `drift_ignore`: what refreshes do with fields changed out of band.
    pub drift: DriftSettings,
    /// `health` and `health_rule`: the default of the instances'.
    pub health: super::health::HealthSettings,
    /// `crd_upgrade_safety`: the default of the instances'.
    pub crd_upgrade_safety: kudo_engine::engine::CrdSafety,
    /// `show_manifests` (else `KUDO_SHOW_MANIFESTS`): the default of the instances'.
    pub show_manifests: bool,
    /// `rollback_on_failure`: the default of the instances'.
    pub rollback_on_failure: bool,
    /// Connection settings whose values Terraform does not know yet (they come from a
    /// resource the same apply creates, such as the cluster). Non-empty means the
    /// provider is offline: it plans without the cluster and never guesses another
    /// connection (the kubeconfig from the environment would be the wrong cluster).
    pub unknown_connection: Vec<&'static str>,
}

impl ProviderConfig {
    /// Whether the connection is only known after apply (see `unknown_connection`).
    pub fn offline(&self) -> bool {
        !self.unknown_connection.is_empty()
    }
}

tfplugin::model! {
    /// The provider block.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct ConfigModel {
        pub config_path: Attr<String>,
        /// A value: a list whose entries may be unknown until apply.
        pub config_paths: Value,
        pub config_context: Attr<String>,
        pub host: Attr<String>,
        pub token: Attr<String>,
        pub cluster_ca_certificate: Attr<String>,
        pub client_certificate: Attr<String>,
        pub client_key: Attr<String>,
        pub insecure: Attr<bool>,
        pub tls_server_name: Attr<String>,
        pub proxy_url: Attr<String>,
        /// A value: the `exec` block (a list of at most one), whose attributes may be
        /// unknown until apply.
        pub exec: Value,
        pub request_timeout: Attr<String>,
        /// A value: a number ([`cluster::max_requests_in_flight`] checks it).
        pub max_requests_in_flight: Value,
        pub translate_api_versions: Attr<bool>,
        pub allow_insecure_webhooks: Attr<bool>,
        pub drift: Attr<String>,
        pub crd_upgrade_safety: Attr<String>,
        pub health: Attr<String>,
        pub show_manifests: Attr<bool>,
        pub rollback_on_failure: Attr<bool>,
        pub repository: Attr<Vec<RepositoryBlock>>,
        pub drift_ignore: Attr<Vec<IgnoreBlock>>,
        pub health_rule: Attr<Vec<super::health::RuleBlock>>,
        pub api_version_mapping: Attr<Vec<MappingBlock>>,
    }
}

tfplugin::model! {
    /// A `repository` block as configured.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct RepositoryBlock {
        pub name: Attr<String>,
        pub url: Attr<String>,
        /// A value: a fractional number counts as unset (0), as it always has.
        pub priority: Value,
    }
}

tfplugin::model! {
    /// The `exec` block as configured.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct ExecBlock {
        pub api_version: Attr<String>,
        pub command: Attr<String>,
        pub args: Attr<Vec<String>>,
        pub env: Attr<BTreeMap<String, String>>,
    }
}

tfplugin::model! {
    /// An `api_version_mapping` block as configured.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct MappingBlock {
        pub from: Attr<String>,
        pub kind: Attr<String>,
        pub to: Attr<String>,
    }
}

/// A connection setting: `None` when unset, empty or not known yet; an unknown one is
/// recorded in `unknown` (the provider then plans offline).
fn optional_string(
    v: &Attr<String>,
    name: &'static str,
    unknown: &mut Vec<&'static str>,
) -> Option<String> {
    if v.is_unknown() {
        unknown.push(name);
        return None;
    }
    v.known().filter(|s| !s.is_empty()).cloned()
}

/// The environment variable that sets `show_manifests` when the provider block does not.
pub const SHOW_MANIFESTS_ENV: &str = "KUDO_SHOW_MANIFESTS";

/// Reads the provider block. Unknown connection settings (a cluster created by the same
/// apply) make the session offline: plans are made without the cluster and the apply
/// configures the provider again with the values then known. Everything a plan needs
/// without the cluster must be known: repositories (packages are loaded while planning),
/// `api_version_mapping`, `drift`.
pub fn parse(config: &Value) -> Result<ProviderConfig, Vec<Diagnostic>> {
    let config: ConfigModel = config.decode().map_err(|d| vec![d])?;
    let mut diags = Vec::new();
    let mut unknown_connection = Vec::new();
    let connection = parse_connection(&config, &mut unknown_connection, &mut diags);
    let repositories = parse_repositories(&config, &mut diags);
    let translator = parse_translator(&config, &mut diags);
    let drift = super::drift::parse(&config.drift, &config.drift_ignore).unwrap_or_else(|d| {
        diags.extend(d);
        DriftSettings::default()
    });
    let crd_upgrade_safety = match config.crd_upgrade_safety.as_deref() {
        None => Default::default(),
        Some(v) => kudo_engine::engine::CrdSafety::parse(v).unwrap_or_else(|| {
            diags.push(super::diag::invalid_choice(
                "crd_upgrade_safety",
                v,
                &kudo_engine::engine::CrdSafety::VALUES,
                "enforce",
            ));
            Default::default()
        }),
    };
    let health = super::health::parse(&config.health, &config.health_rule).unwrap_or_else(|d| {
        diags.extend(d);
        Default::default()
    });
    if diags.iter().any(Diagnostic::is_error) {
        return Err(diags);
    }
    let allow_insecure_webhooks = config
        .allow_insecure_webhooks
        .known()
        .copied()
        .unwrap_or(false);
    // An environment variable too, so that one `terraform plan` can show the diffs
    // without a change to the configuration.
    let show_manifests = config.show_manifests.known().copied().unwrap_or_else(|| {
        std::env::var(SHOW_MANIFESTS_ENV).is_ok_and(|v| matches!(v.trim(), "true" | "1"))
    });
    let rollback_on_failure = config.rollback_on_failure.known().copied().unwrap_or(false);
    Ok(ProviderConfig {
        connection,
        repositories,
        translator,
        allow_insecure_webhooks,
        drift,
        crd_upgrade_safety,
        health,
        show_manifests,
        rollback_on_failure,
        unknown_connection,
    })
}

/// The connection settings; unknown ones go to `unknown`, mistakes to `diags`.
fn parse_connection(
    config: &ConfigModel,
    unknown_connection: &mut Vec<&'static str>,
    diags: &mut Vec<Diagnostic>,
) -> ConnectionSettings {
    let mut string =
        |v: &Attr<String>, name: &'static str| optional_string(v, name, unknown_connection);
    let mut connection = ConnectionSettings {
        config_path: string(&config.config_path, "config_path"),
        config_context: string(&config.config_context, "config_context"),
        host: string(&config.host, "host"),
        token: string(&config.token, "token"),
        cluster_ca_certificate: string(&config.cluster_ca_certificate, "cluster_ca_certificate"),
        client_certificate: string(&config.client_certificate, "client_certificate"),
        client_key: string(&config.client_key, "client_key"),
        insecure: config.insecure.known().copied().unwrap_or(false),
        tls_server_name: string(&config.tls_server_name, "tls_server_name"),
        proxy_url: string(&config.proxy_url, "proxy_url"),
        config_paths: Vec::new(),
        exec: None,
        request_timeout: None,
        max_requests_in_flight: None,
        discovery_cache_dir: Some(super::packages::discovery_cache_dir()),
        dry_run_cache_dir: Some(super::packages::dry_run_cache_dir()),
    };
    connection.config_paths = parse_config_paths(&config.config_paths, unknown_connection, diags);
    connection.exec = parse_exec(&config.exec, unknown_connection, diags);
    if config.insecure.is_unknown() {
        unknown_connection.push("insecure");
    }
    let mut problems = Vec::new();
    match config.request_timeout.known().filter(|t| !t.is_empty()) {
        None if config.request_timeout.is_unknown() => unknown_connection.push("request_timeout"),
        None => {}
        Some(text) => match cluster::request_timeout(text, super::timeouts::parse_duration(text)) {
            Ok(d) => connection.request_timeout = Some(d),
            Err(problem) => problems.push(problem),
        },
    }
    // Unset or unknown until apply: the default.
    let in_flight = &config.max_requests_in_flight;
    if !matches!(in_flight, Value::Null | Value::Unknown) {
        match cluster::max_requests_in_flight(in_flight.as_f64()) {
            Ok(n) => connection.max_requests_in_flight = Some(n),
            Err(problem) => problems.push(problem),
        }
    }
    // Half a certificate is only certain when both halves are known.
    let half_unknown = config.client_certificate.is_unknown() || config.client_key.is_unknown();
    problems.extend(
        connection
            .problems()
            .into_iter()
            .filter(|p| !(half_unknown && *p == SettingProblem::HalfClientCertificate)),
    );
    diags.extend(problems.iter().map(setting_error));
    connection
}

/// The diagnostic for a connection setting that cannot work, on that setting.
fn setting_error(problem: &SettingProblem) -> Diagnostic {
    let SettingPath {
        attribute,
        index,
        field,
    } = problem.path();
    let mut path = AttributePath::attribute(attribute);
    if let Some(i) = index {
        path = path.index(i as i64);
    }
    if let Some(field) = field {
        path = path.attr(field);
    }
    Diagnostic::error(problem.summary(), problem.to_string()).with_attribute(path)
}

/// The `repository` blocks, which must be known while planning (packages are loaded).
fn parse_repositories(config: &ConfigModel, diags: &mut Vec<Diagnostic>) -> Vec<Repository> {
    let mut repositories = Vec::new();
    // The block of each repository, for the problems' paths.
    let mut blocks = Vec::new();
    for (i, block) in config
        .repository
        .known()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if block.name.is_unknown() || block.url.is_unknown() {
            diags.push(
                Diagnostic::error(
                    "Repository not known yet",
                    "A repository's `name` and `url` must be known when Terraform plans.",
                )
                .with_attribute(AttributePath::attribute("repository").index(i as i64)),
            );
            continue;
        }
        blocks.push(i);
        let priority = block.priority.as_i64().unwrap_or(0);
        repositories.push(Repository {
            name: block.name.as_deref().unwrap_or_default().to_string(),
            url: block.url.as_deref().unwrap_or_default().to_string(),
            priority: i32::try_from(priority).unwrap_or(i32::MAX),
        });
    }
    let problems = kudo_package::repository_problems(&repositories);
    for problem in problems {
        let detail = match &problem {
            RepositoryProblem::DuplicateName { name, .. } => {
                format!("Two `repository` blocks are named {name:?}; give each a unique name.")
            }
            RepositoryProblem::UnsupportedUrl { .. } => problem.to_string(),
        };
        let block = blocks.get(problem.index()).copied().unwrap_or_default();
        diags.push(
            Diagnostic::error(problem.summary(), detail).with_attribute(
                AttributePath::attribute("repository")
                    .index(block as i64)
                    .attr(problem.field()),
            ),
        );
    }
    repositories
}

/// `config_paths`: kubeconfig files merged in order.
fn parse_config_paths(
    value: &Value,
    unknown: &mut Vec<&'static str>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<String> {
    if value.is_null() {
        return Vec::new();
    }
    if !value.is_fully_known() {
        unknown.push("config_paths");
        return Vec::new();
    }
    Vec::<String>::from_value(value, &AttributePath::attribute("config_paths")).unwrap_or_else(
        |d| {
            diags.push(d);
            Vec::new()
        },
    )
}

/// The `exec` block: a credential plugin. Unknown parts make the session offline, as
/// other connection settings do (the command often takes the cluster's name from the
/// module that creates the cluster).
fn parse_exec(
    value: &Value,
    unknown: &mut Vec<&'static str>,
    diags: &mut Vec<Diagnostic>,
) -> Option<ExecSettings> {
    if value.is_null() {
        return None;
    }
    if !value.is_fully_known() {
        unknown.push("exec");
        return None;
    }
    let blocks = match Vec::<ExecBlock>::from_value(value, &AttributePath::attribute("exec")) {
        Ok(b) => b,
        Err(d) => {
            diags.push(d);
            return None;
        }
    };
    let block = blocks.into_iter().next()?;
    let trimmed = |v: &Attr<String>| v.as_deref().unwrap_or_default().trim().to_string();
    Some(ExecSettings {
        api_version: trimmed(&block.api_version),
        command: trimmed(&block.command),
        args: block.args.into_known().unwrap_or_default(),
        env: block.env.into_known().unwrap_or_default(),
    })
}

/// `translate_api_versions` (default true) and `api_version_mapping` blocks.
fn parse_translator(config: &ConfigModel, diags: &mut Vec<Diagnostic>) -> Translator {
    let mut translator = Translator {
        enabled: config
            .translate_api_versions
            .known()
            .copied()
            .unwrap_or(true),
        mappings: Vec::new(),
    };
    for (i, block) in config
        .api_version_mapping
        .known()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let parsed = Mapping::parse(
            block.from.as_deref(),
            block.kind.as_deref(),
            block.to.as_deref(),
        );
        let problems = parsed.as_ref().err().map(Vec::as_slice).unwrap_or_default();
        let fields = [
            (MappingField::From, &block.from),
            (MappingField::Kind, &block.kind),
            (MappingField::To, &block.to),
        ];
        for (field, value) in fields {
            let detail = match problems.iter().find(|p| p.field() == field) {
                // What it will be is not known yet: not a problem of its own.
                _ if value.is_unknown() => format!("`{field}` must be known when Terraform plans."),
                Some(problem) => problem.to_string(),
                None => continue,
            };
            diags.push(
                Diagnostic::error("Invalid api_version_mapping", detail).with_attribute(
                    AttributePath::attribute("api_version_mapping")
                        .index(i as i64)
                        .attr(field.name()),
                ),
            );
        }
        if let Ok(mapping) = parsed {
            translator.mappings.push(mapping);
        }
    }
    translator
}
