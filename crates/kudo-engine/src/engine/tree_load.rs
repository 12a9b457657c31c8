//! The package a `kudo_operator` names, with its dependency tree: from its folder,
//! archive, URL or repository, or (a `cluster:` source) the OperatorVersion already in
//! the cluster, then checked against the cluster and resolved in one call
//! ([`kudo_resolve::load_and_resolve`]).

use std::collections::BTreeMap;

use kudo_package::{LoadContext, Package};
use kudo_resolve::{
    CLUSTER_SOURCE, LoadError, LoadRequest, PlannedTree, Resolution, cluster_source,
};

use super::error::EngineError;
use super::operator::load_operator;
use crate::cluster::Cluster;

/// Why [`load_operator_tree`] failed. `Display` is the whole explanation, naming the
/// source as written (`package`); [`TreeLoadError::summary`] its title.
#[derive(Debug, thiserror::Error)]
pub enum TreeLoadError {
    /// `cluster:` not followed by `<namespace>/<operatorversion-name>`.
    #[error(
        "Package {package:?}: a cluster package source is `cluster:<namespace>/<operatorversion-name>`"
    )]
    ClusterSourceSyntax { package: String },
    /// A `cluster:` source while the cluster's connection is not known.
    #[error(
        "Package {package:?}: a cluster package source is read from the cluster, and its connection is not known yet"
    )]
    NoCluster { package: String },
    /// The OperatorVersion a `cluster:` source names is not in the cluster.
    #[error(
        "Package {package:?}: there is no OperatorVersion {operator_version_name} in namespace {namespace}; set `package` to the operator's folder, archive, URL or repository name"
    )]
    NotInCluster {
        package: String,
        namespace: String,
        operator_version_name: String,
    },
    /// The cluster could not be read (boxed: the error is large).
    #[error(transparent)]
    Read(Box<EngineError>),
    /// Loading, checking or resolving failed.
    #[error("{}", .error.describe(package, cluster_url))]
    Load {
        package: String,
        /// The cluster's API server URL (empty without a cluster).
        cluster_url: String,
        error: Box<LoadError>,
    },
    /// The blocking work stopped before it answered (a panic, or a shutdown).
    #[error("Package {package:?}: {message}")]
    Interrupted { package: String, message: String },
}

impl TreeLoadError {
    /// A short title for the error.
    pub fn summary(&self) -> &'static str {
        match self {
            TreeLoadError::Read(_) => "Cannot read the operator from the cluster",
            TreeLoadError::Load { error, .. } => error.summary(),
            TreeLoadError::ClusterSourceSyntax { .. }
            | TreeLoadError::NoCluster { .. }
            | TreeLoadError::NotInCluster { .. }
            | TreeLoadError::Interrupted { .. } => "Cannot load the operator package",
        }
    }
}

/// Loads the package `source` names and resolves its dependencies from `context`'s
/// repositories and `overrides`. With a `cluster`, the root's `kubernetesVersion` is
/// checked against it and dependency versions it cannot run are skipped; a `cluster:`
/// source needs one. `planned`: what an earlier plan of this change resolved, read
/// again instead. Files are read and downloads made on a blocking thread.
pub async fn load_operator_tree(
    cluster: Option<&Cluster>,
    source: &str,
    context: LoadContext,
    overrides: BTreeMap<String, String>,
    planned: Option<PlannedTree>,
) -> Result<(Package, Resolution), TreeLoadError> {
    let loaded = match cluster_source(source) {
        None if source.starts_with(CLUSTER_SOURCE) => {
            return Err(TreeLoadError::ClusterSourceSyntax {
                package: source.to_string(),
            });
        }
        None => None,
        Some((namespace, name)) => Some(from_cluster(cluster, source, namespace, name).await?),
    };
    let request = LoadRequest {
        source: source.to_string(),
        loaded,
        context,
        overrides,
        cluster: cluster.and_then(Cluster::kubernetes_version),
        planned,
    };
    // Boxed: the error is large, and only built on the failure path.
    let work = tokio::task::spawn_blocking(move || {
        kudo_resolve::load_and_resolve(request).map_err(Box::new)
    });
    match work.await {
        Ok(Ok(found)) => Ok(found),
        Ok(Err(error)) => Err(TreeLoadError::Load {
            package: source.to_string(),
            cluster_url: cluster.map(Cluster::url).unwrap_or_default().to_string(),
            error,
        }),
        Err(e) => Err(TreeLoadError::Interrupted {
            package: source.to_string(),
            message: e.to_string(),
        }),
    }
}

/// The OperatorVersion a `cluster:` source names, read as `terraform import` reads it.
async fn from_cluster(
    cluster: Option<&Cluster>,
    source: &str,
    namespace: &str,
    name: &str,
) -> Result<Package, TreeLoadError> {
    let Some(cluster) = cluster else {
        return Err(TreeLoadError::NoCluster {
            package: source.to_string(),
        });
    };
    load_operator(cluster, namespace, name, None)
        .await
        .map_err(|e| TreeLoadError::Read(Box::new(e)))?
        .ok_or_else(|| TreeLoadError::NotInCluster {
            package: source.to_string(),
            namespace: namespace.to_string(),
            operator_version_name: name.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/deps");

    async fn load(source: &str) -> Result<(Package, Resolution), TreeLoadError> {
        load_operator_tree(None, source, LoadContext::default(), BTreeMap::new(), None).await
    }

    #[tokio::test]
    async fn a_folder_is_loaded_with_its_tree() {
        let (pkg, resolution) = load(&format!("{FIXTURES}/kep29/cc"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pkg.operator.name, "cc");
        assert_eq!(
            resolution.install_order_versions(),
            [pkg.operator_version_name()]
        );
        // Its dependencies are in folders the context does not name.
        let err = load(&format!("{FIXTURES}/kep29/aa"))
            .await
            .expect_err("bb and cc not found");
        assert_eq!(err.summary(), "Cannot resolve the operator's dependencies");
    }

    #[tokio::test]
    async fn a_source_that_cannot_be_read_says_why() {
        let err = load("cluster:ns").await.expect_err("no name");
        assert!(matches!(err, TreeLoadError::ClusterSourceSyntax { .. }));
        assert_eq!(
            err.to_string(),
            "Package \"cluster:ns\": a cluster package source is `cluster:<namespace>/<operatorversion-name>`"
        );
        let err = load("cluster:ns/aa-0.1.0").await.expect_err("no cluster");
        assert!(matches!(err, TreeLoadError::NoCluster { .. }));
        assert_eq!(err.summary(), "Cannot load the operator package");
        let err = load(&format!("{FIXTURES}/no-such-package"))
            .await
            .expect_err("no folder");
        assert!(matches!(err, TreeLoadError::Load { .. }));
        assert_eq!(err.summary(), "Cannot load the operator package");
        assert!(err.to_string().starts_with("Package \""), "{err}");
    }
}
