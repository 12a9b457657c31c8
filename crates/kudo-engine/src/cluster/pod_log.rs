//! The last lines a container of a pod wrote (the `pods/log` subresource): what a failed
//! Pipe pod's init container said, read before the pod is removed.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use tokio_util::sync::CancellationToken;

use super::retry::with_retry;
use super::{Cluster, ClusterError};

/// At most this much of a log is read, whatever the number of lines: a container that
/// printed one enormous line must not fill an error message.
const MAX_LOG_BYTES: i64 = 16 * 1024;

impl Cluster {
    /// The last `lines` lines `container` of pod `namespace/pod` wrote (stdout and
    /// stderr, as the kubelet keeps them), at most 16 KiB.
    pub async fn pod_log(
        &self,
        namespace: &str,
        pod: &str,
        container: &str,
        lines: i64,
        cancel: &CancellationToken,
    ) -> Result<String, ClusterError> {
        let what = format!("log of container {container} of pod {namespace}/{pod}");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let params = LogParams {
            container: Some(container.to_string()),
            tail_lines: Some(lines),
            limit_bytes: Some(MAX_LOG_BYTES),
            ..LogParams::default()
        };
        with_retry("log", Some(cancel), || api.logs(pod, &params))
            .await
            .map_err(|e| self.error("read", &what, e))
    }
}
