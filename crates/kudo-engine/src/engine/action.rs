//! Running a named plan of an existing instance on demand, as `kubectl kudo plan
//! trigger` does (KUDO 0.19: `planTrigger` in pkg/kudoctl/cmd/plan/plan_trigger.go sets
//! `spec.planExecution.planName` and KUDO's controller runs it); here the engine runs
//! it. What the instance is, which values the run may change, and whether the run can
//! do without the instance's render seed are decided here.
//!
//! Decisions where KUDO is silent:
//! - The run may only set parameters whose `trigger` is the plan: the others configure
//!   the instance, which its owner (a `kudo_instance`) changes. `kubectl kudo update -p`
//!   of a parameter runs its trigger plan the same way (`select_plan`).
//! - The run prunes nothing (no previous inventory): KUDO never prunes, and what the
//!   instance owns is its owner's to tidy on its next apply or destroy.
//! - Without the instance's render seed, a plan whose objects do not depend on the seed
//!   runs with none; one that does is refused: running it with another seed would
//!   replace generated passwords and keys.

use std::collections::BTreeMap;

use kudo_package::{LoadContext, Package};
use kudo_plan::{Desired, Inputs};
use kudo_resolve::PlanCache;
use tokio_util::sync::CancellationToken;

use super::crd_safety::CrdSafety;
use super::error::EngineError;
use super::installed_package::dependency_tree;
use super::instance_object::{InstanceObject, InstanceReadError, instance_ref};
use super::plan_run::{run_plan, run_plan_with_sensitive};
use super::progress::Progress;
use super::readiness::HealthSettings;
use super::removal::CrdDeletion;
use super::run::RunRequest;
use crate::cluster::Cluster;
use kudo_plan::status::PlanStatus;

/// An existing Instance as the cluster holds it, with the package of the OperatorVersion
/// it runs and the values kept in its `<name>-kudo-sensitive` Secret.
#[derive(Debug, Clone)]
pub(crate) struct Running {
    pub record: InstanceObject,
    pub package: Package,
    /// Namespace and name of the OperatorVersion it runs.
    pub operator_version: (String, String),
    pub sensitive: BTreeMap<String, String>,
}

