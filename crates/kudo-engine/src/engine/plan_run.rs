//! Running a plan as one step: the decisions for the dependency tree, then the run
//! ([`super::run`], which never plans) executing them. The decisions are the caller's
//! final plan's when it handed them over; otherwise (an apply without a final plan of
//! the whole tree, a rollback, the `kudo_plan` action, a destroy's `cleanup` plan) the
//! tree is decided and checked here (server-side dry-run of every object, dependency
//! instances' included) before anything is written, so whatever the plan could have
//! refused, the apply refuses before its first write.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use tokio_util::sync::CancellationToken;

use super::decisions::{Expected, Found, TreeDecisions, TreePrior};
use super::error::EngineError;
use super::observe::LIST_FROM;
use super::planning::{Contents, PlanFailure, Prior};
use super::run::{RunOutcome, RunRequest, all_parameters, desired_of, run_decided};
use super::tree::{TreeRequest, check, decide};
use crate::cluster::{Cluster, ClusterError};

/// Runs `req.plan` for the instance and waits until it completes, fails, or `cancel`
/// fires (see [`run_decided`]); whatever the decisions refuse fails it with nothing
/// written.
pub async fn run_plan(
    cluster: &Cluster,
    req: RunRequest<'_>,
    cancel: &CancellationToken,
) -> Result<RunOutcome, EngineError> {
    let (tree, req) = decisions(cluster, req, None, None, cancel).await?;
    run_decided(cluster, req, None, &tree, cancel).await
}

/// `run_plan` with the values of sensitive parameters, which are stored in the
/// instance's Secret (see [`super::sensitive`]) instead of `spec.parameters`. An empty
/// map removes the Secret; `run_plan` instead keeps and reads whatever Secret exists.
pub async fn run_plan_with_sensitive(
    cluster: &Cluster,
    req: RunRequest<'_>,
    sensitive: &BTreeMap<String, String>,
    cancel: &CancellationToken,
) -> Result<RunOutcome, EngineError> {
    run_plan_looked(cluster, req, sensitive, None, cancel).await
}

/// [`run_plan_with_sensitive`] with the look before the first write already taken
/// ([`look`], which an apply takes beside its other reads).
pub(crate) async fn run_plan_looked(
    cluster: &Cluster,
    req: RunRequest<'_>,
    sensitive: &BTreeMap<String, String>,
    looked: Option<Looked>,
    cancel: &CancellationToken,
) -> Result<RunOutcome, EngineError> {
    let (tree, req) = decisions(cluster, req, Some(sensitive), looked, cancel).await?;
    run_decided(cluster, req, Some(sensitive), &tree, cancel).await
}

/// What [`look`] found: the objects of the handed decisions that are not as the plan
/// found them.
pub(crate) struct Looked(Vec<(String, Change)>);

/// The look before the first write, when the caller's plan handed its decisions and
/// checked the tree (`None` otherwise: nothing to compare with). Only reads, so an
/// apply takes it beside its other reads.
pub(crate) async fn look(cluster: &Cluster, tree: &TreePrior<'_>) -> Option<Looked> {
    let handed = tree.handed()?;
    Some(Looked(changed_since_plan(cluster, handed).await))
}

/// What the run of `req` does with each dependency instance, with `req` as the run
/// takes it. The caller's final plan's decisions (`req.tree.decided`, after a plan that
/// checked the whole tree) when every object is still as that plan found it; when one
/// is not (someone took, created or deleted it since), the tree is decided and checked
/// again: a refusal is the plan's own words, decisions that differ from the plan's stop
/// the apply, and otherwise the steps rehearse their writes. Without handed decisions,
/// they are made now and, unless the caller's plan checked the tree
/// (`req.tree.checked`), dry-run first. `sensitive`: the values the run is given
/// (`None`: the instance's Secret holds them); `looked`: the look at the plan's objects
/// when the caller already took it. Every error leaves nothing written.
async fn decisions<'r>(
    cluster: &Cluster,
    mut req: RunRequest<'r>,
    sensitive: Option<&BTreeMap<String, String>>,
    looked: Option<Looked>,
    cancel: &CancellationToken,
) -> Result<(TreeDecisions, RunRequest<'r>), EngineError> {
    let work = async {
        let Some(handed) = req.tree.handed() else {
            return decide_and_check(cluster, &req, sensitive).await;
        };
        let changed = match looked {
            Some(Looked(changed)) => changed,
            None => changed_since_plan(cluster, handed).await,
        };
        if changed.is_empty() {
            // What the plan checked of each new object's owner holds too, when it
            // judged them all.
            req.tree.confirmed = req.tree.every_object_checked;
            return Ok(handed.clone());
        }
        let gone: Vec<&str> = changed
            .iter()
            .filter(|(_, c)| *c == Change::Gone)
            .map(|(name, _)| name.as_str())
            .collect();
        if !gone.is_empty() {
            return Err(EngineError::fatal(format!(
                "{} existed when the plan was made and has been deleted since, so the apply would create what the plan showed as changed. Run `terraform plan` again.",
                gone.join(", ")
            ))
            .with_plan(req.plan)
            .with_inventory(req.previous_inventory.to_vec()));
        }
        let changed: Vec<&str> = changed.iter().map(|(name, _)| name.as_str()).collect();
        tracing::info!(instance = %req.instance, ?changed, "objects changed since the plan; checking the tree again before the run");
        req.tree.checked = false;
        req.tree.every_object_checked = false;
        req.tree.confirmed = false;
        let again = decide_and_check(cluster, &req, sensitive).await?;
        if again != *handed {
            return Err(EngineError::fatal(format!(
                "The cluster changed after the plan ({}), and what the apply would do with the dependency instances is no longer what the plan showed. Run `terraform plan` again.",
                changed.join(", ")
            ))
            .with_plan(req.plan)
            .with_inventory(req.previous_inventory.to_vec()));
        }
        Ok(again)
    };
    let decided = tokio::select! {
        decided = work => decided?,
        _ = cancel.cancelled() => return Err(EngineError::from(ClusterError::Cancelled {
            what: format!("checking the objects of plan {:?} before the run", req.plan),
        })
        .with_plan(req.plan)
        .with_inventory(req.previous_inventory.to_vec())),
    };
    Ok((decided, req))
}

