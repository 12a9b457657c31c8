//! `rollback_on_failure`: the plan decides where a failed apply puts the instance back
//! (the version, values and plan triggers of its last completed apply, and the KUDO plan
//! that gets there, `kudo_plan::rollback_plan`) and hands it to the apply in the planned
//! private state; the apply hands it to the engine ([`engine::OnFailure::RollBack`]),
//! whose apply runs it only if the change fails ([`Undo`]: the target read back before
//! the apply, and the wording of the answer after it). A failed create is removed
//! instead, as helm's atomic install is ([`engine::OnFailure::Remove`]).
//!
//! The target carries its packages (as OperatorVersion documents): when the instance
//! moves to another version, `kudo_operator`'s apply removes the old OperatorVersion
//! before the instance's apply runs, and a saved plan may be applied on a machine
//! without this configuration's plan-time copies.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tfplugin::{ApplyResponse, Diagnostic, Value};

use kudo_engine::engine;
use kudo_package::Package;
use kudo_package::crd::{package_document, package_from_document};
use kudo_plan::{ChangeRequest, RollbackTo};
use kudo_resolve::Resolution;

use crate::provider::packages::parse_operator_id;
use crate::provider::timeouts::{self, Operation};
use crate::provider::{Session, namespace_of};

use super::deadline::timed_out;
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
/// rollback leaves CRDs as the failed change made them (see [`engine::OnFailure::RollBack`]).
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

/// What a failed run of this apply does (`rollback_on_failure`): decided from the
/// decoded states before the apply, handed to the engine as
/// [`engine::ApplyRequest::on_failure`], and the wording of what the engine did.
pub(super) enum Undo<'a> {
    /// The failure stays: no `rollback_on_failure`, or the plan warned why there is
    /// nothing to go back to.
    Stay,
    /// An update whose target (from the planned private state) cannot be read back: the
    /// failure stays, saying why.
    Unreadable { operator: &'a str, why: String },
    /// An update, put back on its target.
    Back(Box<Back<'a>>),
    /// A create, removed again as destroy removes it, within the `delete` timeout (or
    /// the failure stays with why that timeout cannot be read).
    Remove {
        delete_volumes: bool,
        timeout: Result<Duration, Diagnostic>,
    },
}

/// The rollback of an update: its target and the values it runs with.
pub(super) struct Back<'a> {
    prior: &'a InstanceModel,
    target: &'a RollbackTarget,
    unpacked: Unpacked,
    public: BTreeMap<String, String>,
    secret: BTreeMap<String, String>,
    operator_namespace: String,
    wants_manifests: bool,
    /// The apply's own time limit, which the rollback gets again.
    limit: Duration,
}

/// What the engine undid after a failed run, from its [`engine::ApplyAnswer`].
pub(super) enum Undone {
    Nothing,
    /// The rollback that ran, or why it could not start.
    RolledBack(Result<Box<engine::RolledBack>, String>),
    Removed(Box<Result<engine::Destroyed, engine::DestroyError>>),
}