/// Every parameter value the Instance `namespace/name` runs with, as its templates see
/// them: its spec's and its Secret's values (sensitive and write-only ones included)
/// over its package's defaults. `Ok(None)` when there is no such Instance; values its
/// package no longer accepts are [`InstanceReadError::Parameters`].
pub async fn instance_parameters(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<BTreeMap<String, String>>, InstanceReadError> {
    let Some(running) = running(cluster, namespace, name).await? else {
        return Ok(None);
    };
    let mut all = running.record.parameters();
    all.extend(running.sensitive);
    let effective = running.package.effective_params(&all);
    effective.map(Some).map_err(InstanceReadError::Parameters)
}

/// The Instance `namespace/name`; `Ok(None)` when there is none (each caller says what
/// that means for it). Its OperatorVersion must be in the cluster.
pub(crate) async fn running(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<Option<Running>, InstanceReadError> {
    let Some(instance) = cluster
        .get(&instance_ref(namespace, name))
        .await
        .map_err(InstanceReadError::Instance)?
    else {
        return Ok(None);
    };
    let record = InstanceObject::from_value(&instance);
    let (ov_namespace, ov_name) = record.operator_version(namespace);
    let operator_version = (ov_namespace.to_string(), ov_name.to_string());
    let package = super::operator::load_operator(cluster, ov_namespace, ov_name, None)
        .await
        .map_err(InstanceReadError::Operator)?
        .ok_or_else(|| InstanceReadError::OperatorMissing {
            namespace: namespace.to_string(),
            name: name.to_string(),
            ov_namespace: operator_version.0.clone(),
            ov_name: operator_version.1.clone(),
        })?;
    let sensitive = super::sensitive::read_sensitive(cluster, namespace, name)
        .await
        .map_err(InstanceReadError::Sensitive)?;
    Ok(Some(Running {
        record,
        package,
        operator_version,
        sensitive,
    }))
}

/// A plan to run on an existing instance, and how the run goes.
#[derive(Debug, Clone, Copy)]
pub struct ActionRequest<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub plan: &'a str,
    /// Values the run sets (each a parameter whose trigger is `plan`).
    pub parameters: &'a BTreeMap<String, String>,
    /// The instance's render seed, when the caller has it.
    pub seed: Option<&'a str>,
    /// The provider's health settings.
    pub health: &'a HealthSettings,
    pub crd_safety: CrdSafety,
    pub progress: Option<&'a Progress>,
    /// The plan-time copies, where `kudo_operator` recorded the instance's dependency
    /// tree, and where the tree is resolved from without one (see [`run_action`]).
    pub copies: &'a PlanCache,
    pub sources: &'a LoadContext,
}

/// Why the plan cannot run; each names what to change. [`prepare_action`] answers one,
/// or one per parameter the run may not set; [`run_action`] these, or that the run
/// failed.
#[derive(Debug, thiserror::Error)]
pub enum ActionRefusal {
    #[error("There is no Instance {name} in namespace {namespace}")]
    Missing { namespace: String, name: String },
    #[error(transparent)]
    Running(Box<InstanceReadError>),
    #[error("Operator {operator} has no plan {plan:?}; its plans are {}.", plans.join(", "))]
    NoPlan {
        operator: String,
        plan: String,
        plans: Vec<String>,
    },
    /// The package declares no such parameter.
    #[error("Operator {operator} declares no parameter {parameter:?} (params.yaml).")]
    Undeclared { operator: String, parameter: String },
    /// The parameter's trigger is another plan (`Some`), or it has none.
    #[error(
        "An action running plan {plan:?} may only set parameters whose trigger is that plan, and {parameter:?} is not one: {}.",
        runs(trigger)
    )]
    NotAnInput {
        plan: String,
        parameter: String,
        trigger: Option<String>,
    },
    /// The plan renders differently with another seed, and the seed is not known.
    #[error(
        "Task {task:?} of plan {plan:?} renders differently for each seed of the template random functions (randAlphaNum, genPrivateKey, ...)."
    )]
    NeedsSeed { plan: String, task: String },
    /// The run started and failed (or was stopped).
    #[error("{error}")]
    Failed {
        error: Box<EngineError>,
        /// The plan's status tree as the Instance records it afterwards.
        status: Option<Box<PlanStatus>>,
        /// The instance's sensitive values (the run's among them): whoever shows the
        /// error keeps them out of it.
        sensitive: BTreeMap<String, String>,
    },
}

/// What a parameter's `trigger` makes it, in [`ActionRefusal::NotAnInput`]'s words.
fn runs(trigger: &Option<String>) -> String {
    match trigger {
        Some(t) => format!("its trigger is plan {t:?}"),
        None => "it has no `trigger`, so it configures the instance".to_string(),
    }
}

/// What a run of the plan needs, read from the cluster and checked.
#[derive(Debug, Clone)]
pub struct PreparedAction {
    pub package: Package,
    /// Namespace and name of the OperatorVersion the instance runs.
    pub operator_version: (String, String),
    /// `spec.parameters` with the run's public values over them.
    pub public: BTreeMap<String, String>,
    /// The instance's sensitive values, with the run's values for those keys.
    pub secret: BTreeMap<String, String>,
    /// Both, as templates see them.
    pub all: BTreeMap<String, String>,
    /// Whether the run changes a sensitive value (the Secret is written again).
    pub secret_changed: bool,
    pub seed: Option<String>,
}

