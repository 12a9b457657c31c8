//! Dependency instances (KudoOperator tasks) inside a run: running a child's plan,
//! keeping or removing a switched-off subtree, and what the children add to the inventory.

use super::*;

impl<'a> Run<'a> {
    /// KudoOperator: installs the dependency's operator and runs the plan a change of it
    /// calls for as an instance owned by ours; leaves a settled child alone (or removes
    /// it when its enabling parameter is false).
    pub(super) async fn dependency(
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
        let child_ref = crate::engine::instance_ref(self.req.namespace, child);
        if !plan.enabled {
            let live = self.cluster.get(&child_ref).await?;
            // Only a child of ours goes; another's instance of that name is not ours to remove.
            if let Some(obj) = &live
                && let Err(e) =
                    crate::engine::ownership::check_child(&child_ref, obj, self.req.instance)
            {
                tracing::warn!(instance = %child, reason = %e, "dependency disabled, but the instance of its name is not ours; leaving it");
            } else if live.is_some() {
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
            crate::engine::ownership::check_child(&child_ref, obj, self.req.instance)?;
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
        crate::engine::install_operator(self.cluster, child_pkg, self.req.namespace).await?;
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
            crd_safety: self.req.crd_safety,
            health: self.req.health,
            progress: self.req.progress,
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

    /// Why a settled child `instance` of `pkg` still needs its deploy plan: one of the
    /// dependencies of its deploy plan, at any depth, would be created, removed, or run
    /// again. None when the whole subtree is settled. Anything that cannot be worked out
    /// here (a package, a parameter file) counts as a change, so that the run reports it.
    /// `seed` is `instance`'s render seed: its parameter files draw random values as its
    /// run did, or every child with one would look changed.
    pub(super) fn subtree_change<'f>(
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
                let sub_ref = crate::engine::instance_ref(self.req.namespace, name);
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
    pub(super) async fn dependency_inventory(
        &self,
        child_ref: &ObjectRef,
    ) -> Result<Vec<ObjectRef>, EngineError> {
        if self.cluster.get(child_ref).await?.is_none() {
            return Ok(Vec::new());
        }
        let selector = format!("{}={}", crate::engine::LABEL_INSTANCE, child_ref.name);
        let objects = self
            .cluster
            .list_labelled_map(self.req.namespace, &selector, |o| {
                ObjectRef::from_object(&o)
                    .ok()
                    .filter(|r| !(r.kind == "Instance" && r.api_version == KUDO_API_VERSION))
            })
            .await
            .map_err(|e| EngineError::from(e).with_object(child_ref))?;
        Ok(objects)
    }
}
