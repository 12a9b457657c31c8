//! The three KUDO CRDs. Schemas keep unknown fields: KUDO's own CRDs were loose too, and
//! a strict schema here would reject objects a real KUDO wrote (import).

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::discovery::ServedKind;
use super::established::is_established;
use super::{Cluster, ClusterError, ObjectRef, Waited};

pub const KUDO_GROUP: &str = "kudo.dev";
pub const KUDO_API_VERSION: &str = "kudo.dev/v1beta1";

const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
// Establishing a CRD takes the API server a moment; minutes means something is wrong.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(120);

fn crd(kind: &str, plural: &str, status_subresource: bool) -> Value {
    let mut version = json!({
        "name": "v1beta1",
        "served": true,
        "storage": true,
        "schema": { "openAPIV3Schema": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {
                "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                "status": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
            },
        }},
    });
    if status_subresource {
        version["subresources"] = json!({ "status": {} });
    }
    json!({
        "apiVersion": CRD_API_VERSION,
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("{plural}.{KUDO_GROUP}"), "labels": { "app": "kudo-manager" } },
        "spec": {
            "group": KUDO_GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": format!("{kind}List"),
                "plural": plural,
                "singular": kind.to_lowercase(),
            },
            "versions": [version],
        },
    })
}

pub(crate) fn kudo_crds() -> Vec<Value> {
    vec![
        crd("Operator", "operators", false),
        crd("OperatorVersion", "operatorversions", false),
        crd("Instance", "instances", true),
    ]
}

/// The KUDO CRDs whose kinds the cluster does not serve, found through discovery of
/// `kudo.dev/v1beta1` (one request, which every authenticated user may make): when it
/// serves all three, nothing about the CRDs needs reading, so credentials without
/// rights on cluster-scoped objects (a namespace's tenant) get on.
async fn missing(cluster: &Cluster) -> Result<Vec<Value>, ClusterError> {
    // One discovery request for the three: a group-version found unserved is not asked
    // for again by the next kind (each would ask, one after another).
    let cluster = &cluster.remembering_misses();
    let mut missing = Vec::new();
    for manifest in kudo_crds() {
        let kind = manifest
            .pointer("/spec/names/kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match cluster.resolve(KUDO_API_VERSION, kind).await {
            Ok(_) => {}
            Err(ClusterError::UnknownKind { .. }) => missing.push(manifest),
            Err(e) => return Err(e),
        }
    }
    Ok(missing)
}

/// The CRD `r` as stored; a refusal to read it counts as absent, so that what follows
/// (creating it) meets the refusal that says which right is missing.
async fn stored(cluster: &Cluster, r: &ObjectRef) -> Result<Option<Value>, ClusterError> {
    match cluster.get(r).await {
        Err(e) if e.trouble() == super::Trouble::Denied => Ok(None),
        other => other,
    }
}

/// What [`ensure`] would meet, asked with a server-side dry-run of each missing CRD and
/// nothing written: for the plan of `kudo_operator`, so that credentials that may not
/// install KUDO's CRDs fail the plan with the API server's refusal. Only refusals of
/// the credentials are returned; anything else the apply meets and reports itself.
pub(crate) async fn check(cluster: &Cluster) -> Result<(), ClusterError> {
    // The three at once: each waits on the network, none depends on another.
    let checks = missing(cluster)
        .await?
        .into_iter()
        .map(|manifest| async move {
            let r = ObjectRef::from_object(&manifest)?;
            // The dry-run goes beside the read rather than after it: it writes nothing,
            // and its answer only counts when the CRD is not stored.
            let (stored, dry_run) =
                futures::future::join(stored(cluster, &r), cluster.apply(&manifest, true)).await;
            if stored?.is_some() {
                return Ok(());
            }
            match dry_run {
                Err(e) if e.trouble() == super::Trouble::Denied => Err(e),
                Err(e) => {
                    tracing::debug!(crd = %r.name, error = %e, "dry-run of a KUDO CRD failed");
                    Ok(())
                }
                Ok(_) => Ok(()),
            }
        });
    futures::future::join_all(checks)
        .await
        .into_iter()
        .collect::<Result<(), ClusterError>>()
}

/// What [`ensure`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrdsEnsured {
    /// The three were served already.
    Served,
    /// Some were created (or were still being established) and are served now.
    Established {
        /// The OperatorVersion CRD did not exist: no OperatorVersion can either.
        operator_versions_created: bool,
    },
}

