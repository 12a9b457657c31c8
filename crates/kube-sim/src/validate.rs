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
    ApiError::invalid(&rt.qualified_kind(), name_of(obj), field, why)
}

/// What server-side apply's typed conversion refuses in a ConfigMap or Secret, with the
/// real server's answers (checked on Kubernetes 1.36): a value that is not a string
/// fails the typed patch, and a Secret's `data` that is not base64 fails the
/// conversion to the stored version. Both are HTTP 500 without a reason, because the
/// server meets them while converting rather than validating.
pub fn apply_decode(rt: &ResourceType, ns: &str, name: &str, obj: &Value) -> ApiResult<()> {
    if !rt.group.is_empty() || !matches!(rt.kind.as_str(), "ConfigMap" | "Secret") {
        return Ok(());
    }
    let fields: &[&str] = match rt.kind.as_str() {
        "ConfigMap" => &["data", "binaryData"],
        _ => &["data", "stringData"],
    };
    for field in fields {
        let Some(map) = obj.get(*field).and_then(Value::as_object) else {
            continue;
        };
        for (k, v) in map {
            if !v.is_string() && !v.is_null() {
                return Err(ApiError::internal(format!(
                    "failed to create typed patch object ({ns}/{name}; /v1, Kind={kind}): .{field}.{k}: expected string, got &value.valueUnstructured{{Value:{v}}}",
                    kind = rt.kind
                )));
            }
        }
    }
    if rt.kind == "Secret"
        && let Some(data) = obj["data"].as_object()
    {
        for v in data.values() {
            let text = v.as_str().unwrap_or_default();
            if base64::engine::general_purpose::STANDARD
                .decode(text)
                .is_err()
            {
                return Err(ApiError::internal(format!(
                    "failed to convert new object ({ns}/{name}; /v1, Kind=Secret) to proper version: unable to convert unstructured object to /v1, Kind=Secret: error decoding from json: illegal base64 data at input byte {}",
                    corrupt_at(text)
                )));
            }
        }
    }
    Ok(())
}

/// Where Go's base64 decoder reports corrupt input: the first byte outside the
/// alphabet, else the end (missing padding).
fn corrupt_at(text: &str) -> usize {
    text.bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'='))
        .unwrap_or(text.len())
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
        ("batch", "CronJob") => check_cronjob(rt, obj),
        ("networking.k8s.io", "Ingress") if rt.version == "v1" => check_ingress(rt, obj),
        ("policy", "PodDisruptionBudget") if rt.version == "v1" => {
            let spec = &obj["spec"];
            if !spec["minAvailable"].is_null() && !spec["maxUnavailable"].is_null() {
                return Err(invalid(
                    rt,
                    obj,
                    "spec",
                    &format!(
                        "Invalid value: {spec}: minAvailable and maxUnavailable cannot be both set"
                    ),
                ));
            }
            Ok(())
        }
        ("autoscaling", "HorizontalPodAutoscaler") => check_hpa(rt, obj),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            let role_ref = &obj["roleRef"];
            let kinds: &[&str] = if rt.kind == "RoleBinding" {
                &["Role", "ClusterRole"]
            } else {
                &["ClusterRole"]
            };
            let kind = role_ref["kind"].as_str().unwrap_or_default();
            if !kinds.contains(&kind) {
                return Err(invalid(rt, obj, "roleRef.kind", &unsupported(kind, kinds)));
            }
            if role_ref["name"].as_str().is_none_or(str::is_empty) {
                return Err(invalid(rt, obj, "roleRef.name", "Required value"));
            }
            Ok(())
        }
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) if rt.version == "v1" => check_webhooks(rt, obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") if rt.version == "v1" => {
            check_crd_v1(rt, obj)
        }
        ("", "Service") => check_service(rt, obj),
        _ => Ok(()),
    }
}

