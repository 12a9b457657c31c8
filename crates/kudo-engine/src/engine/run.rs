//! Running one plan: phases and steps in their strategy's order, the tasks of a step,
//! waiting for health, writing the plan status to the Instance as it goes, and pruning.

mod answers;
mod children;
mod objects;
mod pipes;
mod pruning;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::{BoxFuture, FutureExt, join_all};
use kudo_package::{Package, Strategy};
use kudo_plan::{
    Action, ChildPlan, Desired, Inputs, PhaseWalk, PipeFile, PlanWalk, Rendered, StepWalk, TaskWalk,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::Location;
use super::metadata::{Owner, decorate};
use super::pipe;
use super::progress::{Progress, ProgressChange, ProgressEvent};
use super::prune::ObjectIndex;
use super::readiness::HealthPolicy;
use super::removal::{CrdDeletion, Kept, Remover};
use answers::AnswerLog;
pub use answers::{AnsweredWrite, WriteAnswers};
use kudo_plan::status::{ExecutionStatus, PlanStatus, merged_plan_status, ready_condition};
// Also reachable as `run::wait_healthy`, where it was defined before.
use super::decisions::{DependencyRecords, TreeDecisions, TreePrior};
use super::error::EngineError;
use super::instance_object::instance_ref;
pub(crate) use super::wait::{healthy_as_applied, wait_healthy};
use crate::cluster::{Cluster, ClusterError, KUDO_API_VERSION, ObjectRef};

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct RunRequest<'a> {
    pub package: &'a Package,
    pub instance: &'a str,
    pub namespace: &'a str,
    /// Values the user set (defaults are not repeated here); stored in the Instance spec.
    pub parameters: &'a BTreeMap<String, String>,
    pub plan: &'a str,
    /// Objects the previous runs applied (from Terraform state), for pruning.
    pub previous_inventory: &'a [ObjectRef],
    /// Secret seed of the templates' random functions (`randAlphaNum`, `genPrivateKey`,
    /// ...), kept per instance so renders are stable across runs but unguessable. None
    /// seeds with "namespace/name", which anyone can reproduce.
    pub render_seed: Option<&'a str>,
    /// The resolved child packages of KudoOperator tasks, for this instance and every
    /// dependency instance below it. `None`: only folder dependencies next to a
    /// folder-loaded package can run.
    pub dependencies: Option<&'a kudo_plan::DependencyPackages>,
    /// Whether CRDs this run prunes or deletes may go (`kudo_instance.crd_deletion`);
    /// dependency instances inherit it.
    pub crd_deletion: CrdDeletion,
    /// What the run does when a step would change an existing CRD unsafely
    /// (`kudo_instance.crd_upgrade_safety`, see [`super::crd_safety`]): checked again
    /// before each step writes, for what the plan could not check (dependency
    /// instances' CRDs, objects created between a saved plan and its apply);
    /// dependency instances inherit it.
    pub crd_safety: super::crd_safety::CrdSafety,
    /// When an applied object counts as healthy ([`HealthPolicy::Kudo`]: KUDO's rules);
    /// dependency instances inherit it.
    pub health: &'a HealthPolicy,
    /// Told as phases and steps start and finish (dependency instances' too).
    pub progress: Option<&'a Progress>,
    /// What the state records of the dependency instances, and which of them drifted.
    pub tree: TreePrior<'a>,
}

/// The result of a successful run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// The status of the plan that ran, in KUDO's `planStatus.<plan>` shape.
    pub plan_status: Value,
    /// Every object this instance now owns: earlier ones still rendered plus those
    /// applied by this run, minus deleted and pruned ones. Sorted.
    pub inventory: Vec<ObjectRef>,
    /// Cluster-scoped objects the run stopped using but left in place for other
    /// instances or their data (see [`super::removal`]).
    pub kept: Vec<Kept>,
    /// What each dependency instance owns after the run (those it left alone keep
    /// their prior objects), for Terraform's state; empty for a dependency's own run.
    pub dependencies: DependencyRecords,
    /// The inventory of every dependency instance below that ran a plan.
    pub ran: BTreeMap<String, Vec<ObjectRef>>,
    /// What the server answered to the writes of this run and of the dependency
    /// instances' runs below it: the objects' uids and fingerprints afterwards.
    pub answers: WriteAnswers,
    /// The Instance as the server answered the run's last write of it (its plan status
    /// included): a parent judges its dependency instance's health by it rather than
    /// reading it again. `None` when that write failed.
    pub instance: Option<Value>,
}

