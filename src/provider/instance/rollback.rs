//! `rollback_on_failure`: the plan decides where a failed apply puts the instance back
//! (the version, values and plan triggers of its last completed apply, and the KUDO plan
//! that gets there, `kudo_plan::rollback_plan`) and hands it to the apply in the planned
//! private state; the apply runs it through the engine ([`engine::roll_back`]) only if
//! the change fails. A failed create is destroyed instead, as helm's atomic install is.
//!
//! The target carries its packages (as OperatorVersion documents): when the instance
//! moves to another version, `kudo_operator`'s apply removes the old OperatorVersion
//! before the instance's apply runs, and a saved plan may be applied on a machine
//! without this configuration's plan-time copies.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tfplugin::{ApplyResponse, Diagnostic, Value};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{self, TreePrior};
use kudo_package::Package;
use kudo_package::crd::{package_document, package_from_document};
use kudo_plan::{ChangeRequest, RollbackTo};
use kudo_resolve::Resolution;

use crate::provider::packages::parse_operator_id;
use crate::provider::{Session, namespace_of};

use super::deadline::Deadline;
use super::model::InstanceModel;

/// Where a failed apply puts the instance back (see the module comment).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollbackTarget {
    /// The `operator` (a `kudo_operator` id) of the last completed apply.
    pub operator: String,
    /// The KUDO plan that puts the instance back.
    pub plan: String,
    /// The package it ran, as [`package_document`].
    pub package: serde_json::Value,
    /// Its dependency tree (without packages) and each package of it, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Resolution>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub packages: BTreeMap<String, serde_json::Value>,
}

/// What the plan knows of the instance before the change, for [`target`].
pub(super) struct Before<'a> {
    pub prior: &'a InstanceModel,
    /// Every value it ran with, sensitive ones included.
    pub parameters: Option<&'a BTreeMap<String, String>>,
    pub package: Option<&'a Package>,
    pub resolution: Option<&'a Resolution>,
}

/// The target of a change that runs `plan`, or the warning saying why a failure of
/// this apply cannot be rolled back.
pub(super) fn target(
    change: &ChangeRequest<'_>,
    plan: &str,
    before: &Before<'_>,
) -> Result<RollbackTarget, Diagnostic> {
    let cannot = |why: String| {
        Diagnostic::warning(
            "A failure of this apply will not be rolled back",
            format!(
                "rollback_on_failure is set, but {why}. A failed apply leaves the instance as the failure left it."
            ),
        )
    };
    let status = before.prior.status.as_deref().unwrap_or("unknown");
    if !matches!(
        status,
        kudo_plan::RunStatus::COMPLETE | kudo_plan::RunStatus::DRIFTED
    ) {
        return Err(cannot(format!(
            "the instance's last apply did not complete (status {status}), so there is no completed version to go back to"
        )));
    }
    let (Some(operator), Some(package), Some(parameters)) = (
        before.prior.operator.known(),
        before.package,
        before.parameters,
    ) else {
        return Err(cannot(
            "the package and values the instance last completed with cannot be read".into(),
        ));
    };
    let Some(resolution) = before.resolution else {
        return Err(cannot(format!(
            "the dependency tree of {operator} is not known here (plan with the kudo_operator that installed it)"
        )));
    };
    let triggers = before.prior.plan_triggers().unwrap_or_default();
    let to = RollbackTo {
        operator_version: parse_operator_id(operator).map_or(operator.as_str(), |(_, ov)| ov),
        package,
        parameters,
        plan_triggers: &triggers,
    };
    let plan = kudo_plan::rollback_plan(change, plan, &to)
        .map_err(|e| cannot(format!("going back to {operator} would be refused: {e}")))?;
    Ok(RollbackTarget {
        operator: operator.clone(),
        plan,
        package: package_document(package),
        packages: resolution
            .packages
            .iter()
            .map(|(name, pkg)| (name.clone(), package_document(pkg)))
            .collect(),
        resolution: Some(resolution.clone()),
    })
}

/// The warning of a rolling-back plan that changes CustomResourceDefinitions: a
/// rollback leaves CRDs as the failed change made them (see `engine::roll_back`).
pub(super) fn crd_warning(plan: &engine::TreePlan) -> Option<Diagnostic> {
    let changes = plan.instance.changes.as_ref()?;
    let crds: Vec<String> = changes
        .create
        .iter()
        .chain(&changes.update)
        .filter(|r| r.kind == "CustomResourceDefinition")
        .map(|r| r.name.clone())
        .collect();
    (!crds.is_empty()).then(|| {
        Diagnostic::warning(
            "A rollback leaves CRDs as this apply makes them",
            format!(
                "This apply creates or changes the CustomResourceDefinition {}. If it fails, rollback_on_failure puts the rest of the instance back but leaves CRDs as the failed change made them: a new version that became a stored version (status.storedVersions) cannot be taken out of the definition again, and deleting a CRD deletes its objects.",
                crds.join(", ")
            ),
        )
    })
}

/// The target's packages, read back.
struct Unpacked {
    package: Package,
    resolution: Option<Resolution>,
}

