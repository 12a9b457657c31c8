//! Removing objects without losing anyone's data: in the reverse of the order kinds
//! depend on each other (custom resources while their operator still runs and before
//! their CRD, workloads before the RBAC and config they use, CRDs and namespaces last),
//! and a cluster-scoped object only when no other instance uses it. A
//! CustomResourceDefinition also stays while custom resources of it exist that the
//! instance being removed does not manage: deleting it would delete them.
//!
//! Uninstall, pruning and Delete tasks all remove through here.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::concurrent::each_until_failure;
use super::error::EngineError;
use super::sharing::{self, ATTEMPTS};
use crate::cluster::{Cluster, ClusterError, Guarded, ObjectRef, Propagation};

/// Whether a CustomResourceDefinition an instance rendered may be deleted with it
/// (`kudo_instance.crd_deletion`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CrdDeletion {
    /// Deleted when no other instance uses it and no custom resource of it is left.
    #[default]
    WhenUnused,
    /// Never deleted; the instance only stops recording itself as a user.
    Keep,
}

impl CrdDeletion {
    pub const VALUES: [&'static str; 2] = ["when-unused", "keep"];

    pub fn parse(s: &str) -> Option<CrdDeletion> {
        match s {
            "when-unused" => Some(CrdDeletion::WhenUnused),
            "keep" => Some(CrdDeletion::Keep),
            _ => None,
        }
    }
}

/// Why a destroy of an instance did not go all the way: its uninstall stopped with the
/// instance (or part of it) still there, or, once the instance was gone, the volume
/// claims its StatefulSets left behind could not be settled ([`super::Destroyed::volumes`]).
#[derive(Debug, thiserror::Error)]
pub enum DestroyError {
    /// The cleanup plan or the removal of the instance's objects failed. Nothing after
    /// it ran: a second destroy resumes it.
    #[error("cannot remove the instance: {error}")]
    Uninstall {
        #[source]
        error: EngineError,
        /// The request's timeout, when running out of it is what stopped the uninstall
        /// (rather than the caller's cancellation).
        timed_out: Option<Duration>,
    },
    /// The claims could not be listed after the uninstall.
    #[error("cannot list the claims: {0}")]
    ListClaims(#[source] EngineError),
    /// The claims to delete could not all be deleted.
    #[error("cannot delete the claims: {0}")]
    DeleteClaims(#[source] EngineError),
}

/// An object removal left in place, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub object: ObjectRef,
    pub reason: KeptReason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeptReason {
    /// Other instances still use it (`namespace/instance`).
    UsedBy(Vec<String>),
    /// Custom resources of this CRD exist that the removed instance did not manage.
    CustomResources(Vec<String>),
    /// `crd_deletion = "keep"`.
    Setting,
}

impl Kept {
    /// Whether the user should hear about it: a setting they chose is no news.
    pub fn is_notable(&self) -> bool {
        !matches!(self.reason, KeptReason::Setting)
    }
}

impl fmt::Display for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 10;
        let list = |items: &[String]| {
            let mut s = items
                .iter()
                .take(SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            if items.len() > SHOWN {
                s.push_str(&format!(" and {} more", items.len() - SHOWN));
            }
            s
        };
        match &self.reason {
            KeptReason::UsedBy(users) => write!(
                f,
                "{} was kept: still used by {}; it goes with the last instance that uses it.",
                self.object,
                list(users)
            ),
            KeptReason::CustomResources(crs) => write!(
                f,
                "{} was kept: deleting it would delete the custom resources of it that this instance does not manage: {}. Delete those first (or the CRD by hand) if they are no longer wanted.",
                self.object,
                list(crs)
            ),
            KeptReason::Setting => write!(f, "{} was kept (crd_deletion = \"keep\")", self.object),
        }
    }
}

fn is_crd(r: &ObjectRef) -> bool {
    r.kind == "CustomResourceDefinition" && r.group() == "apiextensions.k8s.io"
}

/// Where a kind comes in the order objects are created in: a kind that others need
/// comes earlier (namespaces, CRDs, config and identities, RBAC, services, workloads),
/// custom resources after the workloads that serve them, and admission webhooks and
/// API services last, as they can block every other request once they exist. Removal
/// runs this order backwards.
pub(crate) fn apply_rank(r: &ObjectRef) -> u8 {
    let builtin = r.group().is_empty() || r.group().ends_with(".k8s.io") || is_core_group(r);
    match r.kind.as_str() {
        "Namespace" if r.group().is_empty() => 0,
        "CustomResourceDefinition" if is_crd(r) => 1,
        "PriorityClass"
        | "StorageClass"
        | "ServiceAccount"
        | "Secret"
        | "ConfigMap"
        | "PersistentVolume"
        | "PersistentVolumeClaim"
        | "ResourceQuota"
        | "LimitRange"
        | "NetworkPolicy"
        | "PodDisruptionBudget"
        | "PodSecurityPolicy"
            if builtin =>
        {
            2
        }
        "ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding" if builtin => 3,
        "Service" | "Endpoints" | "EndpointSlice" if builtin => 4,
        "Pod"
        | "ReplicaSet"
        | "ReplicationController"
        | "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "Job"
        | "CronJob"
        | "HorizontalPodAutoscaler"
            if builtin =>
        {
            5
        }
        "Ingress" | "IngressClass" if builtin => 6,
        "APIService"
        | "MutatingWebhookConfiguration"
        | "ValidatingWebhookConfiguration"
        | "ValidatingAdmissionPolicy"
        | "ValidatingAdmissionPolicyBinding"
            if builtin =>
        {
            8
        }
        // Other built-in kinds (Leases, CSRs, ...) need nothing and are needed by
        // nothing we know of; custom resources need their CRD and their operator.
        _ if builtin => 4,
        _ => 7,
    }
}

/// How uninstall and pruning delete an object. Foreground for the kinds that own what
/// must be gone before the next rank goes: workloads (their ReplicaSets, Pods and
/// claimed volumes go before the ConfigMaps, Secrets, ServiceAccounts and RBAC they
/// use) and custom resources (what their operator made for them goes while the
/// operator still runs). KUDO's
/// Delete task deletes everything in the foreground (`deleteResource` in
/// pkg/engine/task/task_delete.go) and its uninstall in the background
/// (`DeleteInstance` in pkg/kudoctl/util/kudo/kudo.go). Background for the rest: a
/// ConfigMap, Secret, Service or Role owns nothing anyone waits for, and a foreground
/// deletion waits for the garbage collector even when nothing is owned: 1,000
/// ConfigMaps took 73 s that way on a 1.36 API server, a few seconds in the background.
pub(crate) fn propagation(r: &ObjectRef) -> Propagation {
    match apply_rank(r) {
        5 | 7 => Propagation::Foreground,
        _ => Propagation::Background,
    }
}

/// Built-in groups whose names do not end in `.k8s.io`.
fn is_core_group(r: &ObjectRef) -> bool {
    matches!(
        r.group(),
        "apps" | "batch" | "autoscaling" | "policy" | "extensions"
    )
}

/// Removes objects on behalf of one instance.
pub(crate) struct Remover<'a> {
    pub cluster: &'a Cluster,
    /// The instance, as [`sharing::user_id`] names it.
    pub user: String,
    pub crd_deletion: CrdDeletion,
}

impl Remover<'_> {
    /// Removes `objects`, later-created kinds first; objects of one rank go
    /// concurrently (a bounded number at a time), and each rank is gone before the next
    /// starts. After a failure no further object starts.
    pub async fn remove_all(
        &self,
        objects: &[ObjectRef],
        cancel: &CancellationToken,
    ) -> Result<Vec<Kept>, EngineError> {
        let mut waves: BTreeMap<u8, Vec<&ObjectRef>> = BTreeMap::new();
        for r in objects {
            waves.entry(apply_rank(r)).or_default().push(r);
        }
        let mut kept = Vec::new();
        for (_, wave) in waves.into_iter().rev() {
            let removed =
                each_until_failure(wave, |r| self.remove(r, propagation(r), cancel)).await?;
            kept.extend(removed.into_iter().flatten());
        }
        Ok(kept)
    }

