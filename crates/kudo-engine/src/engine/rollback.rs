//! What an apply does after the run of an update failed with `rollback_on_failure`
//! ([`OnFailure::RollBack`]), as part of [`super::apply_change`]: the instance is put
//! back on the version, values and plan of its last completed apply, decided when the
//! change was planned (`kudo_plan::rollback_plan`) and run as any change is run
//! ([`super::apply_run`]). KUDO had no rollback; this is helm's `--atomic` for a KUDO
//! instance and its dependency instances.
//!
//! The change that failed may have removed what the rollback needs: `kudo_operator`
//! removes the OperatorVersion an instance moves away from when it installs the new one
//! (`operator_tree::remove_stale`). The rollback installs it again from the copy the
//! plan kept; dependency OperatorVersions missing from the cluster are installed by the
//! dependency runs, as for any tree (`run::children`).
//!
//! CustomResourceDefinitions are left as the failed change made them, as helm never
//! rolls CRDs back: a new version the failed change made a stored version
//! (`status.storedVersions`) cannot be taken out of the definition again, and deleting
//! a CRD deletes every object of it. The instance's templates that hold only CRDs are
//! not applied again, and no CRD is pruned.

use kudo_package::{Package, TaskSpec};
use kudo_plan::change::ANNOTATION_MIGRATES_DATA;
use tokio_util::sync::CancellationToken;

use super::apply_run::{Applied, ApplyRequest, OnFailure, PackageSource, run_change};
use super::decisions::TreeRecord;
use super::destroy::Limit;
use super::error::EngineError;
use super::operator::{install_operator, operator_version_ref};
use super::removal::CrdDeletion;
use crate::cluster::{Cluster, ObjectRef};

/// A rollback that ran (its own run may still have failed: see [`Applied::run`]).
#[derive(Debug)]
pub struct RolledBack {
    pub applied: Applied,
    /// The instance's OperatorVersion, when the rollback had to install it again.
    pub reinstalled: Option<String>,
    /// The templates holding CustomResourceDefinitions that were not applied again.
    pub crds_left: Vec<String>,
    /// The objects of the failed change marked [`ANNOTATION_MIGRATES_DATA`] that its run
    /// wrote, in its plan's order: what they changed in the data stays.
    pub migrated: Vec<ObjectRef>,
}