/// Reads the instance and checks the run `req` asks for: every refusal when it may not
/// run (one, or one per parameter the run may not set).
pub async fn prepare_action(
    cluster: &Cluster,
    req: &ActionRequest<'_>,
) -> Result<PreparedAction, Vec<ActionRefusal>> {
    let running = running(cluster, req.namespace, req.name)
        .await
        .map_err(|e| vec![ActionRefusal::Running(Box::new(e))])?
        .ok_or_else(|| {
            vec![ActionRefusal::Missing {
                namespace: req.namespace.to_string(),
                name: req.name.to_string(),
            }]
        })?;
    let Running {
        record,
        package,
        operator_version: (ov_namespace, ov_name),
        sensitive: mut secret,
    } = running;
    if !package.operator.plans.contains_key(req.plan) {
        return Err(vec![ActionRefusal::NoPlan {
            operator: package.operator.name.clone(),
            plan: req.plan.to_string(),
            plans: package.operator.plans.keys().cloned().collect(),
        }]);
    }
    check_parameters(&package, req)?;
    let mut public = record.parameters();
    let mut secret_changed = false;
    for (k, v) in req.parameters {
        match secret.get_mut(k) {
            Some(kept) => {
                secret_changed |= kept != v;
                kept.clone_from(v);
            }
            None => {
                public.insert(k.clone(), v.clone());
            }
        }
    }
    let mut all = public.clone();
    all.extend(secret.clone());
    if req.seed.is_none() {
        seed_free(&package, req, &all).map_err(|refusal| vec![refusal])?;
    }
    Ok(PreparedAction {
        package,
        operator_version: (ov_namespace, ov_name),
        public,
        all,
        secret,
        secret_changed,
        seed: req.seed.map(str::to_string),
    })
}

impl PreparedAction {
    /// The phases and steps the run goes through, in order (`None` when the plan does
    /// not walk: the run reports why).
    pub fn outline(&self, req: &ActionRequest<'_>) -> Option<kudo_plan::PlanOutline> {
        let desired = Desired::new(Inputs {
            package: &self.package,
            instance: req.name,
            namespace: req.namespace,
            parameters: &self.all,
            seed: self.seed.as_deref(),
            dependencies: None,
        })
        .ok()?;
        Some(desired.plan(req.plan).ok()?.outline(req.name))
    }
}

/// Parameters the run may set: declared ones whose `trigger` is the plan it runs.
fn check_parameters(package: &Package, req: &ActionRequest<'_>) -> Result<(), Vec<ActionRefusal>> {
    let refused: Vec<ActionRefusal> = req
        .parameters
        .keys()
        .filter_map(|k| {
            let Some(p) = package.parameter(k) else {
                return Some(ActionRefusal::Undeclared {
                    operator: package.operator.name.clone(),
                    parameter: k.clone(),
                });
            };
            let trigger = p.trigger.as_deref().filter(|t| !t.is_empty());
            (trigger != Some(req.plan)).then(|| ActionRefusal::NotAnInput {
                plan: req.plan.to_string(),
                parameter: k.clone(),
                trigger: trigger.map(str::to_string),
            })
        })
        .collect();
    match refused.is_empty() {
        true => Ok(()),
        false => Err(refused),
    }
}

/// Refuses a plan whose objects depend on the render seed: rendered with two different
/// seeds, every task must do the same.
fn seed_free(
    package: &Package,
    req: &ActionRequest<'_>,
    parameters: &BTreeMap<String, String>,
) -> Result<(), ActionRefusal> {
    let render = |seed: &'static str| {
        Desired::new(Inputs {
            package,
            instance: req.name,
            namespace: req.namespace,
            parameters,
            seed: Some(seed),
            dependencies: None,
        })
        .ok()
    };
    let (Some(a), Some(b)) = (render("kudo-plan-action-a"), render("kudo-plan-action-b")) else {
        // The run reports a package that does not render, with its own words.
        return Ok(());
    };
    let (Ok(a), Ok(b)) = (a.plan(req.plan), b.plan(req.plan)) else {
        return Ok(());
    };
    match a.first_differing_task(b) {
        None => Ok(()),
        Some(task) => Err(ActionRefusal::NeedsSeed {
            plan: req.plan.to_string(),
            task: task.to_string(),
        }),
    }
}

