//! Changes that must not race with another writer: an annotation edit or a deletion
//! that only goes through if the object is still the version we decided on
//! (optimistic concurrency on `metadata.resourceVersion`), and the custom resources
//! that decide whether a CRD may go.

use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::retry::{RetryError, with_retry};
use super::{Cluster, ClusterError, ObjectRef};

/// Field manager for the bookkeeping annotations. Not [`super::FIELD_MANAGER`]: those
/// annotations are written by merge patches, and keeping them under a manager of their
/// own means no server-side apply of the object's content ever takes them away.
pub const BOOKKEEPING_MANAGER: &str = "terraform-provider-kudo-bookkeeping";

/// How a guarded change ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Guarded<T> {
    Done(T),
    /// The object changed since the version the change was decided on; decide again.
    Stale,
    /// The object no longer exists.
    Gone,
}

/// What a deletion does with the objects the deleted one owns (`ownerReferences`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// The object stays (with a finalizer) until the garbage collector has deleted what
    /// it owns, so "gone" means its dependents are gone too. Every such object waits
    /// for the collector, whose requests kube-controller-manager throttles (20 a second
    /// by default): about 14 objects a second whatever the client does.
    Foreground,
    /// The object goes at once (finalizers permitting); what it owns is collected after.
    Background,
}

impl Propagation {
    pub(super) fn params(self) -> DeleteParams {
        match self {
            Propagation::Foreground => DeleteParams::foreground(),
            Propagation::Background => DeleteParams::background(),
        }
    }
}

impl Cluster {
    /// Sets (`Some`) or removes (`None`) annotations, only if the object is still at
    /// `resource_version`.
    pub async fn patch_annotations_at(
        &self,
        r: &ObjectRef,
        resource_version: &str,
        annotations: &[(String, Option<String>)],
    ) -> Result<Guarded<Value>, ClusterError> {
        let api = self.api_for(r).await?;
        let values: Map<String, Value> = annotations
            .iter()
            .map(|(k, v)| (k.clone(), v.as_ref().map_or(Value::Null, |s| json!(s))))
            .collect();
        let body = json!({
            "metadata": { "resourceVersion": resource_version, "annotations": values }
        });
        let patch = Patch::Merge(&body);
        let pp = PatchParams {
            field_manager: Some(BOOKKEEPING_MANAGER.to_string()),
            ..PatchParams::default()
        };
        match with_retry("annotate", None, || api.patch(&r.name, &pp, &patch)).await {
            Ok(obj) => Ok(Guarded::Done(super::to_json(&obj, r)?)),
            Err(RetryError::Kube(kube::Error::Api(s))) if s.code == 409 => Ok(Guarded::Stale),
            Err(RetryError::Kube(kube::Error::Api(s))) if s.code == 404 => Ok(Guarded::Gone),
            Err(e) => Err(self.error("annotate", &r.to_string(), e)),
        }
    }

    /// Deletes the object only if it is still at `resource_version`, then waits until it
    /// is gone.
    pub async fn delete_at_and_wait(
        &self,
        r: &ObjectRef,
        resource_version: &str,
        propagation: Propagation,
        cancel: &CancellationToken,
    ) -> Result<Guarded<()>, ClusterError> {
        let mut dp = propagation.params();
        dp.preconditions = Some(Preconditions {
            resource_version: Some(resource_version.to_string()),
            uid: None,
        });
        match self.delete_with_and_wait(r, &dp, cancel).await {
            Ok(()) => Ok(Guarded::Done(())),
            Err(ClusterError::Api { code: 409, .. }) => Ok(Guarded::Stale),
            Err(e) => Err(e),
        }
    }

    /// Every object of a custom resource kind, in all namespaces, as `Kind ns/name`
    /// (or `Kind name`), those being deleted left out. `crd` is the
    /// CustomResourceDefinition as the server returns it.
    pub async fn custom_resources_of(&self, crd: &Value) -> Result<Vec<String>, ClusterError> {
        let field = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let (group, kind) = (field("/spec/group"), field("/spec/names/kind"));
        // Any served version lists every stored object of the kind.
        let version = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|v| v.get("served").and_then(Value::as_bool) != Some(false))
            .and_then(|v| v.get("name").and_then(Value::as_str));
        let Some(version) = version else {
            return Ok(Vec::new());
        };
        let objects = self
            .list_kind(&format!("{group}/{version}"), kind, None)
            .await?;
        let mut names: Vec<String> = objects
            .iter()
            .filter(|o| o.pointer("/metadata/deletionTimestamp").is_none())
            .map(|o| {
                let meta = |k: &str| o.pointer(&format!("/metadata/{k}")).and_then(Value::as_str);
                let name = meta("name").unwrap_or_default();
                match meta("namespace") {
                    Some(ns) => format!("{kind} {ns}/{name}"),
                    None => format!("{kind} {name}"),
                }
            })
            .collect();
        names.sort();
        Ok(names)
    }
}
