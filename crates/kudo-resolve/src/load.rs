//! A package from its source with its dependency tree, in one call: what
//! `kudo_operator` (plan and apply) and the `kudo_dependencies` data source ask, so that
//! both give the same answer for the same package, repositories and overrides.

use std::collections::BTreeMap;

use kudo_package::{LoadContext, Package, PackageError};

use crate::kubernetes::{ClusterVersion, KubernetesRequirement, check_cluster};
use crate::planned::{PlannedError, PlannedTree};
use crate::{Resolution, ResolveError, resolve_from_repositories};

/// How a package source names an OperatorVersion already in the cluster:
/// `cluster:<namespace>/<operatorversion-name>`. KUDO records no package source, so
/// this is the source of operators found in a cluster (`terraform query`).
pub const CLUSTER_SOURCE: &str = "cluster:";

/// The namespace and OperatorVersion name of a `cluster:` package source.
pub fn cluster_source(source: &str) -> Option<(&str, &str)> {
    parse_operator_id(source.strip_prefix(CLUSTER_SOURCE)?)
}

/// The namespace and OperatorVersion name of `<namespace>/<operatorversion-name>`: a
/// `kudo_operator`'s id, and what a `cluster:` source names.
pub fn parse_operator_id(id: &str) -> Option<(&str, &str)> {
    let (namespace, name) = id.split_once('/')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains('/')).then_some((namespace, name))
}

/// What to load and resolve. Owned, so that the blocking work (file reads, downloads)
/// can move to another thread.
#[derive(Debug, Clone)]
pub struct LoadRequest {
    /// A folder, a `.tgz`, an http(s) URL or `name[@version]` in the repositories of
    /// `context` (see [`kudo_package::load`]).
    pub source: String,
    /// The package already read (from a cluster): then `source` is only named in
    /// messages and not read.
    pub loaded: Option<Package>,
    pub context: LoadContext,
    /// `package -> version or range` pins (see [`crate::Override::parse`]).
    pub overrides: BTreeMap<String, String>,
    /// The cluster the tree is for: the root's `kubernetesVersion` is checked against
    /// it ([`check_cluster`]) and dependency versions it cannot run are skipped. `None`:
    /// neither (no cluster reachable, or resolution for CI).
    pub cluster: Option<ClusterVersion>,
    /// What an earlier plan of the same change resolved ([`PlannedTree::from_private`]):
    /// then exactly those packages are read again and checked instead of resolving
    /// (`loaded` is the root for a [`crate::PinnedSource::Cluster`] pin).
    pub planned: Option<PlannedTree>,
}

/// Why [`load_and_resolve`] failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Package(#[from] PackageError),
    /// The root package may not be installed on the cluster.
    #[error("{name} {operator_version}: {requirement}")]
    Kubernetes {
        name: String,
        operator_version: String,
        /// Boxed: the error stays small on the `Err` side of every result.
        requirement: Box<KubernetesRequirement>,
    },
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// A package of the earlier plan cannot be had again as it was.
    #[error(transparent)]
    Planned(#[from] PlannedError),
}

impl LoadError {
    /// A short title for the error.
    pub fn summary(&self) -> &'static str {
        match self {
            LoadError::Package(e) if e.is_unreachable() => "Cannot reach the package repository",
            LoadError::Package(_) => "Cannot load the operator package",
            LoadError::Kubernetes { requirement, .. } => match requirement.as_ref() {
                KubernetesRequirement::TooOld { .. } => {
                    "The operator package needs a newer Kubernetes version"
                }
                KubernetesRequirement::Unreadable(_) => {
                    "Cannot read the Kubernetes version the package needs"
                }
            },
            LoadError::Resolve(_) => "Cannot resolve the operator's dependencies",
            LoadError::Planned(e) => e.summary(),
        }
    }

    /// The whole explanation, for the package its request named `source` (as the user
    /// wrote it) and the cluster at `cluster_url` (named when the cluster is too old).
    pub fn describe(&self, source: &str, cluster_url: &str) -> String {
        match self {
            LoadError::Package(e) => format!("Package {source:?}: {e}"),
            LoadError::Kubernetes {
                name,
                operator_version,
                requirement,
            } => match requirement.as_ref() {
                KubernetesRequirement::TooOld {
                    minimum,
                    declared,
                    cluster,
                } => format!(
                    "Package {source:?} ({name} {operator_version}) declares kubernetesVersion {declared} in operator.yaml: it needs Kubernetes {minimum} or newer, but the cluster at {cluster_url} runs {cluster}. Use a version of the package written for this cluster, or upgrade the cluster.",
                ),
                KubernetesRequirement::Unreadable(_) => {
                    format!("Package {source:?} ({name} {operator_version}): {requirement}")
                }
            },
            LoadError::Resolve(e) => e.to_string(),
            LoadError::Planned(e) => e.to_string(),
        }
    }
}

/// Loads the package `req` names (blocking: reads files and may download), checks it
/// against the cluster, and resolves its dependencies with the root instance named
/// after the operator; with [`LoadRequest::planned`], the planned packages instead.
pub fn load_and_resolve(req: LoadRequest) -> Result<(Package, Resolution), LoadError> {
    let pkg = match (&req.planned, req.loaded) {
        (Some(planned), loaded) => planned.root.load(&req.context, loaded)?,
        (None, Some(pkg)) => pkg,
        (None, None) => kudo_package::load(&req.source, &req.context)?,
    };
    if let Some(cluster) = &req.cluster {
        check_cluster(&pkg, cluster).map_err(|requirement| LoadError::Kubernetes {
            name: pkg.operator.name.clone(),
            operator_version: pkg.operator.operator_version.clone(),
            requirement: Box::new(requirement),
        })?;
    }
    if let Some(tree) = req.planned.and_then(|p| p.tree) {
        let resolution = tree.load(&pkg, &req.context)?;
        return Ok((pkg, resolution));
    }
    let resolution = resolve_from_repositories(
        &pkg,
        &pkg.operator.name,
        req.context,
        req.overrides,
        req.cluster,
    )?;
    Ok((pkg, resolution))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_source_names_a_namespace_and_an_operator_version() {
        assert_eq!(
            cluster_source("cluster:ns/aa-0.1.0"),
            Some(("ns", "aa-0.1.0"))
        );
        for bad in [
            "cluster:ns",
            "cluster:/aa",
            "cluster:ns/",
            "cluster:a/b/c",
            "ns/aa",
        ] {
            assert_eq!(cluster_source(bad), None, "{bad}");
        }
    }
}
