//! PersistentVolumeClaims an instance's StatefulSets created from their
//! `volumeClaimTemplates`. The package never renders them, so they are not in the
//! inventory, and Kubernetes keeps them when the StatefulSet goes (its data outlives the
//! workload unless `persistentVolumeClaimRetentionPolicy.whenDeleted` says `Delete`).
//! Destroy keeps them too by default and names them; on request it deletes them.
//!
//! The StatefulSet controller names each claim `<template>-<statefulset>-<ordinal>` and
//! labels it with the StatefulSet's `selector.matchLabels`, which is how they are found:
//! by those labels and that name pattern, so claims of other StatefulSets (or made by
//! hand) are never taken.

use std::collections::BTreeMap;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::EngineError;
use super::removal::DestroyError;
use crate::cluster::{Cluster, ObjectRef};

/// What a StatefulSet's claims look like; read before the StatefulSet is deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimSource {
    pub namespace: String,
    pub statefulset: String,
    pub templates: Vec<String>,
    /// `selector.matchLabels`, which the controller puts on every claim.
    pub selector: BTreeMap<String, String>,
}

impl ClaimSource {
    /// `None` for a StatefulSet without claim templates or selector labels.
    pub fn of(sts: &Value) -> Option<ClaimSource> {
        let namespace = sts.pointer("/metadata/namespace")?.as_str()?.to_string();
        let statefulset = sts.pointer("/metadata/name")?.as_str()?.to_string();
        let templates: Vec<String> = sts
            .pointer("/spec/volumeClaimTemplates")?
            .as_array()?
            .iter()
            .filter_map(|t| t.pointer("/metadata/name")?.as_str().map(str::to_string))
            .collect();
        let labels = sts.pointer("/spec/selector/matchLabels")?.as_object()?;
        let selector: BTreeMap<String, String> = labels
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
            .collect();
        (!templates.is_empty() && !selector.is_empty()).then_some(ClaimSource {
            namespace,
            statefulset,
            templates,
            selector,
        })
    }

    /// Whether `claim` carries the selector labels and is named like one of ours.
    fn made(&self, claim: &Value) -> bool {
        let labelled = self.selector.iter().all(|(k, v)| {
            claim
                .pointer("/metadata/labels")
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
                == Some(v.as_str())
        });
        labelled
            && claim
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .is_some_and(|n| self.names(n))
    }

    /// Whether `name` is one of this StatefulSet's claims: `<template>-<sts>-<ordinal>`.
    pub fn names(&self, name: &str) -> bool {
        self.templates.iter().any(|t| {
            name.strip_prefix(t.as_str())
                .and_then(|rest| rest.strip_prefix('-'))
                .and_then(|rest| rest.strip_prefix(self.statefulset.as_str()))
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|ordinal| {
                    !ordinal.is_empty() && ordinal.bytes().all(|b| b.is_ascii_digit())
                })
        })
    }
}

/// The claim sources of the StatefulSets among `inventory` that still exist.
pub async fn claim_sources(
    cluster: &Cluster,
    inventory: &[ObjectRef],
) -> Result<Vec<ClaimSource>, EngineError> {
    let mut out = Vec::new();
    for r in inventory.iter().filter(|r| r.kind == "StatefulSet") {
        let found = cluster
            .get(r)
            .await
            .map_err(|e| EngineError::from(e).with_object(r))?;
        out.extend(found.as_ref().and_then(ClaimSource::of));
    }
    Ok(out)
}

/// The claims of `sources` that exist now and would outlive their StatefulSet: a
/// claim the StatefulSet owns (retention policy `Delete`) goes with it.
pub(crate) async fn claims(
    cluster: &Cluster,
    sources: &[ClaimSource],
) -> Result<Vec<ObjectRef>, EngineError> {
    let mut out = Vec::new();
    for s in sources {
        let listed = cluster
            .list_kind("v1", "PersistentVolumeClaim", Some(&s.namespace))
            .await
            .map_err(EngineError::from)?;
        for claim in listed {
            let Some(name) = claim.pointer("/metadata/name").and_then(Value::as_str) else {
                continue;
            };
            let owned_by_sts = claim
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| refs.iter().any(|o| o["kind"] == "StatefulSet"));
            let deleting = claim.pointer("/metadata/deletionTimestamp").is_some();
            if s.made(&claim) && !owned_by_sts && !deleting {
                out.push(ObjectRef::new(
                    "v1",
                    "PersistentVolumeClaim",
                    Some(&s.namespace),
                    name,
                ));
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Deletes the claims and waits until each is gone.
pub async fn delete_claims(
    cluster: &Cluster,
    claims: &[ObjectRef],
    cancel: &CancellationToken,
) -> Result<(), EngineError> {
    for r in claims {
        cluster
            .delete_and_wait(r, cancel)
            .await
            .map_err(|e| EngineError::from(e).with_object(r))?;
    }
    Ok(())
}

/// An instance's claims: found before its uninstall, while its StatefulSets exist
/// ([`InstanceVolumes::find`]), left alone by it ([`InstanceVolumes::keep`]: the claims
/// carry the instance label, and the uninstall's sweep for labelled leftovers would
/// take them), and settled after it ([`InstanceVolumes::settle`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct InstanceVolumes {
    sources: Vec<ClaimSource>,
    claims: Vec<ObjectRef>,
}

/// Claims an uninstall could not look for beforehand. Each is a warning, not a failed
/// destroy: the uninstall then handles them as any object labelled with the instance.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NotChecked {
    #[error(
        "The dependency instances of {name} could not be listed ({error}), so the volume claims of their StatefulSets are handled as the uninstall handles any object labelled with them (deleted). List what is left with `kubectl get pvc`."
    )]
    Dependencies { name: String, error: EngineError },
    #[error(
        "The StatefulSets of the instance could not be read before they were deleted ({0}), so their PersistentVolumeClaims were not looked for: claims labelled with the instance were deleted with it, others were left. List what is left with `kubectl get pvc`."
    )]
    StatefulSets(EngineError),
}

