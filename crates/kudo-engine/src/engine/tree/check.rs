//! The second pass: every instance of the tree that runs a plan is planned like the top
//! instance ([`crate::engine::planning`]), so the plan refuses whatever the apply would
//! be refused anywhere in the tree, and shows what each instance creates, updates and
//! deletes.

use std::collections::BTreeMap;

use futures::future::join_all;
use kudo_plan::{Desired, Inputs};

use super::decide;
use super::{DependencyPlan, TreePlan, TreeRequest, in_parents};
use crate::cluster::{Cluster, ObjectRef};
use crate::engine::decisions::{
    DependencyAction, DependencyDecision, Expected, Node, TreeDecisions,
};
use crate::engine::error::EngineError;
use crate::engine::planning::{
    Changes, InstancePlan, PlanFailure, Prior, classify, plan_instance_in,
};
use crate::engine::preview::{OtherKinds, PreviewAction, defined_kinds, walk_objects};

/// The plan of `req.desired` running `req.plan` and of every dependency instance below
/// it: the one planning call for a whole tree. A refusal anywhere fails it with the
/// apply's words and the chain of instances; what cannot be known yet for a dependency
/// instance leaves its `changes` unknown with a note, as for the top instance.
pub async fn plan_tree(
    cluster: &Cluster,
    req: &TreeRequest<'_, '_>,
) -> Result<TreePlan, PlanFailure> {
    let plan = req.plan;
    let walk = req
        .desired
        .plan(plan)
        .map_err(|e| classify(EngineError::from(e).with_plan(plan), plan))?;
    let decisions = decide(cluster, req.desired, walk, req.tree)
        .await
        .map_err(|e| classify(e.with_plan(plan), plan))?;
    let mut planned = check(cluster, req, &decisions).await?;
    // The whole tree is checked: an apply right after runs these decisions
    // (`TreePrior::decided`) rather than deciding again, once it has seen that the
    // objects are as this plan found them.
    planned.decisions = decisions;
    planned.decisions.expected = expected(req.desired.inputs.instance, &planned);
    Ok(planned)
}

/// Every object of `planned` its dry-run judged, as it found it.
fn expected(top: &str, planned: &TreePlan) -> Vec<Expected> {
    let below = planned
        .dependencies
        .iter()
        .filter_map(|d| Some((d.instance.as_str(), d.plan.as_ref()?)));
    std::iter::once((top, &planned.instance))
        .chain(below)
        .flat_map(|(instance, plan)| {
            plan.planned.iter().filter_map(move |p| {
                Some(Expected {
                    instance: instance.to_string(),
                    object: p.object.clone(),
                    found: p.found.clone()?,
                })
            })
        })
        .collect()
}

/// Plans the instance and each dependency instance `decisions` runs or removes,
/// concurrently; the first refusal in run order wins.
pub(crate) async fn check(
    cluster: &Cluster,
    req: &TreeRequest<'_, '_>,
    decisions: &TreeDecisions,
) -> Result<TreePlan, PlanFailure> {
    let namespace = req.desired.inputs.namespace;
    let packages = req.desired.inputs.dependencies;
    let desired: Vec<Option<Desired<'_>>> = decisions
        .dependencies
        .iter()
        .map(|d| {
            d.action.plan()?;
            let node = decisions.nodes.get(&d.instance)?;
            Desired::new(node_inputs(node, &d.instance, namespace, packages)).ok()
        })
        .collect();
    let others = defined_in_tree(req, decisions, &desired);
    let top_others = others.without(req.desired.inputs.instance);
    let top = plan_instance_in(
        cluster,
        req.desired,
        req.plan,
        &req.prior,
        req.crd_safety,
        req.contents,
        &top_others,
    );
    let below = decisions
        .dependencies
        .iter()
        .zip(&desired)
        .map(|(d, desired)| {
            let others = others.without(&d.instance);
            async move {
                let Some(plan) = d.action.plan() else {
                    return Ok(removal(d));
                };
                let Some(desired) = desired else {
                    // Its values did not validate: `decide` walked it and would have
                    // failed; this only guards the index.
                    return Ok(None);
                };
                let prior = Prior {
                    objects: &d.prior,
                    parameters: decisions
                        .nodes
                        .get(&d.instance)
                        .and_then(|n| n.prior_parameters.as_ref()),
                    drifted: req.tree.drifted_objects(&d.instance),
                };
                plan_instance_in(
                    cluster,
                    desired,
                    plan,
                    &prior,
                    req.crd_safety,
                    req.contents,
                    &others,
                )
                .await
                .map(Some)
                .or_else(|failure| match failure {
                    PlanFailure::Refused { summary, error } => Err(PlanFailure::Refused {
                        summary,
                        error: Box::new(
                            in_parents(*error, decisions, &d.instance).with_plan(req.plan),
                        ),
                    }),
                    // What cannot be known about one dependency instance leaves its
                    // changes unknown, not the whole tree's.
                    PlanFailure::Unknown(note) => Ok(Some(InstancePlan {
                        planned: Vec::new(),
                        changes: None,
                        notes: vec![note],
                        managed: None,
                        after: None,
                    })),
                })
            }
        });
    let outlines = outlines(req, decisions, &desired);
    let (top, below) = futures::join!(top, join_all(below));
    let instance = top?;
    let mut dependencies = Vec::with_capacity(below.len());
    for (d, planned) in decisions.dependencies.iter().zip(below) {
        dependencies.push(DependencyPlan {
            instance: d.instance.clone(),
            parent: d.parent.clone(),
            operator: d.operator.clone(),
            operator_version: d.operator_version.clone(),
            action: d.action.clone(),
            plan: planned?,
        });
    }
    Ok(TreePlan {
        instance,
        decisions: TreeDecisions::default(),
        dependencies,
        outlines,
    })
}