/// Runs `req.plan` for the instance and waits until it completes, fails, or `cancel`
/// fires, doing with the dependency instances what `decisions` say (the final plan's,
/// handed over, or made by [`super::plan_run`] just before): the run decides nothing.
/// The Instance object is created or updated first (spec.operatorVersion,
/// spec.parameters, spec.planExecution) and its `status.planStatus` follows progress.
/// `sensitive`: the values of sensitive parameters, stored in the instance's Secret
/// (see [`super::sensitive`]) instead of `spec.parameters`, an empty map removing it;
/// `None` keeps and reads whatever Secret exists.
pub(crate) async fn run_decided(
    cluster: &Cluster,
    req: RunRequest<'_>,
    sensitive: Option<&BTreeMap<String, String>>,
    decisions: &TreeDecisions,
    cancel: &CancellationToken,
) -> Result<RunOutcome, EngineError> {
    let stored = match sensitive {
        Some(values) => values.clone(),
        None => super::sensitive::read_sensitive(cluster, req.namespace, req.instance)
            .await
            .map_err(|e| e.with_plan(req.plan))?,
    };
    let parameters = all_parameters(&req, &stored);
    let desired = desired_of(&req, &parameters)?;
    let sensitive = Sensitive {
        stored: &stored,
        write: sensitive.is_some(),
    };
    let mut outcome = execute(cluster, req, &desired, None, sensitive, decisions, cancel).await?;
    outcome.dependencies = decisions.records_after(&outcome.ran);
    Ok(outcome)
}

/// `run_plan` for a dependency instance owned by `parent`, executing the decisions its
/// top instance's run made for the whole tree. Boxed because a KudoOperator task runs a
/// plan from inside a plan (the future type would otherwise be infinite).
/// `created`: the decisions create it, so it has no Secret of sensitive values to read.
pub(crate) fn run_plan_boxed<'a>(
    cluster: &'a Cluster,
    req: RunRequest<'a>,
    parent: Owner,
    tree: &'a TreeDecisions,
    created: bool,
    cancel: &'a CancellationToken,
) -> BoxFuture<'a, Result<RunOutcome, EngineError>> {
    Box::pin(run_dependency(cluster, req, parent, tree, created, cancel))
}

async fn run_dependency(
    cluster: &Cluster,
    req: RunRequest<'_>,
    parent: Owner,
    tree: &TreeDecisions,
    created: bool,
    cancel: &CancellationToken,
) -> Result<RunOutcome, EngineError> {
    // A new dependency instance has no Secret yet (one a replaced instance left is its
    // predecessor's, on its way out with it).
    let stored = match created {
        true => BTreeMap::new(),
        false => super::sensitive::read_sensitive(cluster, req.namespace, req.instance)
            .await
            .map_err(|e| e.with_plan(req.plan))?,
    };
    let parameters = all_parameters(&req, &stored);
    let desired = desired_of(&req, &parameters)?;
    let sensitive = Sensitive {
        stored: &stored,
        write: false,
    };
    execute(
        cluster,
        req,
        &desired,
        Some(parent),
        sensitive,
        tree,
        cancel,
    )
    .await
}

/// The instance's sensitive values, and whether the run writes them to its Secret
/// (`run_plan_with_sensitive`) or found them there.
#[derive(Clone, Copy)]
struct Sensitive<'a> {
    stored: &'a BTreeMap<String, String>,
    write: bool,
}

/// Templates see every value; the Instance spec only the non-sensitive ones.
pub(crate) fn all_parameters(
    req: &RunRequest<'_>,
    stored: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut all = req.parameters.clone();
    all.extend(stored.iter().map(|(k, v)| (k.clone(), v.clone())));
    all
}