    /// Removes one object (or only this instance's claim on it), deleting it with
    /// `propagation`, and waits until it is gone. Returns what was kept instead, and why.
    pub async fn remove(
        &self,
        r: &ObjectRef,
        propagation: Propagation,
        cancel: &CancellationToken,
    ) -> Result<Option<Kept>, EngineError> {
        let outcome = match r.namespace {
            Some(_) => self
                .cluster
                .delete_as_and_wait(r, propagation, cancel)
                .await
                .map(|()| None),
            None => self.release(r, propagation, cancel).await,
        };
        let kept = outcome.map_err(|e| EngineError::from(e).with_object(r))?;
        match &kept {
            Some(k) => tracing::info!(object = %r, kept = %k, "kept"),
            None => tracing::info!(object = %r, "deleted"),
        }
        Ok(kept)
    }

    /// A cluster-scoped object: drop this instance from its users; delete it when none
    /// is left and (for a CRD) no custom resource of it would go with it.
    async fn release(
        &self,
        r: &ObjectRef,
        propagation: Propagation,
        cancel: &CancellationToken,
    ) -> Result<Option<Kept>, ClusterError> {
        for _ in 0..ATTEMPTS {
            let Some(obj) = self.cluster.get(r).await? else {
                return Ok(None);
            };
            let users =
                sharing::users_of(&obj).unwrap_or_else(|| sharing::legacy_users(&obj, &self.user));
            let others: Vec<String> = users.iter().filter(|u| **u != self.user).cloned().collect();
            let keep = if !others.is_empty() {
                Some(KeptReason::UsedBy(others))
            } else if is_crd(r) && self.crd_deletion == CrdDeletion::Keep {
                Some(KeptReason::Setting)
            } else if is_crd(r) {
                let remaining = self.cluster.custom_resources_of(&obj).await?;
                (!remaining.is_empty()).then_some(KeptReason::CustomResources(remaining))
            } else {
                None
            };
            match keep {
                Some(reason) => {
                    if let Some(mut recorded) = sharing::users_of(&obj)
                        && recorded.remove(&self.user)
                        && sharing::write_users(self.cluster, r, &obj, &recorded).await?
                            == Guarded::Stale
                    {
                        continue;
                    }
                    return Ok(Some(Kept {
                        object: r.clone(),
                        reason,
                    }));
                }
                None => {
                    let rv = sharing::resource_version(&obj);
                    match self
                        .cluster
                        .delete_at_and_wait(r, rv, propagation, cancel)
                        .await?
                    {
                        Guarded::Stale => continue,
                        Guarded::Done(()) | Guarded::Gone => return Ok(None),
                    }
                }
            }
        }
        Err(ClusterError::Other {
            verb: "remove",
            object: r.to_string(),
            message: format!(
                "the object kept changing under {ATTEMPTS} attempts to decide whether another instance still uses it"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(api_version: &str, kind: &str, ns: Option<&str>) -> ObjectRef {
        ObjectRef::new(api_version, kind, ns, "x")
    }

    #[test]
    fn custom_resources_go_before_their_operator_and_crds_near_last() {
        let order = |objs: &[ObjectRef]| {
            let mut v: Vec<_> = objs.to_vec();
            v.sort_by_key(|o| std::cmp::Reverse(apply_rank(o)));
            v.into_iter().map(|o| o.kind).collect::<Vec<_>>()
        };
        let objs = [
            r("v1", "Namespace", None),
            r("apiextensions.k8s.io/v1", "CustomResourceDefinition", None),
            r("rbac.authorization.k8s.io/v1", "ClusterRole", None),
            r("v1", "ConfigMap", Some("a")),
            r("apps/v1", "Deployment", Some("a")),
            r("example.com/v1", "Widget", Some("a")),
            r("v1", "Service", Some("a")),
            r(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
                None,
            ),
        ];
        assert_eq!(
            order(&objs),
            vec![
                "ValidatingWebhookConfiguration",
                "Widget",
                "Deployment",
                "Service",
                "ClusterRole",
                "ConfigMap",
                "CustomResourceDefinition",
                "Namespace",
            ]
        );
    }

    #[test]
    fn a_custom_kind_named_like_a_builtin_is_a_custom_resource() {
        assert_eq!(apply_rank(&r("example.com/v1", "Deployment", Some("a"))), 7);
        assert_eq!(
            apply_rank(&r("example.com/v1", "CustomResourceDefinition", None)),
            7
        );
    }

    #[test]
    fn only_owners_of_what_must_go_first_are_deleted_in_the_foreground() {
        let fg = |api_version, kind, ns| propagation(&r(api_version, kind, ns));
        assert_eq!(
            fg("apps/v1", "Deployment", Some("a")),
            Propagation::Foreground
        );
        assert_eq!(fg("batch/v1", "Job", Some("a")), Propagation::Foreground);
        assert_eq!(
            fg("example.com/v1", "Widget", Some("a")),
            Propagation::Foreground
        );
        assert_eq!(fg("v1", "ConfigMap", Some("a")), Propagation::Background);
        assert_eq!(fg("v1", "Service", Some("a")), Propagation::Background);
        assert_eq!(
            fg("rbac.authorization.k8s.io/v1", "ClusterRole", None),
            Propagation::Background
        );
    }

    #[test]
    fn kept_messages_say_why_and_what_to_do() {
        let crd = r("apiextensions.k8s.io/v1", "CustomResourceDefinition", None);
        let msg = Kept {
            object: crd.clone(),
            reason: KeptReason::CustomResources(vec!["Widget b/w1".into()]),
        }
        .to_string();
        assert!(msg.contains("Widget b/w1") && msg.contains("kept"), "{msg}");
        let msg = Kept {
            object: crd,
            reason: KeptReason::UsedBy(vec!["b/wb".into()]),
        }
        .to_string();
        assert!(msg.contains("b/wb"), "{msg}");
        assert_eq!(CrdDeletion::parse("keep"), Some(CrdDeletion::Keep));
        assert_eq!(CrdDeletion::parse("always"), None);
    }
}
