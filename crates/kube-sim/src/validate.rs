//! Validation the API server applies to built-in kinds on create and update: wrong value
//! types, required fields, selector/template agreement and immutable fields.

use base64::Engine;
use serde_json::{Value, json};

use crate::api_error::{ApiError, ApiResult};
use crate::resources::ResourceType;

fn name_of(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

/// Maps of strings (ConfigMap/Secret data): a non-string value fails decoding, as the Go
/// types reject it.
fn string_map(rt: &ResourceType, obj: &Value, field: &str) -> ApiResult<()> {
    let Some(m) = obj.get(field) else {
        return Ok(());
    };
    if m.is_null() {
        return Ok(());
    }
    let Some(m) = m.as_object() else {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"v1\" cannot be handled as a {kind}: json: cannot unmarshal {} into Go struct field {kind}.{field} of type map[string]string",
            json_type(m),
            kind = rt.kind
        )));
    };
    for (k, v) in m {
        if !v.is_string() {
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: json: cannot unmarshal {} into Go struct field {kind}.{field} of type string (key {k:?})",
                json_type(v),
                kind = rt.kind
            )));
        }
    }
    Ok(())
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn invalid(rt: &ResourceType, obj: &Value, field: &str, why: &str) -> ApiError {
    ApiError::invalid(&rt.kind, name_of(obj), field, why)
}

