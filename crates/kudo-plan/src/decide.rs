//! Which plan a change runs, and why (KUDO semantics section 3): the one decision for a
//! `kudo_instance` and for every dependency instance below it.

use std::collections::BTreeMap;
use std::fmt;

use kudo_package::Package;

use crate::PlanError;
use crate::select::{changed_parameters, check_immutable, select_plan, unknown_plan};

/// How the instance's last run ended, as far as anyone knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastRun {
    /// The last plan completed and every object it applied is still there.
    Complete,
    /// The last plan completed, but an object it applied was removed or re-created
    /// out of band since.
    Drifted,
    /// The last plan failed, was interrupted, or nothing says how it ended (the
    /// status as recorded, `unknown` when none was).
    Unfinished(String),
}

/// What the instance had after its last run.
#[derive(Debug, Clone)]
pub struct Prior<'a> {
    /// Its OperatorVersion name (`zookeeper-0.3.0`); empty when unknown.
    pub operator_version: &'a str,
    /// The parameters it ran with (user-set values; defaults are compared as well).
    pub parameters: &'a BTreeMap<String, String>,
    /// The plan that ran last, when recorded.
    pub last_plan: Option<&'a str>,
    pub last_run: LastRun,
    /// Digest of the package contents it ran, when recorded.
    pub digest: Option<&'a str>,
    /// `plan_triggers` as last applied.
    pub plan_triggers: &'a BTreeMap<String, String>,
}

/// What the configuration asks for now.
#[derive(Debug, Clone)]
pub struct Wanted<'a> {
    pub package: &'a Package,
    pub parameters: &'a BTreeMap<String, String>,
    pub digest: Option<&'a str>,
    pub plan_triggers: &'a BTreeMap<String, String>,
    /// The resolved dependency tree differs from the one the last run used (another
    /// version of a dependency was picked), though this package did not change.
    pub children_changed: bool,
}

/// Why a plan runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    Create,
    Upgrade {
        from: String,
        to: String,
    },
    Parameters(Vec<String>),
    /// Parameters changed while the deploy plan had never finished.
    ParametersBeforeDeploy {
        changed: Vec<String>,
        status: String,
    },
    Triggered,
    PackageChanged,
    ChildrenChanged,
    RepairDrift,
    RepairUnfinished {
        plan: String,
        status: String,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Create => write!(f, "new instance"),
            Reason::Upgrade { from, to } => write!(
                f,
                "operator version {} -> {to}",
                if from.is_empty() { "unknown" } else { from }
            ),
            Reason::Parameters(p) => write!(f, "parameters {p:?} changed"),
            Reason::ParametersBeforeDeploy { changed, status } => write!(
                f,
                "parameters {changed:?} changed and its deploy plan ended {status}"
            ),
            Reason::Triggered => write!(f, "its plan_triggers entry changed"),
            Reason::PackageChanged => write!(f, "the package contents changed"),
            Reason::ChildrenChanged => write!(f, "its dependency tree changed"),
            Reason::RepairDrift => write!(f, "a managed object changed out of band"),
            Reason::RepairUnfinished { plan, status } => {
                write!(f, "last plan {plan} ended {status}")
            }
        }
    }
}

/// What a change that cannot run is about, so that the caller can point at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concern {
    /// `plan_triggers` asks for more than one plan, or for one the package lacks.
    PlanTriggers,
    /// An immutable parameter would change.
    ImmutableParameter,
    /// The changed parameters select no single plan the package has.
    Parameters,
}

impl Concern {
    /// What went wrong, in a few words.
    pub fn summary(&self) -> &'static str {
        match self {
            Concern::PlanTriggers => "One plan per apply",
            Concern::ImmutableParameter => "Parameter cannot change",
            Concern::Parameters => "Cannot choose the plan to run",
        }
    }
}

/// Why no plan can run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct DecideError {
    pub concern: Concern,
    #[source]
    pub error: PlanError,
}

fn refuse(concern: Concern, error: PlanError) -> DecideError {
    DecideError { concern, error }
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Run {
        plan: String,
        reason: Reason,
    },
    /// Nothing changed and the last run completed: the instance is left alone.
    Settled,
}

impl Decision {
    pub fn plan(&self) -> Option<&str> {
        match self {
            Decision::Run { plan, .. } => Some(plan),
            Decision::Settled => None,
        }
    }
}

fn run(plan: impl Into<String>, reason: Reason) -> Decision {
    Decision::Run {
        plan: plan.into(),
        reason,
    }
}

