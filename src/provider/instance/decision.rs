//! Which package, which parameters and which plan: the plan step's translation between
//! Terraform values and kudo-plan's decision, and the preview.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic, PlanResponse};

use kudo_engine::engine::{self};
use kudo_package::Package;
use kudo_plan::{Concern, Desired, LastRun, Prior, WantedChange};

use crate::provider::Session;
use crate::provider::manifests::Source;
use crate::provider::packages::{self, PlanCache, parse_operator_id};
use crate::provider::preview::Computed;
use crate::provider::sensitive::{self};

use super::model::InstanceModel;
use super::values::{STATUS_COMPLETE, STATUS_DRIFTED};

/// The package an instance runs. While planning, the copy `kudo_operator` just planned
/// wins (it is what the apply will install); otherwise the cluster is asked.
pub(super) async fn find_package(
    session: &Session,
    operator_id: &str,
    planning: bool,
) -> Result<Option<Package>, Diagnostic> {
    let Some((ns, ov_name)) = parse_operator_id(operator_id) else {
        return Ok(None);
    };
    let cache = PlanCache::from_env();
    if planning && let Some(pkg) = cache.load(ns, ov_name) {
        return Ok(Some(pkg));
    }
    let from_cluster = async {
        let cluster = session.cluster().await?;
        engine::load_operator(&cluster, ns, ov_name)
            .await
            .map_err(|e| session.engine_error("Cannot read the operator", &e))
    };
    match from_cluster.await {
        Ok(Some(pkg)) => Ok(Some(pkg)),
        Ok(None) => Ok(cache.load(ns, ov_name)),
        // A plan can still go ahead without the package; the apply will need the cluster.
        Err(d) if planning => {
            tracing::debug!(detail = %d.detail, "package not available while planning");
            Ok(None)
        }
        Err(d) => Err(d),
    }
}

