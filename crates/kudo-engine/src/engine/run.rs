//! Running one plan: phases and steps in their strategy's order, the tasks of a step,
//! waiting for health, writing the plan status to the Instance as it goes, and pruning.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use futures::future::{BoxFuture, FutureExt, join_all};
use kudo_package::{Package, Strategy};
use kudo_plan::{
    Action, ChildPlan, Desired, Inputs, PhaseWalk, PipeFile, PlanWalk, Rendered, StepWalk, TaskWalk,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::dependency;
use super::error::Location;
use super::metadata::{Owner, decorate};
use super::pipe;
use super::removal::{CrdDeletion, Kept, Remover};
use super::status::{ExecutionStatus, PlanStatus, merged_plan_status, ready_condition};
// Also reachable as `run::wait_healthy`, where it was defined before.
pub(crate) use super::wait::wait_healthy;
use super::{EngineError, instance_ref};
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
}

/// Runs `req.plan` for the instance and waits until it completes, fails, or `cancel`
/// fires. The Instance object is created or updated first (spec.operatorVersion,
/// spec.parameters, spec.planExecution) and its `status.planStatus` follows progress.
pub async fn run_plan(
    cluster: &Cluster,
    req: RunRequest<'_>,
    cancel: &CancellationToken,
) -> Result<RunOutcome, EngineError> {
    run_plan_boxed(cluster, req, None, cancel).await
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
    run_plan_impl(cluster, req, None, Some(sensitive), cancel).await
}

/// `run_plan` for a dependency instance owned by `parent`. Boxed because a KudoOperator
/// task runs a plan from inside a plan (the future type would otherwise be infinite).
pub(crate) fn run_plan_boxed<'a>(
    cluster: &'a Cluster,
    req: RunRequest<'a>,
    parent: Option<Owner>,
    cancel: &'a CancellationToken,
) -> BoxFuture<'a, Result<RunOutcome, EngineError>> {
    Box::pin(run_plan_impl(cluster, req, parent, None, cancel))
}

