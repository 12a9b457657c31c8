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