/// How an object differs from what the plan found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// The plan found it; now it is gone.
    Gone,
    /// Created since, or held otherwise (another field manager, another uid), or it
    /// could not be read.
    Other,
}

/// The objects of `handed` that are not as its plan found them, by name: one round
/// trip, each kind the plan has many of in a namespace read with one LIST of that
/// namespace (an object someone else created carries none of our labels), the others
/// with a GET each, all at once.
async fn changed_since_plan(cluster: &Cluster, handed: &TreeDecisions) -> Vec<(String, Change)> {
    let mut groups: BTreeMap<(&str, &str, Option<&str>), Vec<&Expected>> = BTreeMap::new();
    for e in &handed.expected {
        let r = &e.object;
        groups
            .entry((&r.api_version, &r.kind, r.namespace.as_deref()))
            .or_default()
            .push(e);
    }
    let reads = groups.into_iter().map(|((api_version, kind, namespace), expected)| async move {
        let found: Vec<Result<Found, String>> = if expected.len() >= LIST_FROM {
            let listed = cluster
                .list_selected_map(api_version, kind, namespace, None, |item| {
                    let name = item.pointer("/metadata/name").and_then(Value::as_str)?;
                    Some((name.to_string(), Found::of(Some(&item))))
                })
                .await
                .map(|l| l.into_iter().flatten().collect::<HashMap<String, Found>>());
            match listed {
                Ok(listed) => expected
                    .iter()
                    .map(|e| Ok(listed.get(&e.object.name).cloned().unwrap_or(Found::Absent)))
                    .collect(),
                Err(error) => expected.iter().map(|_| Err(error.to_string())).collect(),
            }
        } else {
            futures::future::join_all(expected.iter().map(|e| async move {
                cluster
                    .get(&e.object)
                    .await
                    .map(|o| Found::of(o.as_ref()))
                    .map_err(|e| e.to_string())
            }))
            .await
        };
        expected
            .into_iter()
            .zip(found)
            .filter_map(|(e, found)| {
                let change = match (&e.found, found) {
                    (planned, Ok(now)) if *planned == now => return None,
                    (Found::Held(_), Ok(Found::Absent)) => Change::Gone,
                    (_, Ok(_)) => Change::Other,
                    (_, Err(error)) => {
                        tracing::info!(object = %e.object, %error, "cannot read an object of the plan");
                        Change::Other
                    }
                };
                Some((e.object.label(), change))
            })
            .collect::<Vec<_>>()
    });
    futures::future::join_all(reads)
        .await
        .into_iter()
        .flatten()
        .collect()
}

async fn decide_and_check(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    sensitive: Option<&BTreeMap<String, String>>,
) -> Result<TreeDecisions, EngineError> {
    let nothing_written = |e: EngineError| {
        e.with_plan(req.plan)
            .with_inventory(req.previous_inventory.to_vec())
    };
    let stored = match sensitive {
        Some(values) => values.clone(),
        None => super::sensitive::read_sensitive(cluster, req.namespace, req.instance)
            .await
            .map_err(nothing_written)?,
    };
    let parameters = all_parameters(req, &stored);
    let desired = desired_of(req, &parameters)?;
    let Ok(walk) = desired.plan(req.plan) else {
        // The run records a plan that cannot be walked in the Instance.
        return Ok(TreeDecisions::default());
    };
    let tree = decide(cluster, &desired, walk, req.tree)
        .await
        .map_err(nothing_written)?;
    if req.tree.checked {
        return Ok(tree);
    }
    let request = TreeRequest {
        desired: &desired,
        plan: req.plan,
        prior: Prior {
            objects: req.previous_inventory,
            parameters: None,
            drifted: &[],
        },
        tree: req.tree,
        crd_safety: req.crd_safety,
        contents: Contents::Skip,
    };
    match check(cluster, &request, &tree).await {
        Ok(_) => Ok(tree),
        Err(PlanFailure::Refused { error, .. }) => Err(nothing_written(*error)),
        Err(PlanFailure::Unknown(note)) => {
            tracing::info!(instance = %req.instance, detail = %note.detail, "not every object could be checked before the run; each step checks its own");
            Ok(tree)
        }
    }
}
