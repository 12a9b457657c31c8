//! Dependency instances (KudoOperator tasks) inside a run: running a child's plan,
//! keeping or removing a switched-off subtree, and what the children add to the inventory.

use super::*;
use crate::engine::decisions::DependencyAction;

impl<'a> Run<'a> {
    /// KudoOperator: does what the tree's decisions say for this dependency instance
    /// (the final plan's, or made by [`crate::engine::plan_run`] before the run wrote
    /// anything): installs
    /// its operator and runs its plan as an instance owned by ours, leaves a settled
    /// one alone, or removes one whose enabling parameter is off.
    pub(super) async fn dependency(
        &self,
        plan: &ChildPlan<'a>,
        cancel: &CancellationToken,
    ) -> Result<Vec<(ObjectRef, Option<Value>)>, EngineError> {
        let target = plan
            .target
            .as_ref()
            .map_err(|e| EngineError::from(e.clone()))?;
        let child_pkg: &Package = &target.package;
        let child = &target.instance;
        let child_ref = crate::engine::instance_object::instance_ref(self.req.namespace, child);
        let decision = self.tree.get(child).map(|d| &d.action);
        if !plan.enabled {
            if decision == Some(&DependencyAction::Remove) {
                tracing::info!(instance = %child, "dependency disabled; removing it");
                let kept = crate::engine::uninstall::uninstall_boxed(
                    self.cluster,
                    self.req.namespace,
                    child,
                    self.req.crd_deletion,
                    cancel,
                )
                .await?;
                self.note_kept(kept);
            } else {
                tracing::debug!(instance = %child, "dependency disabled; none of ours to remove");
            }
            if let Ok(mut deleted) = self.deleted.lock() {
                deleted.insert(child_ref);
            }
            return Ok(Vec::new());
        }
        let Some(decided) = self.tree.get(child) else {
            // Every task the walk runs was decided from the same walk.
            return Err(EngineError::fatal(format!(
                "dependency instance {child} was not planned; run the plan again"
            ))
            .with_object(&child_ref));
        };
        let plan_name = match &decided.action {
            DependencyAction::Create { plan } => plan.clone(),
            DependencyAction::Run { plan, reason } => {
                tracing::info!(instance = %child, %reason, "dependency changes");
                plan.clone()
            }
            DependencyAction::Leave { reason } => {
                tracing::info!(instance = %child, operator = %child_pkg.operator.name, %reason, "dependency unchanged; not running a plan");
                self.keep_child(&child_ref);
                return Ok(vec![(child_ref, None)]);
            }
            DependencyAction::Remove => {
                return Err(EngineError::fatal(format!(
                    "dependency instance {child} was planned for removal but is enabled; run the plan again"
                ))
                .with_object(&child_ref));
            }
        };
        // KUDO's KudoOperatorTask applies only the Instance: the client side
        // (`kubectl kudo install`, here `kudo_operator`) installed every dependency
        // operator before (kudo 0.19 `pkg/engine/task/task_kudo_operator.go`,
        // `KudoOperatorTask.Run`). The package read back from this namespace is that
        // installed OperatorVersion, so writing it again would only cost two requests
        // on the critical path; an operator not found there is installed first.
        if !installed_here(child_pkg, self.req.namespace) {
            crate::engine::operator::install_operator(self.cluster, child_pkg, self.req.namespace)
                .await?;
        }
        tracing::info!(instance = %child, operator = %child_pkg.operator.name, plan = %plan_name, "running dependency plan");
        let request = RunRequest {
            package: child_pkg,
            instance: child,
            namespace: self.req.namespace,
            parameters: &plan.parameters,
            plan: &plan_name,
            previous_inventory: &decided.prior,
            dependencies: self.req.dependencies,
            // Each dependency gets its own secret seed, derived so it stays stable too.
            render_seed: target.seed.as_deref(),
            crd_deletion: self.req.crd_deletion,
            crd_safety: self.req.crd_safety,
            health: self.req.health,
            progress: self.req.progress,
            tree: self.req.tree,
        };
        let created = matches!(decided.action, DependencyAction::Create { .. });
        let outcome = run_plan_boxed(
            self.cluster,
            request,
            self.owner.clone(),
            self.tree,
            created,
            cancel,
        )
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
        self.answers.merge(outcome.answers);
        if let Ok(mut ran) = self.ran.lock() {
            ran.extend(outcome.ran);
            ran.insert(child.clone(), outcome.inventory);
        }
        self.keep_child(&child_ref);
        // Its health is judged by what its run's last write was answered (the plan's
        // end is in it), so the wait reads it again only when that is not healthy.
        Ok(vec![(child_ref, outcome.instance)])
    }

    pub(super) fn remover(&self) -> Remover<'_> {
        Remover {
            cluster: self.cluster,
            user: crate::engine::sharing::user_id(self.req.namespace, self.req.instance),
            crd_deletion: self.req.crd_deletion,
        }
    }

    pub(super) fn note_kept(&self, kept: impl IntoIterator<Item = Kept>) {
        if let Ok(mut all) = self.kept.lock() {
            all.extend(kept);
        }
    }

    /// A child this run ensured (ran or found settled) is part of our inventory and must
    /// not be pruned.
    pub(super) fn keep_child(&self, child_ref: &ObjectRef) {
        if let Ok(mut applied) = self.applied.lock() {
            applied.insert(child_ref.clone());
        }
        if let Ok(mut deleted) = self.deleted.lock() {
            deleted.remove(child_ref);
        }
    }
}

/// Whether `pkg` was read back from an OperatorVersion in `namespace` (see
/// `apply_run::installed`), so the dependency instance's run there finds its operator.
fn installed_here(pkg: &Package, namespace: &str) -> bool {
    matches!(&pkg.origin, kudo_package::Origin::Cluster { namespace: ns } if ns == namespace)
}