fn unpack(target: &RollbackTarget) -> Result<Unpacked, String> {
    let package = package_from_document(&target.package).map_err(|e| e.to_string())?;
    let resolution = match &target.resolution {
        None => None,
        Some(r) => {
            let mut r = r.clone();
            for (name, doc) in &target.packages {
                let pkg = package_from_document(doc).map_err(|e| format!("{name}: {e}"))?;
                r.packages.insert(name.clone(), pkg);
            }
            Some(r)
        }
    };
    Ok(Unpacked {
        package,
        resolution,
    })
}

/// What the failed apply hands over.
pub(super) struct Failure<'a> {
    pub session: &'a Session,
    pub cluster: &'a Cluster,
    pub prior: &'a InstanceModel,
    pub planned: &'a InstanceModel,
    pub seed: Option<&'a str>,
    pub limit: std::time::Duration,
    /// The failed run's diagnostic and what it recorded.
    pub failed: ApplyResponse,
    pub applied_objects: Vec<kudo_engine::cluster::ObjectRef>,
    /// Objects of the failed change marked as migrating data that it wrote
    /// ([`engine::migrating_objects`]).
    pub migrated: Vec<kudo_engine::cluster::ObjectRef>,
}

/// Puts the instance back on `target` after the failure `f`: the apply's answer, which
/// fails either way, saying what failed and where the instance is now.
pub(super) async fn after_failure(f: Failure<'_>, target: &RollbackTarget) -> ApplyResponse {
    let failure = f.failed.diagnostics.iter().find(|d| d.is_error()).cloned();
    let Some(failure) = failure else {
        return f.failed;
    };
    let unpacked = match unpack(target) {
        Ok(u) => u,
        Err(e) => return not_started(f.failed, &failure, &target.operator, &e),
    };
    let version = unpacked.package.operator.operator_version.clone();
    let namespace = namespace_of(&f.planned.namespace);
    let name = f.planned.name.as_deref().unwrap_or_default().to_string();
    let public = f.prior.parameters().unwrap_or_default();
    let secret = back_sensitive(f.prior, f.planned, &unpacked.package);
    let health = f.planned.health_policy(&f.session.config.health);
    let wants_manifests = !f.planned.manifests.is_null();
    let request = engine::ApplyRequest {
        name: &name,
        namespace: &namespace,
        package: engine::PackageSource::Given(&unpacked.package),
        public: &public,
        sensitive: &secret,
        plan: &target.plan,
        seed: f.seed,
        resolution: unpacked.resolution.as_ref(),
        operator_namespace: parse_operator_id(&target.operator)
            .map_or(namespace.as_str(), |(ns, _)| ns),
        previous: &f.applied_objects,
        // The dependency instances' objects as the cluster has them now (their label),
        // so that what only the failed change made is found and pruned.
        tree: TreePrior {
            records: None,
            drifted: None,
            fresh: false,
            checked: false,
            every_object_checked: false,
            decided: None,
            confirmed: false,
        },
        crd_deletion: f.planned.crd_deletion(),
        crd_safety: f.planned.crd_safety(f.session.config.crd_upgrade_safety),
        health: &health,
        contents: match wants_manifests {
            true => engine::Contents::Keep,
            false => engine::Contents::Skip,
        },
        progress: None,
        must_not_exist: false,
        // Back where the failed change started: its namespace is there.
        create_namespace: false,
        settled: false,
    };
    // A rollback of an interrupted apply must still run: its own limit, not the stop.
    let never = CancellationToken::new();
    let deadline = Deadline::new(&never, f.limit);
    tracing::info!(instance = %name, to = %target.operator, plan = %target.plan, "rolling back");
    let rolled = engine::roll_back(f.cluster, &request, &deadline.token).await;
    let mut rolled = match rolled {
        Ok(r) => r,
        Err(e) => {
            deadline.timer.abort();
            return not_started(f.failed, &failure, &version, &e.to_string());
        }
    };
    deadline.explain(
        &never,
        &format!("the rollback's plan {:?}", target.plan),
        &mut rolled.applied.run,
    );
    let mut state = f.planned.clone();
    state.operator = f.prior.operator.clone();
    state.parameters = f.prior.parameters.clone();
    state.sensitive_parameters = f.prior.sensitive_parameters.clone();
    state.plan_triggers = f.prior.plan_triggers.clone();
    // Filled from the rollback's run by `record`, not compared with the failed plan.
    state.objects = tfplugin::Attr::Unknown;
    state.plan_status = Value::Unknown;
    if wants_manifests {
        state.manifests = Value::Unknown;
    }
    let rollback_failed = rolled.applied.run.is_err();
    let mut resp = super::apply::record(f.session, state, &target.plan, &secret, rolled.applied);
    let mut rolled_error =
        rolled_back(&failure, &version, &target.operator, rollback_failed, &resp);
    if !f.migrated.is_empty() {
        let named: Vec<String> = f.migrated.iter().map(ToString::to_string).collect();
        rolled_error.detail.push_str(&format!(
            "\n\nNot undone: the failed version's {} (marked {}) ran before the failure, and what it changed in the data stays.",
            named.join(", "),
            engine::ANNOTATION_MIGRATES_DATA
        ));
    }
    let mut diagnostics = vec![rolled_error];
    diagnostics.extend(resp.diagnostics.drain(..).filter(|d| !d.is_error()));
    if !rolled.crds_left.is_empty() {
        diagnostics.push(Diagnostic::warning(
            "CustomResourceDefinitions not rolled back",
            format!(
                "The rollback left the CRDs of {} as the failed change made them (a stored version cannot be taken back): its templates {} were not applied again.",
                target.operator,
                rolled.crds_left.join(", ")
            ),
        ));
    }
    if let Some(ov) = rolled.reinstalled {
        diagnostics.push(Diagnostic::warning(
            "OperatorVersion installed again for the rollback",
            format!("kudo_operator had removed {ov} when it installed the new version; the rollback installed it again. It stays while this instance runs it; once the instance runs another version and nothing else does, delete it with kubectl delete operatorversion -n {} {ov}, or point the kudo_operator back at it.", parse_operator_id(&target.operator).map_or("", |(ns, _)| ns)),
        ));
    }
    resp.diagnostics = diagnostics;
    resp
}

