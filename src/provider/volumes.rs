//! `kudo_instance.delete_volumes_on_destroy`: what destroy does with the
//! PersistentVolumeClaims the instance's StatefulSets created from
//! `volumeClaimTemplates` (see `kudo_engine::engine::volumes`). They hold the data, so
//! the default keeps them, as Kubernetes does, and says which ones stayed.

use tfplugin::{AttributePath, Diagnostic, Value};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, ClaimSource};

pub const ATTR: &str = "delete_volumes_on_destroy";

pub fn delete_of(state: &Value) -> bool {
    state.get(ATTR).as_bool().unwrap_or(false)
}

/// Read before the uninstall deletes the StatefulSets. A failed read costs only the
/// report (and the deletion, which then says so), not the destroy.
pub async fn sources(
    cluster: &Cluster,
    inventory: &[ObjectRef],
) -> Result<Vec<ClaimSource>, Diagnostic> {
    engine::claim_sources(cluster, inventory).await.map_err(|e| {
        Diagnostic::warning(
            "Volumes not checked",
            format!("The StatefulSets of the instance could not be read before they were deleted ({e}), so PersistentVolumeClaims they created from volumeClaimTemplates may be left. List them with `kubectl get pvc -n <namespace>`."),
        )
    })
}

/// After the uninstall: deletes the claims (and waits) when asked to, else warns
/// naming each claim kept.
pub async fn settle(
    session: &super::Session,
    cluster: &Cluster,
    instance: &str,
    sources: &[ClaimSource],
    delete: bool,
    cancel: &CancellationToken,
) -> Result<Vec<Diagnostic>, Diagnostic> {
    let claims = engine::claims(cluster, sources)
        .await
        .map_err(|e| session.destroy_error("Cannot list the instance's volume claims", &e))?;
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    if delete {
        engine::delete_claims(cluster, &claims, cancel)
            .await
            .map_err(|e| {
                session
                    .destroy_error("Cannot delete the instance's volume claims", &e)
                    .with_attribute(AttributePath::attribute(ATTR))
            })?;
        tracing::info!(
            count = claims.len(),
            "deleted the volume claims of the instance's StatefulSets"
        );
        return Ok(Vec::new());
    }
    let names: Vec<String> = claims.iter().map(|c| c.name.clone()).collect();
    let namespace = claims
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
