//! Dependency resolution as Terraform shows it, shared by `kudo_operator` (plan and
//! apply) and the `kudo_dependencies` data source so that both give the same answer
//! for the same package, repositories and overrides: one call,
//! [`kudo_resolve::load_and_resolve`], whose errors become diagnostics on `package`.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic, Value};

use kudo_package::Package;
use kudo_resolve::{
    ClusterVersion, KubernetesRequirement, LoadError, LoadRequest, PlannedTree, Resolution,
};

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
/// may download); with `planned`, reads exactly what an earlier plan resolved.
pub async fn load_with_dependencies(
    repositories: &[RepositoryConfig],
    source: &str,
    overrides: BTreeMap<String, String>,
    cluster: Option<Cluster<'_>>,
    planned: Option<PlannedTree>,
) -> Result<(Package, Resolution), Diagnostic> {
    resolve_package(repositories, source, (None, planned), overrides, cluster).await
}

/// [`load_with_dependencies`] for a package already read (from the cluster, for a
/// `cluster:` source): checked and resolved the same way.
pub async fn resolve_loaded(
    repositories: &[RepositoryConfig],
    source: &str,
    pkg: Package,
    overrides: BTreeMap<String, String>,
    cluster: Option<Cluster<'_>>,
    planned: Option<PlannedTree>,
) -> Result<(Package, Resolution), Diagnostic> {
    resolve_package(
        repositories,
        source,
        (Some(pkg), planned),
        overrides,
        cluster,
    )
    .await
}

async fn resolve_package(
    repositories: &[RepositoryConfig],
    source: &str,
    (loaded, planned): (Option<Package>, Option<PlannedTree>),
    overrides: BTreeMap<String, String>,
    cluster: Option<Cluster<'_>>,
) -> Result<(Package, Resolution), Diagnostic> {
    let request = LoadRequest {
        source: source.to_string(),
        loaded,
        context: packages::load_context(repositories),
        overrides,
        cluster: cluster.as_ref().map(|c| c.version.clone()),
        planned,
    };
    // Boxed: the error is large, and only built on the failure path.
    let work = tokio::task::spawn_blocking(move || {
        kudo_resolve::load_and_resolve(request).map_err(Box::new)
    });
    match work.await {
        Ok(Ok(found)) => Ok(found),
        Ok(Err(e)) => Err(load_error(source, cluster.map_or("", |c| c.url), *e)),
        Err(e) => Err(package_error(source, e)),
    }
}

/// The diagnostic for a failed [`kudo_resolve::load_and_resolve`] of `source` (`url`:
/// the cluster's, for a Kubernetes version refusal).
fn load_error(source: &str, url: &str, e: LoadError) -> Diagnostic {
    let at_package = |summary: &str, detail: String| {
        Diagnostic::error(summary, detail).with_attribute(AttributePath::attribute("package"))
    };
    let (name, operator_version, requirement) = match e {
        LoadError::Package(e) if e.is_unreachable() => {
            return at_package(
                "Cannot reach the package repository",
                super::diag::with_advice(
                    format!("Package {source:?}: {e}"),
                    &format!(
                        "Make the repository reachable (the `url` of its `repository` block in the provider configuration), {}",
                        super::diag::AGAIN
                    ),
                ),
            );
        }
        LoadError::Package(e) => return package_error(source, e),
        LoadError::Planned(e) => return at_package(e.summary(), e.to_string()),
        LoadError::Resolve(e) => {
            return at_package(
                "Cannot resolve the operator's dependencies",
                super::diag::with_advice(&e, &format!("{}, {}", e.advice(), super::diag::AGAIN)),
            );
        }
        LoadError::Kubernetes {
            name,
            operator_version,
            requirement,
        } => (name, operator_version, *requirement),
    };
    match requirement {
        KubernetesRequirement::TooOld {
            minimum,
            declared,
            cluster,
        } => at_package(
            "The operator package needs a newer Kubernetes version",
            format!(
                "Package {source:?} ({name} {operator_version}) declares kubernetesVersion {declared} in operator.yaml: it needs Kubernetes {minimum} or newer, but the cluster at {url} runs {cluster}. Use a version of the package written for this cluster, or upgrade the cluster.",
            ),
        ),
        KubernetesRequirement::Unreadable(e) => at_package(
            "Cannot read the Kubernetes version the package needs",
            format!(
                "Package {source:?} ({name} {operator_version}): operator.yaml kubernetesVersion: {e}"
            ),
        ),
    }
}

/// The cluster a resolution is for, when one is reachable.
pub struct Cluster<'a> {
    pub version: ClusterVersion,
    /// The API server URL, for messages.
    pub url: &'a str,
}

/// The version of `cluster` ([`kudo_engine::cluster::Cluster::kubernetes_version`]),
/// with its URL for messages.
pub fn cluster_of(cluster: &kudo_engine::cluster::Cluster) -> Option<Cluster<'_>> {
    cluster.kubernetes_version().map(|version| Cluster {
        version,
        url: cluster.url(),
    })
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
