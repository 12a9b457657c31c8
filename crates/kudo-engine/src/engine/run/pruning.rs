//! What a run leaves behind: its inventory, and the objects of earlier runs it removes by
//! the one pruning rule (`engine::prune`), keeping what a webhook's answer holds.

use super::*;

impl<'a> Run<'a> {
    /// `unwanted` without the objects a Webhook task's latest answer holds. No plan can
    /// know what a webhook answers without calling it, so the desired set never holds
    /// them; instead each object a webhook answered carries the task's name
    /// (`kudo.dev/webhook-task`), and stays until that task answers again without it
    /// (in this run) or no plan of the package runs that task any more. Packages
    /// without Webhook tasks read nothing here.
    pub(super) async fn not_held_by_webhooks(
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
    pub(super) fn inventory(&self) -> BTreeSet<ObjectRef> {
        let applied = self.applied.lock().map(|a| a.clone()).unwrap_or_default();
        let deleted = self.deleted.lock().map(|d| d.clone()).unwrap_or_default();
        // An object applied under a newer version of its group replaces the ref an
        // earlier run recorded under the old one: it is the same stored object.
        let kept: Vec<ObjectRef> = {
            let applied = ObjectIndex::new(&applied);
            self.req
                .previous_inventory
                .iter()
                .filter(|r| !applied.contains(r))
                .cloned()
                .collect()
        };
        let mut inventory: BTreeSet<ObjectRef> = kept.into_iter().chain(applied).collect();
        let deleted = ObjectIndex::new(&deleted);
        inventory.retain(|r| !deleted.contains(r));
        inventory
    }

    pub(super) async fn prune(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Vec<ObjectRef>, EngineError> {
        let applied = self.applied.lock().map(|a| a.clone()).unwrap_or_default();
        let mut inventory = self.inventory();

        let stale: Vec<ObjectRef> = {
            let applied = ObjectIndex::new(&applied);
            self.req
                .previous_inventory
                .iter()
                .filter(|r| inventory.contains(*r) && !applied.contains(r))
                .cloned()
                .collect()
        };
        if !stale.is_empty()
            && let Some(wanted) =
                crate::engine::prune::wanted_refs(self.cluster, self.desired).await
        {
            let unwanted = crate::engine::prune::unwanted(&stale, &applied, &wanted);
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
