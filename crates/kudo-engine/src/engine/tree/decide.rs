//! The first pass over the tree: what the apply does with each dependency instance.
//! The rule is a top-level instance's ([`kudo_plan::decide`], through
//! [`crate::engine::dependency::decide`]): a cascade reaches only the children whose
//! version or parameters change, whose last plan did not finish, or whose objects
//! drifted, plus every settled child whose own dependencies change below it (it runs
//! `deploy` again, as KUDO re-ran a parent's deploy for a changed dependency).

use std::sync::Mutex;

use futures::future::{BoxFuture, FutureExt};
use kudo_plan::{Action, ChildPlan, Desired, Inputs, PlanWalk};
use serde_json::Value;

use super::Reads;
use crate::cluster::{Cluster, KUDO_API_VERSION, ObjectRef};
use crate::engine::decisions::{
    DependencyAction, DependencyDecision, Node, TreeDecisions, TreePrior,
};
use crate::engine::dependency::{self, ChildAction, ExistingChild};
use crate::engine::error::EngineError;
use crate::engine::instance_object::instance_ref;
use crate::engine::metadata::LABEL_INSTANCE;

/// Everything a decision pass reads, shared by the recursion.
struct Pass<'a> {
    cluster: &'a Cluster,
    namespace: &'a str,
    dependencies: Option<&'a kudo_plan::DependencyPackages>,
    prior: TreePrior<'a>,
    /// Child Instances as read, by name: each is read once per pass.
    instances: Mutex<Reads>,
}

impl Pass<'_> {
    async fn instance(&self, name: &str) -> Result<Option<Value>, EngineError> {
        if let Some(found) = self
            .instances
            .lock()
            .ok()
            .and_then(|m| m.get(name).cloned())
        {
            return Ok(found);
        }
        let r = instance_ref(self.namespace, name);
        let live = self
            .cluster
            .get(&r)
            .await
            .map_err(|e| EngineError::from(e).with_object(&r))?;
        if let Ok(mut m) = self.instances.lock() {
            m.insert(name.to_string(), live.clone());
        }
        Ok(live)
    }

    /// What a dependency instance owned before: its record, else its labelled objects.
    async fn prior_objects(&self, name: &str, exists: bool) -> Result<Vec<ObjectRef>, EngineError> {
        if let Some(record) = self.prior.record(name) {
            return Ok(record.inventory.clone());
        }
        if !exists {
            return Ok(Vec::new());
        }
        let selector = format!("{LABEL_INSTANCE}={name}");
        self.cluster
            .list_labelled_map(self.namespace, &selector, |o| {
                ObjectRef::from_object(&o)
                    .ok()
                    .filter(|r| !(r.kind == "Instance" && r.api_version == KUDO_API_VERSION))
            })
            .await
            .map_err(|e| EngineError::from(e).with_object(&instance_ref(self.namespace, name)))
    }
}

/// What the apply does with every dependency instance of `desired` running `plan`
/// (whose walk is `walk`), at every depth. Reads the child Instances (and, for
/// instances `tree` has no record of, their labelled objects); writes nothing. Errors
/// are the run's: a child's package that cannot be had, invalid child parameters, an
/// Instance of the child's name that is not ours; each names the chain of instances.
pub(crate) async fn decide(
    cluster: &Cluster,
    desired: &Desired<'_>,
    walk: &PlanWalk<'_>,
    tree: TreePrior<'_>,
) -> Result<TreeDecisions, EngineError> {
    let pass = Pass {
        cluster,
        namespace: desired.inputs.namespace,
        dependencies: desired.inputs.dependencies,
        prior: tree,
        instances: Mutex::new(Reads::new()),
    };
    let mut decisions = TreeDecisions::default();
    decide_below(&pass, desired.inputs.instance, walk, &mut decisions)
        .await
        .map_err(|(e, path)| {
            let mut e = e;
            for (instance, node) in path.iter().rev() {
                e = node.wrap(e, instance);
            }
            e
        })?;
    Ok(decisions)
}

/// A failure below, with the chain of (instance, node) from the top down to it.
type Below = (EngineError, Vec<(String, Node)>);

/// Decides the children `walk` (of instance `parent`) runs, appending each (and,
/// recursively, its own children) to `out`. Returns whether anything below changes.
fn decide_below<'f>(
    pass: &'f Pass<'f>,
    parent: &'f str,
    walk: &'f PlanWalk<'f>,
    out: &'f mut TreeDecisions,
) -> BoxFuture<'f, Result<bool, Below>> {
    async move {
        // The child Instances of this level are read at once (one round trip), then
        // decided in the walk's order.
        let names: Vec<&str> = walk
            .steps()
            .flat_map(|step| &step.tasks)
            .filter_map(|task| match &task.action {
                Action::Child(child) => child.target.as_ref().ok().map(|t| t.instance.as_str()),
                _ => None,
            })
            .collect();
        let reads = futures::future::join_all(names.iter().map(|n| pass.instance(n))).await;
        for (name, read) in names.iter().zip(reads) {
            // A failed read is met again, with its place, when the child is decided.
            if let Err(e) = read {
                tracing::debug!(instance = %name, error = %e, "dependency instance not read");
            }
        }
        let mut changed = false;
        for step in walk.steps() {
            for task in &step.tasks {
                let Action::Child(child) = &task.action else {
                    continue;
                };
                let place = |e: EngineError| e.at(&step.location).with_task(&task.name);
                let target = child
                    .target
                    .as_ref()
                    .map_err(|e| (place(EngineError::from(e.clone())), Vec::new()))?;
                let node = Node {
                    package: target.package.clone().into_owned(),
                    parameters: child.parameters.clone(),
                    seed: target.seed.clone(),
                    prior_parameters: None,
                    location: step.location.clone(),
                    task: task.name.clone(),
                };
                changed |= decide_one(pass, parent, &target.instance, child, node, out).await?;
            }
        }
        Ok(changed)
    }
    .boxed()
}

