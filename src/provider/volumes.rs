//! `kudo_instance.delete_volumes_on_destroy`: what destroy does with the
//! PersistentVolumeClaims the instance's StatefulSets created from
//! `volumeClaimTemplates` (the engine's [`InstanceVolumes`]). They hold the data, so
//! the default keeps them, as Kubernetes does, and says which ones stayed.

use tfplugin::{AttributePath, Diagnostic};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::Cluster;
use kudo_engine::engine::{InstanceVolumes, SettleError};

pub const ATTR: &str = "delete_volumes_on_destroy";

/// After the uninstall ([`InstanceVolumes::settle`]): a warning names each claim kept.
pub async fn settle(
    session: &super::Session,
    cluster: &Cluster,
    instance: &str,
    volumes: &InstanceVolumes,
    delete: bool,
    cancel: &CancellationToken,
) -> Result<Vec<Diagnostic>, Diagnostic> {
    let kept = match volumes.settle(cluster, delete, cancel).await {
        Ok(kept) => kept,
        Err(SettleError::List(e)) => {
            return Err(session.destroy_error("Cannot list the instance's volume claims", &e));
        }
        Err(SettleError::Delete(e)) => {
            return Err(session
                .destroy_error("Cannot delete the instance's volume claims", &e)
                .with_attribute(AttributePath::attribute(ATTR)));
        }
    };
    if kept.is_empty() {
        return Ok(Vec::new());
    }
    let names: Vec<String> = kept.iter().map(|c| c.name.clone()).collect();
    let namespace = kept
        .first()
        .and_then(|c| c.namespace.clone())
        .unwrap_or_default();
    Ok(vec![Diagnostic::warning(
        format!("Volumes of instance {instance} kept"),
        format!(
            "These PersistentVolumeClaims, which StatefulSets of the instance created from their volumeClaimTemplates, were kept with their data, as Kubernetes keeps them: {}.\n\nDelete them with `kubectl delete pvc -n {namespace} {}` when the data is no longer needed, or set `{ATTR} = true` on the kudo_instance before destroying to have them deleted.",
            names.join(", "),
            names.join(" ")
        ),
    )])
}