/// The values the rollback runs with: the last completed apply's sensitive values, and
/// the write-only values the package declares (they are never stored, so the ones just
/// sent are the only ones there are).
fn back_sensitive(
    prior: &InstanceModel,
    planned: &InstanceModel,
    package: &Package,
) -> BTreeMap<String, String> {
    let mut secret = prior.sensitive().unwrap_or_default();
    let public = prior.parameters().unwrap_or_default();
    for (k, v) in planned.sensitive().unwrap_or_default() {
        let declared = package.parameters.iter().any(|p| p.name == k);
        if declared && !public.contains_key(&k) {
            secret.entry(k).or_insert(v);
        }
    }
    secret
}

/// The apply's error after a rollback ran: the failure, and where it left the instance.
fn rolled_back(
    failure: &Diagnostic,
    version: &str,
    operator: &str,
    rollback_failed: bool,
    resp: &ApplyResponse,
) -> Diagnostic {
    let status = resp.new_state.get("status");
    let status = status.as_str().unwrap_or("unknown");
    let (summary, outcome) = match rollback_failed {
        false => (
            format!("{}; rolled back to {version}", failure.summary),
            format!(
                "rollback_on_failure put the instance and its dependency instances back to {operator} with the values of its last completed apply (status {status})."
            ),
        ),
        true => {
            let why = resp
                .diagnostics
                .iter()
                .find(|d| d.is_error())
                .map_or(String::new(), |d| format!(": {}", d.detail));
            (
                format!("{}; the rollback to {version} failed too", failure.summary),
                format!(
                    "rollback_on_failure tried to put the instance back to {operator} and failed{why}. The state records {operator} with status {status}: the next apply runs it again, or the change again if the configuration still asks for it."
                ),
            )
        }
    };
    let mut d = Diagnostic::error(
        summary,
        format!(
            "{}\n\n{outcome} The state records {version}, so the next plan shows the change again.",
            failure.detail
        ),
    );
    d.attribute = failure.attribute.clone();
    d
}

/// The failed apply's answer, with why the rollback could not start.
fn not_started(
    mut failed: ApplyResponse,
    failure: &Diagnostic,
    version: &str,
    why: &str,
) -> ApplyResponse {
    failed.diagnostics.retain(|d| !d.is_error());
    failed.diagnostics.insert(
        0,
        Diagnostic::error(
            format!("{}; no rollback to {version}", failure.summary),
            format!("{}\n\nrollback_on_failure could not start: {why}. The instance is as the failure left it.", failure.detail),
        ),
    );
    failed
}

/// A failed create with `rollback_on_failure`: removes what it wrote, as destroy does.
pub(super) async fn after_failed_create(
    session: &Session,
    cluster: &Cluster,
    failed: ApplyResponse,
    seed: Option<&str>,
) -> ApplyResponse {
    let Some(failure) = failed.diagnostics.iter().find(|d| d.is_error()).cloned() else {
        return failed;
    };
    let Ok(Some(model)) = crate::provider::decode::<InstanceModel>(&failed.new_state) else {
        return failed;
    };
    let never = CancellationToken::new();
    let removed = super::destroy::destroy(
        session,
        cluster,
        failed.new_state.clone(),
        &model,
        seed,
        &never,
    )
    .await;
    let mut d = failure.clone();
    if removed.new_state.is_null() {
        d.summary = format!("{}; the create was rolled back", failure.summary);
        d.detail = format!(
            "{}\n\nrollback_on_failure removed what the create wrote; nothing is left in the state.",
            failure.detail
        );
        let mut diagnostics = vec![d];
        diagnostics.extend(removed.diagnostics.into_iter().filter(|d| !d.is_error()));
        return ApplyResponse {
            new_state: Value::Null,
            diagnostics,
            ..Default::default()
        };
    }
    let mut resp = failed;
    resp.diagnostics.extend(removed.diagnostics);
    resp
}