/// Services: every field error at once, as the real server reports them.
fn check_service(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let spec = &obj["spec"];
    let mut errors: Vec<(String, String)> = Vec::new();
    let headless = spec["clusterIP"] == "None";
    let ports = spec["ports"].as_array().map(Vec::len).unwrap_or(0);
    if ports == 0 && !headless && spec["type"] != "ExternalName" {
        errors.push(("spec.ports".into(), "Required value".into()));
    }
    if let Some(ps) = spec["ports"].as_array() {
        for (i, p) in ps.iter().enumerate() {
            if !p["port"].is_u64() {
                errors.push((format!("spec.ports[{i}].port"), "Required value".into()));
            }
            if ps.len() > 1 && p["name"].as_str().is_none_or(str::is_empty) {
                errors.push((format!("spec.ports[{i}].name"), "Required value".into()));
            }
        }
    }
    const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if let Some(t) = spec["type"].as_str()
        && !TYPES.contains(&t)
    {
        errors.push(("spec.type".into(), unsupported(t, TYPES)));
    }
    match errors.is_empty() {
        true => Ok(()),
        false => Err(ApiError::invalid_all(
            &rt.qualified_kind(),
            name_of(obj),
            &errors,
        )),
    }
}

/// Kubernetes' API approval rule for CustomResourceDefinitions of protected groups
/// (`k8s.io`, `kubernetes.io` and their subdomains), which apiextensions.k8s.io/v1
/// enforces and v1beta1 did not: `api-approved.kubernetes.io` must hold a URL or a
/// text starting with "unapproved". An update that keeps the approval state as it was
/// passes (apiextensions validation's validateAPIApproval).
pub fn api_approval(rt: &ResourceType, old: Option<&Value>, new: &Value) -> ApiResult<()> {
    if rt.group != "apiextensions.k8s.io"
        || rt.kind != "CustomResourceDefinition"
        || rt.version != "v1"
    {
        return Ok(());
    }
    let group = new["spec"]["group"].as_str().unwrap_or_default();
    if !kube_api_versions::is_protected_group(group) {
        return Ok(());
    }
    let state = |o: &Value| -> Option<bool> {
        let value =
            o["metadata"]["annotations"][kube_api_versions::API_APPROVAL_ANNOTATION].as_str()?;
        Some(value.starts_with("unapproved") || url_like(value))
    };
    let new_state = state(new);
    if old.is_some_and(|o| state(o) == new_state) {
        return Ok(());
    }
    let field = format!(
        "metadata.annotations[{}]",
        kube_api_versions::API_APPROVAL_ANNOTATION
    );
    match new_state {
        Some(true) => Ok(()),
        None => Err(ApiError::invalid_all(
            &rt.qualified_kind(),
            name_of(new),
            &[(
                field,
                "Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111".into(),
            )],
        )),
        Some(false) => {
            let value = &new["metadata"]["annotations"][kube_api_versions::API_APPROVAL_ANNOTATION];
            Err(ApiError::invalid_all(
                &rt.qualified_kind(),
                name_of(new),
                &[(
                    field,
                    format!("Invalid value: {value}: protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
                )],
            ))
        }
    }
}

/// Go's `url.ParseRequestURI` in the cases that matter here: an absolute URL.
fn url_like(value: &str) -> bool {
    value.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
            && !rest.is_empty()
            && !value.contains(' ')
    })
}

/// `Unsupported value: "x": supported values: "a", "b"`
fn unsupported(value: &str, supported: &[&str]) -> String {
    let list: Vec<String> = supported.iter().map(|s| json!(s).to_string()).collect();
    format!(
        "Unsupported value: {}: supported values: {}",
        json!(value),
        list.join(", ")
    )
}

