//! `kudo_instance.delete_volumes_on_destroy`: what destroy does with the
//! PersistentVolumeClaims the instance's StatefulSets created from
//! `volumeClaimTemplates` (the engine's destroy action settles them, see
//! [`kudo_engine::engine::Destroyed::volumes`]). They hold the data, so the default
//! keeps them, as Kubernetes does, and says which ones stayed.

use tfplugin::{AttributePath, Diagnostic};

use kudo_engine::cluster::ObjectRef;
use kudo_engine::engine::SettleError;

pub const ATTR: &str = "delete_volumes_on_destroy";

/// The claims as the destroy settled them: a warning names each claim kept; a failure
/// to list or delete them is the destroy's error.
pub fn settled(
    session: &super::Session,
    instance: &str,
    settled: &Result<Vec<ObjectRef>, SettleError>,
) -> Result<Vec<Diagnostic>, Diagnostic> {
    let kept = match settled {
        Ok(kept) => kept,
        Err(SettleError::List(e)) => {
            return Err(session.destroy_error("Cannot list the instance's volume claims", e));
        }
        Err(SettleError::Delete(e)) => {
            return Err(session
                .destroy_error("Cannot delete the instance's volume claims", e)
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
