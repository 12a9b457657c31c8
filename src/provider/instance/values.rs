//! Reading and writing `kudo_instance` attribute values (parameters, objects, uids).

use std::collections::BTreeMap;

use tfplugin::{Diagnostic, Value};

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self};

use crate::provider::sensitive::{self, sensitive_of};

pub const STATUS_COMPLETE: &str = "COMPLETE";
/// Reported by a refresh that finds a managed object gone; the next plan repairs it.
pub const STATUS_DRIFTED: &str = "DRIFTED";

/// A `map(string)` attribute; null counts as empty. `None` while unknown.
pub(super) fn string_map_of(v: &Value, attr: &str) -> Option<BTreeMap<String, String>> {
    match v.get(attr) {
        Value::Unknown => None,
        p => Some(p.to_string_map().ok().flatten().unwrap_or_default()),
    }
}

pub(super) fn parameters_of(v: &Value) -> Option<BTreeMap<String, String>> {
    string_map_of(v, "parameters")
}

/// `parameters` and `sensitive_parameters` together, as templates see them.
pub(super) fn all_parameters_of(
    v: &Value,
) -> Result<Option<BTreeMap<String, String>>, Vec<Diagnostic>> {
    sensitive::merge(parameters_of(v).as_ref(), sensitive_of(v).as_ref())
}

pub(super) fn object_value(r: &ObjectRef, uid: Option<&str>) -> Value {
    Value::object([
        ("api_version", Value::string(&r.api_version)),
        ("kind", Value::string(&r.kind)),
        (
            "namespace",
            Value::string(r.namespace.clone().unwrap_or_default()),
        ),
        ("name", Value::string(&r.name)),
        ("uid", uid.map_or(Value::Null, Value::string)),
    ])
}

/// The `objects` entries with the uid each had when last read. The uid stays out of
/// `ObjectRef`: the engine compares inventories by identity, which a re-created object
/// keeps.
pub(super) fn object_entries(v: &Value) -> Vec<(ObjectRef, Option<String>)> {
    v.get("objects")
        .as_slice()
        .unwrap_or_default()
        .iter()
        .filter_map(|o| {
            let r = ObjectRef::new(
                o.get("api_version").as_str()?,
                o.get("kind").as_str()?,
                o.get("namespace").as_str().filter(|s| !s.is_empty()),
                o.get("name").as_str()?,
            );
            Some((r, o.get("uid").as_str().map(str::to_string)))
        })
        .collect()
}

pub(super) fn objects_of(v: &Value) -> Vec<ObjectRef> {
    object_entries(v).into_iter().map(|(r, _)| r).collect()
}

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

/// The `objects` value of a finished apply. A failed read leaves the uids null rather
/// than failing an apply whose objects exist: the next refresh fills them in.
pub(super) async fn objects_value(cluster: &Cluster, objects: &[ObjectRef]) -> Value {
    let uids = match cluster_uids(cluster, objects).await {
        Ok(u) => u,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the uids of the managed objects");
            vec![None; objects.len()]
        }
    };
    Value::list(
        objects
            .iter()
            .zip(uids)
            .map(|(r, uid)| object_value(r, uid.as_deref())),
    )
}

/// `crd_deletion`, unset meaning the default. An invalid value is reported by
/// [`validate`]; where it reaches here anyway the default (which loses nothing) applies.
pub(super) fn crd_deletion_of(v: &Value) -> engine::CrdDeletion {
    v.get("crd_deletion")
        .as_str()
        .and_then(engine::CrdDeletion::parse)
        .unwrap_or_default()
}

pub(super) fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::string_map(m.iter().map(|(k, v)| (k.clone(), v.clone())))
}
