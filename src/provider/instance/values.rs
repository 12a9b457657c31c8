//! Values the `kudo_instance` handlers build: string maps, and the managed objects
//! with the uids read back from the cluster.

use std::collections::BTreeMap;

use tfplugin::{Attr, Value};

use kudo_engine::cluster::{Cluster, ObjectRef};

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

/// How many objects are read at once: enough to hide round trips, few enough not to
/// trip the API server's rate limits.
pub(super) const PARALLEL_READS: usize = 8;

/// The uid each object has in the cluster now, None for objects that are gone. A run's
/// inventory holds objects it did not apply (kept from earlier runs) and ones it only
/// found settled, so reading them back is the one way to know every uid.
pub(super) async fn cluster_uids(
    cluster: &Cluster,
    objects: &[ObjectRef],
) -> Result<Vec<Option<String>>, kudo_engine::cluster::ClusterError> {
    use futures::{StreamExt, TryStreamExt};
    // Futures built up front, not in a stream closure: a closure borrowing `cluster`
    // makes the future not provably `Send` for the async trait.
    let reads: Vec<_> = objects.iter().map(|r| uid_in(cluster, r)).collect();
    futures::stream::iter(reads)
        .buffered(PARALLEL_READS)
        .try_collect()
        .await
}

pub(super) async fn uid_in(
    cluster: &Cluster,
    r: &ObjectRef,
) -> Result<Option<String>, kudo_engine::cluster::ClusterError> {
    Ok(cluster
        .get(r)
        .await?
        .as_ref()
        .and_then(uid_of)
        .map(str::to_string))
}

/// The `objects` of a finished apply. A failed read leaves the uids null rather than
/// failing an apply whose objects exist: the next refresh fills them in.
pub(super) async fn objects_value(
    cluster: &Cluster,
    objects: &[ObjectRef],
) -> Attr<Vec<ManagedObject>> {
    let uids = match cluster_uids(cluster, objects).await {
        Ok(u) => u,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the uids of the managed objects");
            vec![None; objects.len()]
        }
    };
    Attr::Known(
        objects
            .iter()
            .zip(uids)
            .map(|(r, uid)| ManagedObject::new(r, uid.as_deref()))
            .collect(),
    )
}

pub(super) fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::string_map(m.iter().map(|(k, v)| (k.clone(), v.clone())))
}
