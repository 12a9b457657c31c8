//! The engine's refusals of a change as Terraform diagnostics: each on the attribute
//! the user changes, in the words of the apply that would fail.

use std::collections::BTreeMap;

use tfplugin::{AttributePath, Diagnostic};

use kudo_engine::engine::PlanRefusal;
use kudo_package::{Package, ParamError};
use kudo_plan::{Concern, Downgrade, ImmutableChange, ImmutableReplacement, Refusal};

use crate::provider::diag::{AGAIN, with_advice};
use crate::provider::{Session, sensitive};

use super::deadline::engine_diagnostic;
use super::model::InstanceModel;

/// What the user sees for a refusal of the change; `secret` values never show.
pub(super) fn diagnostics(
    session: &Session,
    pkg: Option<&Package>,
    params: &BTreeMap<String, String>,
    secret: &BTreeMap<String, String>,
    refusal: PlanRefusal,
) -> Vec<Diagnostic> {
    match refusal {
        PlanRefusal::Change(r) => change(pkg, params, secret, r),
        PlanRefusal::Exists {
            namespace,
            name,
            holders,
        } => vec![crate::provider::existing::already_exists(
            &namespace, &name, &holders,
        )],
        PlanRefusal::Cluster { summary, error } => {
            let mut d = engine_diagnostic(session, summary, &error);
            d.detail = sensitive::redact(&d.detail, secret);
            vec![d]
        }
        PlanRefusal::Unreachable(e) => {
            vec![session.engine_error("Cannot check whether the instance exists", &e)]
        }
        PlanRefusal::Namespace { namespace, problem } => {
            vec![crate::provider::namespace::diagnostic(
                session, &namespace, &problem,
            )]
        }
        PlanRefusal::NotInstalled {
            operator_namespace,
            operator_version,
        } => vec![
            Diagnostic::error(
                "Operator not installed",
                format!("There is no OperatorVersion {operator_namespace}/{operator_version} in the cluster. Install it with a kudo_operator resource and reference its id."),
            )
            .with_attribute(AttributePath::attribute("operator")),
        ],
        PlanRefusal::WriteOnlySetTwice(twice) => super::write_only::set_twice_all(&twice),
        PlanRefusal::Unresolved(e) => vec![
            Diagnostic::error(
                "Cannot work out the instance's dependencies",
                format!("{e}\n\nRun `terraform plan` again so that the kudo_operator resource records its dependency tree."),
            )
            .with_attribute(AttributePath::attribute("operator")),
        ],
    }
}

/// A refusal that needs no cluster, on the attribute it concerns. `pkg` is the package
/// the change runs, when the provider has it (an apply without the plan-time copy lets
/// the engine read it): it names the operator and lists the declared parameters.
pub(super) fn change(
    pkg: Option<&Package>,
    params: &BTreeMap<String, String>,
    secret: &BTreeMap<String, String>,
    refusal: Refusal,
) -> Vec<Diagnostic> {
    let on = |attr: &str| AttributePath::attribute(attr);
    match refusal {
        Refusal::UnknownPlans(plans) => plans
            .into_iter()
            .map(|(plan, text)| {
                Diagnostic::error(format!("No plan {plan}"), text)
                    .with_attribute(on("plan_triggers").key(plan))
            })
            .collect(),
        Refusal::Parameters(errors) => parameters(pkg, params, secret, errors),
        Refusal::Output { key, error } => vec![
            Diagnostic::error(
                format!("Output {key} of operator {} does not render", operator_name(pkg)),
                with_advice(
                    error,
                    &format!("Fix the template under `outputs:` in the package's operator.yaml, {AGAIN}"),
                ),
            )
            .with_attribute(on("operator")),
        ],
        Refusal::OutputReveals(keys) => vec![
            Diagnostic::error(
                "Output reveals a sensitive parameter",
                format!(
                    "The package's outputs {keys:?} would contain a value from `sensitive_parameters`, and outputs are shown in plans. Pass that value in `parameters` instead, or change the output template."
                ),
            )
            .with_attribute(on(sensitive::ATTR)),
        ],
        Refusal::Walk(e) => vec![walk(pkg, secret, e)],
        Refusal::Tree(e) => vec![
            Diagnostic::error("Cannot work out the instance's dependencies", e.to_string())
                .with_attribute(on("operator")),
        ],
        Refusal::Downgrade(d) => vec![downgrade(&d)],
        Refusal::Decide(e) => {
            let attribute = match e.concern {
                Concern::PlanTriggers => "plan_triggers",
                Concern::ImmutableParameter | Concern::Parameters => "parameters",
            };
            vec![
                Diagnostic::error(e.concern.summary(), e.error.message)
                    .with_attribute(on(attribute)),
            ]
        }
    }
}

/// The operator's name as diagnostics give it.
fn operator_name(pkg: Option<&Package>) -> &str {
    pkg.map_or("(not read)", |p| p.operator.name.as_str())
}

