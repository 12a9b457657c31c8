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

/// A change that replaces the instance because KUDO cannot make it in place.
pub(super) struct Replacement {
    /// Where each change shows in the configuration, for Terraform's `requires_replace`
    /// (a path must hold a different value in the prior and the planned state, or
    /// Terraform drops it; see `write_only::Restore::replace_paths` for the values
    /// Terraform never sees).
    pub paths: Vec<AttributePath>,
    pub warning: Diagnostic,
}

/// The replacement an immutable parameter's change calls for, `None` when none changes.
/// KUDO refuses such a change on an existing instance, and refusing the plan instead
/// would leave no way forward: `terraform destroy` and `apply -replace` plan the
/// configuration first and would stop at the same refusal. A replacement is what the
/// refusal's own advice asks for (create the instance again), so the plan does it, and
/// the warning says so, with what it costs and how to avoid it.
pub(super) fn immutable_replacement(
    pkg: &Package,
    prior: &InstanceModel,
    proposed: &InstanceModel,
    new_params: &BTreeMap<String, String>,
) -> Option<Replacement> {
    // A prior state whose parameters cannot be read is left to `decide_plan`, as
    // before: an instance is never replaced on a guess.
    let old_params = prior.all_parameters().ok().flatten()?;
    let changes = kudo_plan::immutable_changes(pkg, &old_params, new_params);
    let first = changes.first()?;
    let public = |m: &InstanceModel| m.parameters().unwrap_or_default();
    let (old_public, new_public) = (public(prior), public(proposed));
    // Sensitive and write-only values (the latter joined the sensitive map for
    // planning) are never quoted.
    let mut secret = prior.sensitive().unwrap_or_default();
    secret.extend(proposed.sensitive().unwrap_or_default());
    let path = |name: &str| {
        let attr = if old_public.contains_key(name) || new_public.contains_key(name) {
            "parameters"
        } else {
            sensitive::ATTR
        };
        AttributePath::attribute(attr).key(name)
    };
    let shown = |name: &str, value: &str| {
        if secret.contains_key(name) {
            sensitive::REDACTED.to_string()
        } else {
            format!("{value:?}")
        }
    };
    let names: Vec<&str> = changes.iter().map(|c| c.parameter.as_str()).collect();
    let instance = format!(
        "{}/{}",
        crate::provider::namespace_of(&prior.namespace),
        prior.name.as_deref().unwrap_or_default()
    );
    let listed: Vec<String> = changes
        .iter()
        .map(|c| {
            format!(
                "  {}: {} -> {}",
                c.parameter,
                shown(&c.parameter, &c.old),
                shown(&c.parameter, &c.new)
            )
        })
        .collect();
    let revert: Vec<String> = changes
        .iter()
        .map(|c| {
            if secret.contains_key(&c.parameter) {
                format!("{} back to its previous value", c.parameter)
            } else {
                format!("{} back to {:?}", c.parameter, c.old)
            }
        })
        .collect();
    // The destroy half reads `delete_volumes_on_destroy` from the prior state.
    let volumes = if prior.delete_volumes() {
        "the PersistentVolumeClaims of its StatefulSets are deleted too (`delete_volumes_on_destroy = true`)"
    } else {
        "the PersistentVolumeClaims of its StatefulSets are kept with their data (`delete_volumes_on_destroy` is not true), and a StatefulSet of the same name in the new instance mounts them again"
    };
    let detail = format!(
        "KUDO cannot change an immutable parameter of an existing instance:\n{}\nso this apply destroys instance {instance} and creates it again. The destroy runs the operator's `cleanup` plan (when it has one) and deletes every object the instance manages, its dependency instances included; {volumes}. Values that random template functions generate (passwords, for example) are generated anew.\n\nTo keep the instance, set {}. To have Terraform refuse to replace this instance instead, add `lifecycle {{ prevent_destroy = true }}` to the resource.",
        listed.join("\n"),
        revert.join(", "),
    );
    let summary = format!(
        "Immutable parameter{} {} changed: instance {instance} will be replaced",
        if names.len() > 1 { "s" } else { "" },
        names.join(", ")
    );
    let mut warning = Diagnostic::warning(summary, sensitive::redact(&detail, &secret));
    // Terraform quotes the configuration line a diagnostic points at, which for a
    // sensitive entry could be the secret itself: such a warning points at the resource.
    if !secret.contains_key(&first.parameter) {
        warning = warning.with_attribute(path(&first.parameter));
    }
    Some(Replacement {
        paths: names.iter().map(|n| path(n)).collect(),
        warning,
    })
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
    crd_safety: engine::CrdSafety,
    contents: engine::Contents,
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
        drifted: &[],
    };
    let plan = engine::plan_instance(
        &cluster, desired, plan_name, &prior_run, crd_safety, contents,
    );
    match plan.await {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use tfplugin::{Attr, Value};

    fn lifecycle() -> Package {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/operators/lifecycle-v1");
        Package::load_dir(&dir).expect("lifecycle-v1 loads")
    }

    fn instance(public: &[(&str, &str)], secret: &[(&str, &str)]) -> InstanceModel {
        InstanceModel {
            name: "app".into(),
            namespace: "team".into(),
            parameters: Value::string_map(public.iter().copied()),
            sensitive_parameters: Value::string_map(secret.iter().copied()),
            ..Default::default()
        }
    }

    fn replacement(prior: &InstanceModel, proposed: &InstanceModel) -> Option<Replacement> {
        let params = proposed.all_parameters().expect("merge").expect("known");
        immutable_replacement(&lifecycle(), prior, proposed, &params)
    }

    #[test]
    fn an_immutable_change_replaces_and_the_warning_names_it() {
        let prior = instance(&[("DATABASE", "orders")], &[]);
        // A mutable parameter changes in place.
        assert!(
            replacement(
                &prior,
                &instance(&[("DATABASE", "orders"), ("GREETING", "hi")], &[])
            )
            .is_none()
        );
        // Unset where the default is the same value: no change either.
        assert!(
            replacement(&instance(&[("DATABASE", "main")], &[]), &instance(&[], &[])).is_none()
        );

        let r = replacement(&prior, &instance(&[("DATABASE", "billing")], &[])).expect("replaces");
        assert_eq!(
            r.paths,
            [AttributePath::attribute("parameters").key("DATABASE")]
        );
        let w = &r.warning;
        assert_eq!(w.severity, tfplugin::Severity::Warning);
        assert_eq!(
            w.attribute,
            Some(AttributePath::attribute("parameters").key("DATABASE"))
        );
        assert!(
            w.summary.contains("DATABASE") && w.summary.contains("team/app will be replaced"),
            "{w:?}"
        );
        for needle in [
            r#"DATABASE: "orders" -> "billing""#,
            "destroys instance team/app and creates it again",
            "`cleanup` plan",
            "PersistentVolumeClaims of its StatefulSets are kept",
            r#"set DATABASE back to "orders""#,
            "prevent_destroy",
        ] {
            assert!(
                w.detail.contains(needle),
                "{needle:?} missing:\n{}",
                w.detail
            );
        }

        // Back to the default by removing the value: the change is in `parameters` too.
        let r = replacement(&prior, &instance(&[], &[])).expect("replaces");
        assert!(
            r.warning.detail.contains(r#""orders" -> "main""#),
            "{}",
            r.warning.detail
        );
    }

    #[test]
    fn a_sensitive_immutable_value_is_never_quoted() {
        let prior = instance(&[], &[("DATABASE", "old-secret")]);
        let r =
            replacement(&prior, &instance(&[], &[("DATABASE", "new-secret")])).expect("replaces");
        assert_eq!(
            r.paths,
            [AttributePath::attribute("sensitive_parameters").key("DATABASE")]
        );
        let w = &r.warning;
        assert!(
            !w.detail.contains("secret") && !w.summary.contains("secret"),
            "{w:?}"
        );
        assert!(
            w.detail
                .contains("DATABASE: (sensitive value) -> (sensitive value)"),
            "{}",
            w.detail
        );
        assert!(
            w.detail.contains("back to its previous value"),
            "{}",
            w.detail
        );
        assert_eq!(
            w.attribute, None,
            "the configuration line could hold the secret"
        );

        // Moved from the sensitive map to the plain one: the plain entry is what changed.
        let r = replacement(&prior, &instance(&[("DATABASE", "billing")], &[])).expect("replaces");
        assert_eq!(
            r.paths,
            [AttributePath::attribute("parameters").key("DATABASE")]
        );
        assert!(
            !r.warning.detail.contains("old-secret"),
            "{}",
            r.warning.detail
        );
    }

    #[test]
    fn deleted_volumes_are_announced_as_deleted() {
        let mut prior = instance(&[("DATABASE", "orders")], &[]);
        prior.delete_volumes_on_destroy = Attr::Known(true);
        let r = replacement(&prior, &instance(&[], &[])).expect("replaces");
        assert!(
            r.warning.detail.contains("are deleted too"),
            "{}",
            r.warning.detail
        );
    }
}