/// The phases and steps of every instance that runs a plan, in run order.
fn outlines(
    req: &TreeRequest<'_, '_>,
    decisions: &TreeDecisions,
    desired: &[Option<Desired<'_>>],
) -> Vec<kudo_plan::PlanOutline> {
    let top = req.desired.inputs.instance;
    let mut out: Vec<kudo_plan::PlanOutline> = req
        .desired
        .plan(req.plan)
        .map(|w| w.outline(top))
        .into_iter()
        .collect();
    for (d, desired) in decisions.dependencies.iter().zip(desired) {
        if let (Some(plan), Some(desired)) = (d.action.plan(), desired)
            && let Ok(walk) = desired.plan(plan)
        {
            out.push(walk.outline(&d.instance));
        }
    }
    out
}

fn node_inputs<'a>(
    node: &'a Node,
    instance: &'a str,
    namespace: &'a str,
    dependencies: Option<&'a kudo_plan::DependencyPackages>,
) -> Inputs<'a> {
    Inputs {
        package: &node.package,
        instance,
        namespace,
        parameters: &node.parameters,
        seed: node.seed.as_deref(),
        dependencies,
    }
}

/// A removed dependency instance's plan: everything it owns goes.
fn removal(d: &DependencyDecision) -> Option<InstancePlan> {
    (d.action == DependencyAction::Remove).then(|| {
        let mut delete: Vec<ObjectRef> = d.prior.clone();
        delete.sort();
        InstancePlan {
            planned: Vec::new(),
            changes: Some(Changes {
                create: Vec::new(),
                update: Vec::new(),
                delete,
            }),
            notes: Vec::new(),
            managed: None,
            // A removed instance's objects are not in its parent's `objects`.
            after: None,
        }
    })
}

/// Custom kinds that CRDs of the tree's instances define, by the instance defining
/// them (the first, in run order).
struct TreeKinds(BTreeMap<(String, String), String>);

impl TreeKinds {
    /// The kinds other instances than `instance` define: its own are its plan's.
    fn without(&self, instance: &str) -> OtherKinds {
        self.0
            .iter()
            .filter(|(_, by)| by.as_str() != instance)
            .map(|(k, by)| (k.clone(), by.clone()))
            .collect()
    }
}

fn defined_in_tree(
    req: &TreeRequest<'_, '_>,
    decisions: &TreeDecisions,
    desired: &[Option<Desired<'_>>],
) -> TreeKinds {
    let mut kinds = BTreeMap::new();
    let mut note = |instance: &str, desired: &Desired<'_>, plan: &str| {
        let Ok(walk) = desired.plan(plan) else {
            return;
        };
        for o in walk_objects(walk).filter(|o| o.action == PreviewAction::Apply) {
            for kind in defined_kinds(o.object) {
                kinds.entry(kind).or_insert_with(|| instance.to_string());
            }
        }
    };
    note(req.desired.inputs.instance, req.desired, req.plan);
    for (d, desired) in decisions.dependencies.iter().zip(desired) {
        if let (Some(plan), Some(desired)) = (d.action.plan(), desired) {
            note(&d.instance, desired, plan);
        }
    }
    TreeKinds(kinds)
}