/// Which plan runs for the change from `prior` (None: the instance does not exist)
/// to `wanted`:
///
/// 1. a new instance runs `deploy`;
/// 2. a changed `plan_triggers` entry runs that plan, alone (KUDO runs one plan at a
///    time: with another trigger, a parameter or an operator change it is an error);
/// 3. another operator version runs `upgrade` (else `update`, else `deploy`);
///    changed parameters run their common trigger (immutable ones may not change: a
///    caller that can create the instance again asks [`crate::immutable_changes`]
///    first and decides as for a new instance), or `deploy` when the deploy plan
///    never finished;
/// 4. nothing changed: a changed package or dependency tree and drift run `deploy`,
///    which brings every object back; an unfinished last plan runs again (a plan the
///    package lost falls back to `deploy`); otherwise nothing runs.
pub fn decide(prior: Option<&Prior<'_>>, wanted: &Wanted<'_>) -> Result<Decision, DecideError> {
    let pkg = wanted.package;
    let Some(prior) = prior else {
        return Ok(run("deploy", Reason::Create));
    };
    let new_ov = pkg.operator_version_name();
    let version_changed = prior.operator_version != new_ov;
    let mut changed = changed_parameters(pkg, prior.parameters, wanted.parameters);
    if changed.is_empty() && prior.parameters != wanted.parameters {
        // A value set (or unset) that equals the default still changes what the
        // Instance records; it runs the plan a parameter change runs.
        changed = prior
            .parameters
            .keys()
            .chain(wanted.parameters.keys())
            .filter(|k| prior.parameters.get(*k) != wanted.parameters.get(*k))
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
    }
    let triggered: Vec<&String> = wanted
        .plan_triggers
        .iter()
        .filter(|(plan, token)| prior.plan_triggers.get(*plan) != Some(*token))
        .map(|(plan, _)| plan)
        .collect();
    if !triggered.is_empty() {
        let other_change = version_changed || !changed.is_empty();
        if triggered.len() > 1 || other_change {
            let plans: Vec<&str> = triggered.iter().map(|p| p.as_str()).collect();
            return Err(refuse(
                Concern::PlanTriggers,
                PlanError::new(format!(
                    "This change would run several plans ({}{}). KUDO runs one plan at a time: apply the `plan_triggers` change separately from other changes.",
                    plans.join(", "),
                    if other_change {
                        ", and the plan the parameter or operator change selects"
                    } else {
                        ""
                    }
                )),
            ));
        }
        let plan = triggered[0];
        if !pkg.operator.plans.contains_key(plan) {
            return Err(refuse(
                Concern::PlanTriggers,
                PlanError::new(unknown_plan(pkg, plan)),
            ));
        }
        return Ok(run(plan.clone(), Reason::Triggered));
    }
    let last = prior.last_plan.unwrap_or("deploy");
    if version_changed || !changed.is_empty() {
        if !changed.is_empty() {
            check_immutable(pkg, None, prior.parameters, wanted.parameters)
                .map_err(|e| refuse(Concern::ImmutableParameter, e))?;
        }
        // A deploy that never finished has not set up everything an update assumes.
        if let LastRun::Unfinished(status) = &prior.last_run
            && last == "deploy"
            && !version_changed
        {
            return Ok(run(
                "deploy",
                Reason::ParametersBeforeDeploy {
                    changed,
                    status: status.clone(),
                },
            ));
        }
        let plan = select_plan(
            pkg,
            prior.parameters,
            wanted.parameters,
            prior.operator_version,
            &new_ov,
        )
        .map_err(|e| refuse(Concern::Parameters, e))?;
        let reason = if version_changed {
            Reason::Upgrade {
                from: prior.operator_version.to_string(),
                to: new_ov,
            }
        } else {
            Reason::Parameters(changed)
        };
        return Ok(run(plan, reason));
    }
    match &prior.last_run {
        LastRun::Unfinished(status) => {
            let plan = if pkg.operator.plans.contains_key(last) {
                last
            } else {
                "deploy"
            };
            Ok(run(
                plan,
                Reason::RepairUnfinished {
                    plan: last.to_string(),
                    status: status.clone(),
                },
            ))
        }
        LastRun::Drifted => Ok(run("deploy", Reason::RepairDrift)),
        LastRun::Complete => {
            if wanted
                .digest
                .is_some_and(|d| prior.digest.is_some_and(|p| p != d))
            {
                Ok(run("deploy", Reason::PackageChanged))
            } else if wanted.children_changed {
                Ok(run("deploy", Reason::ChildrenChanged))
            } else {
                Ok(Decision::Settled)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kudo_package::{OperatorFile, Origin, Parameter, Plan, Strategy};

    fn pkg(version: &str, plans: &[&str]) -> Package {
        let mut value = Parameter::new("VALUE");
        value.default = Some("none".into());
        let mut size = Parameter::new("SIZE");
        size.trigger = Some("resize".into());
        size.default = Some("1".into());
        let mut fixed = Parameter::new("FIXED");
        fixed.immutable = true;
        fixed.default = Some("a".into());
        Package {
            operator: OperatorFile {
                name: "op".into(),
                operator_version: version.into(),
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
            parameters: vec![value, size, fixed],
            groups: vec![],
            templates: BTreeMap::new(),
            origin: Origin::Memory,
        }
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    struct Case {
        name: &'static str,
        prior_ov: &'static str,
        prior_params: &'static [(&'static str, &'static str)],
        last_plan: Option<&'static str>,
        last_run: LastRun,
        prior_digest: Option<&'static str>,
        prior_triggers: &'static [(&'static str, &'static str)],
        params: &'static [(&'static str, &'static str)],
        digest: Option<&'static str>,
        triggers: &'static [(&'static str, &'static str)],
        children_changed: bool,
        /// The plan, "-" for settled, "!text" for an error containing text.
        expect: &'static str,
    }

    const BASE: Case = Case {
        name: "",
        prior_ov: "op-1.0.0",
        prior_params: &[("VALUE", "a")],
        last_plan: Some("deploy"),
        last_run: LastRun::Complete,
        prior_digest: Some("d1"),
        prior_triggers: &[],
        params: &[("VALUE", "a")],
        digest: Some("d1"),
        triggers: &[],
        children_changed: false,
        expect: "-",
    };

    #[test]
    fn decisions() {
        let package = pkg(
            "1.0.0",
            &["deploy", "update", "upgrade", "resize", "backup"],
        );
        let unfinished = |s: &str| LastRun::Unfinished(s.to_string());
        let cases = vec![
            Case {
                name: "settled",
                ..BASE
            },
            Case {
                name: "setting the default value is a change",
                prior_params: &[],
                params: &[("VALUE", "none")],
                expect: "update",
                ..BASE
            },
            Case {
                name: "parameter without trigger -> update",
                params: &[("VALUE", "b")],
                expect: "update",
                ..BASE
            },
            Case {
                name: "parameter trigger",
                params: &[("VALUE", "a"), ("SIZE", "3")],
                expect: "resize",
                ..BASE
            },
            Case {
                name: "two triggers",
                params: &[("VALUE", "b"), ("SIZE", "3")],
                expect: "!trigger different plans",
                ..BASE
            },
            Case {
                name: "immutable",
                params: &[("VALUE", "a"), ("FIXED", "b")],
                expect: "!FIXED",
                ..BASE
            },
            Case {
                name: "upgrade",
                prior_ov: "op-0.9.0",
                expect: "upgrade",
                ..BASE
            },
            Case {
                name: "plan trigger",
                triggers: &[("backup", "1")],
                expect: "backup",
                ..BASE
            },
            Case {
                name: "same trigger token",
                prior_triggers: &[("backup", "1")],
                triggers: &[("backup", "1")],
                ..BASE
            },
            Case {
                name: "trigger and parameter",
                params: &[("VALUE", "b")],
                triggers: &[("backup", "1")],
                expect: "!one plan at a time",
                ..BASE
            },
            Case {
                name: "two triggers at once",
                triggers: &[("backup", "1"), ("resize", "1")],
                expect: "!several plans",
                ..BASE
            },
            Case {
                name: "trigger of a plan the operator lacks",
                triggers: &[("nope", "1")],
                expect: "!no plan \"nope\"",
                ..BASE
            },
            Case {
                name: "package changed",
                digest: Some("d2"),
                expect: "deploy",
                ..BASE
            },
            Case {
                name: "children changed",
                children_changed: true,
                expect: "deploy",
                ..BASE
            },
            Case {
                name: "drift",
                last_run: LastRun::Drifted,
                expect: "deploy",
                ..BASE
            },
            Case {
                name: "failed update runs again",
                last_plan: Some("update"),
                last_run: unfinished("ERROR"),
                expect: "update",
                ..BASE
            },
            Case {
                name: "lost plan falls back",
                last_plan: Some("gone"),
                last_run: unfinished("FATAL_ERROR"),
                expect: "deploy",
                ..BASE
            },
            Case {
                name: "unknown status",
                last_plan: None,
                last_run: unfinished("unknown"),
                expect: "deploy",
                ..BASE
            },
            Case {
                name: "change before deploy finished",
                last_run: unfinished("IN_PROGRESS"),
                params: &[("VALUE", "b")],
                expect: "deploy",
                ..BASE
            },
            Case {
                name: "change after failed update",
                last_plan: Some("update"),
                last_run: unfinished("ERROR"),
                params: &[("VALUE", "b")],
                expect: "update",
                ..BASE
            },
        ];
        for c in cases {
            let prior_params = map(c.prior_params);
            let prior_triggers = map(c.prior_triggers);
            let params = map(c.params);
            let triggers = map(c.triggers);
            let prior = Prior {
                operator_version: c.prior_ov,
                parameters: &prior_params,
                last_plan: c.last_plan,
                last_run: c.last_run.clone(),
                digest: c.prior_digest,
                plan_triggers: &prior_triggers,
            };
            let wanted = Wanted {
                package: &package,
                parameters: &params,
                digest: c.digest,
                plan_triggers: &triggers,
                children_changed: c.children_changed,
            };
            let got = decide(Some(&prior), &wanted);
            match (c.expect, got) {
                ("-", Ok(Decision::Settled)) => {}
                (want, Ok(Decision::Run { plan, .. })) if plan == want => {}
                (want, Err(e)) if want.starts_with('!') && e.error.message.contains(&want[1..]) => {
                }
                (want, got) => panic!("{}: expected {want}, got {got:?}", c.name),
            }
        }
        let params = map(&[]);
        let wanted = Wanted {
            package: &package,
            parameters: &params,
            digest: None,
            plan_triggers: &params,
            children_changed: false,
        };
        assert_eq!(decide(None, &wanted).unwrap().plan(), Some("deploy"));
    }
}