async fn run_plan_impl(
    cluster: &Cluster,
    req: RunRequest<'_>,
    parent: Option<Owner>,
    sensitive: Option<&BTreeMap<String, String>>,
    cancel: &CancellationToken,
) -> Result<RunOutcome, EngineError> {
    let pkg = req.package;
    let stored = match sensitive {
        Some(values) => values.clone(),
        None => super::sensitive::read_sensitive(cluster, req.namespace, req.instance)
            .await
            .map_err(|e| e.with_plan(req.plan))?,
    };
    // Templates see every value; the Instance spec only the non-sensitive ones.
    let mut all_parameters = req.parameters.clone();
    all_parameters.extend(stored.iter().map(|(k, v)| (k.clone(), v.clone())));
    // The whole desired state first: whatever needs no cluster to fail fails here,
    // with the words the plan used (kudo-plan is what the plan consulted too).
    let desired = Desired::new(Inputs {
        package: pkg,
        instance: req.instance,
        namespace: req.namespace,
        parameters: &all_parameters,
        seed: req.render_seed,
        dependencies: req.dependencies,
    })
    .map_err(|e| EngineError::from(e).with_plan(req.plan))?;
    let Some(plan) = pkg.operator.plans.get(req.plan) else {
        return Err(desired.plan(req.plan).err().map_or_else(
            || EngineError::fatal(format!("no plan {:?}", req.plan)),
            EngineError::from,
        ));
    };
    // A plan that cannot be walked still records its failure in the Instance.
    let walk = desired.plan(req.plan).map_err(EngineError::from);
    let has_sensitive = !stored.is_empty();

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
    // The Instance is what `kudo_instance` stands for: ours whoever wrote it last.
    let applied = cluster.apply_owned(&manifest, false).await.map_err(|e| {
        EngineError::from(e)
            .with_plan(req.plan)
            .with_object(&instance_ref(req.namespace, req.instance))
    })?;
    let owner_uid = applied
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            EngineError::transient("the API server returned the Instance without a uid")
                .with_plan(req.plan)
        })?
        .to_string();
    if let Some(values) = sensitive {
        let written = if values.is_empty() {
            super::sensitive::remove_sensitive(cluster, req.namespace, req.instance, cancel).await
        } else {
            super::sensitive::write_sensitive(
                cluster,
                req.namespace,
                req.instance,
                &owner_uid,
                values,
            )
            .await
        };
        written.map_err(|e| e.with_plan(req.plan))?;
    }

    let mut statuses = merged_plan_status(pkg, applied.pointer("/status/planStatus"));
    statuses.insert(
        req.plan.to_string(),
        PlanStatus::starting(req.plan, plan, &uid),
    );
    let run = Run {
        cluster,
        req,
        desired: &desired,
        owner: Owner {
            operator: pkg.operator.name.clone(),
            instance: req.instance.to_string(),
            namespace: req.namespace.to_string(),
            uid: owner_uid,
        },
        statuses: Mutex::new(statuses),
        publish_lock: tokio::sync::Mutex::new(()),
        applied: Mutex::new(BTreeSet::new()),
        deleted: Mutex::new(BTreeSet::new()),
        kept: Mutex::new(Vec::new()),
        webhooks_answered: Mutex::new(BTreeSet::new()),
    };
    run.update(|s| s.set_plan(ExecutionStatus::InProgress, ""))
        .await;

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
    if let Err(e) = cluster.apply_owned(&manifest, false).await {
        tracing::warn!(error = %e, "could not record the plan result in the Instance spec");
    }
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
    Ok(RunOutcome {
        plan_status,
        inventory,
        kept,
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
    desired: &'a Desired<'a>,
    owner: Owner,
    statuses: Mutex<BTreeMap<String, PlanStatus>>,
    // Parallel steps write status concurrently; one write at a time keeps the last
    // write the newest snapshot.
    publish_lock: tokio::sync::Mutex<()>,
    applied: Mutex<BTreeSet<ObjectRef>>,
    deleted: Mutex<BTreeSet<ObjectRef>>,
    kept: Mutex<Vec<Kept>>,
    /// Webhook tasks whose answer this run applied: their answer is now the latest,
    /// so pruning may remove what they answered before and no longer do.
    webhooks_answered: Mutex<BTreeSet<String>>,
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

fn status_of(e: &EngineError) -> ExecutionStatus {
    if e.fatal {
        ExecutionStatus::FatalError
    } else {
        ExecutionStatus::Error
    }
}

impl<'a> Run<'a> {
    async fn update(&self, change: impl FnOnce(&mut PlanStatus)) {
        if let Ok(mut all) = self.statuses.lock()
            && let Some(s) = all.get_mut(self.req.plan)
        {
            change(s);
        }
        self.publish().await;
    }

    fn snapshot(&self, plan: &str) -> Value {
        self.statuses
            .lock()
            .ok()
            .and_then(|all| all.get(plan).and_then(|s| serde_json::to_value(s).ok()))
            .unwrap_or(Value::Null)
    }

    /// Writes planStatus and the Ready condition. A failed write is logged, not fatal:
    /// the plan's real work matters more than its progress report.
    async fn publish(&self) {
        let _guard = self.publish_lock.lock().await;
        let (plan_status, current) = match self.statuses.lock() {
            Ok(all) => (
                serde_json::to_value(&*all).unwrap_or(Value::Null),
                all.get(self.req.plan)
                    .map(|s| (s.status, s.message.clone())),
            ),
            Err(_) => return,
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
    }

    /// The step a walk error names is where the run stops: its status says why, as it
    /// would had the step started.
    async fn record_unwalkable(&self, e: EngineError) -> EngineError {
        if let (Some(phase), Some(step)) = (&e.phase, &e.step) {
            let text = e.to_string();
            self.update(|s| s.set_step(phase, step, ExecutionStatus::FatalError, &text))
                .await;
            self.update(|s| s.set_phase(phase, ExecutionStatus::FatalError, &e.message))
                .await;
        }
        e
    }

    async fn plan<'s>(
        &'s self,
        plan: &'s PlanWalk<'a>,
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        let children = plan
            .phases
            .iter()
            .map(|phase| {
                Box::new(move |c: CancellationToken| {
                    async move { self.phase(phase, &c).await }.boxed()
                }) as Child<'s>
            })
            .collect();
        run_children(plan.strategy, cancel, children).await
    }

    async fn phase<'s>(
        &'s self,
        phase: &'s PhaseWalk<'a>,
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        tracing::info!(plan = %self.req.plan, phase = %phase.name, "phase started");
        self.update(|s| s.set_phase(&phase.name, ExecutionStatus::InProgress, ""))
            .await;
        let children = phase
            .steps
            .iter()
            .map(|step| {
                Box::new(move |c: CancellationToken| {
                    async move { self.step(step, &c).await }.boxed()
                }) as Child<'s>
            })
            .collect();
        let result = run_children(phase.strategy, cancel, children).await;
        match &result {
            Ok(()) => {
                self.update(|s| s.set_phase(&phase.name, ExecutionStatus::Complete, ""))
                    .await;
                tracing::info!(plan = %self.req.plan, phase = %phase.name, "phase complete");
            }
            Err(e) => {
                self.update(|s| s.set_phase(&phase.name, status_of(e), &e.message))
                    .await;
                tracing::info!(plan = %self.req.plan, phase = %phase.name, error = %e.message, "phase failed");
            }
        }
        result
    }

    async fn step(
        &self,
        step: &StepWalk<'a>,
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        let loc = &step.location;
        tracing::info!(plan = %loc.plan, phase = %loc.phase, step = %loc.step, "step started");
        self.update(|s| s.set_step(&loc.phase, &loc.step, ExecutionStatus::InProgress, ""))
            .await;
        let result = self
            .step_tasks(loc, step, cancel)
            .await
            .map_err(|e| e.at(loc));
        match &result {
            Ok(()) => {
                self.update(|s| s.set_step(&loc.phase, &loc.step, ExecutionStatus::Complete, ""))
                    .await;
                tracing::info!(plan = %loc.plan, phase = %loc.phase, step = %loc.step, "step complete");
            }
            Err(e) => {
                let text = e.to_string();
                self.update(|s| s.set_step(&loc.phase, &loc.step, status_of(e), &text))
                    .await;
                tracing::info!(plan = %loc.plan, phase = %loc.phase, step = %loc.step, error = %text, "step failed");
            }
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
            waits.extend(objects.into_iter().map(|o| (name.clone(), o)));
        }
        let results = join_all(waits.iter().map(|(task, r)| async move {
            wait_healthy(self.cluster, r, cancel)
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

    /// Asks the API server, with a server-side dry-run, whether it takes every object
    /// the step's Apply tasks write, before the step writes any of them: an object the
    /// plan could not check (its CRD or namespace did not exist yet) must not fail
    /// half-way through a step. A step with one object needs no rehearsal: applying it
    /// is the check. Objects the server still cannot judge (their kind comes from a CRD
    /// an earlier task of this step creates) are left to their own apply.
    async fn check_step(
        &self,
        loc: &Location,
        step: &StepWalk<'a>,
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        let objects: Vec<(&str, &Rendered)> = step
            .tasks
            .iter()
            .filter_map(|t| match &t.action {
                Action::Apply(objects) => Some(objects.iter().map(move |o| (t.name.as_str(), o))),
                _ => None,
            })
            .flatten()
            .collect();
        if objects.len() < 2 {
            return Ok(());
        }
        for (task, rendered) in objects {
            let located = |e: EngineError| {
                let e = e.with_task(task);
                match rendered.template.as_str() {
                    "" => e,
                    template => e.with_template(template),
                }
            };
            let (r, obj) = match self.prepare(loc, rendered.object.clone()).await {
                Ok(prepared) => prepared,
                Err(e) if matches!(e.cluster_cause(), Some(ClusterError::UnknownKind { .. })) => {
                    continue;
                }
                Err(e) => return Err(located(e)),
            };
            let dry_run = match in_inventory(self.req.previous_inventory, &r) {
                true => self.cluster.apply_owned(&obj, true).boxed(),
                false => self.cluster.apply(&obj, true).boxed(),
            };
            match or_cancel(cancel, &r, dry_run).await {
                Ok(_) => {}
                Err(e) if matches!(e.cluster_cause(), Some(c) if c.is_not_found()) => {}
                Err(e) => return Err(located(e)),
            }
        }
        Ok(())
    }

    /// Performs one task as the walk decided it; returns the objects whose health
    /// completes it.
    async fn task(
        &self,
        loc: &Location,
        task: &TaskWalk<'a>,
        cancel: &CancellationToken,
    ) -> Result<Vec<ObjectRef>, EngineError> {
        match &task.action {
            Action::Apply(objects) => self.apply_all(loc, objects, cancel).await,
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
            Action::Pipe { pod, files } => self.pipe(loc, pod, files, cancel).await,
            Action::Child(child) => self.dependency(child, cancel).await,
            Action::Webhook(call) => self.webhook(loc, &task.name, call, cancel).await,
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
    ) -> Result<Vec<ObjectRef>, EngineError> {
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

    /// KudoOperator: installs the dependency's operator and runs the plan a change of it
    /// calls for as an instance owned by ours; leaves a settled child alone (or removes
    /// it when its enabling parameter is false).
    async fn dependency(
        &self,
        plan: &ChildPlan<'a>,
        cancel: &CancellationToken,
    ) -> Result<Vec<ObjectRef>, EngineError> {
        let target = plan
            .target
            .as_ref()
            .map_err(|e| EngineError::from(e.clone()))?;
        let child_pkg: &Package = &target.package;
        let child = &target.instance;
        let child_ref = super::instance_ref(self.req.namespace, child);
        if !plan.enabled {
            let live = self.cluster.get(&child_ref).await?;
            // Only a child of ours goes; another's instance of that name is not ours to remove.
            if let Some(obj) = &live
                && let Err(e) = super::ownership::check_child(&child_ref, obj, self.req.instance)
            {
                tracing::warn!(instance = %child, reason = %e, "dependency disabled, but the instance of its name is not ours; leaving it");
            } else if live.is_some() {
                tracing::info!(instance = %child, "dependency disabled; removing it");
                let kept = super::uninstall::uninstall_boxed(
                    self.cluster,
                    self.req.namespace,
                    child,
                    self.req.crd_deletion,
                    cancel,
                )
                .await?;
                self.note_kept(kept);
            }
            if let Ok(mut deleted) = self.deleted.lock() {
                deleted.insert(child_ref);
            }
            return Ok(Vec::new());
        }
        let values = &plan.parameters;
        let live = self
            .cluster
            .get(&child_ref)
            .await
            .map_err(|e| EngineError::from(e).with_object(&child_ref))?;
        if let Some(obj) = &live {
            super::ownership::check_child(&child_ref, obj, self.req.instance)?;
        }
        let existing = live.as_ref().map(dependency::ExistingChild::from_instance);
        let in_child = |e: EngineError| {
            EngineError::new(
                format!("dependency instance {child}: {}", e.message),
                e.fatal,
            )
            .with_object(&child_ref)
        };
        let action = dependency::decide(child_pkg, existing.as_ref(), values).map_err(in_child)?;
        let (plan_name, reason) = match action {
            dependency::ChildAction::Run { plan, reason } => (plan, reason),
            dependency::ChildAction::Leave { reason } => {
                // The child's own dependencies may have been resolved anew (a range now
                // picks another version) while the child itself stayed the same.
                match self
                    .subtree_change(child_pkg, child, values, target.seed.as_deref())
                    .await?
                {
                    None => {
                        tracing::info!(instance = %child, operator = %child_pkg.operator.name, %reason, "dependency unchanged; not running a plan");
                        self.keep_child(&child_ref);
                        return Ok(vec![child_ref]);
                    }
                    Some(why) => ("deploy".to_string(), why),
                }
            }
        };
        super::install_operator(self.cluster, child_pkg, self.req.namespace).await?;
        let previous = self.dependency_inventory(&child_ref).await?;
        tracing::info!(instance = %child, operator = %child_pkg.operator.name, plan = %plan_name, %reason, "running dependency plan");
        let request = RunRequest {
            package: child_pkg,
            instance: child,
            namespace: self.req.namespace,
            parameters: values,
            plan: &plan_name,
            previous_inventory: &previous,
            dependencies: self.req.dependencies,
            // Each dependency gets its own secret seed, derived so it stays stable too.
            render_seed: target.seed.as_deref(),
            crd_deletion: self.req.crd_deletion,
        };
        let outcome = run_plan_boxed(self.cluster, request, Some(self.owner.clone()), cancel)
            .await
            .map_err(|e| {
                // The trouble carries over, so a stop (timeout, interrupt) stays one in
                // the parent for the timeout explanation and sibling handling.
                let mut wrapped = EngineError::new(format!("dependency instance {child}"), e.fatal)
                    .with_object(&child_ref);
                wrapped.trouble = e.trouble;
                wrapped.caused_by(e)
            })?;
        self.note_kept(outcome.kept);
        self.keep_child(&child_ref);
        Ok(vec![child_ref])
    }

    fn remover(&self) -> Remover<'_> {
        Remover {
            cluster: self.cluster,
            user: super::sharing::user_id(self.req.namespace, self.req.instance),
            crd_deletion: self.req.crd_deletion,
        }
    }

    fn note_kept(&self, kept: impl IntoIterator<Item = Kept>) {
        if let Ok(mut all) = self.kept.lock() {
            all.extend(kept);
        }
    }

    /// A child this run ensured (ran or found settled) is part of our inventory and must
    /// not be pruned.
    fn keep_child(&self, child_ref: &ObjectRef) {
        if let Ok(mut applied) = self.applied.lock() {
            applied.insert(child_ref.clone());
        }
        if let Ok(mut deleted) = self.deleted.lock() {
            deleted.remove(child_ref);
        }
    }

    /// Why a settled child `instance` of `pkg` still needs its deploy plan: one of the
    /// dependencies of its deploy plan, at any depth, would be created, removed, or run
    /// again. None when the whole subtree is settled. Anything that cannot be worked out
    /// here (a package, a parameter file) counts as a change, so that the run reports it.
    /// `seed` is `instance`'s render seed: its parameter files draw random values as its
    /// run did, or every child with one would look changed.
    fn subtree_change<'f>(
        &'f self,
        pkg: &'f Package,
        instance: &'f str,
        values: &'f BTreeMap<String, String>,
        seed: Option<&'f str>,
    ) -> BoxFuture<'f, Result<Option<String>, EngineError>> {
        async move {
            if !pkg.operator.plans.contains_key("deploy") {
                return Ok(None);
            }
            let desired = match Desired::new(Inputs {
                package: pkg,
                instance,
                namespace: self.req.namespace,
                parameters: values,
                seed,
                dependencies: self.req.dependencies,
            }) {
                Ok(d) => d,
                Err(_) => return Ok(Some(format!("{instance}: parameters do not validate"))),
            };
            let deploy = match desired.plan("deploy") {
                Ok(w) => w,
                Err(e) => return Ok(Some(format!("{instance}: {}", e.located()))),
            };
            for task in deploy.tasks() {
                let Action::Child(sub) = &task.action else {
                    continue;
                };
                let target = match &sub.target {
                    Ok(t) => t,
                    Err(e) => return Ok(Some(format!("{instance}: {}", e.message))),
                };
                let name = &target.instance;
                let sub_ref = super::instance_ref(self.req.namespace, name);
                let existing = self
                    .cluster
                    .get(&sub_ref)
                    .await
                    .map_err(|e| EngineError::from(e).with_object(&sub_ref))?
                    .map(|obj| dependency::ExistingChild::from_instance(&obj));
                if !sub.enabled {
                    if existing.is_some() {
                        return Ok(Some(format!(
                            "its dependency {name} is disabled but exists"
                        )));
                    }
                    continue;
                }
                match dependency::decide(&target.package, existing.as_ref(), &sub.parameters) {
                    Ok(dependency::ChildAction::Leave { .. }) => {}
                    Ok(dependency::ChildAction::Run { reason, .. }) => {
                        return Ok(Some(format!("its dependency {name}: {reason}")));
                    }
                    Err(e) => return Ok(Some(format!("its dependency {name}: {}", e.message))),
                }
                if let Some(why) = self
                    .subtree_change(
                        &target.package,
                        name,
                        &sub.parameters,
                        target.seed.as_deref(),
                    )
                    .await?
                {
                    return Ok(Some(why));
                }
            }
            Ok(None)
        }
        .boxed()
    }

    /// What an existing dependency instance owns, so that its run prunes what its new
    /// version or parameters no longer render. Terraform state records only the top
    /// instance's inventory; a child's objects are found by their instance label.
    async fn dependency_inventory(
        &self,
        child_ref: &ObjectRef,
    ) -> Result<Vec<ObjectRef>, EngineError> {
        if self.cluster.get(child_ref).await?.is_none() {
            return Ok(Vec::new());
        }
        let selector = format!("{}={}", super::LABEL_INSTANCE, child_ref.name);
        let objects = self
            .cluster
            .list_labelled(self.req.namespace, &selector)
            .await
            .map_err(|e| EngineError::from(e).with_object(child_ref))?;
        Ok(objects
            .iter()
            .filter_map(|o| ObjectRef::from_object(o).ok())
            .filter(|r| !(r.kind == "Instance" && r.api_version == KUDO_API_VERSION))
            .collect())
    }

    /// Runs the pipe pod, stores its files as Secrets/ConfigMaps (owned like every other
    /// object), removes the pod. The artifacts are the task's result; nothing to wait for.
    async fn pipe(
        &self,
        loc: &Location,
        pod: &Rendered,
        files: &[PipeFile],
        cancel: &CancellationToken,
    ) -> Result<Vec<ObjectRef>, EngineError> {
        let (pod_ref, pod) = self
            .prepare(loc, pod.object.clone())
            .await
            .map_err(|e| e.with_template(pod.template.clone()))?;
        or_cancel(cancel, &pod_ref, self.cluster.apply(&pod, false)).await?;
        tracing::info!(object = %pod_ref, "pipe pod started");
        let copied = self.copy_pipe_files(loc, &pod_ref, files, cancel).await;
        // The pod is scaffolding: remove it whether or not the copy worked.
        let removed = self
            .cluster
            .delete_and_wait(&pod_ref, cancel)
            .await
            .map_err(|e| EngineError::from(e).with_object(&pod_ref));
        let artifacts = copied?;
        removed?;
        Ok(artifacts)
    }

    async fn copy_pipe_files(
        &self,
        loc: &Location,
        pod: &ObjectRef,
        files: &[PipeFile],
        cancel: &CancellationToken,
    ) -> Result<Vec<ObjectRef>, EngineError> {
        wait_healthy(self.cluster, pod, cancel).await?;
        let mut artifacts = Vec::new();
        for file in files {
            let spec = &file.spec;
            let path = spec
                .file
                .as_deref()
                .or(spec.env_file.as_deref())
                .unwrap_or_default();
            let content = or_cancel(
                cancel,
                pod,
                self.cluster.read_pod_file(
                    self.req.namespace,
                    &pod.name,
                    pipe::PIPE_CONTAINER,
                    path,
                    cancel,
                ),
            )
            .await?;
            let artifact = pipe::artifact(spec, &file.name, &content)?;
            let artifact = Rendered {
                template: String::new(),
                object: artifact,
            };
            artifacts.extend(
                self.apply_all(loc, std::slice::from_ref(&artifact), cancel)
                    .await?,
            );
        }
        Ok(artifacts)
    }

    /// Adds namespace/labels/owner to a rendered object and returns its reference.
    async fn prepare(&self, loc: &Location, obj: Value) -> Result<(ObjectRef, Value), EngineError> {
        let written = ObjectRef::from_object(&obj)?;
        // The version the cluster serves decides the ref the inventory records.
        let mut obj = self
            .cluster
            .served_form(&obj)
            .await
            .map_err(|e| EngineError::from(e).with_object(&written))?
            .object;
        let r = ObjectRef::from_object(&obj)?;
        let namespaced = self
            .cluster
            .is_namespaced(&r.api_version, &r.kind)
            .await
            .map_err(|e| EngineError::from(e).with_object(&r))?;
        decorate(&mut obj, &self.owner, loc, namespaced);
        let r = ObjectRef::from_object(&obj)?;
        Ok((r, obj))
    }

    async fn apply_all(
        &self,
        loc: &Location,
        objects: &[Rendered],
        cancel: &CancellationToken,
    ) -> Result<Vec<ObjectRef>, EngineError> {
        let mut refs = Vec::new();
        for rendered in objects {
            let r = self
                .apply_one(loc, rendered.object.clone(), cancel)
                .await
                .map_err(|e| match rendered.template.as_str() {
                    "" => e,
                    template => e.with_template(template),
                })?;
            refs.push(r);
        }
        Ok(refs)
    }

    async fn apply_one(
        &self,
        loc: &Location,
        obj: Value,
        cancel: &CancellationToken,
    ) -> Result<ObjectRef, EngineError> {
        {
            let (r, obj) = self.prepare(loc, obj).await?;
            // Objects in the inventory are ours by Terraform's record (an import adopts
            // what KUDO's manager wrote); others only if we applied them before.
            let known = in_inventory(self.req.previous_inventory, &r);
            if !known && r.namespace.is_some() {
                let live = or_cancel(cancel, &r, self.cluster.get(&r)).await?;
                super::ownership::check_not_taken(&r, live.as_ref(), self.req.instance)?;
            }
            let apply = match known {
                true => self.cluster.apply_owned(&obj, false).boxed(),
                false => self.cluster.apply(&obj, false).boxed(),
            };
            let live = or_cancel(cancel, &r, apply).await?;
            tracing::info!(object = %r, "applied");
            if r.namespace.is_none() {
                // Cluster-scoped objects can be shared; say that this instance uses it.
                let user = super::sharing::user_id(self.req.namespace, self.req.instance);
                or_cancel(
                    cancel,
                    &r,
                    super::sharing::record_user(self.cluster, &r, &live, &user),
                )
                .await?;
            }
            if let Ok(mut applied) = self.applied.lock() {
                applied.insert(r.clone());
            }
            if let Ok(mut deleted) = self.deleted.lock() {
                deleted.retain(|d| !d.same_object(&r));
            }
            Ok(r)
        }
    }

    async fn delete_all(
        &self,
        objects: &[Rendered],
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        for rendered in objects {
            self.delete_one(rendered.object.clone(), cancel)
                .await
                .map_err(|e| e.with_template(rendered.template.clone()))?;
        }
        Ok(())
    }

    async fn delete_one(
        &self,
        mut obj: Value,
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        {
            let r = ObjectRef::from_object(&obj)?;
            let namespaced = match self.cluster.is_namespaced(&r.api_version, &r.kind).await {
                Ok(n) => n,
                Err(ClusterError::UnknownKind { .. }) => {
                    tracing::info!(object = %r, "kind not served by the cluster; nothing to delete");
                    return Ok(());
                }
                Err(e) => return Err(EngineError::from(e).with_object(&r)),
            };
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                if namespaced {
                    meta.insert("namespace".into(), json!(self.req.namespace));
                } else {
                    meta.remove("namespace");
                }
            }
            let r = ObjectRef::from_object(&obj)?;
            let kept = self.remover().remove(&r, cancel).await?;
            self.note_kept(kept);
            if let Ok(mut deleted) = self.deleted.lock() {
                deleted.insert(r.clone());
            }
            if let Ok(mut applied) = self.applied.lock() {
                applied.retain(|a| !a.same_object(&r));
            }
        }
        Ok(())
    }

    /// `unwanted` without the objects a Webhook task's latest answer holds. No plan can
    /// know what a webhook answers without calling it, so the desired set never holds
    /// them; instead each object a webhook answered carries the task's name
    /// (`kudo.dev/webhook-task`), and stays until that task answers again without it
    /// (in this run) or no plan of the package runs that task any more. Packages
    /// without Webhook tasks read nothing here.
    async fn not_held_by_webhooks(
        &self,
        unwanted: Vec<ObjectRef>,
        cancel: &CancellationToken,
    ) -> Vec<ObjectRef> {
        let tasks = self.desired.webhook_tasks();
        if tasks.is_empty() || unwanted.is_empty() {
            return unwanted;
        }
        let answered = self
            .webhooks_answered
            .lock()
            .map(|a| a.clone())
            .unwrap_or_default();
        let mut prune = Vec::new();
        for r in unwanted {
            let live = match or_cancel(cancel, &r, self.cluster.get(&r)).await {
                Ok(live) => live,
                Err(e) => {
                    // Better to leak than to delete what a webhook may still want.
                    tracing::warn!(object = %r, error = %e, "not pruning: cannot read whether a webhook answered it");
                    continue;
                }
            };
            let task = live.as_ref().and_then(|o| {
                o.pointer("/metadata/annotations")
                    .and_then(|a| a.get(kudo_plan::webhook::ANNOTATION_WEBHOOK_TASK))
                    .and_then(Value::as_str)
            });
            match task {
                Some(t) if tasks.contains(t) && !answered.contains(t) => {
                    tracing::info!(object = %r, task = %t, "kept: the latest answer of its webhook task holds it");
                }
                _ => prune.push(r),
            }
        }
        prune
    }

    /// Deletes objects of earlier runs that no task renders any more; returns the new
    /// inventory.
    /// Previous inventory plus what this run applied, minus what it deleted.
    fn inventory(&self) -> BTreeSet<ObjectRef> {
        let applied = self.applied.lock().map(|a| a.clone()).unwrap_or_default();
        let deleted = self.deleted.lock().map(|d| d.clone()).unwrap_or_default();
        // An object applied under a newer version of its group replaces the ref an
        // earlier run recorded under the old one: it is the same stored object.
        let kept: Vec<ObjectRef> = self
            .req
            .previous_inventory
            .iter()
            .filter(|r| !in_inventory(&applied, r))
            .cloned()
            .collect();
        let mut inventory: BTreeSet<ObjectRef> = kept.into_iter().chain(applied).collect();
        inventory.retain(|r| !in_inventory(&deleted, r));
        inventory
    }

    async fn prune(&self, cancel: &CancellationToken) -> Result<Vec<ObjectRef>, EngineError> {
        let applied = self.applied.lock().map(|a| a.clone()).unwrap_or_default();
        let mut inventory = self.inventory();

        let stale: Vec<ObjectRef> = self
            .req
            .previous_inventory
            .iter()
            .filter(|r| inventory.contains(*r) && !in_inventory(&applied, r))
            .cloned()
            .collect();
        if !stale.is_empty()
            && let Some(wanted) = super::planning::wanted_refs(self.cluster, self.desired).await
        {
            let unwanted = super::prune::unwanted(&stale, &applied, &wanted);
            let unwanted = self.not_held_by_webhooks(unwanted, cancel).await;
            for r in &unwanted {
                tracing::info!(object = %r, "pruning object no longer rendered");
            }
            let kept = self.remover().remove_all(&unwanted, cancel).await?;
            self.note_kept(kept);
            for r in &unwanted {
                inventory.remove(r);
            }
        }
        Ok(inventory.into_iter().collect())
    }
}

pub(crate) use super::prune::in_inventory;

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
