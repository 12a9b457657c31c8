//! Applying and deleting the objects a task names: the served form and KUDO's metadata,
//! the ownership check, server-side apply, and the rehearsal of a step before it writes.

use super::*;
use std::collections::HashMap;

use crate::cluster::Propagation;
use crate::engine::concurrent::each_until_failure;

/// Kinds whose existence changes whether the server admits the objects after them: a
/// custom resource needs its CRD, a namespaced object its namespace, a Pod its service
/// account (and priority and runtime class), and webhooks, admission policies and
/// quotas judge what follows. KUDO applies a task's objects one by one in order; these
/// keep that order, the rest go concurrently.
const ORDERING_KINDS: &[&str] = &[
    "CustomResourceDefinition",
    "Namespace",
    "ServiceAccount",
    "PriorityClass",
    "RuntimeClass",
    "LimitRange",
    "ResourceQuota",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "APIService",
];

/// A task's objects cut into batches applied one after the other: each object of an
/// [`ORDERING_KINDS`] kind alone, the runs between them together.
fn ordered_batches(objects: &[Rendered]) -> Vec<&[Rendered]> {
    let orders = |r: &Rendered| {
        r.object
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| ORDERING_KINDS.contains(&k))
    };
    let mut batches = Vec::new();
    let mut start = 0;
    for (i, rendered) in objects.iter().enumerate() {
        if orders(rendered) {
            if start < i {
                batches.push(&objects[start..i]);
            }
            batches.push(&objects[i..=i]);
            start = i + 1;
        }
    }
    if start < objects.len() {
        batches.push(&objects[start..]);
    }
    batches
}

