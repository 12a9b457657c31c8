//! Which Kubernetes minor release serves which built-in group/version/kind.

use std::fmt;
use std::str::FromStr;

/// A Kubernetes 1.x minor release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    pub minor: u32,
}

/// The oldest release the table describes.
pub const OLDEST: Release = Release { minor: 16 };
/// The newest release the table describes; kube-sim's default profile.
pub const CURRENT: Release = Release { minor: 36 };

/// One built-in kind as a group/version serves it, and the releases that serve it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltinKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Has a `status` subresource.
    pub has_status: bool,
    /// First 1.x minor release serving it (by default, without feature gates).
    pub since: u32,
    /// First 1.x minor release that no longer serves it.
    pub removed_in: Option<u32>,
}

impl BuiltinKind {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn served_by(&self, release: Release) -> bool {
        release.minor >= self.since && self.removed_in.is_none_or(|r| release.minor < r)
    }
}

/// Every built-in kind the table knows, all versions.
///
/// `since`/`removed_in` follow the Kubernetes "Deprecated API Migration Guide"
/// (https://kubernetes.io/docs/reference/using-api/deprecation-guide/) and the release
/// notes of the version that introduced each API; `since` values below [`OLDEST`] only
/// say "already served by the oldest release described". Rows with `removed_in` at or
/// below [`OLDEST`] are kept so that tools can name the successor of a version no
/// described release serves (`extensions/v1beta1` Deployment). Plural, short names and
/// the status subresource are what `kubectl api-resources` and discovery report.
pub fn builtin_kinds() -> &'static [BuiltinKind] {
    TABLE
}

/// Row constructor; keeps the table one line per group/version/kind.
#[allow(clippy::too_many_arguments)]
const fn kind(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    has_status: bool,
    since: u32,
    removed_in: Option<u32>,
) -> BuiltinKind {
    BuiltinKind {
        group,
        version,
        kind,
        plural,
        namespaced,
        short_names,
        has_status,
        since,
        removed_in,
    }
}