/// Checks that decoding would do (run before defaults).
pub fn decode(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    if !rt.group.is_empty() {
        return Ok(());
    }
    match rt.kind.as_str() {
        "ConfigMap" => {
            string_map(rt, obj, "data")?;
            string_map(rt, obj, "binaryData")?;
            let size: usize = ["data", "binaryData"]
                .iter()
                .filter_map(|f| obj[*f].as_object())
                .flat_map(|m| m.iter())
                .map(|(k, v)| k.len() + v.as_str().map(str::len).unwrap_or(0))
                .sum();
            if size > 1024 * 1024 {
                return Err(invalid(
                    rt,
                    obj,
                    "[]",
                    "Too long: must have at most 1048576 bytes",
                ));
            }
            Ok(())
        }
        "Secret" => {
            string_map(rt, obj, "data")?;
            string_map(rt, obj, "stringData")?;
            if let Some(data) = obj["data"].as_object() {
                for (k, v) in data {
                    let s = v.as_str().unwrap_or_default();
                    if base64::engine::general_purpose::STANDARD.decode(s).is_err() {
                        return Err(ApiError::bad_request(format!(
                            "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data in data[{k:?}]"
                        )));
                    }
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_pod_spec(rt: &ResourceType, obj: &Value, spec: &Value, at: &str) -> ApiResult<()> {
    let containers = spec["containers"].as_array().filter(|c| !c.is_empty());
    let Some(containers) = containers else {
        return Err(invalid(
            rt,
            obj,
            &format!("{at}.containers"),
            "Required value",
        ));
    };
    for (i, c) in containers.iter().enumerate() {
        if c["name"].as_str().is_none_or(str::is_empty) {
            return Err(invalid(
                rt,
                obj,
                &format!("{at}.containers[{i}].name"),
                "Required value",
            ));
        }
        if c["image"].as_str().is_none_or(str::is_empty) {
            return Err(invalid(
                rt,
                obj,
                &format!("{at}.containers[{i}].image"),
                "Required value",
            ));
        }
    }
    Ok(())
}

fn selector_matches(selector: &Value, labels: &Value) -> bool {
    let labels_ok = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| labels.get(k) == Some(v)));
    let exprs_ok = selector["matchExpressions"].as_array().is_none_or(|es| {
        es.iter().all(|e| {
            let key = e["key"].as_str().unwrap_or_default();
            let have = labels.get(key).and_then(Value::as_str);
            let values: Vec<&str> = e["values"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e["operator"].as_str() {
                Some("In") => have.is_some_and(|h| values.contains(&h)),
                Some("NotIn") => have.is_none_or(|h| !values.contains(&h)),
                Some("Exists") => have.is_some(),
                Some("DoesNotExist") => have.is_none(),
                _ => false,
            }
        })
    });
    labels_ok && exprs_ok
}

/// Semantic validation of the object about to be stored (after defaults).
pub fn object(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("apps", "Deployment" | "StatefulSet" | "ReplicaSet" | "DaemonSet") => {
            let spec = &obj["spec"];
            if !spec["selector"].is_object() {
                return Err(invalid(rt, obj, "spec.selector", "Required value"));
            }
            let labels = &spec["template"]["metadata"]["labels"];
            if !selector_matches(&spec["selector"], labels) {
                return Err(invalid(
                    rt,
                    obj,
                    "spec.template.metadata.labels",
                    &format!(
                        "Invalid value: {labels}: `selector` does not match template `labels`"
                    ),
                ));
            }
            check_pod_spec(rt, obj, &spec["template"]["spec"], "spec.template.spec")
        }
        ("batch", "Job") => {
            let tspec = &obj["spec"]["template"]["spec"];
            check_pod_spec(rt, obj, tspec, "spec.template.spec")?;
            match tspec["restartPolicy"].as_str() {
                Some("Never" | "OnFailure") => Ok(()),
                other => Err(invalid(
                    rt,
                    obj,
                    "spec.template.spec.restartPolicy",
                    &format!(
                        "Unsupported value: {}: supported values: \"OnFailure\", \"Never\"",
                        json!(other.unwrap_or("Always"))
                    ),
                )),
            }
        }
        ("", "Pod") => check_pod_spec(rt, obj, &obj["spec"], "spec"),
        ("", "Service") => {
            let spec = &obj["spec"];
            let headless = spec["clusterIP"] == "None";
            let ports = spec["ports"].as_array().map(Vec::len).unwrap_or(0);
            if ports == 0 && !headless && spec["type"] != "ExternalName" {
                return Err(invalid(rt, obj, "spec.ports", "Required value"));
            }
            if let Some(ps) = spec["ports"].as_array() {
                for (i, p) in ps.iter().enumerate() {
                    if !p["port"].is_u64() {
                        return Err(invalid(
                            rt,
                            obj,
                            &format!("spec.ports[{i}].port"),
                            "Required value",
                        ));
                    }
                    if ps.len() > 1 && p["name"].as_str().is_none_or(str::is_empty) {
                        return Err(invalid(
                            rt,
                            obj,
                            &format!("spec.ports[{i}].name"),
                            "Required value",
                        ));
                    }
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn immutable(
    rt: &ResourceType,
    obj: &Value,
    field: &str,
    old: &Value,
    new: &Value,
) -> ApiResult<()> {
    if old != new {
        return Err(invalid(
            rt,
            obj,
            field,
            &format!("Invalid value: {new}: field is immutable"),
        ));
    }
    Ok(())
}

/// Fields Kubernetes refuses to change after creation.
pub fn update(rt: &ResourceType, old: &Value, new: &Value) -> ApiResult<()> {
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "ConfigMap" | "Secret") if old["immutable"] == true => {
            for f in ["data", "binaryData", "stringData", "immutable"] {
                if old.get(f) != new.get(f) {
                    return Err(invalid(
                        rt,
                        new,
                        f,
                        "Forbidden: field is immutable when `immutable` is set",
                    ));
                }
            }
            Ok(())
        }
        ("apps", "Deployment" | "ReplicaSet" | "DaemonSet") => immutable(
            rt,
            new,
            "spec.selector",
            &old["spec"]["selector"],
            &new["spec"]["selector"],
        ),
        ("apps", "StatefulSet") => {
            const MUTABLE: &[&str] = &[
                "replicas",
                "ordinals",
                "template",
                "updateStrategy",
                "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds",
                "revisionHistoryLimit",
            ];
            let strip = |v: &Value| {
                let mut s = v["spec"].clone();
                if let Some(m) = s.as_object_mut() {
                    m.retain(|k, _| !MUTABLE.contains(&k.as_str()));
                }
                s
            };
            if strip(old) != strip(new) {
                return Err(invalid(
                    rt,
                    new,
                    "spec",
                    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                ));
            }
            Ok(())
        }
        ("batch", "Job") => {
            immutable(
                rt,
                new,
                "spec.selector",
                &old["spec"]["selector"],
                &new["spec"]["selector"],
            )?;
            immutable(
                rt,
                new,
                "spec.template",
                &old["spec"]["template"],
                &new["spec"]["template"],
            )?;
            immutable(
                rt,
                new,
                "spec.completions",
                &old["spec"]["completions"],
                &new["spec"]["completions"],
            )
        }
        ("", "PersistentVolumeClaim") => {
            let strip = |v: &Value| {
                let mut s = v["spec"].clone();
                if let Some(m) = s["resources"].as_object_mut() {
                    m.remove("requests");
                }
                if let Some(m) = s.as_object_mut() {
                    m.remove("volumeAttributesClassName");
                    m.remove("volumeName");
                }
                s
            };
            if strip(old) != strip(new) {
                return Err(invalid(
                    rt,
                    new,
                    "spec",
                    "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// etcd refuses values above 1.5 MiB; the API server passes the error on.
pub fn stored_size(obj: &Value) -> ApiResult<()> {
    const LIMIT: usize = 1536 * 1024;
    if obj.to_string().len() > LIMIT {
        return Err(ApiError::internal("etcdserver: request is too large"));
    }
    Ok(())
}
