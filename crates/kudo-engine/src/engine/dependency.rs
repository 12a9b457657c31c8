//! Dependency instances (KudoOperator tasks, KEP-29/36) as the cluster has them: what
//! an existing child Instance records, and what a run does with it. Which child, its
//! name, parameters and whether it is enabled are the walk's decisions (kudo-plan).

use std::collections::BTreeMap;

use kudo_package::Package;
use kudo_plan::{Decision, LastRun, Prior, WantedChange, decide as decide_plan};
use serde_json::Value;

use super::error::EngineError;

/// What an existing child Instance records about its last run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExistingChild {
    pub operator_version: String,
    pub parameters: BTreeMap<String, String>,
    /// The plan that ran last, when the Instance says.
    pub last_plan: Option<String>,
    /// That plan's status (`COMPLETE`, `ERROR`, ...), when known.
    pub last_status: Option<String>,
}

impl ExistingChild {
    /// Reads an Instance object (see [`super::InstanceObject`]: missing fields stay
    /// empty so that the child counts as changed or unfinished, never silently skipped).
    pub(crate) fn from_instance(obj: &Value) -> ExistingChild {
        let instance = super::instance_object::InstanceObject::from_value(obj);
        let last_plan = instance.last_plan();
        let last_status = last_plan.as_deref().and_then(|p| instance.plan_status(p));
        ExistingChild {
            operator_version: instance.spec.operator_version.name.clone(),
            parameters: instance.parameters(),
            last_plan,
            last_status,
        }
    }

    fn completed(&self) -> bool {
        self.last_status.as_deref() == Some("COMPLETE")
    }
}

/// What a KudoOperator step does with an enabled child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChildAction {
    /// Same version, same parameters, last plan complete: the step is healthy as is.
    Leave {
        reason: String,
    },
    Run {
        plan: String,
        reason: String,
    },
}