/// Also what `provider::kudo::validate_parameters` returns (see `functions`).
pub(in crate::provider) fn parameter_diagnostics(
    pkg: &Package,
    params: &BTreeMap<String, String>,
    secret: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, Vec<Diagnostic>> {
    pkg.effective_params(params).map_err(|errs| {
        errs.into_iter()
            .map(|e| {
                let path = if secret.contains_key(&e.parameter) {
                    AttributePath::attribute(sensitive::ATTR).key(e.parameter.clone())
                } else if params.contains_key(&e.parameter) {
                    AttributePath::attribute("parameters").key(e.parameter.clone())
                } else {
                    AttributePath::attribute("parameters")
                };
                Diagnostic::error(
                    format!("Invalid parameter {}", e.parameter),
                    format!(
                        "{}.\nOperator {} {} declares: {}.\n\nCorrect the parameter's name or value, {}",
                        sensitive::redact(&e.to_string(), secret),
                        pkg.operator.name,
                        pkg.operator.operator_version,
                        pkg.parameters
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        crate::provider::diag::AGAIN
                    ),
                )
                .with_attribute(path)
            })
            .collect()
    })
}

/// The plan a change runs (`None`: nothing runs), by the one rule of
/// [`kudo_plan::decide`]; this only reads the prior state's attributes into it and its
/// refusals into diagnostics on the attribute concerned.
pub(super) fn decide_plan(
    prior: Option<&InstanceModel>,
    replacing: bool,
    pkg: &Package,
    params: &BTreeMap<String, String>,
    triggers: &BTreeMap<String, String>,
    children_changed: bool,
) -> Result<Option<String>, Diagnostic> {
    let exists = prior.is_some() && !replacing;
    let none = InstanceModel::default();
    let prior = prior.unwrap_or(&none);
    let old_params = prior.all_parameters().ok().flatten().unwrap_or_default();
    let old_triggers = prior.plan_triggers().unwrap_or_default();
    let old_ov = prior
        .operator
        .as_deref()
        .and_then(parse_operator_id)
        .map(|(_, ov)| ov.to_string())
        .unwrap_or_default();
    let digest = packages::digest(pkg);
    let last_run = match prior.status.as_deref() {
        Some(STATUS_COMPLETE) => LastRun::Complete,
        Some(STATUS_DRIFTED) => LastRun::Drifted,
        Some(other) => LastRun::Unfinished(other.to_string()),
        None => LastRun::Unfinished("unknown".to_string()),
    };
    let prior_model = Prior {
        operator_version: &old_ov,
        parameters: &old_params,
        last_plan: prior.last_plan.as_deref(),
        last_run,
        digest: prior.operator_digest.as_deref(),
        plan_triggers: &old_triggers,
    };
    let wanted = WantedChange {
        package: pkg,
        parameters: params,
        digest: Some(&digest),
        plan_triggers: triggers,
        children_changed,
    };
    match kudo_plan::decide(exists.then_some(&prior_model), &wanted) {
        Ok(decision) => Ok(decision.plan().map(str::to_string)),
        Err(e) => {
            let (summary, attribute) = match e.concern {
                Concern::PlanTriggers => ("One plan per apply", "plan_triggers"),
                Concern::ImmutableParameter => ("Parameter cannot change", "parameters"),
                Concern::Parameters => ("Cannot choose the plan to run", "parameters"),
            };
            Err(Diagnostic::error(summary, e.error.message)
                .with_attribute(AttributePath::attribute(attribute)))
        }
    }
}

/// The plan's error for what the walk rejects: the text the apply would fail with.
pub(super) fn walk_failure(
    pkg: &Package,
    secret: &BTreeMap<String, String>,
    e: kudo_plan::PlanError,
) -> PlanResponse {
    // A switch parameter (Toggle, enablingParameter) is the user's to fix; everything
    // else the walk rejects is rendering.
    let (summary, advice) = if e.parameter.is_some() {
        (
            format!(
                "Operator {} cannot run with these parameters",
                pkg.operator.name
            ),
            "Set the parameter named above to true or false",
        )
    } else {
        (
            format!("Operator {} does not render", pkg.operator.name),
            "Fix the template named above in the operator package, or the parameter value it uses",
        )
    };
    let e = engine::EngineError::from(e);
    let detail = crate::provider::diag::with_advice(
        sensitive::redact(&e.to_string(), secret),
        &format!("{advice}, {}", crate::provider::diag::AGAIN),
    );
    PlanResponse {
        diagnostics: vec![
            Diagnostic::error(summary, detail)
                .with_attribute(AttributePath::attribute("parameters")),
        ],
        ..Default::default()
    }
}

/// The `preview` attribute and its diagnostics: a warning per translated object, a
/// warning when it cannot be computed, an error when the apply could never send an
/// object. Unknown, without a warning, when the cluster is not available yet.
pub(super) async fn plan_preview(
    session: &Session,
    desired: &Desired<'_>,
    plan_name: &str,
    prior: &InstanceModel,
) -> Computed {
    let pkg = desired.inputs.package;
    let cluster = match session.cluster().await {
        Ok(c) => c,
        Err(d) => {
            tracing::debug!(detail = %d.detail, "no preview: cluster not reachable while planning");
            return Computed::unknown(Vec::new());
        }
    };
    let previous = prior.object_refs();
    // Object contents can be compared only with what the same package rendered.
    let same_package = prior
        .operator
        .as_deref()
        .and_then(parse_operator_id)
        .is_some_and(|(_, ov)| ov == pkg.operator_version_name())
        && prior.operator_digest.as_deref() == Some(packages::digest(pkg).as_str());
    let old_params = prior.all_parameters().ok().flatten();
    let prior_run = engine::Prior {
        objects: &previous,
        parameters: old_params.as_ref().filter(|_| same_package),
    };
    match engine::plan_instance(&cluster, desired, plan_name, &prior_run).await {
        Ok(plan) => Computed::of_plan(plan),
        Err(engine::PlanFailure::Unknown(note)) => {
            Computed::unknown(vec![crate::provider::preview::warning(&note)])
        }
        Err(engine::PlanFailure::Refused { summary, error }) => {
            // The apply's own diagnostic, pointing where the apply's would.
            Computed::unknown(vec![super::deadline::engine_diagnostic(
                session, summary, &error,
            )])
        }
    }
}

/// The managed objects' content when no plan runs: `desired` (the values the last run
/// had, as nothing changed) rendered for `plan_name`, the last plan. `None` without the
/// cluster.
pub(super) async fn current_objects(
    session: &Session,
    desired: &Desired<'_>,
    plan_name: &str,
    objects: &[kudo_engine::cluster::ObjectRef],
) -> Option<Vec<(kudo_engine::cluster::ObjectRef, Source)>> {
    let cluster = session.cluster().await.ok()?;
    engine::current(&cluster, desired, plan_name, objects).await
}
