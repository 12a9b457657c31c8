//! `kudo_instance.delete_volumes_on_destroy`: what destroy does with the
//! PersistentVolumeClaims the instance's StatefulSets created from
//! `volumeClaimTemplates` (the engine's destroy action settles them, see
//! [`kudo_engine::engine::Destroyed::volumes`]). They hold the data, so the default
//! keeps them, as Kubernetes does, and says which ones stayed.

use tfplugin::Diagnostic;

use kudo_engine::cluster::ObjectRef;

pub const ATTR: &str = "delete_volumes_on_destroy";

/// A warning naming each claim the destroy kept (a failure to list or delete them is
/// the destroy's error: `instance::destroy`).
pub fn kept(instance: &str, kept: &[ObjectRef]) -> Vec<Diagnostic> {
    if kept.is_empty() {
        return Vec::new();
    }
    let names: Vec<String> = kept.iter().map(|c| c.name.clone()).collect();
    let namespace = kept
        .first()
        .and_then(|c| c.namespace.clone())
        .unwrap_or_default();
    vec![Diagnostic::warning(
        format!("Volumes of instance {instance} kept"),
        format!(
            "These PersistentVolumeClaims, which StatefulSets of the instance created from their volumeClaimTemplates, were kept with their data, as Kubernetes keeps them: {}.\n\nDelete them with `kubectl delete pvc -n {namespace} {}` when the data is no longer needed, or set `{ATTR} = true` on the kudo_instance before destroying to have them deleted.",
            names.join(", "),
            names.join(" ")
        ),
    )]
}