/// The whole desired state first: whatever needs no cluster to fail fails here, with
/// the words the plan used (kudo-plan is what the plan consulted too).
pub(crate) fn desired_of<'p>(
    req: &RunRequest<'p>,
    parameters: &'p BTreeMap<String, String>,
) -> Result<Desired<'p>, EngineError> {
    Desired::new(Inputs {
        package: req.package,
        instance: req.instance,
        namespace: req.namespace,
        parameters,
        seed: req.render_seed,
        dependencies: req.dependencies,
    })
    .map_err(|e| EngineError::from(e).with_plan(req.plan))
}

async fn execute<'a>(
    cluster: &'a Cluster,
    req: RunRequest<'a>,
    desired: &'a Desired<'a>,
    parent: Option<Owner>,
    sensitive: Sensitive<'_>,
    tree: &'a TreeDecisions,
    cancel: &CancellationToken,
) -> Result<RunOutcome, EngineError> {
    let pkg = req.package;
    let Some(plan) = pkg.operator.plans.get(req.plan) else {
        return Err(desired.plan(req.plan).err().map_or_else(
            || EngineError::fatal(format!("no plan {:?}", req.plan)),
            EngineError::from,
        ));
    };
    // A plan that cannot be walked still records its failure in the Instance.
    let walk = desired.plan(req.plan).map_err(EngineError::from);
    let has_sensitive = !sensitive.stored.is_empty();

    tracing::info!(
        plan = %req.plan,
        instance = %req.instance,
        namespace = %req.namespace,
        "plan started"
    );
    let uid = uuid::Uuid::new_v4().to_string();
    let manifest = instance_manifest(
        &req,
        &uid,
        ExecutionStatus::InProgress,
        parent.as_ref(),
        has_sensitive,
    );
    // A Secret of sensitive values to remove needs nothing of the Instance: it goes
    // beside the Instance's write rather than after it.
    let removal = async {
        match sensitive.write && sensitive.stored.is_empty() {
            true => {
                super::sensitive::remove_sensitive(cluster, req.namespace, req.instance, cancel)
                    .await
            }
            false => Ok(()),
        }
    };
    // The Instance is what `kudo_instance` stands for: ours whoever wrote it last.
    let (applied, removed) =
        futures::future::join(cluster.apply_owned(&manifest, false), removal).await;
    let applied = applied.map_err(|e| {
        EngineError::from(e)
            .with_plan(req.plan)
            .with_object(&instance_ref(req.namespace, req.instance))
    })?;
    removed.map_err(|e| e.with_plan(req.plan))?;
    let owner_uid = applied
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            EngineError::transient("the API server returned the Instance without a uid")
                .with_plan(req.plan)
        })?
        .to_string();
    if sensitive.write && !sensitive.stored.is_empty() {
        super::sensitive::write_sensitive(
            cluster,
            req.namespace,
            req.instance,
            &owner_uid,
            sensitive.stored,
        )
        .await
        .map_err(|e| e.with_plan(req.plan))?;
    }

    let mut statuses = merged_plan_status(pkg, applied.pointer("/status/planStatus"));
    statuses.insert(
        req.plan.to_string(),
        PlanStatus::starting(req.plan, plan, &uid),
    );
    let run = Run {
        cluster,
        req,
        previous: ObjectIndex::new(req.previous_inventory),
        desired,
        tree,
        ran: Mutex::new(BTreeMap::new()),
        owner: Owner {
            operator: pkg.operator.name.clone(),
            instance: req.instance.to_string(),
            namespace: req.namespace.to_string(),
            uid: owner_uid,
        },
        statuses: Mutex::new(statuses),
        publishes: Publishes::default(),
        applied: Mutex::new(BTreeSet::new()),
        deleted: Mutex::new(BTreeSet::new()),
        kept: Mutex::new(Vec::new()),
        webhooks_answered: Mutex::new(BTreeSet::new()),
        answers: AnswerLog::default(),
    };
    run.note(|s| s.set_plan(ExecutionStatus::InProgress, ""));

    let result = match &walk {
        Ok(walk) => run.plan(walk, cancel).await,
        Err(e) => Err(run.record_unwalkable(e.clone()).await),
    }
    .map_err(|e| e.with_plan(req.plan));
    let (final_status, message) = match &result {
        Ok(()) => (ExecutionStatus::Complete, String::new()),
        Err(e) if e.fatal => (ExecutionStatus::FatalError, e.to_string()),
        Err(e) => (ExecutionStatus::Error, e.to_string()),
    };
    run.update(|s| s.set_plan(final_status, &message)).await;
    let manifest = instance_manifest(&req, &uid, final_status, parent.as_ref(), has_sensitive);
    // The Instance's last write in the run (after its status, so that its answer holds
    // every field this provider wrote): its parent's inventory records it as answered.
    let instance = match cluster.apply_owned(&manifest, false).await {
        Ok(live) => {
            run.answers
                .written(&instance_ref(req.namespace, req.instance), &live);
            Some(live)
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not record the plan result in the Instance spec");
            None
        }
    };
    match &result {
        Ok(()) => tracing::info!(plan = %req.plan, instance = %req.instance, "plan complete"),
        Err(e) => {
            tracing::error!(plan = %req.plan, instance = %req.instance, error = %e, "plan failed")
        }
    }
    if let Err(e) = result {
        return Err(e.with_inventory(run.inventory().into_iter().collect()));
    }

    let inventory = run.prune(cancel).await.map_err(|e| e.with_plan(req.plan))?;
    let plan_status = run.snapshot(req.plan);
    let kept = run.kept.lock().map(|k| k.clone()).unwrap_or_default();
    let ran = run.ran.lock().map(|r| r.clone()).unwrap_or_default();
    Ok(RunOutcome {
        plan_status,
        inventory,
        kept,
        dependencies: DependencyRecords::new(),
        ran,
        answers: run.answers.take(),
        instance,
    })
}