/// Decides whether a child runs a plan, and which, by the rule of a top-level instance
/// ([`kudo_plan::decide`]): a cascade reaches only children whose version or rendered
/// parameters changed, plus those whose last plan did not finish, and those whose
/// objects `drifted` (changed outside Terraform: deploy applies them again).
pub(crate) fn decide(
    child: &Package,
    existing: Option<&ExistingChild>,
    values: &BTreeMap<String, String>,
    drifted: bool,
) -> Result<ChildAction, EngineError> {
    let none = BTreeMap::new();
    let prior = existing.map(|e| Prior {
        operator_version: &e.operator_version,
        parameters: &e.parameters,
        last_plan: e.last_plan.as_deref(),
        last_run: if e.completed() && drifted {
            LastRun::Drifted
        } else if e.completed() {
            LastRun::Complete
        } else {
            LastRun::Unfinished(e.last_status.clone().unwrap_or_else(|| "unknown".into()))
        },
        // A child's package is the resolved one; its contents are not recorded.
        digest: None,
        plan_triggers: &none,
    });
    let wanted = WantedChange {
        package: child,
        parameters: values,
        digest: None,
        plan_triggers: &none,
        children_changed: false,
    };
    Ok(
        match decide_plan(prior.as_ref(), &wanted).map_err(|e| e.error)? {
            Decision::Run { plan, reason } => ChildAction::Run {
                plan,
                reason: reason.to_string(),
            },
            Decision::Settled => ChildAction::Leave {
                reason: format!(
                    "operator version {} and parameters unchanged, last plan {} COMPLETE",
                    child.operator_version_name(),
                    existing
                        .and_then(|e| e.last_plan.as_deref())
                        .unwrap_or("deploy")
                ),
            },
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn child_pkg(plans: &[&str]) -> Package {
        use kudo_package::{OperatorFile, Origin, Parameter, Plan, Strategy};
        let mut value = Parameter::new("VALUE");
        value.default = Some("none".into());
        let mut size = Parameter::new("SIZE");
        size.trigger = Some("resize".into());
        Package {
            operator: OperatorFile {
                name: "child".into(),
                operator_version: "1.0.0".into(),
                plans: plans
                    .iter()
                    .map(|p| {
                        let plan = Plan {
                            strategy: Strategy::Serial,
                            strategy_explicit: true,
                            phases: vec![],
                        };
                        (p.to_string(), plan)
                    })
                    .collect(),
                ..Default::default()
            },
            parameters: vec![value, size],
            groups: vec![],
            templates: BTreeMap::new(),
            origin: Origin::Memory,
        }
    }

    fn instance(ov: &str, params: Value, plan: &str, status: &str) -> ExistingChild {
        ExistingChild::from_instance(&json!({
            "spec": {
                "operatorVersion": {"name": ov},
                "parameters": params,
                "planExecution": {"planName": plan, "uid": "u", "status": status},
            },
            "status": {"planStatus": {plan: {"status": status}}},
        }))
    }

    fn vals(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn run(plan: &str, action: ChildAction) {
        match action {
            ChildAction::Run { plan: p, .. } => assert_eq!(p, plan),
            other => panic!("expected a run of {plan}, got {other:?}"),
        }
    }

    #[test]
    fn settled_child_is_left_alone() {
        let pkg = child_pkg(&["deploy", "update"]);
        let done = instance("child-1.0.0", json!({"VALUE": "a"}), "deploy", "COMPLETE");
        let action = decide(&pkg, Some(&done), &vals(&[("VALUE", "a")]), false).unwrap();
        assert!(matches!(action, ChildAction::Leave { .. }), "{action:?}");
        // Setting a value equal to the default changes what the Instance records: the
        // same rule as a top-level instance (kudo_plan::decide) runs `update`.
        let done = instance("child-1.0.0", json!({}), "update", "COMPLETE");
        run(
            "update",
            decide(&pkg, Some(&done), &vals(&[("VALUE", "none")]), false).unwrap(),
        );
    }

    #[test]
    fn changed_child_runs_what_kudo_would_pick() {
        let pkg = child_pkg(&["deploy", "update", "upgrade", "resize"]);
        let done = instance("child-1.0.0", json!({"VALUE": "a"}), "deploy", "COMPLETE");
        run("deploy", decide(&pkg, None, &vals(&[]), false).unwrap());
        run(
            "update",
            decide(&pkg, Some(&done), &vals(&[("VALUE", "b")]), false).unwrap(),
        );
        run(
            "resize",
            decide(
                &pkg,
                Some(&done),
                &vals(&[("VALUE", "a"), ("SIZE", "3")]),
                false,
            )
            .unwrap(),
        );
        let old = instance("child-0.9.0", json!({"VALUE": "a"}), "deploy", "COMPLETE");
        run(
            "upgrade",
            decide(&pkg, Some(&old), &vals(&[("VALUE", "a")]), false).unwrap(),
        );
        let deploy_only = child_pkg(&["deploy"]);
        run(
            "deploy",
            decide(&deploy_only, Some(&done), &vals(&[("VALUE", "b")]), false).unwrap(),
        );
    }

    #[test]
    fn unfinished_child_runs_again() {
        let pkg = child_pkg(&["deploy", "update"]);
        for status in ["ERROR", "IN_PROGRESS", "FATAL_ERROR"] {
            let failed = instance("child-1.0.0", json!({"VALUE": "a"}), "update", status);
            run(
                "update",
                decide(&pkg, Some(&failed), &vals(&[("VALUE", "a")]), false).unwrap(),
            );
            let failed = instance("child-1.0.0", json!({"VALUE": "a"}), "deploy", status);
            run(
                "deploy",
                decide(&pkg, Some(&failed), &vals(&[("VALUE", "b")]), false).unwrap(),
            );
        }
        // An Instance that says nothing about its last plan is not trusted as settled.
        let bare = ExistingChild::from_instance(&json!({
            "spec": {"operatorVersion": {"name": "child-1.0.0"}, "parameters": {"VALUE": "a"}},
        }));
        run(
            "deploy",
            decide(&pkg, Some(&bare), &vals(&[("VALUE", "a")]), false).unwrap(),
        );
    }
}
