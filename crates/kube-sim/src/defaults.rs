//! Defaulting and validation that built-in kinds get from the API server.

use base64::Engine;
use serde_json::{Value, json};

use crate::api_error::{ApiError, ApiResult};
use crate::resources::ResourceType;
use crate::store::{Store, now_rfc3339};

fn set_default(obj: &mut Value, field: &str, v: Value) {
    if let Some(m) = obj.as_object_mut() {
        m.entry(field.to_string()).or_insert(v);
    }
}

fn default_pod_spec(spec: &mut Value) {
    for list in ["containers", "initContainers"] {
        if let Some(cs) = spec[list].as_array_mut() {
            for c in cs {
                if let Some(ports) = c["ports"].as_array_mut() {
                    for p in ports {
                        set_default(p, "protocol", json!("TCP"));
                    }
                }
            }
        }
    }
    if spec.is_object() {
        set_default(spec, "restartPolicy", json!("Always"));
    }
}

/// Defaults for `obj` of type `rt`; `old` is the stored object on updates.
pub fn apply(
    rt: &ResourceType,
    obj: &mut Value,
    old: Option<&Value>,
    store: &mut Store,
) -> ApiResult<()> {
    if !rt.group.is_empty()
        && rt.group != "apps"
        && rt.group != "batch"
        && rt.group != "apiextensions.k8s.io"
    {
        return Ok(());
    }
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "Namespace") => {
            if obj["spec"]["finalizers"].is_null() {
                obj["spec"]["finalizers"] = json!(["kubernetes"]);
            }
            if obj["metadata"]["deletionTimestamp"].is_null() {
                obj["status"]["phase"] = json!("Active");
            }
            let name = obj["metadata"]["name"].clone();
            obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
        }
        ("", "Service") => default_service(obj, old, store)?,
        ("", "Secret") => {
            // stringData is write-only: merged into data (base64) and never stored.
            if let Some(sd) = obj.as_object_mut().and_then(|m| m.remove("stringData"))
                && let Some(sd) = sd.as_object()
            {
                for (k, v) in sd {
                    let encoded = base64::engine::general_purpose::STANDARD
                        .encode(v.as_str().unwrap_or_default());
                    obj["data"][k] = json!(encoded);
                }
            }
            if obj["type"].is_null() {
                obj["type"] = json!("Opaque");
            }
        }
        ("", "Pod") => default_pod_spec(&mut obj["spec"]),
        ("apps", "Deployment") => {
            let spec = &mut obj["spec"];
            set_default(spec, "replicas", json!(1));
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(spec, "progressDeadlineSeconds", json!(600));
            set_default(
                spec,
                "strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
            );
            default_pod_spec(&mut spec["template"]["spec"]);
        }
        ("apps", "StatefulSet") => {
            let spec = &mut obj["spec"];
            set_default(spec, "replicas", json!(1));
            set_default(spec, "podManagementPolicy", json!("OrderedReady"));
            set_default(spec, "revisionHistoryLimit", json!(10));
            set_default(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            );
            default_pod_spec(&mut spec["template"]["spec"]);
        }
        ("apps", "ReplicaSet") | ("apps", "DaemonSet") => {
            if rt.kind == "ReplicaSet" {
                set_default(&mut obj["spec"], "replicas", json!(1));
            }
            default_pod_spec(&mut obj["spec"]["template"]["spec"]);
        }
        ("batch", "Job") => {
            let spec = &mut obj["spec"];
            set_default(spec, "parallelism", json!(1));
            set_default(spec, "completions", json!(1));
            set_default(spec, "backoffLimit", json!(6));
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => default_crd(obj)?,
        _ => {}
    }
    Ok(())
}

fn default_service(obj: &mut Value, old: Option<&Value>, store: &mut Store) -> ApiResult<()> {
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let spec = &mut obj["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    if let Some(ports) = spec["ports"].as_array_mut() {
        for p in ports {
            set_default(p, "protocol", json!("TCP"));
            if p.get("targetPort").is_none()
                && let Some(port) = p.get("port").cloned()
            {
                p["targetPort"] = port;
            }
        }
    }
    if spec["type"] == "ExternalName" {
        return Ok(());
    }
    let old_ip = old
        .and_then(|o| o["spec"]["clusterIP"].as_str())
        .map(str::to_string);
    match (spec["clusterIP"].as_str(), old_ip) {
        (Some(new), Some(old)) if new != old && !new.is_empty() => {
            return Err(ApiError::invalid(
                "Service",
                &name,
                "spec.clusterIPs[0]",
                &format!("Invalid value: []string{{\"{new}\"}}: may not change once set"),
            ));
        }
        (None, Some(old)) | (Some(""), Some(old)) => spec["clusterIP"] = json!(old),
        (None, None) | (Some(""), None) => spec["clusterIP"] = json!(store.allocate_cluster_ip()),
        _ => {}
    }
    let ip = spec["clusterIP"].clone();
    spec["clusterIPs"] = json!([ip]);
    set_default(spec, "ipFamilies", json!(["IPv4"]));
    set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
    set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    Ok(())
}

