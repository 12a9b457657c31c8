//! `kudo_instance.delete_volumes_on_destroy`: what destroy does with the
//! PersistentVolumeClaims the instance's StatefulSets created from
//! `volumeClaimTemplates` (see `kudo_engine::engine::volumes`). They hold the data, so
//! the default keeps them, as Kubernetes does, and says which ones stayed.

use tfplugin::{AttributePath, Diagnostic};
use tokio_util::sync::CancellationToken;

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, ClaimSource};

pub const ATTR: &str = "delete_volumes_on_destroy";

/// The instance's claims as found before the uninstall, while its StatefulSets exist.
#[derive(Debug, Default)]
pub struct Volumes {
    sources: Vec<ClaimSource>,
    claims: Vec<ObjectRef>,
}

impl Volumes {
    /// What the uninstall must leave alone: the claims carry the instance label (KUDO
    /// labels claim templates), and its sweep for labelled leftovers would take them.
    pub fn keep(&self, delete: bool) -> &[ObjectRef] {
        if delete { &[] } else { &self.claims }
    }
}

/// Read before the uninstall deletes the StatefulSets. A failed read is a warning, not
/// a failed destroy; the claims are then handled as the uninstall handles any object
/// labelled with the instance (deleted).
pub async fn before(cluster: &Cluster, inventory: &[ObjectRef]) -> (Volumes, Option<Diagnostic>) {
    let found = async {
        let sources = engine::claim_sources(cluster, inventory).await?;
        let claims = engine::claims(cluster, &sources).await?;
        Ok::<_, engine::EngineError>(Volumes { sources, claims })
    };
    match found.await {
        Ok(v) => (v, None),
        Err(e) => (
            Volumes::default(),
            Some(Diagnostic::warning(
                "Volumes not checked",
                format!(
                    "The StatefulSets of the instance could not be read before they were deleted ({e}), so their PersistentVolumeClaims were not looked for: claims labelled with the instance were deleted with it, others were left. List what is left with `kubectl get pvc`."
                ),
            )),
        ),
    }
}

/// After the uninstall, the claims are listed again: with `delete`, those the uninstall
/// did not take (claims not labelled with the instance) are deleted and waited for;
/// without it, a warning names each claim still there.
pub async fn settle(
    session: &super::Session,
    cluster: &Cluster,
    instance: &str,
    volumes: &Volumes,
    delete: bool,
    cancel: &CancellationToken,
) -> Result<Vec<Diagnostic>, Diagnostic> {
    let claims = engine::claims(cluster, &volumes.sources)
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