/// Why a rollback could not start; nothing of it was written.
#[derive(Debug, thiserror::Error)]
pub enum RollbackError {
    #[error("{0}")]
    Refused(#[from] super::change::PlanRefusal),
    #[error("cannot install OperatorVersion {name} again: {error}")]
    Operator {
        name: String,
        #[source]
        error: Box<EngineError>,
    },
}

/// What [`OnFailure::RollBack`] does once the run of `failed` (`ran`) failed: the
/// rollback, or why it could not start; `None` when `failed` asks for no rollback.
pub(super) async fn put_back(
    cluster: &Cluster,
    failed: &ApplyRequest<'_>,
    ran: &Applied,
) -> Option<Result<RolledBack, RollbackError>> {
    let OnFailure::RollBack {
        package,
        resolution,
        plan,
        public,
        sensitive,
        operator_namespace,
        manifests,
        timeout,
    } = failed.on_failure
    else {
        return None;
    };
    let migrated = migrating_objects(failed, ran);
    let previous: Vec<ObjectRef> = ran.objects.iter().map(|(r, _, _)| r.clone()).collect();
    let back = ApplyRequest {
        name: failed.name,
        namespace: failed.namespace,
        package: PackageSource::Given(package),
        public,
        sensitive,
        plan,
        seed: failed.seed,
        resolution,
        operator_namespace,
        previous: &previous,
        // The dependency instances' objects as the cluster has them now (their
        // label), so that what only the failed change made is found and pruned.
        record: &TreeRecord::default(),
        fresh: false,
        crd_deletion: failed.crd_deletion,
        crd_safety: failed.crd_safety,
        health: failed.health,
        manifests,
        progress: None,
        must_not_exist: false,
        // Back where the failed change started: its namespace is there.
        create_namespace: false,
        settled: false,
        on_failure: OnFailure::Stay,
        // Joined to `sensitive` by the failed apply (see `apply_change`).
        write_only: None,
    };
    // A rollback of an interrupted apply must still run: its own limit, not the stop.
    let limit = Limit::new(&CancellationToken::new(), timeout);
    tracing::info!(instance = %failed.name, to = %package.operator_version_name(), %plan, "rolling back");
    let rolled = roll_back(cluster, &back, package, &limit.token).await;
    drop(limit);
    Some(rolled.map(|r| RolledBack { migrated, ..r }))
}

/// Runs `back` (the last completed version, values and plan, with the objects the
/// failed run left as `previous` so that what only the failed change made is pruned).
async fn roll_back(
    cluster: &Cluster,
    back: &ApplyRequest<'_>,
    package: &Package,
    cancel: &CancellationToken,
) -> Result<RolledBack, RollbackError> {
    let name = package.operator_version_name();
    let ov = operator_version_ref(back.operator_namespace, &name);
    let missing = matches!(cluster.get(&ov).await, Ok(None));
    if missing {
        tracing::info!(operator_version = %name, "installing the previous OperatorVersion again for the rollback");
        install_operator(cluster, package, back.operator_namespace)
            .await
            .map_err(|error| RollbackError::Operator {
                name: name.clone(),
                error: Box::new(error),
            })?;
    }
    let (package, crds_left) = leaving_crds(package);
    let back = ApplyRequest {
        package: PackageSource::Given(&package),
        crd_deletion: CrdDeletion::Keep,
        ..*back
    };
    let applied = run_change(cluster, &back, cancel).await?;
    Ok(RolledBack {
        applied,
        reinstalled: missing.then_some(name),
        crds_left,
        migrated: Vec::new(),
    })
}

/// The objects of `failed`'s plan (the change that failed) marked with
/// [`ANNOTATION_MIGRATES_DATA`]` = "true"` that its failed run (`ran`) wrote, in the
/// plan's order. Rendered as the run rendered them; a render that fails now names
/// nothing.
fn migrating_objects(failed: &ApplyRequest<'_>, ran: &Applied) -> Vec<ObjectRef> {
    let written: Vec<&ObjectRef> = ran.objects.iter().map(|(r, _, _)| r).collect();
    let all = failed.all_values();
    let inputs = kudo_plan::Inputs {
        package: &ran.package,
        instance: failed.name,
        namespace: failed.namespace,
        parameters: &all,
        seed: failed.seed,
        dependencies: None,
    };
    let Ok(desired) = kudo_plan::Desired::new(inputs) else {
        return Vec::new();
    };
    let Ok(walk) = desired.plan(failed.plan) else {
        return Vec::new();
    };
    let marked = |o: &&kudo_plan::Rendered| {
        o.object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(ANNOTATION_MIGRATES_DATA))
            .and_then(serde_json::Value::as_str)
            == Some("true")
    };
    let mut found: Vec<ObjectRef> = Vec::new();
    for task in walk.tasks() {
        let kudo_plan::Action::Apply(objects) = &task.action else {
            continue;
        };
        for o in objects.iter().filter(marked) {
            let Ok(r) = ObjectRef::from_object(&o.object) else {
                continue;
            };
            // As written: in the instance's namespace when the template names none, at
            // the version the run wrote (a translated one, perhaps).
            let same = |w: &&&ObjectRef| {
                w.kind == r.kind
                    && w.name == r.name
                    && (r.namespace.is_none() || r.namespace == w.namespace)
            };
            if let Some(w) = written.iter().find(same)
                && !found.contains(w)
            {
                found.push((**w).clone());
            }
        }
    }
    found
}

/// `pkg` without the templates that hold only CustomResourceDefinitions in its Apply
/// and Toggle tasks, and those templates' names (see the module comment). A template
/// that mixes a CRD with other objects stays.
fn leaving_crds(pkg: &Package) -> (Package, Vec<String>) {
    let only_crds = |file: &String| pkg.templates.get(file).is_some_and(|t| holds_only_crds(t));
    let mut left: Vec<String> = Vec::new();
    let mut out = pkg.clone();
    for task in &mut out.operator.tasks {
        let resources = match &mut task.spec {
            TaskSpec::Apply { resources, .. } | TaskSpec::Toggle { resources, .. } => resources,
            _ => continue,
        };
        for file in resources.iter().filter(|f| only_crds(f)) {
            if !left.contains(file) {
                left.push(file.clone());
            }
        }
        resources.retain(|f| !only_crds(f));
    }
    (out, left)
}

/// Whether every document of a template is a CustomResourceDefinition: its top-level
/// `kind:` lines (a CRD's own `spec.names.kind` is indented) all name that kind.
fn holds_only_crds(template: &str) -> bool {
    let kinds: Vec<&str> = template
        .lines()
        .filter_map(|l| l.strip_prefix("kind:"))
        .map(|k| k.trim().trim_matches(['"', '\'']))
        .collect();
    !kinds.is_empty() && kinds.iter().all(|k| *k == "CustomResourceDefinition")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_templates_of_crds_alone_are_left() {
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: w\nspec:\n  names:\n    kind: Widget\n";
        assert!(holds_only_crds(crd));
        assert!(holds_only_crds(&format!("{crd}---\n{crd}")));
        let mixed = format!("{crd}---\napiVersion: v1\nkind: ConfigMap\n");
        assert!(!holds_only_crds(&mixed));
        assert!(!holds_only_crds("apiVersion: v1\nkind: \"ConfigMap\"\n"));
        assert!(!holds_only_crds("{{ if .Params.X }}{{ end }}"));
    }
}
