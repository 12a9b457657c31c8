//! Running a plan as one step: the decisions for the dependency tree, then the run
//! ([`super::run`], which never plans) executing them. The decisions are the caller's
//! final plan's when it handed them over; otherwise (an apply without a final plan of
//! the whole tree, a rollback, the `kudo_plan` action, a destroy's `cleanup` plan) the
//! tree is decided and checked here (server-side dry-run of every object, dependency
//! instances' included) before anything is written, so whatever the plan could have
//! refused, the apply refuses before its first write.

use std::collections::BTreeMap;

use tokio_util::sync::CancellationToken;

use super::decisions::TreeDecisions;
use super::error::EngineError;
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
    let tree = decisions(cluster, &req, None, cancel).await?;
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
    let tree = decisions(cluster, &req, Some(sensitive), cancel).await?;
    run_decided(cluster, req, Some(sensitive), &tree, cancel).await
}

/// What the run of `req` does with each dependency instance: `req.tree.decided` when
/// the caller's final plan checked the whole tree and handed its decisions over, else
/// decided now from the cluster and, unless that plan checked the tree
/// (`req.tree.checked`), dry-run first. `sensitive`: the values the run is given
/// (`None`: the instance's Secret holds them). A refusal is the run's error with
/// nothing written.
async fn decisions(
    cluster: &Cluster,
    req: &RunRequest<'_>,
    sensitive: Option<&BTreeMap<String, String>>,
    cancel: &CancellationToken,
) -> Result<TreeDecisions, EngineError> {
    if let (true, Some(decided)) = (req.tree.checked, req.tree.decided) {
        return Ok(decided.clone());
    }
    tokio::select! {
        decided = decide_and_check(cluster, req, sensitive) => decided,
        _ = cancel.cancelled() => Err(EngineError::from(ClusterError::Cancelled {
            what: format!("checking the objects of plan {:?} before the run", req.plan),
        })
        .with_plan(req.plan)
        .with_inventory(req.previous_inventory.to_vec())),
    }
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
