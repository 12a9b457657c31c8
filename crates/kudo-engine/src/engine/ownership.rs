//! Nothing is taken from another instance: a namespaced object another Instance
//! controls, or an Instance that is not a dependency of ours, is never applied over.
//! Every instance applies with the same field manager, so server-side apply alone would
//! hand such an object to whoever applied last (and the other's owner reference with it).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::error::EngineError;
use super::observe::LIST_FROM;
use super::prune::ObjectIndex;
use crate::cluster::{Cluster, ClusterError, KUDO_API_VERSION, ObjectRef, Trouble};

/// Server-side apply of `obj` (named `r`) by the one ownership rule the plan's dry-run,
/// the step rehearsal and the run share: an object the previous inventory records is
/// ours by Terraform's record (an import adopts what KUDO's manager wrote), so the
/// apply takes its fields back; any other is applied without force, so a field another
/// manager holds is a conflict rather than a silent overwrite.
pub(crate) async fn apply_as_recorded(
    cluster: &Cluster,
    previous_inventory: &ObjectIndex<'_>,
    r: &ObjectRef,
    obj: &Value,
    dry_run: bool,
) -> Result<Value, ClusterError> {
    match previous_inventory.contains(r) {
        true => cluster.apply_owned(obj, dry_run).await,
        false => cluster.apply(obj, dry_run).await,
    }
}

/// An object as a LIST of its namespace found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listed {
    Absent,
    Present {
        /// The Instance that controls it, if any.
        controller: Option<String>,
        /// Its `resourceVersion`: a later plan's dry-run of the same object found at the
        /// same version gets the same answer (see `cluster::dry_run_cache`).
        version: String,
    },
}

impl Listed {
    /// The object's state, as a dry-run answer kept between plans is keyed by.
    pub(crate) fn seen(&self) -> crate::cluster::Seen<'_> {
        match self {
            Listed::Absent => crate::cluster::Seen::Absent,
            Listed::Present { version, .. } => crate::cluster::Seen::At(version),
        }
    }
}

/// The objects [`listed_controllers`] found, by reference.
pub(crate) type ListedObjects = HashMap<ObjectRef, Listed>;

