//! The one pruning rule, as a pure function: which objects of earlier runs a run removes.
//! The run applies it to what it did ([`super::run_plan`]); the plan to what the run
//! will do ([`super::plan_instance`]), so `preview.delete` and the run cannot disagree.

use std::collections::{BTreeSet, HashSet};

use kudo_plan::Desired;

use crate::cluster::{Cluster, ObjectRef};

/// Objects of `previous` (the inventory the run started from, less what it deleted)
/// that the run did not apply and that no plan of the package wants any more
/// ([`kudo_plan::Desired::wanted`]). Compared by stored object, not by reference:
/// deleting `policy/v1beta1` PDB x would delete the `policy/v1` PDB x the run just
/// applied. Objects a Webhook task's latest answer holds are decided by the caller,
/// which alone can read them.
pub fn unwanted(
    previous: &[ObjectRef],
    applied: &BTreeSet<ObjectRef>,
    wanted: &BTreeSet<ObjectRef>,
) -> Vec<ObjectRef> {
    let (applied, wanted) = (ObjectIndex::new(applied), ObjectIndex::new(wanted));
    previous
        .iter()
        .filter(|r| !applied.contains(r) && !wanted.contains(r))
        .cloned()
        .collect()
}

/// The references of everything the package wants after any of its plans (the run's
/// pruning rule, [`kudo_plan::Desired::wanted`]): rendered objects under the version the
/// cluster serves them as, pipe artifacts, child Instances. None when some plan cannot
/// be walked or an object cannot be named: then nothing is pruned.
pub(crate) async fn wanted_refs(
    cluster: &Cluster,
    desired: &Desired<'_>,
) -> Option<BTreeSet<ObjectRef>> {
    let wanted = desired.wanted()?;
    let namespace = desired.inputs.namespace;
    let mut out = BTreeSet::new();
    for rendered in wanted.objects {
        let r = match ObjectRef::from_object(&rendered.object) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "not pruning: cannot identify a rendered object");
                return None;
            }
        };
        out.insert(with_namespace(cluster, r, namespace).await);
    }
    for (kind, name) in wanted.pipe_artifacts {
        out.insert(ObjectRef::new("v1", &kind, Some(namespace), &name));
    }
    for child in wanted.children {
        out.insert(super::instance_object::instance_ref(namespace, &child));
    }
    Some(out)
}

/// Rendered objects without a namespace land in the instance's, unless their kind is
/// cluster-scoped (the inventory records those without one).
pub(crate) async fn with_namespace(cluster: &Cluster, r: ObjectRef, namespace: &str) -> ObjectRef {
    // Under the version the run applies it as (see Cluster::served_form).
    let mut r = cluster.served_ref(&r).await.unwrap_or(r);
    if r.namespace.is_none()
        && cluster
            .is_namespaced(&r.api_version, &r.kind)
            .await
            .unwrap_or(true)
    {
        r.namespace = Some(namespace.to_string());
    }
    r
}

/// The stored objects a set of refs names (under any version of their group), for
/// lookups in constant time: a run and a plan ask, for each of their objects, whether
/// the previous inventory holds it, which scanning would make quadratic (10^8
/// comparisons for an instance of 10,000 objects).
pub(crate) struct ObjectIndex<'a>(HashSet<(&'a str, &'a str, Option<&'a str>, &'a str)>);

impl<'a> ObjectIndex<'a> {
    pub(crate) fn new(refs: impl IntoIterator<Item = &'a ObjectRef>) -> ObjectIndex<'a> {
        ObjectIndex(refs.into_iter().map(ObjectRef::identity).collect())
    }

    /// Whether the set holds the stored object `r` names ([`ObjectRef::same_object`]).
    pub(crate) fn contains(&self, r: &ObjectRef) -> bool {
        self.0.contains(&r.identity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(name: &str) -> ObjectRef {
        ObjectRef::new("v1", "ConfigMap", Some("ns"), name)
    }

    #[test]
    fn only_objects_neither_applied_nor_wanted_go() {
        let previous = [cm("applied"), cm("wanted"), cm("stale")];
        let applied = BTreeSet::from([cm("applied")]);
        let wanted = BTreeSet::from([cm("wanted")]);
        assert_eq!(unwanted(&previous, &applied, &wanted), vec![cm("stale")]);
    }

    #[test]
    fn an_object_applied_under_a_newer_version_is_the_same_object() {
        let old = ObjectRef::new("policy/v1beta1", "PodDisruptionBudget", Some("ns"), "pdb");
        let new = ObjectRef::new("policy/v1", "PodDisruptionBudget", Some("ns"), "pdb");
        let applied = BTreeSet::from([new]);
        assert!(unwanted(&[old], &applied, &BTreeSet::new()).is_empty());
    }
}
