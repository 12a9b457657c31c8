//! The whole dependency tree of one instance, planned as one: which dependency
//! instances (KudoOperator tasks, KEP-29/36) the apply creates, runs again, leaves alone
//! or removes, and what each of them creates, updates and deletes, checked by
//! server-side dry-run like the instance's own objects.
//!
//! Two passes. [`decide`] works out what the apply does with every dependency
//! instance, at every depth, from the walks and the child Instances in the cluster
//! (GETs only). [`plan_tree`] then plans each instance that runs with
//! [`super::plan_instance`], so a child's refused object, removed API or unsafe CRD
//! change fails the plan with the apply's own words, naming the chain of instances.
//! The run executes the same decisions ([`TreeDecisions`]), and checks the same tree
//! before it writes anything (see `run_plan`).

mod check;
mod decide;

use super::crd_safety::CrdSafety;
use super::decisions::{DependencyAction, TreeDecisions, TreePrior};
use super::error::EngineError;
use super::planning::{Contents, InstancePlan, Prior};

/// Objects as read (`None`: not found), by name.
pub(crate) type Reads = std::collections::HashMap<String, Option<serde_json::Value>>;

pub(crate) use check::check;
pub use check::plan_tree;
pub(crate) use decide::decide;

/// What [`plan_tree`] plans: the instance's own plan and its dependency instances.
#[derive(Debug, Clone, Copy)]
pub struct TreeRequest<'a, 'p> {
    /// The instance's desired state, with the resolved dependency packages.
    pub desired: &'a kudo_plan::Desired<'p>,
    /// The plan the instance runs.
    pub plan: &'a str,
    pub prior: Prior<'a>,
    pub tree: TreePrior<'a>,
    pub crd_safety: CrdSafety,
    pub contents: Contents,
}

/// One dependency instance in a [`TreePlan`].
#[derive(Debug, Clone)]
pub struct DependencyPlan {
    pub instance: String,
    pub parent: String,
    pub operator: String,
    pub operator_version: String,
    pub action: DependencyAction,
    /// What it creates, updates and deletes: `Some` for an instance that runs a plan
    /// or is removed, `None` for one left alone. Its `changes` are `None` when they
    /// cannot be known before the apply (a note says why).
    pub plan: Option<InstancePlan>,
}

/// The plan of an instance and of every dependency instance below it.
#[derive(Debug, Clone)]
pub struct TreePlan {
    pub instance: InstancePlan,
    /// What the apply does with each dependency instance: the apply right after this
    /// plan runs them as they are ([`TreePrior::decided`], handed over in
    /// [`super::Planned::record`]).
    pub(crate) decisions: TreeDecisions,
    pub dependencies: Vec<DependencyPlan>,
    /// The phases and steps each instance runs, in run order: the instance's first, then
    /// each dependency instance that runs a plan.
    pub outlines: Vec<kudo_plan::PlanOutline>,
}

/// The error of a dependency instance's plan as its parent's, and so on up to the top
/// instance: each level names the dependency instance and the KudoOperator task that
/// makes it, as a run reports the same failure.
pub(crate) fn in_parents(
    mut error: EngineError,
    decisions: &TreeDecisions,
    instance: &str,
) -> EngineError {
    let mut current = decisions.get(instance);
    while let Some(d) = current {
        if let Some(node) = decisions.nodes.get(&d.instance) {
            error = node.wrap(error, &d.instance);
        }
        current = decisions.get(&d.parent);
    }
    error
}
