//! Which plan runs for a change (KUDO semantics section 3), and the immutable-parameter
//! rules checked before anything runs.

use std::collections::{BTreeMap, BTreeSet};

use kudo_package::Package;

use crate::PlanError;

fn value_or_default<'a>(
    pkg: &'a Package,
    values: &'a BTreeMap<String, String>,
    name: &str,
) -> Option<&'a str> {
    values
        .get(name)
        .map(String::as_str)
        .or_else(|| pkg.parameter(name).and_then(|p| p.default_value()))
}

fn first_plan(pkg: &Package, candidates: &[&str]) -> Result<String, PlanError> {
    candidates
        .iter()
        .find(|c| pkg.operator.plans.contains_key(**c))
        .map(|c| c.to_string())
        .ok_or_else(|| {
            PlanError::new(format!(
                "operator {} has none of the plans {candidates:?}; a package needs at least `deploy`",
                pkg.operator.name
            ))
        })
}

/// What to say about a plan name the operator does not have (a `plan_triggers` entry),
/// with the plans it has.
pub fn unknown_plan(pkg: &Package, plan: &str) -> String {
    let known: Vec<&str> = pkg.operator.plans.keys().map(String::as_str).collect();
    format!(
        "Operator {} has no plan {plan:?}; it has: {}.",
        pkg.operator.name,
        known.join(", ")
    )
}

/// Names of parameters whose value (instance value, else default) differs.
pub fn changed_parameters(
    pkg: &Package,
    old_params: &BTreeMap<String, String>,
    new_params: &BTreeMap<String, String>,
) -> Vec<String> {
    let names: BTreeSet<&String> = old_params
        .keys()
        .chain(new_params.keys())
        .chain(pkg.parameters.iter().map(|p| &p.name))
        .collect();
    names
        .into_iter()
        .filter(|n| value_or_default(pkg, old_params, n) != value_or_default(pkg, new_params, n))
        .cloned()
        .collect()
}

/// The plan to run when an instance changes. `pkg` is the package being applied (the new
/// one on an upgrade).
///
/// - operator version changed: `upgrade`, else `update`, else `deploy`;
/// - parameters changed: their common `trigger` (a parameter without one stands for
///   `update`, else `deploy`); different plans for different parameters is an error;
/// - nothing changed: `update`, else `deploy` (callers normally do not ask then).
pub fn select_plan(
    pkg: &Package,
    old_params: &BTreeMap<String, String>,
    new_params: &BTreeMap<String, String>,
    old_ov_name: &str,
    new_ov_name: &str,
) -> Result<String, PlanError> {
    if old_ov_name != new_ov_name {
        return first_plan(pkg, &["upgrade", "update", "deploy"]);
    }
    let fallback = first_plan(pkg, &["update", "deploy"])?;
    let mut plans: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for name in changed_parameters(pkg, old_params, new_params) {
        let plan = pkg
            .parameter(&name)
            .and_then(|p| p.trigger.clone())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| fallback.clone());
        plans.entry(plan).or_default().push(name);
    }
    match plans.len() {
        0 => Ok(fallback),
        1 => {
            let (plan, params) = plans
                .into_iter()
                .next()
                .ok_or_else(|| PlanError::new("no plan"))?;
            if pkg.operator.plans.contains_key(&plan) {
                Ok(plan)
            } else {
                Err(PlanError::new(format!(
                    "parameters {params:?} trigger plan {plan:?}, which operator {} does not have",
                    pkg.operator.name
                )))
            }
        }
        _ => {
            let detail: Vec<String> = plans
                .iter()
                .map(|(plan, ps)| format!("{} -> {plan}", ps.join(", ")))
                .collect();
            Err(PlanError::new(format!(
                "the changed parameters trigger different plans ({}); change them in separate applies",
                detail.join("; ")
            )))
        }
    }
}

/// An immutable parameter whose value would change: see [`immutable_changes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImmutableChange {
    pub parameter: String,
    /// The value before and after the change: the instance's value, else the package
    /// default (empty when there is neither).
    pub old: String,
    pub new: String,
}

