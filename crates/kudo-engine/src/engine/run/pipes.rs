//! Pipe tasks inside a run: the pod that produces files, and the ConfigMaps or Secrets
//! they are copied into.

use super::*;
use crate::engine::concurrent::each_until_failure;

/// How many lines of a failed pipe container's log an error shows.
const PIPE_LOG_LINES: i64 = 20;

impl<'a> Run<'a> {
    /// Runs the pipe pod, stores its files as Secrets/ConfigMaps (owned like every other
    /// object), removes the pod. The artifacts are the task's result; nothing to wait for.
    /// As KUDO's `PipeTask.Run` (pkg/engine/task/task_pipe.go): the files are read side by
    /// side (`copyFiles`), then the artifacts applied together; the pod's removal goes
    /// beside them (KUDO deletes it after), and is waited for.
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
        let started = or_cancel(cancel, &pod_ref, self.cluster.apply(&pod, false)).await?;
        tracing::info!(object = %pod_ref, "pipe pod started");
        // The pod is scaffolding: removed whether or not the copy worked.
        let remove = || async {
            self.cluster
                .delete_and_wait(&pod_ref, cancel)
                .await
                .map_err(|e| EngineError::from(e).with_object(&pod_ref))
        };
        let read = self.read_pipe_files(&pod_ref, &started, files, cancel);
        let (copied, removed) = match read.await {
            Ok(artifacts) => futures::join!(self.apply_all(loc, &artifacts, cancel), remove()),
            Err(mut e) => {
                // Read before the pod goes: its failed container's last words.
                if let Some(log) = self.failed_container_log(&pod_ref, cancel).await {
                    e.message.push_str(&log);
                }
                (Err(e), remove().await)
            }
        };
        let artifacts = copied?;
        removed?;
        Ok(artifacts)
    }

    /// `; last lines of its log:` and the last [`PIPE_LOG_LINES`] lines of the pipe
    /// pod's failed container, or why they could not be read; `None` when no container
    /// failed (the copy failed for another reason) or the failed one never ran.
    async fn failed_container_log(
        &self,
        pod: &ObjectRef,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let status = self.cluster.get(pod).await.ok().flatten()?;
        let trouble = super::super::pod_trouble::trouble(&status).filter(|t| t.ran)?;
        let read = self
            .cluster
            .pod_log(
                self.req.namespace,
                &pod.name,
                &trouble.container,
                PIPE_LOG_LINES,
                cancel,
            )
            .await;
        Some(match read {
            Ok(log) if log.trim().is_empty() => format!(
                "; container {:?} wrote nothing to its log",
                trouble.container
            ),
            Ok(log) => format!(
                "; last lines of the log of container {:?}:\n{}",
                trouble.container,
                super::super::pod_trouble::log_tail(&log)
            ),
            Err(e) => format!("; its log could not be read: {e}"),
        })
    }

    /// The artifacts of the pipe pod's files, read side by side once the pod is ready
    /// (followed from `started`, the server's answer to its apply); the error is the
    /// first in the files' order.
    pub(super) async fn read_pipe_files(
        &self,
        pod: &ObjectRef,
        started: &Value,
        files: &[PipeFile],
        cancel: &CancellationToken,
    ) -> Result<Vec<Rendered>, EngineError> {
        // The pipe pod is the engine's own, not the user's: KUDO's pod rule (running and
        // ready), whatever rules the user gave for their pods.
        wait_healthy(
            self.cluster,
            pod,
            &HealthPolicy::Kudo,
            Some(started),
            cancel,
        )
        .await?;
        each_until_failure(files, |file| async move {
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
            Ok(Rendered {
                template: String::new(),
                object: pipe::artifact(spec, &file.name, &content)?,
            })
        })
        .await
    }
}