impl NotChecked {
    pub fn summary(&self) -> &'static str {
        match self {
            NotChecked::Dependencies { .. } => "Dependency volumes not checked",
            NotChecked::StatefulSets(_) => "Volumes not checked",
        }
    }
}

impl InstanceVolumes {
    /// The claims of instance `name`'s StatefulSets (among `inventory`) and of its
    /// dependency instances': they hold the same user's data, so they are kept or
    /// deleted with the instance's. Read before the uninstall deletes the StatefulSets;
    /// what cannot be read is left to the uninstall and said in [`NotChecked`].
    pub async fn of_instance(
        cluster: &Cluster,
        namespace: &str,
        name: &str,
        inventory: &[ObjectRef],
    ) -> (InstanceVolumes, Vec<NotChecked>) {
        let mut with_children = inventory.to_vec();
        let mut not_checked = Vec::new();
        match super::uninstall::descendant_objects(cluster, namespace, name).await {
            Ok(objects) => with_children.extend(objects),
            Err(error) => not_checked.push(NotChecked::Dependencies {
                name: name.to_string(),
                error,
            }),
        }
        match InstanceVolumes::find(cluster, &with_children).await {
            Ok(volumes) => (volumes, not_checked),
            Err(e) => {
                not_checked.push(NotChecked::StatefulSets(e));
                (InstanceVolumes::default(), not_checked)
            }
        }
    }

    /// The claims of the StatefulSets among `inventory`.
    pub async fn find(
        cluster: &Cluster,
        inventory: &[ObjectRef],
    ) -> Result<InstanceVolumes, EngineError> {
        let sources = claim_sources(cluster, inventory).await?;
        let claims = claims(cluster, &sources).await?;
        Ok(InstanceVolumes { sources, claims })
    }

    /// What the uninstall must leave alone: every claim, unless they are to be deleted.
    pub fn keep(&self, delete: bool) -> &[ObjectRef] {
        if delete { &[] } else { &self.claims }
    }

    /// After the uninstall, the claims are listed again: with `delete`, those the
    /// uninstall did not take (claims not labelled with the instance) are deleted and
    /// waited for; without it, they stay, as Kubernetes keeps them. Returns the claims
    /// kept.
    pub async fn settle(
        &self,
        cluster: &Cluster,
        delete: bool,
        cancel: &CancellationToken,
    ) -> Result<Vec<ObjectRef>, DestroyError> {
        let claims = claims(cluster, &self.sources)
            .await
            .map_err(DestroyError::ListClaims)?;
        if !delete || claims.is_empty() {
            return Ok(claims);
        }
        delete_claims(cluster, &claims, cancel)
            .await
            .map_err(DestroyError::DeleteClaims)?;
        tracing::info!(
            count = claims.len(),
            "deleted the volume claims of the instance's StatefulSets"
        );
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claim_names_follow_the_controller_pattern() {
        let sts = json!({
            "metadata": {"name": "zk", "namespace": "ns"},
            "spec": {"selector": {"matchLabels": {"app": "zk"}},
                     "volumeClaimTemplates": [{"metadata": {"name": "zk-datadir"}}]},
        });
        let s = ClaimSource::of(&sts).expect("source");
        assert!(s.made(
            &json!({"metadata": {"name": "zk-datadir-zk-1", "labels": {"app": "zk", "x": "y"}}})
        ));
        assert!(
            !s.made(&json!({"metadata": {"name": "zk-datadir-zk-1", "labels": {"app": "other"}}}))
        );
        assert!(s.names("zk-datadir-zk-0"));
        assert!(s.names("zk-datadir-zk-12"));
        assert!(!s.names("zk-datadir-zk-"));
        assert!(!s.names("zk-datadir-zk2-0"));
        assert!(!s.names("other-zk-0"));
        let none = json!({"metadata": {"name": "a", "namespace": "n"}, "spec": {}});
        assert_eq!(ClaimSource::of(&none), None);
    }
}
