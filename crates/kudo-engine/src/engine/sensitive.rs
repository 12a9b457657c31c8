//! Sensitive parameters: values that must not be written to the Instance object (whose
//! spec anyone allowed to read Instances can see). They live in one Secret per instance,
//! owned by the Instance and named in its annotation; runs read them from there when
//! rendering, so a plan run without the caller's copy (cleanup at uninstall) still sees them.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::EngineError;
use crate::cluster::{Cluster, KUDO_API_VERSION, ObjectRef};

/// On the Instance: the name of the Secret holding its sensitive parameter values.
pub const ANNOTATION_SENSITIVE: &str = "kudo.dev/sensitive-parameters-secret";

/// `<instance>-kudo-sensitive`, in the instance's namespace.
pub fn sensitive_secret_name(instance: &str) -> String {
    format!("{instance}-kudo-sensitive")
}

pub fn sensitive_secret_ref(namespace: &str, instance: &str) -> ObjectRef {
    ObjectRef::new(
        "v1",
        "Secret",
        Some(namespace),
        &sensitive_secret_name(instance),
    )
}

/// The stored values; empty when the instance has no Secret.
pub async fn read_sensitive(
    cluster: &Cluster,
    namespace: &str,
    instance: &str,
) -> Result<BTreeMap<String, String>, EngineError> {
    let r = sensitive_secret_ref(namespace, instance);
    let Some(secret) = cluster
        .get(&r)
        .await
        .map_err(|e| EngineError::from(e).with_object(&r))?
    else {
        return Ok(BTreeMap::new());
    };
    let mut values = BTreeMap::new();
    if let Some(data) = secret.get("data").and_then(Value::as_object) {
        for (key, encoded) in data {
            let text = encoded.as_str().unwrap_or_default();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| {
                    // The error names the key only: the value is the secret.
                    EngineError::transient(format!(
                        "key {key:?} of the sensitive parameters Secret is not base64"
                    ))
                    .caused_by(e)
                    .with_object(&r)
                })?;
            let value = String::from_utf8(bytes).map_err(|_| {
                EngineError::transient(format!(
                    "key {key:?} of the sensitive parameters Secret is not UTF-8 text"
                ))
                .with_object(&r)
            })?;
            values.insert(key.clone(), value);
        }
    }
    Ok(values)
}

/// Writes the Secret, owned by the Instance (uid `owner_uid`) so it goes with it.
pub(crate) async fn write_sensitive(
    cluster: &Cluster,
    namespace: &str,
    instance: &str,
    owner_uid: &str,
    values: &BTreeMap<String, String>,
) -> Result<(), EngineError> {
    let r = sensitive_secret_ref(namespace, instance);
    let data: serde_json::Map<String, Value> = values
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                Value::String(base64::engine::general_purpose::STANDARD.encode(v)),
            )
        })
        .collect();
    let manifest = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": r.name,
            "namespace": namespace,
            "ownerReferences": [{
                "apiVersion": KUDO_API_VERSION,
                "kind": "Instance",
                "name": instance,
                "uid": owner_uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "data": data,
    });
    cluster
        .apply(&manifest, false)
        .await
        .map_err(|e| EngineError::from(e).with_object(&r))?;
    Ok(())
}

/// Deletes the Secret if there is one.
pub(crate) async fn remove_sensitive(
    cluster: &Cluster,
    namespace: &str,
    instance: &str,
    cancel: &CancellationToken,
) -> Result<(), EngineError> {
    let r = sensitive_secret_ref(namespace, instance);
    if cluster
        .get(&r)
        .await
        .map_err(|e| EngineError::from(e).with_object(&r))?
        .is_some()
    {
        cluster
            .delete_and_wait(&r, cancel)
            .await
            .map_err(|e| EngineError::from(e).with_object(&r))?;
    }
    Ok(())
}