/// The namespaced objects of `refs` read in bulk: for each object whose kind and
/// namespace `refs` holds at least [`LIST_FROM`] of, one LIST of that namespace (without
/// a selector: another instance's object carries its own label) answers whether it
/// exists, who controls it and at which version, where a GET each would cost a request
/// per object. An object absent from the list does not exist. Objects of smaller
/// groups, and of groups the credentials may not list, are left out: the caller reads
/// those one by one, as before.
pub(crate) async fn listed_controllers(cluster: &Cluster, refs: &[&ObjectRef]) -> ListedObjects {
    let groups = list_groups(refs);
    let lists = groups.into_iter().map(|((api_version, kind, ns), members)| async move {
        let listed = cluster
            .list_selected_map(api_version, kind, Some(ns), None, |item| {
                let name = item.pointer("/metadata/name").and_then(Value::as_str)?;
                let version = item
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                Some((
                    name.to_string(),
                    Listed::Present {
                        controller: controlling_instance(&item).map(str::to_string),
                        version: version.to_string(),
                    },
                ))
            })
            .await;
        match listed {
            Ok(found) => {
                let mut found: HashMap<String, Listed> = found.into_iter().flatten().collect();
                members
                    .into_iter()
                    .map(|r| (r.clone(), found.remove(&r.name).unwrap_or(Listed::Absent)))
                    .collect()
            }
            Err(e) => {
                tracing::debug!(error = %e, kind, namespace = ns, "cannot list; reading each object");
                Vec::new()
            }
        }
    });
    futures::future::join_all(lists)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// The objects of `refs` [`listed_controllers`] lists, by kind and namespace.
fn list_groups<'r>(
    refs: &[&'r ObjectRef],
) -> BTreeMap<(&'r str, &'r str, &'r str), Vec<&'r ObjectRef>> {
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&ObjectRef>> = BTreeMap::new();
    for r in refs {
        if let Some(ns) = r.namespace.as_deref() {
            groups
                .entry((r.api_version.as_str(), r.kind.as_str(), ns))
                .or_default()
                .push(r);
        }
    }
    groups.retain(|_, members| members.len() >= LIST_FROM);
    groups
}

/// The LIST of [`listed_controllers`] for a plan's objects, made once, by whichever of
/// the plan's checks needs it first: the checks' dry-runs need not wait for it when no
/// earlier plan's answer could be taken (nothing is kept, see
/// [`Cluster::keeps_dry_runs`]), so they go out beside it.
pub(crate) struct Listing {
    refs: Vec<ObjectRef>,
    /// The objects whose kind and namespace are listed.
    members: std::collections::HashSet<ObjectRef>,
    found: tokio::sync::OnceCell<ListedObjects>,
}

impl Listing {
    pub(crate) fn new(refs: &[&ObjectRef]) -> Listing {
        let members = list_groups(refs).into_values().flatten().cloned().collect();
        Listing {
            refs: refs.iter().map(|r| (*r).clone()).collect(),
            members,
            found: tokio::sync::OnceCell::new(),
        }
    }

    /// What the LIST found, listing now unless that was done.
    pub(crate) async fn get(&self, cluster: &Cluster) -> &ListedObjects {
        self.found
            .get_or_init(|| async {
                let refs: Vec<&ObjectRef> = self.refs.iter().collect();
                listed_controllers(cluster, &refs).await
            })
            .await
    }

    /// What the LIST found, if it was made already.
    pub(crate) fn got(&self) -> Option<&ListedObjects> {
        self.found.get()
    }

    /// Whether `r` is of a kind and namespace the LIST covers.
    pub(crate) fn covers(&self, r: &ObjectRef) -> bool {
        self.members.contains(r)
    }
}

/// The controlling Instance of the namespaced object `r`: as `listed` (from
/// [`listed_controllers`]) says, else read. None when it does not exist or no Instance
/// controls it.
pub(crate) async fn controller_of(
    cluster: &Cluster,
    listed: &ListedObjects,
    r: &ObjectRef,
) -> Result<Option<String>, ClusterError> {
    match listed.get(r) {
        Some(Listed::Absent) => return Ok(None),
        Some(Listed::Present { controller, .. }) => return Ok(controller.clone()),
        None => {}
    }
    let live = cluster.get(r).await?;
    Ok(live
        .as_ref()
        .and_then(controlling_instance)
        .map(str::to_string))
}

/// The Instance named by the object's controller reference, if any.
fn controlling_instance(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .filter(|r| {
            r.get("kind").and_then(Value::as_str) == Some("Instance")
                && r.get("apiVersion").and_then(Value::as_str) == Some(KUDO_API_VERSION)
        })
        .and_then(|r| r.get("name").and_then(Value::as_str))
}

/// The Instance `instance` is a dependency of: the name of any owner reference of kind
/// Instance. KUDO's test (`Instance.IsChildInstance`, pkg/apis/kudo/v1beta1/
/// instance_types_helpers.go) looks at the kind alone, and KUDO marks the children its
/// KudoOperator tasks create with a plain owner reference (`instanceResource` in
/// pkg/engine/task/task_kudo_operator.go: `SetOwnerReference`, not a controller one), so
/// the controller flag is not asked for here. Which instance may *run* an object is
/// [`controlling_instance`]'s question.
pub fn parent_instance(instance: &Value) -> Option<&str> {
    instance
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("kind").and_then(Value::as_str) == Some("Instance"))
        .and_then(|r| r.get("name").and_then(Value::as_str))
}

/// Who holds an existing Instance, as far as the object tells: for a refusal to take
/// over an Instance that is already there.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InstanceHolders {
    /// The instance it is a dependency of ([`parent_instance`]).
    pub parent: Option<String>,
    /// Its field managers (`metadata.managedFields`), sorted, each once.
    pub managers: Vec<String>,
    /// `metadata.creationTimestamp`.
    pub created: Option<String>,
}

