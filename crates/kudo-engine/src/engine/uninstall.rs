//! Removing an instance: optional cleanup plan, every object it owns (including
//! cluster-scoped ones and PVCs left by StatefulSets), then the Instance itself.

use std::collections::BTreeMap;

use kudo_package::Package;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::error::EngineError;
use super::instance_object::instance_ref;
use super::metadata::LABEL_INSTANCE;
use super::plan_run::run_plan;
use super::removal::{CrdDeletion, Kept, Remover};
use super::run::RunRequest;
use crate::cluster::{Cluster, KUDO_API_VERSION, ObjectRef};
use kudo_plan::DependencyPackages;

/// What the cleanup plan needs, when the caller wants it run before removal.
#[derive(Debug, Clone, Copy)]
pub struct Cleanup<'a> {
    pub package: &'a Package,
    pub parameters: &'a BTreeMap<String, String>,
    /// The instance's `RunRequest::render_seed`, so cleanup renders what deploy did.
    pub render_seed: Option<&'a str>,
    /// The resolved dependency tree, as `RunRequest::dependencies`: KudoOperator tasks of
    /// the cleanup plan find repository and URL dependencies there, as other plans do.
    pub dependencies: Option<&'a DependencyPackages>,
}

/// Deletes the instance and everything it owns, and waits until all of it is gone;
/// returns the cluster-scoped objects it left for other instances or their data (see
/// [`super::removal`]). When `cleanup` is given and the operator has a `cleanup` plan,
/// it runs first; its failure stops the uninstall (nothing is deleted) so the user can
/// fix or skip it.
#[cfg(test)] // the crate's scenarios; the actions go through the `_only`/`_keeping` forms
pub async fn uninstall_instance(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    inventory: &[ObjectRef],
    cleanup: Option<Cleanup<'_>>,
    crd_deletion: CrdDeletion,
    cancel: &CancellationToken,
) -> Result<Vec<Kept>, EngineError> {
    uninstall_instance_keeping(
        cluster,
        namespace,
        name,
        inventory,
        cleanup,
        crd_deletion,
        &[],
        cancel,
    )
    .await
}

/// [`uninstall_instance`] that leaves `keep` alone although those objects carry the
/// instance label: the volume claims its StatefulSets made (see [`super::volumes`]),
/// which hold data the user asked to keep. Only the sweep for labelled objects the
/// inventory does not know consults it.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn uninstall_instance_keeping(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    inventory: &[ObjectRef],
    cleanup: Option<Cleanup<'_>>,
    crd_deletion: CrdDeletion,
    keep: &[ObjectRef],
    cancel: &CancellationToken,
) -> Result<Vec<Kept>, EngineError> {
    tracing::info!(instance = %name, namespace = %namespace, "uninstall started");
    let mut objects: Vec<ObjectRef> = inventory.to_vec();
    if let Some(c) = cleanup
        && c.package.operator.plans.contains_key("cleanup")
        && cluster.get(&instance_ref(namespace, name)).await?.is_some()
    {
        let outcome = run_plan(
            cluster,
            RunRequest {
                dependencies: c.dependencies,
                package: c.package,
                instance: name,
                namespace,
                parameters: c.parameters,
                plan: "cleanup",
                previous_inventory: inventory,
                render_seed: c.render_seed,
                crd_deletion,
                // The cleanup plan must never stop a destroy over a CRD's next version.
                crd_safety: super::crd_safety::CrdSafety::Off,
                // `Cleanup` carries no policy (yet): the cleanup plan waits by KUDO's rules.
                health: &super::readiness::HealthPolicy::Kudo,
                progress: None,
                tree: Default::default(),
            },
            cancel,
        )
        .await?;
        objects = outcome.inventory;
    }
    let remover = Remover {
        cluster,
        user: super::sharing::user_id(namespace, name),
        crd_deletion,
    };
    let mut kept = Vec::new();

    // Dependency instances (KudoOperator tasks) hang off this one by owner reference.
    // Removing them here, subtree by subtree, rather than leaving them to the garbage
    // collector, means their objects are gone when we return, and clusters without a
    // garbage collector (or with orphaning deletes) do not keep them.
    // What the caller keeps of this instance it keeps of its dependencies too (their
    // volume claims hold the same user's data).
    for child in owned_instances(cluster, namespace, name).await? {
        tracing::info!(instance = %child, parent = %name, "removing dependency instance");
        kept.extend(
            uninstall_boxed_keeping(cluster, namespace, &child, crd_deletion, keep, cancel).await?,
        );
    }

    kept.extend(remover.remove_all(&objects, cancel).await?);

    // Objects our inventory does not know (lost state, a failed first run) and PVCs
    // created from StatefulSet claim templates carry the instance label.
    let selector = format!("{LABEL_INSTANCE}={name}");
    let leftovers: Vec<ObjectRef> = cluster
        .list_labelled_map(namespace, &selector, |o| object_ref_unless_instance(&o))
        .await?
        .into_iter()
        .filter(|r| !keep.contains(r))
        .collect();
    kept.extend(remover.remove_all(&leftovers, cancel).await?);

    // Owned by the Instance, but not every cluster collects garbage (nor quickly).
    super::sensitive::remove_sensitive(cluster, namespace, name, cancel).await?;

    let r = instance_ref(namespace, name);
    cluster
        .delete_and_wait(&r, cancel)
        .await
        .map_err(|e| EngineError::from(e).with_object(&r))?;
    tracing::info!(instance = %name, namespace = %namespace, "uninstall complete");
    Ok(kept)
}