fn default_crd(obj: &mut Value) -> ApiResult<()> {
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let group = obj["spec"]["group"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let plural = obj["spec"]["names"]["plural"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if group.is_empty() || plural.is_empty() || obj["spec"]["names"]["kind"].as_str().is_none() {
        return Err(ApiError::invalid(
            "CustomResourceDefinition.apiextensions.k8s.io",
            &name,
            "spec.names",
            "Required value: group, names.plural and names.kind are required",
        ));
    }
    if name != format!("{plural}.{group}") {
        return Err(ApiError::invalid(
            "CustomResourceDefinition.apiextensions.k8s.io",
            &name,
            "metadata.name",
            "Invalid value: must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let versions = obj["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let storage: Vec<Value> = versions
        .iter()
        .filter(|v| v["storage"] == true)
        .map(|v| v["name"].clone())
        .collect();
    if versions.is_empty() || storage.len() != 1 {
        return Err(ApiError::invalid(
            "CustomResourceDefinition.apiextensions.k8s.io",
            &name,
            "spec.versions",
            "Invalid value: must have exactly one version marked as storage version",
        ));
    }
    let mut names = obj["spec"]["names"].clone();
    if names["singular"].is_null() {
        names["singular"] = json!(
            obj["spec"]["names"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_ascii_lowercase()
        );
    }
    if names["listKind"].is_null() {
        names["listKind"] = json!(format!(
            "{}List",
            obj["spec"]["names"]["kind"].as_str().unwrap_or_default()
        ));
    }
    let keep_time = |t: &str| -> String {
        obj["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == t))
            .and_then(|c| c["lastTransitionTime"].as_str())
            .map(str::to_string)
            .unwrap_or_else(now_rfc3339)
    };
    let (t1, t2) = (keep_time("NamesAccepted"), keep_time("Established"));
    let mut stored = obj["status"]["storedVersions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for s in storage {
        if !stored.contains(&s) {
            stored.push(s);
        }
    }
    let terminating = !obj["metadata"]["deletionTimestamp"].is_null();
    let mut conditions = vec![
        json!({"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": t1}),
        json!({"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": t2}),
    ];
    if terminating {
        conditions.push(json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress", "message": "CustomResource deletion is in progress", "lastTransitionTime": now_rfc3339()}));
    }
    obj["status"] =
        json!({"conditions": conditions, "acceptedNames": names, "storedVersions": stored});
    let finalizer = json!("customresourcecleanup.apiextensions.k8s.io");
    if !terminating {
        match obj["metadata"]["finalizers"].as_array_mut() {
            Some(f) if !f.contains(&finalizer) => f.push(finalizer),
            Some(_) => {}
            None => obj["metadata"]["finalizers"] = json!([finalizer]),
        }
    }
    Ok(())
}

fn is_dns_label_char(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'
}

/// Object names: DNS subdomains for most kinds; RBAC kinds accept path-segment names.
pub fn validate_name(rt: &ResourceType, name: &str) -> ApiResult<()> {
    // Namespaces are RFC 1123 labels; Services RFC 1035 labels (they become DNS names).
    let label = rt.group.is_empty() && (rt.plural == "namespaces" || rt.plural == "services");
    if label {
        let first_ok = if rt.plural == "services" {
            name.starts_with(|c: char| c.is_ascii_lowercase())
        } else {
            name.starts_with(|c: char| c.is_ascii_alphanumeric())
        };
        let ok = !name.is_empty()
            && name.len() <= 63
            && name.chars().all(is_dns_label_char)
            && first_ok
            && name.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !ok {
            let rule = if rt.plural == "services" {
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character"
            } else {
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character"
            };
            return Err(ApiError::invalid(
                &rt.qualified_kind(),
                name,
                "metadata.name",
                &format!("Invalid value: \"{name}\": {rule}"),
            ));
        }
        return Ok(());
    }
    let ok = if rt.group == "rbac.authorization.k8s.io" {
        !name.is_empty()
            && name != "."
            && name != ".."
            && !name.contains('/')
            && !name.contains('%')
    } else {
        !name.is_empty()
            && name.len() <= 253
            && name.chars().all(|c| is_dns_label_char(c) || c == '.')
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(
            &rt.qualified_kind(),
            name,
            "metadata.name",
            &format!(
                "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
            ),
        ))
    }
}

fn valid_label_value(v: &str) -> bool {
    v.is_empty()
        || (v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && v.starts_with(|c: char| c.is_ascii_alphanumeric())
            && v.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn valid_qualified_name(k: &str) -> bool {
    let (prefix, name) = match k.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty() && p.len() <= 253 && p.chars().all(|c| is_dns_label_char(c) || c == '.')
    });
    prefix_ok && !name.is_empty() && valid_label_value(name)
}

/// Label keys and values as `metav1validation.ValidateLabels` checks them.
pub fn validate_metadata(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    if let Some(labels) = obj["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            let Some(vs) = v.as_str() else {
                return Err(ApiError::bad_request(format!(
                    "metadata.labels[{k}]: label values must be strings"
                )));
            };
            if !valid_qualified_name(k) {
                return Err(ApiError::invalid(
                    &rt.qualified_kind(),
                    name,
                    "metadata.labels",
                    &format!(
                        "Invalid value: \"{k}\": name part must consist of alphanumeric characters, '-', '_' or '.'"
                    ),
                ));
            }
            if !valid_label_value(vs) {
                return Err(ApiError::invalid(
                    &rt.qualified_kind(),
                    name,
                    "metadata.labels",
                    &format!(
                        "Invalid value: \"{vs}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                    ),
                ));
            }
        }
    }
    if let Some(ann) = obj["metadata"]["annotations"].as_object() {
        if let Some((k, _)) = ann.iter().find(|(_, v)| !v.is_string()) {
            return Err(ApiError::bad_request(format!(
                "metadata.annotations[{k}]: annotation values must be strings"
            )));
        }
        let total: usize = ann
            .iter()
            .map(|(k, v)| k.len() + v.as_str().map(str::len).unwrap_or(0))
            .sum();
        if total > 256 * 1024 {
            return Err(ApiError::invalid(
                &rt.qualified_kind(),
                name,
                "metadata.annotations",
                "Too long: must have at most 262144 bytes",
            ));
        }
    }
    Ok(())
}