/// The immutable parameters of `pkg` whose value (instance value, else default) differs
/// between `old_params` and `new_params`, in the package's order. KUDO refuses such a
/// change on an existing instance ([`check_immutable`]); a caller that can create the
/// instance again (the Terraform provider replaces the resource) asks this first.
pub fn immutable_changes(
    pkg: &Package,
    old_params: &BTreeMap<String, String>,
    new_params: &BTreeMap<String, String>,
) -> Vec<ImmutableChange> {
    pkg.parameters
        .iter()
        .filter(|p| p.immutable)
        .filter_map(|p| {
            let old = value_or_default(pkg, old_params, &p.name);
            let new = value_or_default(pkg, new_params, &p.name);
            (old != new).then(|| ImmutableChange {
                parameter: p.name.clone(),
                old: old.unwrap_or_default().to_string(),
                new: new.unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// The immutable parameters that change, as the replacement of the instance they call
/// for (create it again: what KUDO's refusal asks for) shows them. A value `secret`
/// names is never quoted.
pub struct ImmutableReplacement<'a, S: Fn(&str) -> bool> {
    pub changes: &'a [ImmutableChange],
    pub secret: S,
}

impl<S: Fn(&str) -> bool> ImmutableReplacement<'_, S> {
    /// `Immutable parameters A, B changed: instance ns/name will be replaced`.
    pub fn summary(&self, instance: &str) -> String {
        let names: Vec<&str> = self.changes.iter().map(|c| c.parameter.as_str()).collect();
        format!(
            "Immutable parameter{} {} changed: instance {instance} will be replaced",
            if names.len() > 1 { "s" } else { "" },
            names.join(", ")
        )
    }

    /// One line per change, `  A: "old" -> "new"`.
    pub fn listed(&self) -> String {
        let shown = |name: &str, value: &str| match (self.secret)(name) {
            true => crate::change::REDACTED.to_string(),
            false => format!("{value:?}"),
        };
        let lines: Vec<String> = self
            .changes
            .iter()
            .map(|c| {
                let (old, new) = (shown(&c.parameter, &c.old), shown(&c.parameter, &c.new));
                format!("  {}: {old} -> {new}", c.parameter)
            })
            .collect();
        lines.join("\n")
    }

    /// The values that keep the instance: `A back to "old", B back to its previous value`.
    pub fn revert(&self) -> String {
        let values: Vec<String> = self
            .changes
            .iter()
            .map(|c| match (self.secret)(&c.parameter) {
                true => format!("{} back to its previous value", c.parameter),
                false => format!("{} back to {:?}", c.parameter, c.old),
            })
            .collect();
        values.join(", ")
    }
}

/// Immutable parameters may not change after create. On an upgrade (`old_pkg` given), a
/// parameter that is immutable in the new version but was not (or did not exist) before
/// needs an explicit value in `new_params`.
pub fn check_immutable(
    new_pkg: &Package,
    old_pkg: Option<&Package>,
    old_params: &BTreeMap<String, String>,
    new_params: &BTreeMap<String, String>,
) -> Result<(), PlanError> {
    let before = old_pkg.unwrap_or(new_pkg);
    let mut problems = Vec::new();
    for p in new_pkg.parameters.iter().filter(|p| p.immutable) {
        let was_immutable = before.parameter(&p.name).is_some_and(|o| o.immutable);
        if old_pkg.is_some() && !was_immutable {
            if !new_params.contains_key(&p.name) {
                problems.push(format!(
                    "parameter {} is immutable in the new operator version and needs an explicit value",
                    p.name
                ));
            }
            continue;
        }
        let old = value_or_default(before, old_params, &p.name);
        let new = value_or_default(new_pkg, new_params, &p.name);
        if old != new {
            problems.push(format!(
                "parameter {} is immutable and cannot change from {:?} to {:?} (recreate the instance instead)",
                p.name,
                old.unwrap_or_default(),
                new.unwrap_or_default()
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(PlanError::new(problems.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_package::{OperatorFile, Origin, Parameter, Plan, Strategy};

    fn pkg(plans: &[&str], params: Vec<Parameter>) -> Package {
        Package {
            operator: OperatorFile {
                name: "op".into(),
                plans: plans
                    .iter()
                    .map(|p| {
                        (
                            p.to_string(),
                            Plan {
                                strategy: Strategy::Serial,
                                strategy_explicit: true,
                                phases: vec![],
                            },
                        )
                    })
                    .collect(),
                ..Default::default()
            },
            parameters: params,
            groups: vec![],
            templates: BTreeMap::new(),
            origin: Origin::Memory,
        }
    }

    fn param(
        name: &str,
        default: Option<&str>,
        trigger: Option<&str>,
        immutable: bool,
    ) -> Parameter {
        let mut p = Parameter::new(name);
        p.default = default.map(str::to_string);
        p.trigger = trigger.map(str::to_string);
        p.immutable = immutable;
        p
    }

    fn vals(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn upgrade_prefers_upgrade_then_update_then_deploy() {
        let none = BTreeMap::new();
        let p = pkg(&["deploy", "update", "upgrade"], vec![]);
        assert_eq!(
            select_plan(&p, &none, &none, "op-1", "op-2").unwrap(),
            "upgrade"
        );
        let p = pkg(&["deploy", "update"], vec![]);
        assert_eq!(
            select_plan(&p, &none, &none, "op-1", "op-2").unwrap(),
            "update"
        );
        let p = pkg(&["deploy"], vec![]);
        assert_eq!(
            select_plan(&p, &none, &none, "op-1", "op-2").unwrap(),
            "deploy"
        );
    }

    #[test]
    fn trigger_of_changed_parameter_wins() {
        let p = pkg(
            &["deploy", "update", "scale"],
            vec![
                param("N", Some("3"), Some("scale"), false),
                param("M", Some("a"), None, false),
            ],
        );
        assert_eq!(
            select_plan(&p, &vals(&[]), &vals(&[("N", "5")]), "v", "v").unwrap(),
            "scale"
        );
        // setting a value equal to the default is no change; M falls back to update
        assert_eq!(
            select_plan(&p, &vals(&[]), &vals(&[("N", "3"), ("M", "b")]), "v", "v").unwrap(),
            "update"
        );
    }

    #[test]
    fn different_triggers_are_an_error() {
        let p = pkg(
            &["deploy", "a", "b"],
            vec![
                param("X", Some("1"), Some("a"), false),
                param("Y", Some("1"), Some("b"), false),
            ],
        );
        let err =
            select_plan(&p, &vals(&[]), &vals(&[("X", "2"), ("Y", "2")]), "v", "v").unwrap_err();
        assert!(
            err.message.contains("X -> a") && err.message.contains("Y -> b"),
            "{err}"
        );
        // without update, an untriggered change runs deploy
        let p = pkg(&["deploy"], vec![param("Z", None, None, false)]);
        assert_eq!(
            select_plan(&p, &vals(&[("Z", "1")]), &vals(&[("Z", "2")]), "v", "v").unwrap(),
            "deploy"
        );
        // a trigger naming a missing plan
        let p = pkg(&["deploy"], vec![param("Z", None, Some("nope"), false)]);
        assert!(select_plan(&p, &vals(&[]), &vals(&[("Z", "2")]), "v", "v").is_err());
    }

    #[test]
    fn immutable_parameters() {
        let p = pkg(&["deploy"], vec![param("DISK", Some("1Gi"), None, true)]);
        assert!(check_immutable(&p, None, &vals(&[]), &vals(&[("DISK", "1Gi")])).is_ok());
        let err = check_immutable(&p, None, &vals(&[]), &vals(&[("DISK", "2Gi")])).unwrap_err();
        assert!(err.message.contains("DISK"), "{err}");

        // The same comparison, as a list a caller can act on: old and new value, the
        // default standing in for an unset one.
        assert_eq!(
            immutable_changes(&p, &vals(&[]), &vals(&[("DISK", "2Gi")])),
            [ImmutableChange {
                parameter: "DISK".into(),
                old: "1Gi".into(),
                new: "2Gi".into(),
            }]
        );
        assert!(immutable_changes(&p, &vals(&[("DISK", "1Gi")]), &vals(&[])).is_empty());
        let mutable = pkg(&["deploy"], vec![param("DISK", Some("1Gi"), None, false)]);
        assert!(immutable_changes(&mutable, &vals(&[]), &vals(&[("DISK", "2Gi")])).is_empty());

        let old = pkg(&["deploy"], vec![param("DISK", Some("1Gi"), None, false)]);
        let err = check_immutable(&p, Some(&old), &vals(&[]), &vals(&[])).unwrap_err();
        assert!(err.message.contains("explicit value"), "{err}");
        assert!(check_immutable(&p, Some(&old), &vals(&[]), &vals(&[("DISK", "1Gi")])).is_ok());
    }

    #[test]
    fn a_replacement_lists_the_changes_and_quotes_no_secret() {
        let change = |parameter: &str, old: &str, new: &str| ImmutableChange {
            parameter: parameter.into(),
            old: old.into(),
            new: new.into(),
        };
        let one = [change("DATABASE", "orders", "billing")];
        let r = ImmutableReplacement {
            changes: &one,
            secret: |_: &str| false,
        };
        assert_eq!(
            r.summary("team/app"),
            "Immutable parameter DATABASE changed: instance team/app will be replaced"
        );
        assert_eq!(r.listed(), r#"  DATABASE: "orders" -> "billing""#);
        assert_eq!(r.revert(), r#"DATABASE back to "orders""#);

        let two = [
            change("DATABASE", "orders", "main"),
            change("PASSWORD", "old-secret", "new-secret"),
        ];
        let r = ImmutableReplacement {
            changes: &two,
            secret: |name: &str| name == "PASSWORD",
        };
        assert_eq!(
            r.summary("team/app"),
            "Immutable parameters DATABASE, PASSWORD changed: instance team/app will be replaced"
        );
        assert_eq!(
            r.listed(),
            "  DATABASE: \"orders\" -> \"main\"\n  PASSWORD: (sensitive value) -> (sensitive value)"
        );
        assert_eq!(
            r.revert(),
            r#"DATABASE back to "orders", PASSWORD back to its previous value"#
        );
    }
}