/// Runs the plan `run` asks for until it completes, fails, or `cancel` fires: reads and
/// checks the instance as [`prepare_action`] does (its refusals), then runs the plan
/// with the dependency tree `kudo_operator` recorded in `run.copies` for the instance's
/// OperatorVersion, or, without one, the tree resolved again from `run.sources` for the
/// cluster's version. A failure of the run is [`ActionRefusal::Failed`], with the
/// plan's status tree as the Instance records it.
pub async fn run_action(
    cluster: &Cluster,
    run: &ActionRequest<'_>,
    cancel: &CancellationToken,
) -> Result<(), Vec<ActionRefusal>> {
    let prepared = prepare_action(cluster, run).await?;
    let failed = |error: EngineError, status: Option<PlanStatus>| {
        vec![ActionRefusal::Failed {
            error: Box::new(error),
            status: status.map(Box::new),
            sensitive: prepared.secret.clone(),
        }]
    };
    let (ns, ov) = &prepared.operator_version;
    let recorded = kudo_plan::known_tree(&prepared.package, || run.copies.load_resolution(ns, ov));
    let resolution = match recorded {
        Some(r) => r,
        None => dependency_tree(cluster, &prepared.package, run.sources)
            .await
            .map_err(|e| failed(EngineError::fatal(e.to_string()), None))?,
    };
    let tree = kudo_plan::change::tree_of(
        &resolution,
        &prepared.package,
        run.name,
        run.namespace,
        &prepared.all,
        prepared.seed.as_deref(),
        None,
    )
    .map_err(|e| failed(EngineError::fatal(e.to_string()), None))?;
    let health = run.health.policy();
    let request = RunRequest {
        package: &prepared.package,
        instance: run.name,
        namespace: run.namespace,
        parameters: &prepared.public,
        plan: run.plan,
        previous_inventory: &[],
        render_seed: prepared.seed.as_deref(),
        dependencies: Some(&tree.packages),
        crd_deletion: CrdDeletion::default(),
        crd_safety: run.crd_safety,
        health: &health,
        progress: run.progress,
        tree: Default::default(),
    };
    let result = match prepared.secret_changed {
        true => run_plan_with_sensitive(cluster, request, &prepared.secret, cancel).await,
        false => run_plan(cluster, request, cancel).await,
    };
    match result {
        Ok(_) => Ok(()),
        Err(e) => {
            let status = match cluster.get(&instance_ref(run.namespace, run.name)).await {
                Ok(Some(instance)) => kudo_plan::status::plan_status_of(&instance, run.plan),
                _ => None,
            };
            Err(failed(e, status))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_parameter_says_why_in_kudos_terms() {
        let undeclared = ActionRefusal::Undeclared {
            operator: "zk".into(),
            parameter: "SIZE".into(),
        };
        assert_eq!(
            undeclared.to_string(),
            r#"Operator zk declares no parameter "SIZE" (params.yaml)."#
        );
        let other = ActionRefusal::NotAnInput {
            plan: "backup".into(),
            parameter: "SIZE".into(),
            trigger: Some("deploy".into()),
        };
        assert_eq!(
            other.to_string(),
            r#"An action running plan "backup" may only set parameters whose trigger is that plan, and "SIZE" is not one: its trigger is plan "deploy"."#
        );
        let seed = ActionRefusal::NeedsSeed {
            plan: "rotate".into(),
            task: "key".into(),
        };
        assert!(
            seed.to_string()
                .starts_with(r#"Task "key" of plan "rotate" renders differently for each seed"#)
        );
        let none = ActionRefusal::NotAnInput {
            plan: "backup".into(),
            parameter: "SIZE".into(),
            trigger: None,
        };
        assert!(
            none.to_string()
                .ends_with("it has no `trigger`, so it configures the instance."),
        );
    }
}