/// The Instance as we own it: what the user asked for, and which plan runs.
fn instance_manifest(
    req: &RunRequest<'_>,
    uid: &str,
    status: ExecutionStatus,
    parent: Option<&Owner>,
    has_sensitive: bool,
) -> Value {
    let pkg = req.package;
    let mut manifest = json!({
        "apiVersion": KUDO_API_VERSION,
        "kind": "Instance",
        "metadata": {
            "name": req.instance,
            "namespace": req.namespace,
            "labels": { super::metadata::LABEL_OPERATOR: pkg.operator.name },
        },
        "spec": {
            "operatorVersion": { "name": pkg.operator_version_name(), "namespace": req.namespace },
            "parameters": req.parameters,
            "planExecution": { "planName": req.plan, "uid": uid, "status": status },
        },
    });
    if has_sensitive {
        manifest["metadata"]["annotations"] = json!({
            super::sensitive::ANNOTATION_SENSITIVE:
                super::sensitive::sensitive_secret_name(req.instance),
        });
    }
    if let Some(parent) = parent {
        // A dependency goes away with its parent (KEP-29).
        manifest["metadata"]["ownerReferences"] = json!([{
            "apiVersion": KUDO_API_VERSION,
            "kind": "Instance",
            "name": parent.instance,
            "uid": parent.uid,
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
    }
    manifest
}

struct Run<'a> {
    cluster: &'a Cluster,
    req: RunRequest<'a>,
    /// `req.previous_inventory`, for lookups: every object asks whether it is there.
    previous: ObjectIndex<'a>,
    desired: &'a Desired<'a>,
    /// What the run does with each dependency instance, decided before it started.
    tree: &'a TreeDecisions,
    /// Inventories of the dependency instances that ran, at every depth.
    ran: Mutex<BTreeMap<String, Vec<ObjectRef>>>,
    owner: Owner,
    statuses: Mutex<BTreeMap<String, PlanStatus>>,
    publishes: Publishes,
    applied: Mutex<BTreeSet<ObjectRef>>,
    deleted: Mutex<BTreeSet<ObjectRef>>,
    kept: Mutex<Vec<Kept>>,
    /// Webhook tasks whose answer this run applied: their answer is now the latest,
    /// so pruning may remove what they answered before and no longer do.
    webhooks_answered: Mutex<BTreeSet<String>>,
    answers: AnswerLog,
}

/// A phase or step, started with the cancellation token it must honour.
type Child<'f> =
    Box<dyn FnOnce(CancellationToken) -> BoxFuture<'f, Result<(), EngineError>> + Send + 'f>;

/// Runs the children of a plan/phase in `strategy` order. Parallel children really run
/// concurrently; the first real failure stops its siblings (their waits are cancelled)
/// so a FATAL step does not hang on a sibling that never becomes healthy.
async fn run_children(
    strategy: Strategy,
    cancel: &CancellationToken,
    children: Vec<Child<'_>>,
) -> Result<(), EngineError> {
    match strategy {
        Strategy::Serial => {
            for child in children {
                child(cancel.clone()).await?;
            }
            Ok(())
        }
        Strategy::Parallel => {
            let group = cancel.child_token();
            let futures = children.into_iter().map(|child| {
                let group = group.clone();
                let fut = child(group.clone());
                async move {
                    let r = fut.await;
                    if matches!(&r, Err(e) if !e.is_cancelled()) {
                        group.cancel();
                    }
                    r
                }
            });
            let results = join_all(futures).await;
            let mut errors: Vec<EngineError> =
                results.into_iter().filter_map(Result::err).collect();
            // Report the cause, not the siblings we stopped because of it.
            errors.sort_by_key(|e| (e.is_cancelled(), !e.fatal));
            match errors.into_iter().next() {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
    }
}

/// Whether `step` neither touches the cluster nor waits: only Dummy tasks that complete
/// without an error (its status then goes with the next write).
fn done_at_once(step: &StepWalk<'_>) -> bool {
    step.tasks.iter().all(|task| {
        matches!(
            task.action,
            Action::Dummy {
                want_err: false,
                done: true,
                ..
            }
        )
    })
}

/// Plan-status writes asked for and done, in asking order ([`Run::publish`]).
#[derive(Default)]
struct Publishes {
    /// Held by the one writer: parallel steps ask concurrently, and one write at a time
    /// keeps the last write the newest snapshot.
    lock: tokio::sync::Mutex<()>,
    asked: AtomicU64,
    /// The last ticket the last write covered.
    written: AtomicU64,
}

/// The children run in `strategy` that are still running, when they run beside each
/// other: each one's end is then written when it comes (a sibling may wait for minutes),
/// except the last one's, which the next write carries as a serial child's is.
fn running_beside(strategy: Strategy, children: usize) -> Option<Arc<AtomicUsize>> {
    (matches!(strategy, Strategy::Parallel) && children > 1)
        .then(|| Arc::new(AtomicUsize::new(children)))
}

/// Counts one child of [`running_beside`] as ended: whether others still run.
fn others_running(siblings: Option<&AtomicUsize>) -> bool {
    siblings.is_some_and(|left| left.fetch_sub(1, Ordering::SeqCst) > 1)
}

fn status_of(e: &EngineError) -> ExecutionStatus {
    if e.fatal {
        ExecutionStatus::FatalError
    } else {
        ExecutionStatus::Error
    }
}

impl<'a> Run<'a> {
    /// Changes the plan status and writes it to the Instance.
    async fn update(&self, change: impl FnOnce(&mut PlanStatus)) {
        self.note(change);
        self.publish().await;
    }

    /// Changes the plan status without writing it: the next write carries it. The
    /// status is written when a step starts (beside its work, see `step`) and when the
    /// plan ends, so a step's end, its phase's end and the next phase's start go out
    /// with the next step's start: one write instead of four, and none on the critical
    /// path but the last.
    fn note(&self, change: impl FnOnce(&mut PlanStatus)) {
        if let Ok(mut all) = self.statuses.lock()
            && let Some(s) = all.get_mut(self.req.plan)
        {
            change(s);
        }
    }

    fn report(&self, phase: &str, step: Option<&str>, change: ProgressChange) {
        if let Some(progress) = self.req.progress {
            progress.report(ProgressEvent {
                instance: self.req.instance.to_string(),
                plan: self.req.plan.to_string(),
                phase: phase.to_string(),
                step: step.map(str::to_string),
                change,
            });
        }
    }

    fn snapshot(&self, plan: &str) -> Value {
        self.statuses
            .lock()
            .ok()
            .and_then(|all| all.get(plan).and_then(|s| serde_json::to_value(s).ok()))
            .unwrap_or(Value::Null)
    }

    /// Writes planStatus and the Ready condition, and returns once a write holding the
    /// status as it is now has gone out. A failed write is logged, not fatal: the plan's
    /// real work matters more than its progress report.
    ///
    /// Writes asked for while another is under way are carried by one write after it:
    /// parallel steps that end together (a phase of Toggle tasks) cost one round trip,
    /// not one each.
    async fn publish(&self) {
        let ticket = self.publishes.asked.fetch_add(1, Ordering::SeqCst) + 1;
        // Siblings ending in the same moment ask before the write reads the status.
        tokio::task::yield_now().await;
        {
            let _guard = self.publishes.lock.lock().await;
            if self.publishes.written.load(Ordering::SeqCst) < ticket {
                self.write_asked().await;
            }
        }
        self.write_left().await;
    }

    /// [`Run::publish`] without waiting for a write already under way: its writer
    /// writes again for this ask once it is done. For what only reports progress (a
    /// step's start, the end of one of parallel siblings); the plan's end waits.
    async fn publish_soon(&self) {
        self.publishes.asked.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        self.write_left().await;
    }

    /// Writes what was asked for and not written yet, unless a write is under way (its
    /// writer looks again when it is done, here). An ask that comes as the writer lets
    /// go is taken by the next turn of the loop.
    async fn write_left(&self) {
        loop {
            let Ok(_guard) = self.publishes.lock.try_lock() else {
                return;
            };
            self.write_asked().await;
            drop(_guard);
            if self.publishes.written.load(Ordering::SeqCst)
                >= self.publishes.asked.load(Ordering::SeqCst)
            {
                return;
            }
        }
    }

    /// Writes the status until every ask so far is covered, asks that came during a
    /// write included. Called with `publishes.lock` held.
    async fn write_asked(&self) {
        loop {
            // Every change asked for so far was noted before it was asked for: the
            // status read below holds them all.
            let covered = self.publishes.asked.load(Ordering::SeqCst);
            if self.publishes.written.load(Ordering::SeqCst) >= covered {
                return;
            }
            let (plan_status, current) = match self.statuses.lock() {
                Ok(all) => (
                    serde_json::to_value(&*all).unwrap_or(Value::Null),
                    all.get(self.req.plan)
                        .map(|s| (s.status, s.message.clone())),
                ),
                // Nothing can be read to write: these asks are done with, or the
                // writers would ask again forever.
                Err(_) => {
                    self.publishes.written.store(covered, Ordering::SeqCst);
                    return;
                }
            };
            let (state, message) = current.unwrap_or((ExecutionStatus::NeverRun, String::new()));
            let status = json!({
                "planStatus": plan_status,
                "conditions": [ready_condition(state, &message)],
            });
            let r = instance_ref(self.req.namespace, self.req.instance);
            if let Err(e) = self.cluster.patch_status(&r, &status).await {
                tracing::warn!(error = %e, "could not write the Instance plan status");
            }
            self.publishes.written.store(covered, Ordering::SeqCst);
        }
    }

    /// The step a walk error names is where the run stops: its status says why, as it
    /// would had the step started.
    async fn record_unwalkable(&self, e: EngineError) -> EngineError {
        if let (Some(phase), Some(step)) = (&e.phase, &e.step) {
            let text = e.to_string();
            self.note(|s| s.set_step(phase, step, ExecutionStatus::FatalError, &text));
            self.note(|s| s.set_phase(phase, ExecutionStatus::FatalError, &e.message));
        }
        e
    }

    async fn plan<'s>(
        &'s self,
        plan: &'s PlanWalk<'a>,
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        let siblings = running_beside(plan.strategy, plan.phases.len());
        let children = plan
            .phases
            .iter()
            .map(|phase| {
                let siblings = siblings.clone();
                Box::new(move |c: CancellationToken| {
                    async move { self.phase(phase, siblings, &c).await }.boxed()
                }) as Child<'s>
            })
            .collect();
        run_children(plan.strategy, cancel, children).await
    }

    /// `siblings`: the phases running beside this one (see [`running_beside`]).
    async fn phase<'s>(
        &'s self,
        phase: &'s PhaseWalk<'a>,
        siblings: Option<Arc<AtomicUsize>>,
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        let step_siblings = running_beside(phase.strategy, phase.steps.len());
        tracing::info!(plan = %self.req.plan, phase = %phase.name, "phase started");
        self.note(|s| s.set_phase(&phase.name, ExecutionStatus::InProgress, ""));
        self.report(&phase.name, None, ProgressChange::Started);
        let children = phase
            .steps
            .iter()
            .map(|step| {
                let siblings = step_siblings.clone();
                Box::new(move |c: CancellationToken| {
                    async move { self.step(step, siblings, &c).await }.boxed()
                }) as Child<'s>
            })
            .collect();
        let result = run_children(phase.strategy, cancel, children).await;
        self.phase_end(phase, &result);
        if others_running(siblings.as_deref()) {
            self.publish_soon().await;
        }
        result
    }

    /// Notes how `phase` ended.
    fn phase_end(&self, phase: &PhaseWalk<'a>, result: &Result<(), EngineError>) {
        match result {
            Ok(()) => {
                self.note(|s| s.set_phase(&phase.name, ExecutionStatus::Complete, ""));
                self.report(&phase.name, None, ProgressChange::Complete);
                tracing::info!(plan = %self.req.plan, phase = %phase.name, "phase complete");
            }
            Err(e) => {
                self.note(|s| s.set_phase(&phase.name, status_of(e), &e.message));
                self.report(&phase.name, None, ProgressChange::Failed(e.message.clone()));
                tracing::info!(plan = %self.req.plan, phase = %phase.name, error = %e.message, "phase failed");
            }
        }
    }

    /// `siblings`: the steps running beside this one (see [`running_beside`]).
    async fn step(
        &self,
        step: &StepWalk<'a>,
        siblings: Option<Arc<AtomicUsize>>,
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        let loc = &step.location;
        tracing::info!(plan = %loc.plan, phase = %loc.phase, step = %loc.step, "step started");
        self.note(|s| s.set_step(&loc.phase, &loc.step, ExecutionStatus::InProgress, ""));
        self.report(&loc.phase, Some(&loc.step), ProgressChange::Started);
        // The status goes out beside the step's first writes rather than before them:
        // nothing the step does waits for it, and writes are one at a time, the newest
        // last (`publish`). A step that writes nothing and is done at once (Dummy tasks
        // that complete) leaves it to the next write.
        let publish = async {
            if !done_at_once(step) {
                self.publish_soon().await;
            }
        };
        let (_, result) = futures::join!(publish, self.step_tasks(loc, step, cancel));
        let result = result.map_err(|e| e.at(loc));
        match &result {
            Ok(()) => {
                self.note(|s| s.set_step(&loc.phase, &loc.step, ExecutionStatus::Complete, ""));
                self.report(&loc.phase, Some(&loc.step), ProgressChange::Complete);
                tracing::info!(plan = %loc.plan, phase = %loc.phase, step = %loc.step, "step complete");
            }
            Err(e) => {
                let text = e.to_string();
                self.note(|s| s.set_step(&loc.phase, &loc.step, status_of(e), &text));
                self.report(
                    &loc.phase,
                    Some(&loc.step),
                    ProgressChange::Failed(text.clone()),
                );
                tracing::info!(plan = %loc.plan, phase = %loc.phase, step = %loc.step, error = %text, "step failed");
            }
        }
        if others_running(siblings.as_deref()) {
            self.publish_soon().await;
        }
        result
    }

    /// KUDO runs the tasks of a step together: each is applied in order, then the step
    /// is done when everything they applied is healthy.
    async fn step_tasks(
        &self,
        loc: &Location,
        step: &StepWalk<'a>,
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        self.check_step(loc, step, cancel).await?;
        let mut waits = Vec::new();
        for task in &step.tasks {
            let name = &task.name;
            tracing::info!(plan = %loc.plan, phase = %loc.phase, step = %loc.step, task = %name, kind = %task.kind, "task started");
            let objects = self
                .task(loc, task, cancel)
                .await
                .map_err(|e| e.with_task(name))?;
            waits.extend(objects.into_iter().map(|(r, seen)| (name.clone(), r, seen)));
        }
        let results = join_all(waits.iter().map(|(task, r, seen)| async move {
            wait_healthy(self.cluster, r, self.req.health, seen.as_ref(), cancel)
                .await
                .map_err(|e| e.with_task(task))
        }))
        .await;
        let mut errors: Vec<EngineError> = results.into_iter().filter_map(Result::err).collect();
        errors.sort_by_key(|e| (e.is_cancelled(), !e.fatal));
        if let Some(e) = errors.into_iter().next() {
            return Err(e);
        }
        for task in &step.tasks {
            tracing::info!(plan = %loc.plan, phase = %loc.phase, step = %loc.step, task = %task.name, "task complete");
        }
        Ok(())
    }

    /// Performs one task as the walk decided it; returns the objects whose health
    /// completes it and that are not healthy yet, each with the server's answer to its
    /// apply when there was one (the wait's first look at it). Objects healthy as
    /// applied are settled already and left out.
    async fn task(
        &self,
        loc: &Location,
        task: &TaskWalk<'a>,
        cancel: &CancellationToken,
    ) -> Result<Vec<(ObjectRef, Option<Value>)>, EngineError> {
        // The applied objects still to wait for, each with the server's answer
        // ([`Run::apply_one`] leaves out those already healthy as applied).
        let seen = |applied: Vec<(ObjectRef, Option<Value>)>| {
            applied
                .into_iter()
                .filter_map(|(r, v)| Some((r, Some(v?))))
                .collect()
        };
        match &task.action {
            Action::Apply(objects) => self.apply_all(loc, objects, cancel).await.map(seen),
            Action::Delete(objects) => {
                self.delete_all(objects, cancel).await?;
                Ok(Vec::new())
            }
            Action::Dummy {
                want_err,
                fatal,
                done,
            } => {
                if *want_err {
                    return Err(EngineError::new(
                        "dummy task failed as configured (wantErr: true)",
                        *fatal,
                    ));
                }
                if !*done {
                    // Never done: like KUDO, the step stays in progress until stopped.
                    cancel.cancelled().await;
                    return Err(EngineError::cancelled(
                        "cancelled while waiting for a dummy task configured with done: false",
                    ));
                }
                Ok(Vec::new())
            }
            Action::Pipe { pod, files } => self.pipe(loc, pod, files, cancel).await.map(seen),
            Action::Child(child) => self.dependency(child, cancel).await,
            Action::Webhook(call) => self.webhook(loc, &task.name, call, cancel).await.map(seen),
        }
    }

    /// Calls the webhook and applies its answer like an Apply task's objects (same
    /// metadata, ownership checks, inventory and health wait). A failed call fails the
    /// task before anything is applied, and a failed run prunes nothing.
    async fn webhook(
        &self,
        loc: &Location,
        task: &str,
        call: &kudo_plan::WebhookCall,
        cancel: &CancellationToken,
    ) -> Result<Vec<(ObjectRef, Option<Value>)>, EngineError> {
        let objects = super::webhook::call(self.cluster, self.req.namespace, task, call, cancel)
            .await
            .map_err(super::webhook::engine_error)?;
        let rendered: Vec<Rendered> = objects
            .into_iter()
            .map(|object| Rendered {
                template: String::new(),
                object,
            })
            .collect();
        let refs = self.apply_all(loc, &rendered, cancel).await?;
        if let Ok(mut answered) = self.webhooks_answered.lock() {
            answered.insert(task.to_string());
        }
        Ok(refs)
    }
}

/// Runs a cluster call, giving up as soon as `cancel` fires: a hanging API server must not
/// outlive the Terraform timeout.
async fn or_cancel<T>(
    cancel: &CancellationToken,
    r: &ObjectRef,
    call: impl std::future::Future<Output = Result<T, ClusterError>>,
) -> Result<T, EngineError> {
    tokio::select! {
        result = call => result.map_err(|e| EngineError::from(e).with_object(r)),
        _ = cancel.cancelled() => Err(EngineError::from(ClusterError::Cancelled {
            what: format!("talking to the API server about {r}"),
        })
        .with_object(r)),
    }
}