impl<'a> Run<'a> {
    /// Asks the API server, with a server-side dry-run, whether it takes every object
    /// the step's Apply tasks write, before the step writes any of them: an object the
    /// plan could not check (its CRD or namespace did not exist yet) must not fail
    /// half-way through a step. A step with one object needs no rehearsal: applying it
    /// is the check. Objects the server still cannot judge (their kind comes from a CRD
    /// an earlier task of this step creates) are left to their own apply.
    pub(super) async fn check_step(
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
        self.check_crds(loc, &objects).await?;
        if objects.len() < 2 || self.req.tree.every_object_checked {
            return Ok(());
        }
        // Dry-runs persist nothing, so they all go at once.
        each_until_failure(objects, |(task, rendered)| async move {
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
                    return Ok(());
                }
                Err(e) => return Err(located(e)),
            };
            let dry_run = crate::engine::ownership::apply_as_recorded(
                self.cluster,
                &self.previous,
                &r,
                &obj,
                true,
            );
            match or_cancel(cancel, &r, dry_run).await {
                Ok(_) => Ok(()),
                Err(e) if matches!(e.cluster_cause(), Some(c) if c.is_not_found()) => Ok(()),
                Err(e) => Err(located(e)),
            }
        })
        .await?;
        Ok(())
    }

    /// The CRD upgrade-safety check ([`crate::engine::crd_safety`]) of the CRDs a step
    /// is about to write, before it writes any: the plan checked the instance's own,
    /// but not those of dependency instances, nor objects created since a saved plan.
    async fn check_crds(
        &self,
        loc: &Location,
        objects: &[(&str, &Rendered)],
    ) -> Result<(), EngineError> {
        use crate::engine::crd_safety::{CrdSafety, check_crd};
        if self.req.crd_safety == CrdSafety::Off {
            return Ok(());
        }
        for (task, rendered) in objects {
            let located = |e: EngineError| {
                let e = e.at(loc).with_task(task);
                match rendered.template.as_str() {
                    "" => e,
                    template => e.with_template(template),
                }
            };
            let Some(report) = check_crd(self.cluster, &rendered.object)
                .await
                .map_err(|e| located(e.into()))?
            else {
                continue;
            };
            let crd = report.object();
            match self.req.crd_safety {
                CrdSafety::Enforce => {
                    return Err(located(
                        EngineError::fatal(report.message()).with_object(&crd),
                    ));
                }
                _ => {
                    tracing::warn!(object = %crd, findings = %report.message(), "unsafe CRD change applied (crd_upgrade_safety = warn)")
                }
            }
        }
        Ok(())
    }

    /// Adds namespace/labels/owner to a rendered object and returns its reference.
    pub(super) async fn prepare(
        &self,
        loc: &Location,
        obj: Value,
    ) -> Result<(ObjectRef, Value), EngineError> {
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

    /// Applies a task's objects in KUDO's order where order matters: an object that
    /// changes how the server admits the ones after it (a CRD, a namespace, a service
    /// account, an admission webhook or policy, a quota) is applied alone, after
    /// everything before it; the objects between two such are applied concurrently.
    /// Returns each object with the server's answer to its apply, or None when it was
    /// healthy as applied (nothing to wait for).
    pub(super) async fn apply_all(
        &self,
        loc: &Location,
        objects: &[Rendered],
        cancel: &CancellationToken,
    ) -> Result<Vec<(ObjectRef, Option<Value>)>, EngineError> {
        let mut applied = Vec::with_capacity(objects.len());
        for batch in ordered_batches(objects) {
            let listed = &self.listed_controllers(loc, batch).await;
            let done = each_until_failure(batch, |rendered| async move {
                self.apply_one(loc, rendered.object.clone(), listed, cancel)
                    .await
                    .map_err(|e| match rendered.template.as_str() {
                        "" => e,
                        template => e.with_template(template),
                    })
            })
            .await?;
            applied.extend(done);
        }
        Ok(applied)
    }

    /// Who controls the objects of `batch` that the ownership check reads, for kinds the
    /// batch has many of (see [`crate::engine::ownership::listed_controllers`]); the
    /// others are read one by one by [`Run::apply_one`]. An object that cannot be
    /// prepared is left to `apply_one`, which reports it. Only the references are kept:
    /// `apply_one` prepares each object again (discovery is cached by then) rather than
    /// this holding a decorated copy of every object of a large batch at once.
    async fn listed_controllers(
        &self,
        loc: &Location,
        batch: &[Rendered],
    ) -> crate::engine::ownership::ListedObjects {
        if batch.len() < crate::engine::observe::LIST_FROM || self.req.tree.confirmed {
            return HashMap::new();
        }
        let mut new = Vec::new();
        for rendered in batch {
            if let Ok((r, _)) = self.prepare(loc, rendered.object.clone()).await
                && !self.previous.contains(&r)
                && r.namespace.is_some()
            {
                new.push(r);
            }
        }
        let refs: Vec<&ObjectRef> = new.iter().collect();
        crate::engine::ownership::listed_controllers(self.cluster, &refs).await
    }

    pub(super) async fn apply_one(
        &self,
        loc: &Location,
        obj: Value,
        listed: &crate::engine::ownership::ListedObjects,
        cancel: &CancellationToken,
    ) -> Result<(ObjectRef, Option<Value>), EngineError> {
        {
            let (r, obj) = self.prepare(loc, obj).await?;
            // Objects in the inventory are ours by Terraform's record (an import adopts
            // what KUDO's manager wrote); others only if we applied them before.
            // After a plan whose objects were found as it left them, its check holds.
            let known = self.previous.contains(&r) || self.req.tree.confirmed;
            if !known && r.namespace.is_some() {
                let controller = or_cancel(
                    cancel,
                    &r,
                    crate::engine::ownership::controller_of(self.cluster, listed, &r),
                )
                .await?;
                crate::engine::ownership::check_controller(
                    &r,
                    controller.as_deref(),
                    self.req.instance,
                )?;
            }
            let apply = crate::engine::ownership::apply_as_recorded(
                self.cluster,
                &self.previous,
                &r,
                &obj,
                false,
            );
            let mut live = or_cancel(cancel, &r, apply).await?;
            tracing::info!(object = %r, "applied");
            if r.namespace.is_none() {
                // Cluster-scoped objects can be shared; say that this instance uses it.
                let user = crate::engine::sharing::user_id(self.req.namespace, self.req.instance);
                or_cancel(
                    cancel,
                    &r,
                    crate::engine::sharing::record_user(self.cluster, &r, &live, &user),
                )
                .await?;
            }
            if r.namespace.is_some() {
                self.answers.written(&r, &live);
            }
            if let Ok(mut applied) = self.applied.lock() {
                applied.insert(r.clone());
            }
            if let Ok(mut deleted) = self.deleted.lock() {
                deleted.retain(|d| !d.same_object(&r));
            }
            // What is healthy as the server answered needs no wait and no answer kept.
            if healthy_as_applied(&live, self.req.health) {
                tracing::debug!(object = %r, "healthy as applied");
                return Ok((r, None));
            }
            // Otherwise the answer is kept until the step's waits start, as their first
            // look: without its field bookkeeping, which no health rule reads and which is
            // most of a small object.
            if let Some(meta) = live.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
            Ok((r, Some(live)))
        }
    }

    /// The task's objects deleted side by side, each waited for until it is gone, as
    /// KUDO sends a Delete task's deletions one after another without waiting for any to
    /// go (`deleteResource` in pkg/engine/task/task_delete.go); only what holds others
    /// goes after them: CustomResourceDefinitions once their custom resources are gone
    /// (a CRD with custom resources left is kept for them), Namespaces last. After a
    /// failure no further object starts.
    pub(super) async fn delete_all(
        &self,
        objects: &[Rendered],
        cancel: &CancellationToken,
    ) -> Result<(), EngineError> {
        let mut waves: BTreeMap<u8, Vec<&Rendered>> = BTreeMap::new();
        for rendered in objects {
            let kind = rendered.object.get("kind").and_then(Value::as_str);
            let wave = match kind {
                Some("Namespace") => 2,
                Some("CustomResourceDefinition") => 1,
                _ => 0,
            };
            waves.entry(wave).or_default().push(rendered);
        }
        for wave in waves.into_values() {
            each_until_failure(wave, |rendered| async move {
                self.delete_one(rendered.object.clone(), cancel)
                    .await
                    .map_err(|e| e.with_template(rendered.template.clone()))
            })
            .await?;
        }
        Ok(())
    }

    pub(super) async fn delete_one(
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
            // A Delete task is done when its objects and what they own are gone, as
            // KUDO's (`deleteResource` in pkg/engine/task/task_delete.go deletes in the
            // foreground).
            let kept = self
                .remover()
                .remove(&r, Propagation::Foreground, cancel)
                .await?;
            self.note_kept(kept);
            self.answers.deleted(&r);
            if let Ok(mut deleted) = self.deleted.lock() {
                deleted.insert(r.clone());
            }
            if let Ok(mut applied) = self.applied.lock() {
                applied.retain(|a| !a.same_object(&r));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(kind: &str) -> Rendered {
        Rendered {
            template: String::new(),
            object: json!({"kind": kind}),
        }
    }

    #[test]
    fn ordering_kinds_are_applied_alone_and_in_place() {
        let objects: Vec<Rendered> = [
            "ConfigMap",
            "Secret",
            "CustomResourceDefinition",
            "Database",
            "Database",
            "Namespace",
            "ServiceAccount",
            "Deployment",
        ]
        .into_iter()
        .map(rendered)
        .collect();
        let kinds: Vec<Vec<&str>> = ordered_batches(&objects)
            .iter()
            .map(|b| {
                b.iter()
                    .map(|r| r.object["kind"].as_str().unwrap_or(""))
                    .collect()
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                vec!["ConfigMap", "Secret"],
                vec!["CustomResourceDefinition"],
                vec!["Database", "Database"],
                vec!["Namespace"],
                vec!["ServiceAccount"],
                vec!["Deployment"],
            ]
        );
        assert!(ordered_batches(&[]).is_empty());
    }
}