/// Parameter errors, each on the entry it names. Also what
/// `provider::kudo::validate_parameters` returns (see `functions`).
pub(in crate::provider) fn parameters(
    pkg: Option<&Package>,
    params: &BTreeMap<String, String>,
    secret: &BTreeMap<String, String>,
    errors: Vec<ParamError>,
) -> Vec<Diagnostic> {
    errors
        .into_iter()
        .map(|e| {
            // The attribute the value was given in: what the advice names, since a
            // wrong name or value is the configuration's to correct.
            let (attribute, named) = if secret.contains_key(&e.parameter) {
                (sensitive::ATTR, true)
            } else {
                ("parameters", params.contains_key(&e.parameter))
            };
            let path = match named {
                true => AttributePath::attribute(attribute).key(e.parameter.clone()),
                false => AttributePath::attribute(attribute),
            };
            // A message ending in a question ("did you mean ...?") takes no full stop.
            let message = sensitive::redact(&e.to_string(), secret);
            let stop = if message.ends_with('?') { "" } else { "." };
            Diagnostic::error(
                format!("Invalid parameter {}", e.parameter),
                format!(
                    "{message}{stop}\n{}\nCorrect the parameter's name or value in this resource's `{attribute}` in the configuration, {AGAIN}",
                    pkg.map_or(String::new(), |p| format!("{}.\n", p.declared_parameters())),
                ),
            )
            .with_attribute(path)
        })
        .collect()
}

/// The plan's error for what the walk rejects: the text the apply would fail with.
fn walk(
    pkg: Option<&Package>,
    secret: &BTreeMap<String, String>,
    e: kudo_plan::PlanError,
) -> Diagnostic {
    let (summary, advice) = (e.summary(operator_name(pkg)), e.advice());
    let e = kudo_engine::engine::EngineError::from(e);
    let detail = with_advice(
        sensitive::redact(&e.to_string(), secret),
        &format!("{advice}, {AGAIN}"),
    );
    Diagnostic::error(summary, detail).with_attribute(AttributePath::attribute("parameters"))
}

/// A downgrade's refusal, with what to change in the configuration instead.
pub(super) fn downgrade(d: &Downgrade) -> Diagnostic {
    let (advice, attribute) = match d {
        Downgrade::Operator { from, .. } => (
            format!(
                "Point `operator` at a version at least {}, or set `allow_downgrade = true` on this kudo_instance to run the older version anyway.",
                from.shown()
            ),
            "operator",
        ),
        Downgrade::Dependencies(_) => (
            "Pin the dependency at its installed version or newer with `dependency_overrides` on the kudo_operator, or set `allow_downgrade = true` on this kudo_instance to run the older versions anyway.".to_string(),
            "children",
        ),
    };
    Diagnostic::error(d.summary(), format!("{d} {advice}"))
        .with_attribute(AttributePath::attribute(attribute))
}

/// The refusal of going back to an older version after the upgrade to the newer one
/// failed (the state records the failed version, not COMPLETE): one diagnostic saying
/// what happened and the ways forward, instead of a bare downgrade refusal. `None` for
/// a downgrade from a version whose run completed. `completed` is the `operator` whose
/// plan last completed, `asked` the one the configuration names.
pub(super) fn back_after_failure(
    d: &Downgrade,
    prior: &InstanceModel,
    completed: Option<&str>,
    asked: Option<&str>,
) -> Option<Diagnostic> {
    let Downgrade::Operator { from, to, .. } = d else {
        return None;
    };
    let status = prior.status.as_deref().unwrap_or("unknown");
    if matches!(
        status,
        kudo_plan::RunStatus::COMPLETE | kudo_plan::RunStatus::DRIFTED
    ) {
        return None;
    }
    let (from, to) = (from.shown(), to.shown());
    let last = match (completed, asked) {
        (Some(c), Some(a)) if c == a => {
            format!(" It last completed on {to}, which this configuration asks for again.")
        }
        (Some(c), _) => format!(" It last completed on {c}."),
        (None, _) => String::new(),
    };
    Some(
        Diagnostic::error(
            format!("The upgrade to {from} did not complete"),
            format!(
                "The last apply moved this instance to {from} and failed there (status {status}).{last} Going back to {to} is a downgrade, which is refused by default because the failed version may already have changed the instance's data.\n\nEither set `allow_downgrade = true` on this kudo_instance to run {to} again now, or point `operator` at {from} or newer once the cause of the failure is fixed. To have a failed change put the instance back in the same apply next time, set `rollback_on_failure = true`."
            ),
        )
        .with_attribute(AttributePath::attribute("operator")),
    )
}

