//! The Kubernetes version a package needs (operator.yaml `kubernetesVersion`), as KUDO
//! read it: a minimum, compared by major and minor only. KUDO 0.19's
//! `ValidateServerForOperator` (pkg/kudoctl/util/kudo/kudo.go) refused an install when
//! `expectedKubver.CompareMajorMinor(serverVersion) > 0`; its verifier
//! (`VersionVerifier`, pkg/kudoctl/cmd/verify/verify.go) required the field to be semver.
//! An empty field is no constraint here (packages written by hand often omit it).

use kube_api_versions::{ParseReleaseError, Release};
use kudo_package::Package;

/// The cluster a resolution is for: its release and the version text its API server
/// reports (`v1.24.17`), for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterVersion {
    pub release: Release,
    pub reported: String,
}

impl ClusterVersion {
    /// From the `gitVersion` of the API server's `/version`.
    pub fn parse(git_version: &str) -> Result<ClusterVersion, ParseReleaseError> {
        Ok(ClusterVersion {
            release: git_version.parse()?,
            reported: git_version.to_string(),
        })
    }
}

/// The minimum release `pkg` declares, `None` when it declares none.
pub fn kubernetes_minimum(pkg: &Package) -> Result<Option<Release>, ParseReleaseError> {
    let text = pkg.operator.kubernetes_version.trim();
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some)
}

/// Whether `pkg` runs on `cluster` (it declares no minimum, or one not newer than it).
pub fn runs_on(pkg: &Package, cluster: Release) -> Result<bool, ParseReleaseError> {
    Ok(kubernetes_minimum(pkg)?.is_none_or(|min| min <= cluster))
}

/// Why a package may not be installed on a cluster, from its operator.yaml
/// `kubernetesVersion`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubernetesRequirement {
    /// The package declares a newer minimum than the cluster runs.
    #[error("it needs Kubernetes {minimum} or newer, but the cluster runs {cluster}")]
    TooOld {
        minimum: Release,
        /// The field as written (trimmed).
        declared: String,
        /// The version the cluster reports.
        cluster: String,
    },
    /// The field is not a version.
    #[error("operator.yaml kubernetesVersion: {0}")]
    Unreadable(#[source] ParseReleaseError),
}

/// The root package's `kubernetesVersion` against the cluster's: a package that needs a
/// newer cluster is refused here rather than somewhere inside its deploy plan (KUDO
/// refused the install the same way, see the module comment). Dependencies are not
/// checked: the resolver chooses versions the cluster runs instead.
pub fn check_cluster(pkg: &Package, cluster: &ClusterVersion) -> Result<(), KubernetesRequirement> {
    match kubernetes_minimum(pkg) {
        Ok(Some(minimum)) if minimum > cluster.release => Err(KubernetesRequirement::TooOld {
            minimum,
            declared: pkg.operator.kubernetes_version.trim().to_string(),
            cluster: cluster.reported.clone(),
        }),
        Ok(_) => Ok(()),
        Err(e) => Err(KubernetesRequirement::Unreadable(e)),
    }
}

/// Whether the cluster's Kubernetes version could change `resolution`: a dependency
/// whose `kubernetesVersion` is newer than the oldest release there is (or unreadable)
/// may be skipped on an older cluster. The root package is only checked
/// ([`check_cluster`]), never replaced, so it does not count. A resolution made without
/// a cluster for which this holds is known only once the cluster is.
pub fn needs_cluster_version(root: &Package, resolution: &crate::Resolution) -> bool {
    let root_ov = root.operator_version_name();
    resolution
        .packages
        .values()
        .filter(|p| p.operator_version_name() != root_ov)
        .any(|p| !runs_on(p, kube_api_versions::OLDEST).unwrap_or(false))
}

impl crate::Resolution {
    /// This tree when it is the one an install will use: resolved for the cluster
    /// (`for_cluster`), or one the cluster's version could not change
    /// ([`needs_cluster_version`]). `None`: only the cluster can tell, so a plan made
    /// without it leaves the tree unknown and the apply resolves it again.
    pub fn known(&self, root: &Package, for_cluster: bool) -> Option<&crate::Resolution> {
        (for_cluster || !needs_cluster_version(root, self)).then_some(self)
    }
}
