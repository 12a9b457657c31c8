//! Pipe tasks inside a run: the pod that produces files, and the ConfigMaps or Secrets
//! they are copied into.

use super::*;

impl<'a> Run<'a> {
    /// Runs the pipe pod, stores its files as Secrets/ConfigMaps (owned like every other
    /// object), removes the pod. The artifacts are the task's result; nothing to wait for.
    pub(super) async fn pipe(
        &self,
        loc: &Location,
        pod: &Rendered,
        files: &[PipeFile],
        cancel: &CancellationToken,
    ) -> Result<Vec<(ObjectRef, Option<Value>)>, EngineError> {
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

    pub(super) async fn copy_pipe_files(
        &self,
        loc: &Location,
        pod: &ObjectRef,
        files: &[PipeFile],
        cancel: &CancellationToken,
    ) -> Result<Vec<(ObjectRef, Option<Value>)>, EngineError> {
        // The pipe pod is the engine's own, not the user's: KUDO's pod rule (running and
        // ready), whatever rules the user gave for their pods.
        wait_healthy(self.cluster, pod, &HealthPolicy::Kudo, None, cancel).await?;
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
}