impl<'a> Undo<'a> {
    /// What a failure of the change from `prior` (`None`: a create) to `planned` does;
    /// `target` is the planned private state's, `limit` the apply's time limit.
    pub(super) fn new(
        session: &Session,
        prior: Option<&'a InstanceModel>,
        target: Option<&'a RollbackTarget>,
        planned: &InstanceModel,
        limit: Duration,
    ) -> Undo<'a> {
        if !planned.rolls_back(session.config.rollback_on_failure) {
            return Undo::Stay;
        }
        let (prior, target) = match (prior, target) {
            (None, _) => {
                return Undo::Remove {
                    delete_volumes: planned.delete_volumes(),
                    timeout: timeouts::timeout(&planned.timeouts, Operation::Delete),
                };
            }
            (Some(prior), Some(target)) => (prior, target),
            // The plan warned why there is nothing to go back to.
            (Some(_), None) => return Undo::Stay,
        };
        let unpacked = match unpack(target) {
            Ok(u) => u,
            Err(why) => {
                return Undo::Unreadable {
                    operator: &target.operator,
                    why,
                };
            }
        };
        let namespace = namespace_of(&planned.namespace);
        Undo::Back(Box::new(Back {
            prior,
            target,
            public: prior.parameters().unwrap_or_default(),
            secret: back_sensitive(prior, planned, &unpacked.package),
            unpacked,
            operator_namespace: parse_operator_id(&target.operator)
                .map_or(namespace.as_str(), |(ns, _)| ns)
                .to_string(),
            wants_manifests: !planned.manifests.is_null(),
            limit,
        }))
    }

    /// The request's [`engine::ApplyRequest::on_failure`].
    pub(super) fn on_failure(&self) -> engine::OnFailure<'_> {
        match self {
            Undo::Stay
            | Undo::Unreadable { .. }
            | Undo::Remove {
                timeout: Err(_), ..
            } => engine::OnFailure::Stay,
            Undo::Remove {
                delete_volumes,
                timeout: Ok(timeout),
            } => engine::OnFailure::Remove {
                delete_volumes: *delete_volumes,
                timeout: *timeout,
            },
            Undo::Back(back) => engine::OnFailure::RollBack {
                package: &back.unpacked.package,
                resolution: back.unpacked.resolution.as_ref(),
                plan: &back.target.plan,
                public: &back.public,
                sensitive: &back.secret,
                operator_namespace: &back.operator_namespace,
                manifests: back.wants_manifests,
                timeout: back.limit,
            },
        }
    }

    /// The apply's answer after its run failed (`failed`, as recorded from `planned`)
    /// and the engine did what [`Undo::on_failure`] asked (`undone`): it fails either
    /// way, saying what failed and where the instance is now.
    pub(super) fn answer(
        self,
        session: &Session,
        planned: &InstanceModel,
        mut failed: ApplyResponse,
        undone: Undone,
        secret: &BTreeMap<String, String>,
    ) -> ApplyResponse {
        let Some(failure) = failed.diagnostics.iter().find(|d| d.is_error()).cloned() else {
            return failed;
        };
        match (self, undone) {
            (Undo::Unreadable { operator, why }, _) => {
                not_started(failed, &failure, operator, &why)
            }
            (Undo::Back(mut back), Undone::RolledBack(rolled)) => {
                // The rollback ran with the write-only values the engine added (see
                // `back_sensitive`): nothing it answers may quote the run's values.
                back.secret
                    .extend(secret.iter().map(|(k, v)| (k.clone(), v.clone())));
                back.answer(session, planned, failed, &failure, rolled)
            }
            (
                Undo::Remove {
                    timeout: Err(d), ..
                },
                _,
            ) => {
                failed.diagnostics.push(d);
                failed
            }
            (Undo::Remove { .. }, Undone::Removed(removed)) => {
                after_failed_create(session, planned, failed, &failure, *removed)
            }
            _ => failed,
        }
    }
}

impl Back<'_> {
    /// The answer once the engine rolled the instance back (or could not start to).
    fn answer(
        self,
        session: &Session,
        planned: &InstanceModel,
        failed: ApplyResponse,
        failure: &Diagnostic,
        rolled: Result<Box<engine::RolledBack>, String>,
    ) -> ApplyResponse {
        let target = self.target;
        let version = self.unpacked.package.operator.operator_version.clone();
        let mut rolled = match rolled {
            Ok(r) => r,
            Err(why) => return not_started(failed, failure, &version, &why),
        };
        // Only its own limit stops a rollback (see `engine::OnFailure::RollBack`).
        if let Err(e) = &mut rolled.applied.run
            && e.is_cancelled()
        {
            *e = timed_out(
                e.clone(),
                &format!("the rollback's plan {:?}", target.plan),
                "`timeouts`",
                self.limit,
            );
        }
        let prior = self.prior;
        let mut state = planned.clone();
        state.operator = prior.operator.clone();
        state.parameters = prior.parameters.clone();
        state.sensitive_parameters = prior.sensitive_parameters.clone();
        state.plan_triggers = prior.plan_triggers.clone();
        // Filled from the rollback's run by `record`, not compared with the failed plan.
        state.objects = tfplugin::Attr::Unknown;
        state.plan_status = Value::Unknown;
        if self.wants_manifests {
            state.manifests = Value::Unknown;
        }
        let rolled = *rolled;
        let rollback_failed = rolled.applied.run.is_err();
        let mut resp =
            super::apply::record(session, state, &target.plan, &self.secret, rolled.applied);
        let mut rolled_error =
            rolled_back(failure, &version, &target.operator, rollback_failed, &resp);
        if !rolled.migrated.is_empty() {
            let named: Vec<String> = rolled.migrated.iter().map(ToString::to_string).collect();
            rolled_error.detail.push_str(&format!(
                "\n\nNot undone: the failed version's {} (marked {}) ran before the failure, and what it changed in the data stays.",
                named.join(", "),
                kudo_plan::change::ANNOTATION_MIGRATES_DATA
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
}

/// The values the rollback runs with: the last completed apply's sensitive values, and
/// the new sensitive values the package declares. The engine adds the write-only values
/// the same way (`kudo_plan::write_only::rollback_sensitive`: they are never stored, so
/// the ones just used are the only ones there are).
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

/// A failed create with `rollback_on_failure`, once the engine removed what it wrote as
/// destroy does (`removed`): no state left, or the failure with why the removal failed.
fn after_failed_create(
    session: &Session,
    planned: &InstanceModel,
    failed: ApplyResponse,
    failure: &Diagnostic,
    removed: Result<engine::Destroyed, engine::DestroyError>,
) -> ApplyResponse {
    let namespace = namespace_of(&planned.namespace);
    let name = planned.name.as_deref().unwrap_or_default();
    let removed =
        super::destroy::answer(session, failed.new_state.clone(), name, &namespace, removed);
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