pub(crate) async fn ensure(cluster: &Cluster) -> Result<CrdsEnsured, ClusterError> {
    // Whether to create them is the server's word, not the discovery file's: someone
    // may have deleted them since an earlier process wrote it.
    cluster.confirm_group_version(KUDO_API_VERSION).await?;
    // The three at once: none depends on another.
    let creates = missing(cluster)
        .await?
        .into_iter()
        .map(|manifest| async move {
            let r = ObjectRef::from_object(&manifest)?;
            match stored(cluster, &r).await? {
                // Already there and served: nothing to wait for.
                Some(existing) if is_established(&existing) => Ok(None),
                Some(_) => Ok(Some((r, false))),
                None => {
                    tracing::info!(crd = %r.name, "creating KUDO CRD");
                    cluster.apply(&manifest, false).await?;
                    Ok(Some((r, true)))
                }
            }
        });
    let mut pending = Vec::new();
    for created in futures::future::join_all(creates).await {
        pending.extend(created?);
    }
    if pending.is_empty() {
        return Ok(CrdsEnsured::Served);
    }
    let operator_versions_created = pending
        .iter()
        .any(|(r, created)| *created && r.name == format!("operatorversions.{KUDO_GROUP}"));
    let pending: Vec<ObjectRef> = pending.into_iter().map(|(r, _)| r).collect();
    // Bounded wait: the signature has no cancellation token, and CRDs normally settle in
    // well under a second.
    let cancel = CancellationToken::new();
    let timer = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(ESTABLISH_TIMEOUT).await;
            cancel.cancel();
        })
    };
    let result = wait_established(cluster, &pending, &cancel).await;
    timer.abort();
    result?;
    // Established is the server saying it serves each kind under the names the
    // definition asked for (`status.acceptedNames`): the three are what discovery of
    // the group-version would now answer, so nothing asks it again.
    cluster.learned_group_version(KUDO_API_VERSION, served_kinds());
    Ok(CrdsEnsured::Established {
        operator_versions_created,
    })
}

/// The kinds of `kudo.dev/v1beta1` as discovery lists them once the three CRDs are
/// established: namespaced, with the verbs the API server serves for every custom
/// resource.
fn served_kinds() -> Vec<ServedKind> {
    kudo_crds()
        .iter()
        .filter_map(|manifest| {
            let names = manifest.pointer("/spec/names")?;
            let kind = names.get("kind")?.as_str()?;
            let plural = names.get("plural")?.as_str()?;
            let gvk = kube::core::GroupVersionKind::gvk(KUDO_GROUP, "v1beta1", kind);
            Some(ServedKind {
                ar: kube::core::ApiResource::from_gvk_with_plural(&gvk, plural),
                namespaced: true,
                verbs: super::established::CUSTOM_RESOURCE_VERBS
                    .iter()
                    .map(|v| v.to_string())
                    .collect(),
            })
        })
        .collect()
}

async fn wait_established(
    cluster: &Cluster,
    crds: &[ObjectRef],
    cancel: &CancellationToken,
) -> Result<(), ClusterError> {
    // Watched all at once: the server establishes them side by side.
    let watches = crds.iter().map(|r| {
        cluster.watch_until(r, cancel, |seen| {
            seen.is_some_and(is_established).then_some(())
        })
    });
    let waited = futures::future::join_all(watches).await;
    for (r, waited) in crds.iter().zip(waited) {
        if waited? == Waited::Cancelled {
            return Err(ClusterError::Cancelled {
                what: format!(
                    "waiting {}s for CRD {} to become Established (check the API server's \
                     apiextensions controller)",
                    ESTABLISH_TIMEOUT.as_secs(),
                    r.name
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_has_status_subresource_others_not() {
        let crds = kudo_crds();
        let names: Vec<&str> = crds
            .iter()
            .filter_map(|c| c.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        assert_eq!(
            names,
            [
                "operators.kudo.dev",
                "operatorversions.kudo.dev",
                "instances.kudo.dev"
            ]
        );
        assert!(
            crds[2]
                .pointer("/spec/versions/0/subresources/status")
                .is_some()
        );
        assert!(crds[0].pointer("/spec/versions/0/subresources").is_none());
        assert_eq!(crds[1].pointer("/spec/scope"), Some(&json!("Namespaced")));
    }

    #[test]
    fn established_condition() {
        assert!(is_established(
            &json!({"status": {"conditions": [{"type": "Established", "status": "True"}]}})
        ));
        assert!(!is_established(
            &json!({"status": {"conditions": [{"type": "Established", "status": "False"}]}})
        ));
        assert!(!is_established(&json!({})));
    }
}