/// The warning when a downgrade goes ahead because `allow_downgrade` is set.
pub(super) fn allowed(d: &Downgrade) -> Diagnostic {
    let refusal = downgrade(d);
    Diagnostic::warning(
        format!("{} allowed", refusal.summary),
        format!(
            "allow_downgrade = true lets this through: {}",
            refusal.detail
        ),
    )
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

/// The replacement the immutable parameters' changes call for. KUDO refuses such a
/// change on an existing instance, and refusing the plan instead would leave no way
/// forward: `terraform destroy` and `apply -replace` plan the configuration first and
/// would stop at the same refusal. A replacement is what the refusal's own advice asks
/// for (create the instance again), so the plan does it, and the warning says so, with
/// what it costs and how to avoid it.
pub(super) fn replacement(
    changes: &[ImmutableChange],
    prior: &InstanceModel,
    proposed: &InstanceModel,
    write_only: &BTreeMap<String, String>,
) -> Option<Replacement> {
    let first = changes.first()?;
    let public = |m: &InstanceModel| m.parameters().unwrap_or_default();
    let (old_public, new_public) = (public(prior), public(proposed));
    // Sensitive and write-only values (the prior's and the change's) are never quoted.
    let mut secret = prior.sensitive().unwrap_or_default();
    secret.extend(proposed.sensitive().unwrap_or_default());
    secret.extend(write_only.iter().map(|(k, v)| (k.clone(), v.clone())));
    let path = |name: &str| {
        let attr = match old_public.contains_key(name) || new_public.contains_key(name) {
            true => "parameters",
            false => sensitive::ATTR,
        };
        AttributePath::attribute(attr).key(name)
    };
    let instance = format!(
        "{}/{}",
        crate::provider::namespace_of(&prior.namespace),
        prior.name.as_deref().unwrap_or_default()
    );
    let shown = ImmutableReplacement {
        changes,
        secret: |name: &str| secret.contains_key(name),
    };
    // The destroy half reads `delete_volumes_on_destroy` from the prior state.
    let volumes = match prior.delete_volumes() {
        true => {
            "the PersistentVolumeClaims of its StatefulSets are deleted too (`delete_volumes_on_destroy = true`)"
        }
        false => {
            "the PersistentVolumeClaims of its StatefulSets are kept with their data (`delete_volumes_on_destroy` is not true), and a StatefulSet of the same name in the new instance mounts them again"
        }
    };
    let detail = format!(
        "KUDO cannot change an immutable parameter of an existing instance:\n{}\nso this apply destroys instance {instance} and creates it again. The destroy runs the operator's `cleanup` plan (when it has one) and deletes every object the instance manages, its dependency instances included; {volumes}. Values that random template functions generate (passwords, for example) are generated anew.\n\nTo keep the instance, set {}. To have Terraform refuse to replace this instance instead, add `lifecycle {{ prevent_destroy = true }}` to the resource.",
        shown.listed(),
        shown.revert(),
    );
    let summary = shown.summary(&instance);
    let mut warning = Diagnostic::warning(summary, sensitive::redact(&detail, &secret));
    // Terraform quotes the configuration line a diagnostic points at, which for a
    // sensitive entry could be the secret itself: such a warning points at the resource.
    if !secret.contains_key(&first.parameter) {
        warning = warning.with_attribute(path(&first.parameter));
    }
    Some(Replacement {
        paths: changes.iter().map(|c| path(&c.parameter)).collect(),
        warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_package::Package;
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

    fn replaces(prior: &InstanceModel, proposed: &InstanceModel) -> Option<Replacement> {
        let old = prior.all_parameters().expect("merge").expect("known");
        let new = proposed.all_parameters().expect("merge").expect("known");
        let changes = kudo_plan::immutable_changes(&lifecycle(), &old, &new);
        replacement(&changes, prior, proposed, &BTreeMap::new())
    }

    // The change list, the revert advice and the texts are checked through Terraform
    // (tests/acceptance: semantics, sensitive, which also see the replacement's paths
    // and a secret's warning pointing nowhere) and in kudo_plan::ImmutableReplacement.
    #[test]
    fn the_warning_points_at_a_public_entry_and_a_moved_value_at_its_new_map() {
        let prior = instance(&[("DATABASE", "orders")], &[]);
        let r = replaces(&prior, &instance(&[("DATABASE", "billing")], &[])).expect("replaces");
        assert_eq!(r.warning.severity, tfplugin::Severity::Warning);
        assert_eq!(
            r.warning.attribute,
            Some(AttributePath::attribute("parameters").key("DATABASE"))
        );

        // Moved from the sensitive map to the plain one: the plain entry is what changed.
        let prior = instance(&[], &[("DATABASE", "old-secret")]);
        let r = replaces(&prior, &instance(&[("DATABASE", "billing")], &[])).expect("replaces");
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
        let r = replaces(&prior, &instance(&[], &[])).expect("replaces");
        assert!(
            r.warning.detail.contains("are deleted too"),
            "{}",
            r.warning.detail
        );
    }
}
