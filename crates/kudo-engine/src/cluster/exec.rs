//! Reading a file out of a running pod (Pipe tasks), through the exec subresource.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::retry::with_retry;
use super::{Cluster, ClusterError};

impl Cluster {
    /// The bytes of `path` in `container` of pod `namespace/pod` (`cat` through exec).
    pub async fn read_pod_file(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        path: &str,
        cancel: &CancellationToken,
    ) -> Result<Vec<u8>, ClusterError> {
        let what = format!("file {path} of pod {namespace}/{pod}");
        let fail = |message: String| ClusterError::Other {
            verb: "read",
            object: what.clone(),
            message,
        };
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = AttachParams::default()
            .container(container)
            .stdin(false)
            .stdout(true)
            .stderr(true);
        let read = async {
            // Starting the exec is a request like any other (the upgrade to a
            // WebSocket), and `cat` reads without side effects: retried as such.
            let mut process = with_retry("exec", Some(cancel), || {
                api.exec(pod, vec!["cat", path], &params)
            })
            .await
            .map_err(|e| self.error("exec in", &what, e))?;
            let status = process.take_status();
            let mut stdout = process
                .stdout()
                .ok_or_else(|| fail("exec gave no stdout".into()))?;
            let mut stderr = process.stderr();
            let mut bytes = Vec::new();
            let mut errors = Vec::new();
            let (out, err) = tokio::join!(stdout.read_to_end(&mut bytes), async {
                match stderr.as_mut() {
                    Some(s) => s.read_to_end(&mut errors).await.map(|_| ()),
                    None => Ok(()),
                }
            });
            out.map_err(|e| fail(format!("reading the output: {e}")))?;
            err.map_err(|e| fail(format!("reading the error output: {e}")))?;
            if let Some(status) = status
                && let Some(s) = status.await
                && s.status.as_deref() == Some("Failure")
            {
                let stderr = String::from_utf8_lossy(&errors);
                return Err(fail(format!(
                    "cat failed: {} {}",
                    s.message.unwrap_or_default(),
                    stderr.trim()
                )));
            }
            Ok(bytes)
        };
        tokio::select! {
            r = read => r,
            _ = cancel.cancelled() => Err(ClusterError::Cancelled { what: format!("reading {what}") }),
        }
    }
}
