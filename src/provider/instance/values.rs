//! Values the `kudo_instance` handlers build: string maps, and the managed objects
//! with the uids read back from the cluster.

use std::collections::BTreeMap;

use tfplugin::{Attr, Value};

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine;

use super::model::ManagedObject;

pub const STATUS_COMPLETE: &str = "COMPLETE";
/// Reported by a refresh that finds a managed object gone; the next plan repairs it.
pub const STATUS_DRIFTED: &str = "DRIFTED";

pub(super) fn uid_of(object: &serde_json::Value) -> Option<&str> {
    object
        .pointer("/metadata/uid")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
}

/// What the cluster holds of each managed object now: its uid and the fingerprint of
/// the fields this provider applied to it (see [`engine::applied_fields_fingerprint`]);
/// both None for an object that is gone. A run's inventory holds objects it did not
/// apply (kept from earlier runs) and ones it only found settled, so reading them back
/// is the one way to know every uid.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Observed {
    pub uid: Option<String>,
    pub applied_fields: Option<String>,
}

/// [`Observed`] of each object of `instance`, in order, read concurrently and by LIST
/// where the instance has many objects of a kind ([`engine::live_objects`]).
pub(super) async fn observe(
    cluster: &Cluster,
    objects: &[ObjectRef],
    instance: &str,
) -> Result<Vec<Observed>, kudo_engine::cluster::ClusterError> {
    let live = engine::live_objects(cluster, objects, instance, |obj| Observed {
        uid: uid_of(obj).map(str::to_string),
        applied_fields: engine::applied_fields_fingerprint(obj),
    })
    .await?;
    Ok(live.into_iter().map(Option::unwrap_or_default).collect())
}

/// The `objects` of a finished apply, and the fingerprints to keep in private state
/// (one per entry, in the map's key order, which is the order the next read sees).
/// A failed read leaves the uids null rather than failing an apply whose objects
/// exist: the next refresh fills them in.
pub(super) async fn objects_value(
    cluster: &Cluster,
    objects: &[ObjectRef],
    instance: &str,
) -> (Attr<BTreeMap<String, ManagedObject>>, Vec<String>) {
    // One entry per key, in key order; of two refs of one object (two versions of its
    // group) the later, as a map built from them would keep.
    let by_key: BTreeMap<String, &ObjectRef> =
        objects.iter().map(|r| (ManagedObject::key(r), r)).collect();
    let objects: Vec<ObjectRef> = by_key.into_values().cloned().collect();
    let observed = match observe(cluster, &objects, instance).await {
        Ok(o) => o,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the uids of the managed objects");
            vec![Observed::default(); objects.len()]
        }
    };
    let value = Attr::Known(ManagedObject::map(
        objects
            .iter()
            .zip(&observed)
            .map(|(r, o)| (r, o.uid.as_deref())),
    ));
    let fingerprints = observed
        .into_iter()
        .map(|o| o.applied_fields.unwrap_or_default())
        .collect();
    (value, fingerprints)
}

pub(super) fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::string_map(m.iter().map(|(k, v)| (k.clone(), v.clone())))
}