impl InstanceHolders {
    pub fn of(instance: &Value) -> InstanceHolders {
        let mut managers: Vec<String> = instance
            .pointer("/metadata/managedFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|e| e.get("manager").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        managers.sort();
        managers.dedup();
        let created = instance.pointer("/metadata/creationTimestamp");
        InstanceHolders {
            parent: parent_instance(instance).map(str::to_string),
            managers,
            created: created.and_then(Value::as_str).map(str::to_string),
        }
    }

    /// ` (it is a dependency of instance p; field managers: a, b; created t)`, each
    /// field manager as `manager` names it; empty when the object tells nothing.
    pub fn describe(&self, manager: impl Fn(&str) -> String) -> String {
        let mut parts = Vec::new();
        if let Some(p) = &self.parent {
            parts.push(format!("it is a dependency of instance {p}"));
        }
        if !self.managers.is_empty() {
            let names: Vec<String> = self.managers.iter().map(|m| manager(m)).collect();
            parts.push(format!("field managers: {}", names.join(", ")));
        }
        if let Some(t) = &self.created {
            parts.push(format!("created {t}"));
        }
        match parts.is_empty() {
            true => String::new(),
            false => format!(" ({})", parts.join("; ")),
        }
    }
}

/// The error for an object that belongs to `holder`.
pub(crate) fn taken(r: &ObjectRef, holder: &str, advice: &str) -> EngineError {
    let mut e = EngineError::fatal(format!(
        "{r} already exists and belongs to {holder}; two instances cannot manage one object. {advice}"
    ))
    .with_object(r);
    e.trouble = Trouble::Taken;
    e
}

/// Fails when the namespaced object `r` is controlled by another Instance than
/// `instance` (`controller`: its controlling Instance as just read; None when it does
/// not exist or no Instance controls it). Objects of ours (same Instance name: the uid
/// changes when an Instance is re-created, the identity does not) and objects no
/// Instance controls pass; the latter are still protected field by field by
/// server-side apply's conflicts.
pub(crate) fn check_controller(
    r: &ObjectRef,
    controller: Option<&str>,
    instance: &str,
) -> Result<(), EngineError> {
    match controller {
        Some(holder) if holder != instance => Err(taken(
            r,
            &format!("instance {holder}"),
            "Give the objects of this instance other names (templates usually derive them from the instance name, so another instance name does it), or remove the other instance first.",
        )),
        _ => Ok(()),
    }
}

/// Fails when the dependency instance `child` exists but is not ours to run: a
/// top-level instance (no controller) or one another parent controls.
pub(crate) fn check_child(
    child: &ObjectRef,
    existing: &Value,
    parent: &str,
) -> Result<(), EngineError> {
    let advice = "Set `instanceName` of the KudoOperator task (or this instance's name) so the dependency gets a name of its own, or remove the other instance first.";
    match controlling_instance(existing) {
        Some(p) if p == parent => Ok(()),
        Some(p) => Err(taken(
            child,
            &format!("instance {p} (as its dependency)"),
            advice,
        )),
        None => Err(taken(
            child,
            "no parent instance (it was installed on its own)",
            advice,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owned_by(name: &str) -> Value {
        json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1"},
            {"apiVersion": KUDO_API_VERSION, "kind": "Instance", "name": name, "uid": "2", "controller": true}
        ]}})
    }

    #[test]
    fn an_instances_holders_are_its_parent_field_managers_and_age() {
        let mut instance = owned_by("kafka");
        instance["metadata"]["managedFields"] = json!([
            {"manager": "kubectl"}, {"manager": "kudo-manager"}, {"manager": "kubectl"}
        ]);
        instance["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        let holders = InstanceHolders::of(&instance);
        assert_eq!(holders.managers, ["kubectl", "kudo-manager"]);
        assert_eq!(
            holders.describe(|m| m.to_uppercase()),
            " (it is a dependency of instance kafka; field managers: KUBECTL, KUDO-MANAGER; created 2026-01-01T00:00:00Z)"
        );
        assert_eq!(
            InstanceHolders::of(&json!({"metadata": {}})).describe(str::to_string),
            ""
        );
    }

    #[test]
    fn controller_instance_is_found() {
        assert_eq!(controlling_instance(&owned_by("wb")), Some("wb"));
        assert_eq!(controlling_instance(&json!({"metadata": {}})), None);
    }

    #[test]
    fn a_dependency_instance_names_its_parent_with_or_without_the_controller_flag() {
        assert_eq!(parent_instance(&owned_by("kafka")), Some("kafka"));
        let kudo_made = json!({"metadata": {"ownerReferences": [
            {"apiVersion": KUDO_API_VERSION, "kind": "Instance", "name": "kafka", "uid": "1"}
        ]}});
        assert_eq!(parent_instance(&kudo_made), Some("kafka"));
        assert_eq!(controlling_instance(&kudo_made), None);
        let other = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "1"}
        ]}});
        assert_eq!(parent_instance(&other), None);
        assert_eq!(parent_instance(&json!({"metadata": {}})), None);
    }

    #[test]
    fn an_object_of_another_instance_is_refused() {
        let cm = ObjectRef::new("v1", "ConfigMap", Some("b"), "settings");
        let taken = |live: &Value| check_controller(&cm, controlling_instance(live), "y");
        let e = taken(&owned_by("x")).unwrap_err();
        assert!(e.message.contains("belongs to instance x"), "{e}");
        assert!(taken(&owned_by("y")).is_ok());
        assert!(taken(&json!({"metadata": {}})).is_ok());
        assert!(check_controller(&cm, None, "y").is_ok());
    }

    #[test]
    fn a_child_of_another_parent_or_of_none_is_refused() {
        let child = ObjectRef::new(KUDO_API_VERSION, "Instance", Some("b"), "zk");
        assert!(check_child(&child, &owned_by("kafka"), "kafka").is_ok());
        let e = check_child(&child, &owned_by("other"), "kafka").unwrap_err();
        assert!(e.message.contains("instance other"), "{e}");
        assert_eq!(e.trouble, Trouble::Taken);
        let e = check_child(&child, &json!({"metadata": {}}), "kafka").unwrap_err();
        assert!(e.message.contains("installed on its own"), "{e}");
    }
}
