//! Dependency resolution as Terraform shows it, shared by `kudo_operator` (plan and
//! apply) and the `kudo_dependencies` data source so that both give the same answer
//! for the same package, repositories and overrides.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_package::Package;
use kudo_resolve::{ClusterVersion, Resolution};

use super::RepositoryConfig;
use super::packages;

/// An error about the package, on the `package` attribute (both users name it so).
pub fn package_error(source: &str, e: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::error(
        "Cannot load the operator package",
        super::diag::with_advice(
            format!("Package {source:?}: {e}"),
            &super::diag::package_advice(),
        ),
    )
    .with_attribute(AttributePath::attribute("package"))
}

/// A `dependency_overrides` value as a map (empty when null). Kept a `Value` in the
/// models: its entries may be unknown while planning, which the callers check first.
pub fn overrides_of(overrides: &Value) -> BTreeMap<String, String> {
    overrides.to_string_map().ok().flatten().unwrap_or_default()
}

/// Loads the package and resolves its dependencies (blocking work: reads files and
/// may download).
pub async fn load_with_dependencies(
    repositories: &[RepositoryConfig],
    source: &str,
    overrides: BTreeMap<String, String>,
    cluster: Option<Cluster<'_>>,
) -> Result<(Package, Resolution), Diagnostic> {
    resolve_package(repositories, source, None, overrides, cluster).await
}

/// [`load_with_dependencies`] for a package already read (from the cluster, for a
/// `cluster:` source): checked and resolved the same way.
pub async fn resolve_loaded(
    repositories: &[RepositoryConfig],
    source: &str,
    pkg: Package,
    overrides: BTreeMap<String, String>,
    cluster: Option<Cluster<'_>>,
) -> Result<(Package, Resolution), Diagnostic> {
    resolve_package(repositories, source, Some(pkg), overrides, cluster).await
}

async fn resolve_package(
    repositories: &[RepositoryConfig],
    source: &str,
    loaded: Option<Package>,
    overrides: BTreeMap<String, String>,
    cluster: Option<Cluster<'_>>,
) -> Result<(Package, Resolution), Diagnostic> {
    let repositories = repositories.to_vec();
    let source_owned = source.to_string();
    let version = cluster.as_ref().map(|c| c.version.clone());
    let url = cluster.map(|c| c.url.to_string());
    let work = tokio::task::spawn_blocking(move || {
        let pkg = match loaded {
            Some(pkg) => pkg,
            None => packages::load_source(&source_owned, &repositories)
                .map_err(|e| package_error(&source_owned, e))?,
        };
        if let (Some(version), Some(url)) = (&version, &url) {
            check_kubernetes_version(&pkg, &source_owned, version, url)?;
        }
        let resolution =
            packages::resolve(&pkg, &repositories, overrides, version).map_err(|e| {
                Diagnostic::error(
                    "Cannot resolve the operator's dependencies",
                    super::diag::with_advice(
                        &e,
                        &format!("{}, {}", e.advice(), super::diag::AGAIN),
                    ),
                )
                .with_attribute(AttributePath::attribute("package"))
            })?;
        Ok((pkg, resolution))
    });
    work.await.map_err(|e| package_error(source, e))?
}

/// The cluster a resolution is for, when one is reachable.
pub struct Cluster<'a> {
    pub version: ClusterVersion,
    /// The API server URL, for messages.
    pub url: &'a str,
}

/// The version of `cluster`, `None` when its API server reports one that is not a 1.x
/// release (a development build): then nothing is checked, as without a cluster.
pub fn cluster_of(cluster: &kudo_engine::cluster::Cluster) -> Option<Cluster<'_>> {
    match ClusterVersion::parse(cluster.server_version()) {
        Ok(version) => Some(Cluster {
            version,
            url: cluster.url(),
        }),
        Err(e) => {
            tracing::warn!(error = %e, "the cluster's version is not a Kubernetes release; kubernetesVersion is not checked");
            None
        }
    }
}

/// The root package's operator.yaml `kubernetesVersion` against the cluster's: a
/// package that needs a newer cluster fails the plan here rather than somewhere inside
/// its deploy plan (KUDO refused the install the same way, comparing major and minor).
pub fn check_kubernetes_version(
    pkg: &Package,
    source: &str,
    cluster: &ClusterVersion,
    url: &str,
) -> Result<(), Diagnostic> {
    let at_package = |summary: &str, detail: String| {
        Diagnostic::error(summary, detail).with_attribute(AttributePath::attribute("package"))
    };
    let op = &pkg.operator;
    match kudo_resolve::kubernetes_minimum(pkg) {
        Ok(Some(min)) if min > cluster.release => Err(at_package(
            "The operator package needs a newer Kubernetes version",
            format!(
                "Package {source:?} ({} {}) declares kubernetesVersion {} in operator.yaml: it needs Kubernetes {min} or newer, but the cluster at {url} runs {}. Use a version of the package written for this cluster, or upgrade the cluster.",
                op.name,
                op.operator_version,
                op.kubernetes_version.trim(),
                cluster.reported
            ),
        )),
        Ok(_) => Ok(()),
        Err(e) => Err(at_package(
            "Cannot read the Kubernetes version the package needs",
            format!(
                "Package {source:?} ({} {}): operator.yaml kubernetesVersion: {e}",
                op.name, op.operator_version
            ),
        )),
    }
}

tfplugin::model! {
    /// An entry of `dependencies` (`kudo_operator`, `kudo_dependencies`). Every field
    /// may be null, so that a state written before a field existed still decodes.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct Dependency {
        pub package: Option<String>,
        pub operator_version: Option<String>,
        pub app_version: Option<String>,
        pub operator_version_name: Option<String>,
        pub source: Option<String>,
        pub required_by: Option<String>,
        pub constraint: Option<String>,
        pub enabled: Option<bool>,
    }
}

/// `dependencies` and `install_order` of a resolution.
pub fn resolution_values(resolution: &Resolution) -> (Vec<Dependency>, Vec<String>) {
    let deps = resolution
        .dependencies()
        .into_iter()
        .map(|d| Dependency {
            package: Some(d.package),
            operator_version: Some(d.operator_version),
            app_version: d.app_version,
            operator_version_name: Some(d.operator_version_name),
            source: Some(d.source),
            required_by: Some(d.required_by),
            constraint: d.constraint,
            enabled: Some(d.enabled),
        })
        .collect();
    (deps, resolution.install_order_versions())
}

/// `graph`: the tree as a Mermaid flowchart, the text `resolve --format mermaid`
/// prints for the same package, repositories and overrides (no parameter values:
/// `enablingParameter` subtrees as their defaults switch them).
pub fn resolution_graph(resolution: &Resolution) -> String {
    kudo_resolve::to_mermaid(resolution, None)
}

/// A warning for each override key that names no package of the tree: most likely a
/// typo, which would otherwise silently leave the version unpinned.
pub fn unused_override_warnings(resolution: &Resolution) -> Vec<Diagnostic> {
    resolution
        .unused_overrides
        .iter()
        .map(|unused| {
            Diagnostic::warning(
                "Override matches no dependency",
                format!("`dependency_overrides` names {unused:?}, which this operator does not depend on."),
            )
            .with_attribute(AttributePath::attribute("dependency_overrides").key(unused.clone()))
        })
        .collect()
}
