//! Structural schemas of CustomResourceDefinitions: pruning of unknown fields, defaults,
//! type/required/enum checks, as the API server applies them to custom objects on writes.

use serde_json::{Map, Value};

use crate::api_error::{ApiError, ApiResult};
use crate::resources::ResourceType;
use crate::store::{ObjKey, Store};

/// The `openAPIV3Schema` of the CRD version serving `rt`, if any.
pub fn for_type(store: &Store, rt: &ResourceType) -> Option<Value> {
    if !rt.from_crd {
        return None;
    }
    let key = ObjKey {
        group: "apiextensions.k8s.io".into(),
        plural: "customresourcedefinitions".into(),
        namespace: String::new(),
        name: format!("{}.{}", rt.plural, rt.group),
    };
    let crd = store.objects.get(&key)?;
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == rt.version.as_str())
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
        .filter(|s| s.is_object())
}

/// Prunes fields the schema does not declare and rejects values of the wrong type.
pub fn apply(schema: &Value, rt: &ResourceType, obj: &mut Value) -> ApiResult<()> {
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut errors = Vec::new();
    if let Some(m) = obj.as_object_mut() {
        let props = schema["properties"].as_object();
        let keep_unknown = schema["x-kubernetes-preserve-unknown-fields"] == true;
        let keys: Vec<String> = m.keys().cloned().collect();
        for k in keys {
            if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            match props.and_then(|p| p.get(&k)) {
                Some(s) => {
                    if let Some(v) = m.get_mut(&k) {
                        walk(s, v, &k, &mut errors);
                    }
                }
                None if keep_unknown => {}
                None => {
                    m.remove(&k);
                }
            }
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    let kind = format!("{}.{}", rt.kind, rt.group);
    let message = if errors.len() == 1 {
        errors.remove(0)
    } else {
        format!("[{}]", errors.join(", "))
    };
    Err(ApiError::new(
        422,
        "Invalid",
        format!("{kind} \"{name}\" is invalid: {message}"),
    )
    .with_details(serde_json::json!({"name": name, "group": rt.group, "kind": rt.kind})))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn walk(schema: &Value, v: &mut Value, path: &str, errors: &mut Vec<String>) {
    if v.is_null() && schema["nullable"] == true {
        return;
    }
    if schema["x-kubernetes-int-or-string"] == true {
        if !(v.is_string() || v.is_i64() || v.is_u64()) {
            errors.push(format!("{path}: Invalid value: \"{}\": {path} in body must be of type int-or-string: \"{}\"", type_name(v), type_name(v)));
        }
        return;
    }
    let want = schema["type"].as_str();
    let have = type_name(v);
    let ok = match want {
        None => true,
        Some("number") => v.is_number(),
        Some(t) => t == have,
    };
    if !ok {
        let t = want.unwrap_or_default();
        errors.push(format!(
            "{path}: Invalid value: \"{have}\": {path} in body must be of type {t}: \"{have}\""
        ));
        return;
    }
    match v {
        Value::Object(m) => walk_object(schema, m, path, errors),
        Value::Array(items) if schema["items"].is_object() => {
            for (i, item) in items.iter_mut().enumerate() {
                walk(&schema["items"], item, &format!("{path}[{i}]"), errors);
            }
        }
        Value::String(s) => {
            if let Some(allowed) = schema["enum"].as_array()
                && !allowed.iter().any(|a| a == s.as_str())
            {
                let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
                errors.push(format!(
                    "{path}: Unsupported value: \"{s}\": supported values: {}",
                    list.join(", ")
                ));
            }
        }
        _ => {}
    }
}

fn walk_object(schema: &Value, m: &mut Map<String, Value>, path: &str, errors: &mut Vec<String>) {
    if schema["x-kubernetes-embedded-resource"] == true {
        return;
    }
    let props = schema["properties"].as_object();
    let additional = &schema["additionalProperties"];
    let keep_unknown =
        schema["x-kubernetes-preserve-unknown-fields"] == true || *additional == true;
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        let child_path = format!("{path}.{k}");
        let child_schema = match props.and_then(|p| p.get(&k)) {
            Some(s) => Some(s),
            None if additional.is_object() => Some(additional),
            None => None,
        };
        match child_schema {
            Some(s) => {
                if let Some(v) = m.get_mut(&k) {
                    walk(s, v, &child_path, errors);
                }
            }
            None if keep_unknown => {}
            None => {
                m.remove(&k);
            }
        }
    }
    if let Some(props) = props {
        for (k, s) in props {
            if !m.contains_key(k)
                && let Some(d) = s.get("default")
            {
                m.insert(k.clone(), d.clone());
            }
        }
    }
    if let Some(required) = schema["required"].as_array() {
        for r in required.iter().filter_map(Value::as_str) {
            if !m.contains_key(r) {
                errors.push(format!("{path}.{r}: Required value"));
            }
        }
    }
}