/// batch/v1 CronJob (batch/v1beta1 has the same rules): a five-field schedule (or a
/// `@` macro, optionally after `TZ=`/`CRON_TZ=`) and a job template with a pod spec.
fn check_cronjob(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let spec = &obj["spec"];
    let Some(schedule) = spec["schedule"].as_str().filter(|s| !s.is_empty()) else {
        return Err(invalid(rt, obj, "spec.schedule", "Required value"));
    };
    let mut fields: Vec<&str> = schedule.split_whitespace().collect();
    if fields
        .first()
        .is_some_and(|f| f.starts_with("TZ=") || f.starts_with("CRON_TZ="))
    {
        fields.remove(0);
    }
    let macro_ok = fields.len() == 1
        && matches!(
            fields[0],
            "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly"
        );
    if !macro_ok && fields.len() != 5 {
        return Err(invalid(
            rt,
            obj,
            "spec.schedule",
            &format!(
                "Invalid value: {}: expected exactly 5 fields, found {}: [{}]",
                json!(schedule),
                fields.len(),
                fields.join(" ")
            ),
        ));
    }
    let tspec = &spec["jobTemplate"]["spec"]["template"]["spec"];
    check_pod_spec(rt, obj, tspec, "spec.jobTemplate.spec.template.spec")?;
    match tspec["restartPolicy"].as_str() {
        Some("Never" | "OnFailure") => Ok(()),
        None => Err(invalid(
            rt,
            obj,
            "spec.jobTemplate.spec.template.spec.restartPolicy",
            "Required value: valid values: \"OnFailure\", \"Never\"",
        )),
        Some(other) => Err(invalid(
            rt,
            obj,
            "spec.jobTemplate.spec.template.spec.restartPolicy",
            &unsupported(other, &["OnFailure", "Never"]),
        )),
    }
}

/// networking.k8s.io/v1 Ingress: a default backend or rules, and every path with a
/// `pathType` and a v1-shaped backend (the v1beta1 `serviceName`/`servicePort` shape is
/// unknown in v1, so such a backend counts as empty).
fn check_ingress(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let spec = &obj["spec"];
    let rules = spec["rules"].as_array().filter(|r| !r.is_empty());
    if spec["defaultBackend"].is_null() && rules.is_none() {
        return Err(invalid(
            rt,
            obj,
            "spec",
            "Invalid value: null: either `defaultBackend` or `rules` must be specified",
        ));
    }
    if !spec["defaultBackend"].is_null() {
        check_ingress_backend(rt, obj, &spec["defaultBackend"], "spec.defaultBackend")?;
    }
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let Some(paths) = rule["http"]["paths"].as_array() else {
            continue;
        };
        for (j, path) in paths.iter().enumerate() {
            let at = format!("spec.rules[{i}].http.paths[{j}]");
            match path["pathType"].as_str() {
                None | Some("") => {
                    return Err(invalid(
                        rt,
                        obj,
                        &format!("{at}.pathType"),
                        "Required value: pathType must be specified",
                    ));
                }
                Some("Exact" | "Prefix" | "ImplementationSpecific") => {}
                Some(other) => {
                    return Err(invalid(
                        rt,
                        obj,
                        &format!("{at}.pathType"),
                        &unsupported(other, &["Exact", "ImplementationSpecific", "Prefix"]),
                    ));
                }
            }
            check_ingress_backend(rt, obj, &path["backend"], &format!("{at}.backend"))?;
        }
    }
    Ok(())
}

fn check_ingress_backend(rt: &ResourceType, obj: &Value, b: &Value, at: &str) -> ApiResult<()> {
    let (service, resource) = (&b["service"], &b["resource"]);
    match (service.is_object(), resource.is_object()) {
        (false, false) => Err(invalid(
            rt,
            obj,
            at,
            "Invalid value: \"\": resource or service backend is required",
        )),
        (true, true) => Err(invalid(
            rt,
            obj,
            at,
            "Invalid value: \"\": cannot set both resource and service backends",
        )),
        (false, true) => Ok(()),
        (true, false) => {
            if service["name"].as_str().is_none_or(str::is_empty) {
                return Err(invalid(
                    rt,
                    obj,
                    &format!("{at}.service.name"),
                    "Required value",
                ));
            }
            let port = &service["port"];
            let has_name = port["name"].as_str().is_some_and(|n| !n.is_empty());
            let has_number = port["number"].as_u64().is_some_and(|n| n > 0);
            if !has_name && !has_number {
                return Err(invalid(
                    rt,
                    obj,
                    at,
                    "Required value: port name or number is required",
                ));
            }
            Ok(())
        }
    }
}