/// Decides one dependency instance and what lies below it.
async fn decide_one(
    pass: &Pass<'_>,
    parent: &str,
    name: &str,
    child: &ChildPlan<'_>,
    mut node: Node,
    out: &mut TreeDecisions,
) -> Result<bool, Below> {
    let child_ref = instance_ref(pass.namespace, name);
    let here = |e: EngineError, node: &Node| (e, vec![(name.to_string(), node.clone())]);
    let mut live = pass.instance(name).await.map_err(|e| here(e, &node))?;
    // Only a child of ours is ours to run or remove (the run's rule).
    let ours = match &live {
        Some(obj) => crate::engine::ownership::check_child(&child_ref, obj, parent),
        None => Ok(()),
    };
    if pass.prior.fresh && live.is_some() && ours.is_ok() {
        // The old instance's, which the destroy half of a replacement removes first.
        live = None;
    }
    if !child.enabled {
        if live.is_none() || ours.is_err() {
            return Ok(false);
        }
        let prior = pass
            .prior_objects(name, true)
            .await
            .map_err(|e| here(e, &node))?;
        push(out, name, parent, &node, DependencyAction::Remove, prior);
        remove_below(pass, name, &node, out);
        return Ok(true);
    }
    ours.map_err(|e| here(e, &node))?;
    let existing = live.as_ref().map(ExistingChild::from_instance);
    let redeploy = existing.is_some() && pass.prior.redeploys(name);
    let action = dependency::decide(&node.package, existing.as_ref(), &node.parameters, redeploy)
        .map_err(|e| here(e, &node))?;
    if let Some(e) = &existing
        && e.operator_version == node.package.operator_version_name()
    {
        node.prior_parameters = Some(e.parameters.clone());
    }
    let prior = pass
        .prior_objects(name, live.is_some())
        .await
        .map_err(|e| here(e, &node))?;
    let (plan, mut action) = match action {
        ChildAction::Run { plan, reason } => {
            let action = match existing {
                None => DependencyAction::Create { plan: plan.clone() },
                Some(_) => DependencyAction::Run {
                    plan: plan.clone(),
                    reason,
                },
            };
            (plan, action)
        }
        // A settled child runs deploy again when something below it changes.
        ChildAction::Leave { reason } => ("deploy".to_string(), DependencyAction::Leave { reason }),
    };
    let index = out.dependencies.len();
    push(out, name, parent, &node, action.clone(), prior);
    if !node.package.operator.plans.contains_key(&plan) {
        // Nothing below to walk (a package without deploy is settled as it is; the
        // run reports a missing plan itself).
        return Ok(!matches!(action, DependencyAction::Leave { .. }));
    }
    let desired = Desired::new(Inputs {
        package: &node.package,
        instance: name,
        namespace: pass.namespace,
        parameters: &node.parameters,
        seed: node.seed.as_deref(),
        dependencies: pass.dependencies,
    })
    .map_err(|e| here(EngineError::from(e).with_plan(&plan), &node))?;
    let walk = desired
        .plan(&plan)
        .map_err(|e| here(EngineError::from(e.clone()), &node))?;
    let below = decide_below(pass, name, walk, out)
        .await
        .map_err(|(e, mut path)| {
            path.insert(0, (name.to_string(), node.clone()));
            (e, path)
        })?;
    if below && let DependencyAction::Leave { .. } = action {
        action = DependencyAction::Run {
            plan,
            reason: "a dependency instance below it changes".to_string(),
        };
        out.dependencies[index].action = action.clone();
    }
    Ok(!matches!(action, DependencyAction::Leave { .. }))
}

fn push(
    out: &mut TreeDecisions,
    name: &str,
    parent: &str,
    node: &Node,
    action: DependencyAction,
    prior: Vec<ObjectRef>,
) {
    out.dependencies.push(DependencyDecision {
        instance: name.to_string(),
        parent: parent.to_string(),
        operator: node.package.operator.name.clone(),
        operator_version: node.package.operator_version_name(),
        action,
        prior,
    });
    out.nodes.insert(name.to_string(), node.clone());
}

/// The recorded dependency instances below a removed one go with it (the uninstall
/// removes a subtree from the bottom up); each is listed as removed.
fn remove_below(pass: &Pass<'_>, name: &str, node: &Node, out: &mut TreeDecisions) {
    let Some(records) = pass.prior.records else {
        return;
    };
    let mut queue = vec![name.to_string()];
    while let Some(parent) = queue.pop() {
        for (child, record) in records.iter().filter(|(_, r)| r.parent == parent) {
            out.dependencies.push(DependencyDecision {
                instance: child.clone(),
                parent: parent.clone(),
                operator: record.operator.clone(),
                operator_version: record.operator_version.clone(),
                action: DependencyAction::Remove,
                prior: record.inventory.clone(),
            });
            out.nodes.insert(child.clone(), node.clone());
            queue.push(child.clone());
        }
    }
}