/// `uninstall_instance` without cleanup or inventory (the label sweep finds the objects),
/// boxed for use from inside a running plan (disabled dependencies).
pub(crate) fn uninstall_boxed<'a>(
    cluster: &'a Cluster,
    namespace: &'a str,
    name: &'a str,
    crd_deletion: CrdDeletion,
    cancel: &'a CancellationToken,
) -> futures::future::BoxFuture<'a, Result<Vec<Kept>, EngineError>> {
    uninstall_boxed_keeping(cluster, namespace, name, crd_deletion, &[], cancel)
}

/// [`uninstall_boxed`] that leaves `keep` alone (see [`uninstall_instance_keeping`]).
fn uninstall_boxed_keeping<'a>(
    cluster: &'a Cluster,
    namespace: &'a str,
    name: &'a str,
    crd_deletion: CrdDeletion,
    keep: &'a [ObjectRef],
    cancel: &'a CancellationToken,
) -> futures::future::BoxFuture<'a, Result<Vec<Kept>, EngineError>> {
    Box::pin(uninstall_instance_keeping(
        cluster,
        namespace,
        name,
        &[],
        None,
        crd_deletion,
        keep,
        cancel,
    ))
}

/// The objects of every dependency instance below `name` (at any depth), found by
/// their instance label: Terraform's state lists only the top instance's.
pub async fn descendant_objects(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Vec<ObjectRef>, EngineError> {
    let mut out = Vec::new();
    let mut queue = owned_instances(cluster, namespace, name).await?;
    while let Some(child) = queue.pop() {
        let selector = format!("{LABEL_INSTANCE}={child}");
        out.extend(
            cluster
                .list_labelled_map(namespace, &selector, |o| object_ref_unless_instance(&o))
                .await?,
        );
        queue.extend(owned_instances(cluster, namespace, &child).await?);
    }
    Ok(out)
}

/// Instances whose owner reference names the Instance `parent`.
async fn owned_instances(
    cluster: &Cluster,
    namespace: &str,
    parent: &str,
) -> Result<Vec<String>, EngineError> {
    let mut names: Vec<String> = cluster
        .list_selected_map(KUDO_API_VERSION, "Instance", Some(namespace), None, |o| {
            let owned = o
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|refs| {
                    refs.iter().any(|r| {
                        r.get("kind").and_then(Value::as_str) == Some("Instance")
                            && r.get("name").and_then(Value::as_str) == Some(parent)
                    })
                });
            let name = o.pointer("/metadata/name").and_then(Value::as_str);
            name.filter(|_| owned).map(str::to_string)
        })
        .await?
        .into_iter()
        .flatten()
        .collect();
    names.sort();
    Ok(names)
}

/// The object's reference, unless it is an Instance (those are removed as instances).
fn object_ref_unless_instance(o: &Value) -> Option<ObjectRef> {
    if is_instance(o) {
        return None;
    }
    ObjectRef::from_object(o).ok()
}

fn is_instance(o: &Value) -> bool {
    o.get("kind").and_then(Value::as_str) == Some("Instance")
        && o.get("apiVersion").and_then(Value::as_str) == Some(KUDO_API_VERSION)
}