/// HorizontalPodAutoscaler: a scale target and `maxReplicas` in every version; from
/// autoscaling/v2 (and v2beta2) on, metrics carry a `target` with a type.
fn check_hpa(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let spec = &obj["spec"];
    for f in ["kind", "name"] {
        if spec["scaleTargetRef"][f].as_str().is_none_or(str::is_empty) {
            return Err(invalid(
                rt,
                obj,
                &format!("spec.scaleTargetRef.{f}"),
                "Required value",
            ));
        }
    }
    if spec["maxReplicas"].as_i64().unwrap_or(0) < 1 {
        return Err(invalid(
            rt,
            obj,
            "spec.maxReplicas",
            "Required value: must be set and greater than 0",
        ));
    }
    if rt.version != "v2" && rt.version != "v2beta2" {
        return Ok(());
    }
    for (i, m) in spec["metrics"].as_array().into_iter().flatten().enumerate() {
        let source = match m["type"].as_str() {
            Some("Resource") => "resource",
            Some("ContainerResource") => "containerResource",
            Some("Pods") => "pods",
            Some("Object") => "object",
            Some("External") => "external",
            _ => continue,
        };
        let target = &m[source]["target"];
        match target["type"].as_str() {
            Some("Utilization" | "Value" | "AverageValue") => {}
            None | Some("") => {
                return Err(invalid(
                    rt,
                    obj,
                    &format!("spec.metrics[{i}].{source}.target.type"),
                    "Required value: must specify a metric target type",
                ));
            }
            Some(other) => {
                return Err(invalid(
                    rt,
                    obj,
                    &format!("spec.metrics[{i}].{source}.target.type"),
                    &format!(
                        "Invalid value: {}: must be either Utilization, Value, or AverageValue",
                        json!(other)
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// admissionregistration.k8s.io/v1 webhooks must declare side effects and the
/// AdmissionReview versions they accept (v1beta1 defaulted both).
fn check_webhooks(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    for (i, w) in obj["webhooks"].as_array().into_iter().flatten().enumerate() {
        match w["sideEffects"].as_str() {
            None | Some("") => {
                return Err(invalid(
                    rt,
                    obj,
                    &format!("webhooks[{i}].sideEffects"),
                    "Required value: must specify one of None, NoneOnDryRun",
                ));
            }
            Some("None" | "NoneOnDryRun") => {}
            Some(other) => {
                return Err(invalid(
                    rt,
                    obj,
                    &format!("webhooks[{i}].sideEffects"),
                    &unsupported(other, &["None", "NoneOnDryRun"]),
                ));
            }
        }
        if w["admissionReviewVersions"]
            .as_array()
            .is_none_or(|a| a.is_empty())
        {
            return Err(invalid(
                rt,
                obj,
                &format!("webhooks[{i}].admissionReviewVersions"),
                "Required value: must specify one of v1, v1beta1",
            ));
        }
    }
    Ok(())
}

/// apiextensions.k8s.io/v1 CRDs: no `preserveUnknownFields: true`, a schema for every
/// version, and structural schemas. The real server names schema paths
/// `spec.validation.openAPIV3Schema` when every version has the same schema (its
/// internal form keeps one shared schema then) and per version otherwise.
fn check_crd_v1(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let spec = &obj["spec"];
    if spec["preserveUnknownFields"] == true {
        return Err(invalid(
            rt,
            obj,
            "spec.preserveUnknownFields",
            "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    for (i, v) in versions.iter().enumerate() {
        if !v["schema"]["openAPIV3Schema"].is_object() {
            return Err(invalid(
                rt,
                obj,
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                "Required value",
            ));
        }
    }
    let shared = versions
        .windows(2)
        .all(|w| w[0]["schema"] == w[1]["schema"]);
    for (i, v) in versions.iter().enumerate() {
        let at = if shared {
            "spec.validation.openAPIV3Schema".to_string()
        } else {
            format!("spec.versions[{i}].schema.openAPIV3Schema")
        };
        let schema = &v["schema"]["openAPIV3Schema"];
        if let Some((field, why)) = structural_gap(schema, &at, true) {
            return Err(invalid(rt, obj, &field, why));
        }
        if shared {
            break;
        }
    }
    Ok(())
}

/// The first schema node without a `type` where a structural schema needs one.
fn structural_gap(s: &Value, at: &str, root: bool) -> Option<(String, &'static str)> {
    let exempt = s["x-kubernetes-int-or-string"] == true
        || s["x-kubernetes-preserve-unknown-fields"] == true;
    if s["type"].as_str().is_none_or(str::is_empty) && !exempt {
        let why = if root {
            "Required value: must not be empty at the root"
        } else {
            "Required value: must not be empty for specified object fields"
        };
        return Some((format!("{at}.type"), why));
    }
    if let Some(props) = s["properties"].as_object() {
        for (name, p) in props {
            if let Some(gap) = structural_gap(p, &format!("{at}.properties[{name}]"), false) {
                return Some(gap);
            }
        }
    }
    if s["items"].is_object()
        && let Some((field, why)) = structural_gap(&s["items"], &format!("{at}.items"), false)
    {
        let why = if why.ends_with("object fields") {
            "Required value: must not be empty for specified array items"
        } else {
            why
        };
        return Some((field, why));
    }
    if let Some(ap) = s["additionalProperties"].as_object()
        && !ap.is_empty()
    {
        return structural_gap(
            &s["additionalProperties"],
            &format!("{at}.additionalProperties"),
            false,
        );
    }
    None
}

/// Fields an apiextensions.k8s.io/v1 CRD does not have (v1beta1 leftovers such as
/// `spec.validation`), as dotted paths. The real server drops them with a warning on
/// create/update, refuses them with `fieldValidation=Strict` and refuses them in
/// server-side apply.
pub fn unknown_fields(rt: &ResourceType, obj: &Value) -> Vec<String> {
    if rt.group != "apiextensions.k8s.io" || rt.version != "v1" {
        return Vec::new();
    }
    const SPEC: &[&str] = &[
        "group",
        "names",
        "scope",
        "versions",
        "conversion",
        "preserveUnknownFields",
    ];
    const VERSION: &[&str] = &[
        "name",
        "served",
        "storage",
        "deprecated",
        "deprecationWarning",
        "schema",
        "subresources",
        "additionalPrinterColumns",
        "selectableFields",
    ];
    let mut out = Vec::new();
    if let Some(spec) = obj["spec"].as_object() {
        out.extend(
            spec.keys()
                .filter(|k| !SPEC.contains(&k.as_str()))
                .map(|k| format!("spec.{k}")),
        );
    }
    for (i, v) in obj["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if let Some(v) = v.as_object() {
            out.extend(
                v.keys()
                    .filter(|k| !VERSION.contains(&k.as_str()))
                    .map(|k| format!("spec.versions[{i}].{k}")),
            );
        }
    }
    out
}

/// Removes [`unknown_fields`] (the server's default `fieldValidation=Warn` behaviour).
pub fn drop_unknown_fields(rt: &ResourceType, obj: &mut Value) {
    for path in unknown_fields(rt, obj) {
        tracing::debug!(%path, kind = %rt.kind, "unknown field dropped");
        if let Some(rest) = path.strip_prefix("spec.versions[") {
            let Some((i, field)) = rest.split_once("].") else {
                continue;
            };
            if let (Ok(i), Some(v)) = (i.parse::<usize>(), obj["spec"]["versions"].as_array_mut())
                && let Some(m) = v.get_mut(i).and_then(Value::as_object_mut)
            {
                m.remove(field);
            }
        } else if let Some(field) = path.strip_prefix("spec.")
            && let Some(m) = obj["spec"].as_object_mut()
        {
            m.remove(field);
        }
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
        // validateCustomResourceDefinitionStoredVersions: a version objects may still
        // be stored in cannot leave spec.versions (checked on the update, against the
        // stored versions the CRD had).
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let versions: Vec<&str> = new["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v["name"].as_str())
                .collect();
            let stored = old["status"]["storedVersions"].as_array();
            for (i, s) in stored.into_iter().flatten().enumerate() {
                if let Some(s) = s.as_str()
                    && !versions.contains(&s)
                {
                    return Err(invalid(
                        rt,
                        new,
                        &format!("status.storedVersions[{i}]"),
                        // Kubernetes 1.36's words (1.24 says only "must appear in
                        // spec.versions").
                        &format!(
                            "Invalid value: \"{s}\": missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and removes {s} from status.storedVersions"
                        ),
                    ));
                }
            }
            Ok(())
        }
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