// Columns: group, version, kind, plural, namespaced, short names, status subresource,
// since, removed in.
#[rustfmt::skip]
static TABLE: &[BuiltinKind] = &[
        kind("", "v1", "Namespace", "namespaces", false, &["ns"], true, 0, None),
        kind("", "v1", "ConfigMap", "configmaps", true, &["cm"], false, 2, None),
        kind("", "v1", "Secret", "secrets", true, &[], false, 0, None),
        kind("", "v1", "Service", "services", true, &["svc"], true, 0, None),
        kind("", "v1", "ServiceAccount", "serviceaccounts", true, &["sa"], false, 0, None),
        kind("", "v1", "Pod", "pods", true, &["po"], true, 0, None),
        kind("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, &["pvc"], true, 0, None),
        kind("", "v1", "PersistentVolume", "persistentvolumes", false, &["pv"], true, 0, None),
        kind("", "v1", "Event", "events", true, &["ev"], false, 0, None),
        kind("", "v1", "Endpoints", "endpoints", true, &["ep"], false, 0, None),
        kind("", "v1", "LimitRange", "limitranges", true, &["limits"], false, 0, None),
        kind("", "v1", "ResourceQuota", "resourcequotas", true, &["quota"], true, 0, None),
        kind("apps", "v1", "Deployment", "deployments", true, &["deploy"], true, 9, None),
        kind("apps", "v1", "StatefulSet", "statefulsets", true, &["sts"], true, 9, None),
        kind("apps", "v1", "DaemonSet", "daemonsets", true, &["ds"], true, 9, None),
        kind("apps", "v1", "ReplicaSet", "replicasets", true, &["rs"], true, 9, None),
        kind("apps", "v1beta2", "Deployment", "deployments", true, &["deploy"], true, 8, Some(16)),
        kind("apps", "v1beta2", "StatefulSet", "statefulsets", true, &["sts"], true, 8, Some(16)),
        kind("apps", "v1beta2", "DaemonSet", "daemonsets", true, &["ds"], true, 8, Some(16)),
        kind("apps", "v1beta2", "ReplicaSet", "replicasets", true, &["rs"], true, 8, Some(16)),
        kind("apps", "v1beta1", "Deployment", "deployments", true, &["deploy"], true, 5, Some(16)),
        kind("apps", "v1beta1", "StatefulSet", "statefulsets", true, &["sts"], true, 5, Some(16)),
        kind("extensions", "v1beta1", "Deployment", "deployments", true, &["deploy"], true, 2, Some(16)),
        kind("extensions", "v1beta1", "DaemonSet", "daemonsets", true, &["ds"], true, 2, Some(16)),
        kind("extensions", "v1beta1", "ReplicaSet", "replicasets", true, &["rs"], true, 2, Some(16)),
        kind("batch", "v1", "Job", "jobs", true, &[], true, 2, None),
        kind("batch", "v1", "CronJob", "cronjobs", true, &["cj"], true, 21, None),
        kind("batch", "v1beta1", "CronJob", "cronjobs", true, &["cj"], true, 8, Some(25)),
        kind("autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, &["hpa"], true, 2, None),
        kind("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, &["hpa"], true, 23, None),
        kind("autoscaling", "v2beta1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, &["hpa"], true, 8, Some(25)),
        kind("autoscaling", "v2beta2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", true, &["hpa"], true, 12, Some(26)),
        kind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, &["pdb"], true, 21, None),
        kind("policy", "v1beta1", "PodDisruptionBudget", "poddisruptionbudgets", true, &["pdb"], true, 5, Some(25)),
        kind("policy", "v1beta1", "PodSecurityPolicy", "podsecuritypolicies", false, &["psp"], false, 10, Some(25)),
        kind("extensions", "v1beta1", "PodSecurityPolicy", "podsecuritypolicies", false, &["psp"], false, 2, Some(16)),
        kind("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, &["netpol"], false, 7, None),
        kind("extensions", "v1beta1", "NetworkPolicy", "networkpolicies", true, &["netpol"], false, 3, Some(16)),
        kind("networking.k8s.io", "v1", "Ingress", "ingresses", true, &["ing"], true, 19, None),
        kind("networking.k8s.io", "v1beta1", "Ingress", "ingresses", true, &["ing"], true, 14, Some(22)),
        kind("extensions", "v1beta1", "Ingress", "ingresses", true, &["ing"], true, 2, Some(22)),
        kind("networking.k8s.io", "v1", "IngressClass", "ingressclasses", false, &[], false, 19, None),
        kind("networking.k8s.io", "v1beta1", "IngressClass", "ingressclasses", false, &[], false, 18, Some(22)),
        kind("rbac.authorization.k8s.io", "v1", "Role", "roles", true, &[], false, 8, None),
        kind("rbac.authorization.k8s.io", "v1beta1", "Role", "roles", true, &[], false, 6, Some(22)),
        kind("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, &[], false, 8, None),
        kind("rbac.authorization.k8s.io", "v1beta1", "RoleBinding", "rolebindings", true, &[], false, 6, Some(22)),
        kind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, &[], false, 8, None),
        kind("rbac.authorization.k8s.io", "v1beta1", "ClusterRole", "clusterroles", false, &[], false, 6, Some(22)),
        kind("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, &[], false, 8, None),
        kind("rbac.authorization.k8s.io", "v1beta1", "ClusterRoleBinding", "clusterrolebindings", false, &[], false, 6, Some(22)),
        kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false, &["crd", "crds"], true, 16, None),
        kind("apiextensions.k8s.io", "v1beta1", "CustomResourceDefinition", "customresourcedefinitions", false, &["crd", "crds"], true, 7, Some(22)),
        kind("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", false, &["pc"], false, 14, None),
        kind("scheduling.k8s.io", "v1beta1", "PriorityClass", "priorityclasses", false, &["pc"], false, 11, Some(22)),
        kind("storage.k8s.io", "v1", "StorageClass", "storageclasses", false, &["sc"], false, 6, None),
        kind("storage.k8s.io", "v1beta1", "StorageClass", "storageclasses", false, &["sc"], false, 4, Some(22)),
        kind("storage.k8s.io", "v1", "CSIDriver", "csidrivers", false, &[], false, 18, None),
        kind("storage.k8s.io", "v1beta1", "CSIDriver", "csidrivers", false, &[], false, 14, Some(22)),
        kind("storage.k8s.io", "v1", "CSINode", "csinodes", false, &[], false, 17, None),
        kind("storage.k8s.io", "v1beta1", "CSINode", "csinodes", false, &[], false, 14, Some(22)),
        kind("storage.k8s.io", "v1", "VolumeAttachment", "volumeattachments", false, &[], true, 13, None),
        kind("storage.k8s.io", "v1beta1", "VolumeAttachment", "volumeattachments", false, &[], true, 10, Some(22)),
        kind("storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", true, &[], false, 24, None),
        kind("storage.k8s.io", "v1beta1", "CSIStorageCapacity", "csistoragecapacities", true, &[], false, 21, Some(27)),
        kind("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false, &[], false, 16, None),
        kind("admissionregistration.k8s.io", "v1beta1", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations", false, &[], false, 9, Some(22)),
        kind("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false, &[], false, 16, None),
        kind("admissionregistration.k8s.io", "v1beta1", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations", false, &[], false, 9, Some(22)),
        kind("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", "flowschemas", false, &[], true, 29, None),
        kind("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema", "flowschemas", false, &[], true, 26, Some(32)),
        kind("flowcontrol.apiserver.k8s.io", "v1beta2", "FlowSchema", "flowschemas", false, &[], true, 23, Some(29)),
        kind("flowcontrol.apiserver.k8s.io", "v1beta1", "FlowSchema", "flowschemas", false, &[], true, 20, Some(26)),
        kind("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration", "prioritylevelconfigurations", false, &[], true, 29, None),
        kind("flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration", "prioritylevelconfigurations", false, &[], true, 26, Some(32)),
        kind("flowcontrol.apiserver.k8s.io", "v1beta2", "PriorityLevelConfiguration", "prioritylevelconfigurations", false, &[], true, 23, Some(29)),
        kind("flowcontrol.apiserver.k8s.io", "v1beta1", "PriorityLevelConfiguration", "prioritylevelconfigurations", false, &[], true, 20, Some(26)),
        kind("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", true, &[], false, 21, None),
        kind("discovery.k8s.io", "v1beta1", "EndpointSlice", "endpointslices", true, &[], false, 17, Some(25)),
        kind("coordination.k8s.io", "v1", "Lease", "leases", true, &[], false, 14, None),
        kind("coordination.k8s.io", "v1beta1", "Lease", "leases", true, &[], false, 12, Some(22)),
        kind("events.k8s.io", "v1", "Event", "events", true, &["ev"], false, 19, None),
        kind("events.k8s.io", "v1beta1", "Event", "events", true, &["ev"], false, 8, Some(25)),
        kind("node.k8s.io", "v1", "RuntimeClass", "runtimeclasses", false, &[], false, 20, None),
        kind("node.k8s.io", "v1beta1", "RuntimeClass", "runtimeclasses", false, &[], false, 14, Some(25)),
        kind("apps", "v1", "ControllerRevision", "controllerrevisions", true, &[], false, 9, None),
];

impl Release {
    /// Built-in kinds this release serves.
    pub fn served(self) -> impl Iterator<Item = &'static BuiltinKind> {
        builtin_kinds().iter().filter(move |k| k.served_by(self))
    }

    /// Whether this release serves `kind` at `api_version`; `None` when the table does not
    /// know the kind at all (a custom resource).
    pub fn serves(self, api_version: &str, kind: &str) -> Option<bool> {
        let (group, version) = crate::split_api_version(api_version);
        let mut known = false;
        for k in builtin_kinds()
            .iter()
            .filter(|k| k.group == group && k.kind == kind)
        {
            known = true;
            if k.version == version && k.served_by(self) {
                return Some(true);
            }
        }
        known.then_some(false)
    }
}

/// The release that removed `kind` at `api_version` when nothing replaced it: a built-in
/// version the table marks removed, with no converter to another version and no version
/// of the same kind that is still served (`policy/v1beta1` PodSecurityPolicy: 1.25).
/// `None` for kinds that live on under another version, and for custom resources.
pub fn removed_without_successor(api_version: &str, kind: &str) -> Option<u32> {
    let (group, version) = crate::split_api_version(api_version);
    let row = builtin_kinds()
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)?;
    let removed = row.removed_in?;
    let lives_on = builtin_kinds()
        .iter()
        .any(|k| k.kind == kind && k.removed_in.is_none());
    (crate::convert::successors(api_version, kind).is_empty() && !lives_on).then_some(removed)
}

/// `Release` from "1.24", "v1.24.3", "1.24.0-gke.100" or "v0.0.0-master" (an error:
/// development builds do not say what they serve).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a Kubernetes version: write it as 1.<minor>, for example 1.24 or 1.36")]
pub struct ParseReleaseError {
    pub input: String,
}

impl FromStr for Release {
    type Err = ParseReleaseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseReleaseError {
            input: s.to_string(),
        };
        let t = s.trim().trim_start_matches('v');
        let mut parts = t.split(['.', '-', '+']);
        let major = parts.next().ok_or_else(err)?;
        let minor = parts.next().ok_or_else(err)?;
        if major != "1" {
            return Err(err());
        }
        let minor: u32 = minor.trim_end_matches('+').parse().map_err(|_| err())?;
        Ok(Release { minor })
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "1.{}", self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(minor: u32) -> Release {
        Release { minor }
    }

    #[test]
    fn release_1_24_serves_beta_pdb_but_not_beta_rbac() {
        assert_eq!(
            r(24).serves("policy/v1beta1", "PodDisruptionBudget"),
            Some(true)
        );
        assert_eq!(r(24).serves("policy/v1", "PodDisruptionBudget"), Some(true));
        assert_eq!(
            r(24).serves("rbac.authorization.k8s.io/v1beta1", "Role"),
            Some(false)
        );
        assert_eq!(
            r(24).serves("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition"),
            Some(false)
        );
        assert_eq!(
            r(24).serves("policy/v1beta1", "PodSecurityPolicy"),
            Some(true)
        );
    }

    #[test]
    fn current_serves_policy_v1_only() {
        let policy: Vec<_> = CURRENT
            .served()
            .filter(|k| k.group == "policy")
            .map(|k| (k.version, k.kind))
            .collect();
        assert_eq!(policy, vec![("v1", "PodDisruptionBudget")]);
        assert_eq!(CURRENT.serves("batch/v1beta1", "CronJob"), Some(false));
        assert_eq!(
            CURRENT.serves("autoscaling/v2", "HorizontalPodAutoscaler"),
            Some(true)
        );
        assert_eq!(
            CURRENT.serves("autoscaling/v2beta2", "HorizontalPodAutoscaler"),
            Some(false)
        );
    }

    #[test]
    fn removal_boundaries() {
        // The first release without the version no longer serves it; the one before does.
        for (av, kind, removed) in [
            ("rbac.authorization.k8s.io/v1beta1", "ClusterRole", 22),
            ("networking.k8s.io/v1beta1", "Ingress", 22),
            ("extensions/v1beta1", "Ingress", 22),
            ("batch/v1beta1", "CronJob", 25),
            ("autoscaling/v2beta2", "HorizontalPodAutoscaler", 26),
            ("storage.k8s.io/v1beta1", "CSIStorageCapacity", 27),
            ("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", 32),
        ] {
            assert_eq!(r(removed - 1).serves(av, kind), Some(true), "{av} {kind}");
            assert_eq!(r(removed).serves(av, kind), Some(false), "{av} {kind}");
        }
        assert_eq!(
            OLDEST.serves("extensions/v1beta1", "Deployment"),
            Some(false)
        );
        assert_eq!(r(20).serves("batch/v1", "CronJob"), Some(false));
        assert_eq!(r(21).serves("batch/v1", "CronJob"), Some(true));
    }

    #[test]
    fn unknown_kinds_are_none() {
        assert_eq!(CURRENT.serves("kudo.dev/v1beta1", "Instance"), None);
        assert_eq!(CURRENT.serves("v1", "Widget"), None);
    }

    #[test]
    fn one_row_per_group_version_kind_and_every_kind_has_a_served_version_now() {
        let table = builtin_kinds();
        for (i, a) in table.iter().enumerate() {
            assert!(
                !table[i + 1..]
                    .iter()
                    .any(|b| (b.group, b.version, b.kind) == (a.group, a.version, a.kind)),
                "duplicate row {}/{} {}",
                a.group,
                a.version,
                a.kind
            );
            assert!(a.removed_in.is_none_or(|r| r > a.since), "{a:?}");
            // Every kind still exists today under some group (extensions kinds moved),
            // except PodSecurityPolicy, which was removed without a successor.
            assert!(
                a.kind == "PodSecurityPolicy"
                    || table
                        .iter()
                        .any(|b| b.kind == a.kind && b.plural == a.plural && b.served_by(CURRENT)),
                "{} has no served version in {CURRENT}",
                a.kind
            );
        }
    }

    #[test]
    fn parses_versions() {
        assert_eq!("1.24".parse::<Release>(), Ok(r(24)));
        assert_eq!("v1.24.3".parse::<Release>(), Ok(r(24)));
        assert_eq!("1.24.0-gke.100".parse::<Release>(), Ok(r(24)));
        assert_eq!(" 1.36 ".parse::<Release>(), Ok(r(36)));
        assert_eq!("1.27+".parse::<Release>(), Ok(r(27)));
        for bad in ["v0.0.0-master", "2.1", "1", "", "1.x", "one.two"] {
            assert!(bad.parse::<Release>().is_err(), "{bad:?}");
        }
        assert_eq!(r(29).to_string(), "1.29");
    }
}
