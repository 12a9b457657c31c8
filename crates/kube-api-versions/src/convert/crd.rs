//! `apiextensions.k8s.io/v1beta1` CustomResourceDefinition -> `apiextensions.k8s.io/v1`.
//!
//! What v1 changed, from the API reference of both versions:
//! - `spec.version` is gone; `spec.versions` (each with `served`/`storage`) is required.
//! - `spec.validation`, `spec.subresources` and `spec.additionalPrinterColumns` exist only
//!   per version (`versions[].schema`, `.subresources`, `.additionalPrinterColumns`);
//!   printer columns spell `JSONPath` as `jsonPath`.
//! - `spec.preserveUnknownFields` defaulted to true in v1beta1 and must not be true in
//!   v1; every version needs a structural schema with `type: object` at the root, and
//!   keeping unknown fields is said with `x-kubernetes-preserve-unknown-fields`.
//! - `spec.conversion.webhookClientConfig` and `conversionReviewVersions` (default
//!   `["v1beta1"]`) moved under `spec.conversion.webhook` (`clientConfig`, required
//!   `conversionReviewVersions`).
//! - `spec.scope` defaulted to `Namespaced` in v1beta1 and is required in v1.

use serde_json::{Map, Value, json};

use super::{ConvertError, Cx, type_name};

/// Fields a v1 `spec` has; anything else left after the moves is dropped with a note.
const V1_SPEC_FIELDS: &[&str] = &["group", "names", "scope", "versions", "conversion"];

pub(super) fn custom_resource_definition(
    cx: &mut Cx,
    root: &mut Map<String, Value>,
) -> Result<(), ConvertError> {
    let spec = cx.spec(root)?;

    let preserve = match spec.remove("preserveUnknownFields") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => b,
        Some(other) => {
            return Err(cx.err(format!(
                "spec.preserveUnknownFields must be a boolean, not {}",
                type_name(&other)
            )));
        }
    };
    let top_schema = match spec.remove("validation") {
        None | Some(Value::Null) => None,
        Some(Value::Object(mut validation)) => validation
            .remove("openAPIV3Schema")
            .filter(|s| !s.is_null()),
        Some(other) => {
            return Err(cx.err(format!(
                "spec.validation must be an object, not {}",
                type_name(&other)
            )));
        }
    };
    let top_subresources = spec.remove("subresources").filter(|v| !v.is_null());
    let top_columns = spec
        .remove("additionalPrinterColumns")
        .filter(|v| !v.is_null());
    let version = match spec.remove("version") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        Some(Value::String(_)) => None,
        Some(other) => {
            return Err(cx.err(format!(
                "spec.version must be a string, not {}",
                type_name(&other)
            )));
        }
    };

    if super::set_default(spec, "scope", json!("Namespaced")) {
        cx.note(
            "spec.scope was not set; wrote Namespaced, the v1beta1 default, which v1 \
             requires explicitly",
        );
    }

    let mut versions = cx.objects(spec, "versions", "spec.versions")?;
    if versions.is_empty() {
        let Some(name) = version.clone() else {
            return Err(cx.err("neither spec.version nor spec.versions is set"));
        };
        spec.insert(
            "versions".to_string(),
            json!([{"name": name, "served": true, "storage": true}]),
        );
        versions = cx.objects(spec, "versions", "spec.versions")?;
    }

    let mut storage = Vec::new();
    let mut defaulted_served = Vec::new();
    let mut untyped = Untyped::default();
    let mut missing_schema = false;
    let mut typed_root = false;
    let mut names = Vec::new();
    for (i, v) in versions.iter_mut().enumerate() {
        let at = format!("spec.versions[{i}]");
        let name = cx
            .string(v, "name", &format!("{at}.name"))?
            .ok_or_else(|| cx.err(format!("{at}.name is missing")))?
            .to_string();
        if super::set_default(v, "served", json!(true)) {
            defaulted_served.push(name.clone());
        }
        match v.get("storage") {
            None | Some(Value::Null) => {
                v.insert("storage".to_string(), json!(false));
            }
            Some(Value::Bool(true)) => storage.push(i),
            Some(Value::Bool(false)) => {}
            Some(other) => {
                return Err(cx.err(format!(
                    "{at}.storage must be a boolean, not {}",
                    type_name(other)
                )));
            }
        }

        // Per-version settings win over the top-level ones (v1beta1 allowed only one
        // of the two, but a per-version value is the more specific statement).
        if let (None, Some(s)) = (v.get("schema"), &top_schema) {
            v.insert("schema".to_string(), json!({"openAPIV3Schema": s}));
        }
        if let (None, Some(s)) = (v.get("subresources"), &top_subresources) {
            v.insert("subresources".to_string(), s.clone());
        }
        if let (None, Some(c)) = (v.get("additionalPrinterColumns"), &top_columns) {
            v.insert("additionalPrinterColumns".to_string(), c.clone());
        }
        for (c, column) in cx
            .objects(
                v,
                "additionalPrinterColumns",
                &format!("{at}.additionalPrinterColumns"),
            )?
            .into_iter()
            .enumerate()
        {
            if let Some(path) = column.remove("JSONPath") {
                if column.contains_key("jsonPath") {
                    return Err(cx.err(format!(
                        "{at}.additionalPrinterColumns[{c}] has both JSONPath and jsonPath"
                    )));
                }
                column.insert("jsonPath".to_string(), path);
            }
        }

        let schema = cx.object_entry(v, "schema", &format!("{at}.schema"))?;
        match cx.object(
            schema,
            "openAPIV3Schema",
            &format!("{at}.schema.openAPIV3Schema"),
        )? {
            None => {
                schema.insert(
                    "openAPIV3Schema".to_string(),
                    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                );
                missing_schema = true;
            }
            Some(root_schema) => {
                if super::set_default(root_schema, "type", json!("object")) {
                    typed_root = true;
                }
                if preserve {
                    super::set_default(
                        root_schema,
                        "x-kubernetes-preserve-unknown-fields",
                        json!(true),
                    );
                }
                walk_schema(root_schema, &name, true, preserve, &mut untyped);
            }
        }
        names.push(name);
    }

    match storage.len() {
        1 => {}
        0 => {
            // v1beta1 required exactly one as well, but a spec.version-only CRD marks
            // none: that version (or the only one) is the storage version.
            let pick = match (&version, names.len()) {
                (_, 1) => Some(0),
                (Some(v), _) => names.iter().position(|n| n == v),
                (None, _) => None,
            };
            let Some(pick) = pick else {
                return Err(cx.err("no version in spec.versions is marked storage: true"));
            };
            versions[pick].insert("storage".to_string(), json!(true));
        }
        _ => {
            return Err(cx.err("more than one version in spec.versions is marked storage: true"));
        }
    }
    if let Some(v) = version.as_ref().filter(|v| !names.contains(v)) {
        cx.note(format!(
            "spec.version {v} is not among spec.versions; dropped"
        ));
    }
    if !defaulted_served.is_empty() {
        cx.note(format!(
            "spec.versions {} had no served flag; wrote served: true",
            defaulted_served.join(", ")
        ));
    }
    if missing_schema {
        cx.note(
            "versions without a schema got {type: object, x-kubernetes-preserve-unknown-fields: \
             true}, the structural schema v1 requires that accepts any content, as v1beta1 did",
        );
    }
    if typed_root {
        cx.note("the schema root had no type; wrote type: object, which v1 requires");
    }
    if preserve {
        cx.note(
            "spec.preserveUnknownFields was true (the v1beta1 default) and v1 forbids it; \
             wrote x-kubernetes-preserve-unknown-fields: true at each schema root and \
             on every object that lists properties, so unknown fields are still kept at \
             every depth",
        );
    }
    if !untyped.inferred.is_empty() {
        cx.note(format!(
            "v1 requires a structural schema; these schema nodes had no type and got the \
             one their properties or items imply: {}",
            untyped.inferred.join(", ")
        ));
    }
    if !untyped.unknown.is_empty() {
        cx.note(format!(
            "v1 requires a structural schema, but these schema nodes have no type, so the \
             cluster may reject the CustomResourceDefinition: {}",
            untyped.unknown.join(", ")
        ));
    }

    convert_conversion(cx, spec)?;

    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if is_protected_group(&group) {
        approve(cx, root, &group);
    }
    let spec = cx.spec(root)?;

    let extra: Vec<String> = spec
        .keys()
        .filter(|k| !V1_SPEC_FIELDS.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in extra {
        spec.remove(&key);
        cx.note(format!(
            "spec.{key} has no apiextensions.k8s.io/v1 equivalent; dropped"
        ));
    }
    Ok(())
}

/// The annotation v1 requires on CustomResourceDefinitions of protected groups.
pub const API_APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// The value written on converted CRDs of protected groups that carry none. The API
/// server accepts any value starting with "unapproved" (Kubernetes'
/// `apihelpers.GetAPIApprovalState`: APIApprovalBypassed) and records the CRD as not
/// conformant to the API approval policy, which is the truth for a package's CRD.
pub const UNAPPROVED_CONVERTED: &str =
    "unapproved, converted from apiextensions.k8s.io/v1beta1 by terraform-provider-kudo";

/// Kubernetes' `apihelpers.IsProtectedCommunityGroup`: `k8s.io`, `kubernetes.io` and
/// their subdomains, whose v1 CRDs need [`API_APPROVAL_ANNOTATION`] (v1beta1 did not
/// check it, which is why KUDO-era packages lack it).
pub fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group == "kubernetes.io"
        || group.ends_with(".k8s.io")
        || group.ends_with(".kubernetes.io")
}

/// Writes [`UNAPPROVED_CONVERTED`] unless the template already says something.
fn approve(cx: &mut Cx, root: &mut Map<String, Value>, group: &str) {
    let metadata = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    let annotations = metadata
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if annotations.is_null() {
        *annotations = Value::Object(Map::new());
    }
    let Some(annotations) = annotations.as_object_mut() else {
        return;
    };
    if annotations.contains_key(API_APPROVAL_ANNOTATION) {
        return;
    }
    annotations.insert(
        API_APPROVAL_ANNOTATION.to_string(),
        Value::String(UNAPPROVED_CONVERTED.to_string()),
    );
    cx.note(format!(
        "group {group} is protected: apiextensions.k8s.io/v1 requires the annotation \
         {API_APPROVAL_ANNOTATION}, which v1beta1 did not check; wrote \
         \"{UNAPPROVED_CONVERTED}\" (accepted as not approved)"
    ));
}

/// `spec.conversion`: v1beta1 kept the webhook's client config and review versions
/// beside `strategy`; v1 nests them under `webhook`, and allows neither for `None`.
fn convert_conversion(cx: &mut Cx, spec: &mut Map<String, Value>) -> Result<(), ConvertError> {
    let Some(conversion) = cx.object(spec, "conversion", "spec.conversion")? else {
        return Ok(());
    };
    let strategy = cx
        .string(conversion, "strategy", "spec.conversion.strategy")?
        .unwrap_or("None")
        .to_string();
    let client_config = conversion
        .remove("webhookClientConfig")
        .filter(|v| !v.is_null());
    let review_versions = conversion
        .remove("conversionReviewVersions")
        .filter(|v| !v.is_null());
    let mut notes = Vec::new();
    if strategy == "Webhook" {
        let Some(client_config) = client_config else {
            return Err(
                cx.err("spec.conversion.strategy is Webhook but webhookClientConfig is not set")
            );
        };
        let review_versions = review_versions.unwrap_or_else(|| {
            notes.push(
                "spec.conversion.conversionReviewVersions was not set; wrote [v1beta1], the \
                 v1beta1 default, which v1 requires explicitly"
                    .to_string(),
            );
            json!(["v1beta1"])
        });
        conversion.insert(
            "webhook".to_string(),
            json!({"clientConfig": client_config, "conversionReviewVersions": review_versions}),
        );
    } else if client_config.is_some() || review_versions.is_some() {
        notes.push(format!(
            "spec.conversion webhook settings are not used with strategy {strategy} and v1 \
             does not allow them; dropped"
        ));
    }
    for note in notes {
        cx.note(note);
    }
    Ok(())
}

/// Schema nodes without a `type`, by path.
#[derive(Default)]
struct Untyped {
    /// Given the type their keywords imply: `object` for a node with `properties` or
    /// an `additionalProperties` schema, `array` for one with `items` (those keywords
    /// describe nothing else, so the schema means the same).
    inferred: Vec<String>,
    /// Left as written: nothing says what they hold, and v1 may reject them.
    unknown: Vec<String>,
}

/// Walks the nodes below `properties`, `items` and `additionalProperties`:
/// - types nodes whose keywords imply a type and collects the paths of the others that
///   have no `type` and none of the extensions that stand in for one;
/// - with `preserve`, marks every node that lists `properties` with
///   `x-kubernetes-preserve-unknown-fields: true`, because the marker on the root stops
///   applying below a node that lists properties, while v1beta1's
///   `preserveUnknownFields: true` kept unknown fields at every depth.
fn walk_schema(
    schema: &mut Map<String, Value>,
    path: &str,
    root: bool,
    preserve: bool,
    out: &mut Untyped,
) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for (name, child) in props.iter_mut() {
            // v1 allows only name/generateName restrictions under the root metadata.
            let mark = preserve && !(root && name == "metadata");
            walk_node(child, &format!("{path}.{name}"), mark, out);
        }
    }
    if let Some(items) = schema.get_mut("items") {
        walk_node(items, &format!("{path}[]"), preserve, out);
    }
    if let Some(extra @ Value::Object(_)) = schema.get_mut("additionalProperties") {
        walk_node(extra, &format!("{path}.*"), preserve, out);
    }
}

fn walk_node(node: &mut Value, path: &str, preserve: bool, out: &mut Untyped) {
    let Some(node) = node.as_object_mut() else {
        return;
    };
    let has = |node: &Map<String, Value>, k: &str| {
        node.get(k)
            .is_some_and(|v| v != &Value::Bool(false) && !v.is_null())
    };
    if !has(node, "type")
        && !has(node, "x-kubernetes-int-or-string")
        && !has(node, "x-kubernetes-preserve-unknown-fields")
    {
        let implied = if has(node, "properties")
            || node
                .get("additionalProperties")
                .is_some_and(Value::is_object)
        {
            Some("object")
        } else if has(node, "items") {
            Some("array")
        } else {
            None
        };
        match implied {
            Some(t) => {
                node.insert("type".to_string(), json!(t));
                out.inferred.push(path.to_string());
            }
            None => out.unknown.push(path.to_string()),
        }
    }
    if preserve && has(node, "properties") {
        super::set_default(node, "x-kubernetes-preserve-unknown-fields", json!(true));
    }
    walk_schema(node, path, false, preserve, out);
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::{Value, json};

    /// The shape of the spark operator's v1beta1 CRD (KUDO spark operator, 2019):
    /// `spec.version`, top-level `validation` without a root type, printer columns
    /// with `JSONPath`, a status subresource, preserveUnknownFields unset.
    fn spark_application_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "sparkapplications.sparkoperator.k8s.io"},
            "spec": {
                "group": "sparkoperator.k8s.io",
                "version": "v1beta2",
                "scope": "Namespaced",
                "names": {"kind": "SparkApplication", "listKind": "SparkApplicationList",
                          "plural": "sparkapplications", "singular": "sparkapplication",
                          "shortNames": ["sparkapp"]},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Status", "type": "string", "JSONPath": ".status.applicationState.state"},
                    {"name": "Attempts", "type": "string", "JSONPath": ".status.executionAttempts"},
                    {"name": "Age", "type": "date", "JSONPath": ".metadata.creationTimestamp"}
                ],
                "validation": {"openAPIV3Schema": {"properties": {
                    "metadata": {"properties": {"name": {"type": "string", "minLength": 1, "maxLength": 63}}},
                    "spec": {"properties": {
                        "image": {"type": "string"},
                        "mode": {"enum": ["cluster", "client"]},
                        "sparkConf": {"type": "object", "additionalProperties": {"type": "string"}},
                        "driver": {"type": "object", "properties": {
                            "cores": {"type": "integer", "minimum": 1},
                            "memory": {"type": "string"}}}
                    }}
                }}}
            }
        })
    }

    // Kubernetes' apihelpers.IsProtectedCommunityGroup and GetAPIApprovalState: any value
    // starting with "unapproved" is accepted; a template's own value is kept.
    #[test]
    fn protected_groups_get_the_approval_annotation_once() {
        for (group, protected) in [
            ("sparkoperator.k8s.io", true),
            ("k8s.io", true),
            ("x.kubernetes.io", true),
            ("example.com", false),
            ("notk8s.io", false),
        ] {
            assert_eq!(super::is_protected_group(group), protected, "{group}");
        }
        assert!(super::UNAPPROVED_CONVERTED.starts_with("unapproved"));
        let mut crd = spark_application_crd();
        crd["metadata"]["annotations"] =
            json!({"api-approved.kubernetes.io": "https://example.com/approval"});
        let out = convert(&crd, "apiextensions.k8s.io/v1").unwrap();
        assert_eq!(
            out.object["metadata"]["annotations"]["api-approved.kubernetes.io"],
            "https://example.com/approval"
        );
        let mut other = spark_application_crd();
        other["spec"]["group"] = json!("example.com");
        let out = convert(&other, "apiextensions.k8s.io/v1").unwrap();
        assert!(out.object["metadata"].get("annotations").is_none());
    }

    // CustomResourceDefinition apiextensions.k8s.io/v1beta1 (version, validation, subresources, additionalPrinterColumns
    // with JSONPath, preserveUnknownFields default true): kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#customresourcedefinitionspec-v1beta1-apiextensions-k8s-io;
    // v1 (versions[].schema/subresources/additionalPrinterColumns with jsonPath, preserveUnknownFields must not be true):
    // kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#customresourcedefinitionspec-v1-apiextensions-k8s-io
    #[test]
    fn spark_operator_crd_moves_into_versions() {
        let crd = spark_application_crd();
        let out = convert(&crd, "apiextensions.k8s.io/v1").unwrap();
        let spec = &out.object["spec"];
        // sparkoperator.k8s.io is a protected group: v1 wants the approval annotation.
        assert_eq!(
            out.object["metadata"],
            json!({"name": "sparkapplications.sparkoperator.k8s.io",
                   "annotations": {"api-approved.kubernetes.io": super::UNAPPROVED_CONVERTED}})
        );
        assert!(
            out.notes
                .iter()
                .any(|n| n.contains("api-approved.kubernetes.io") && n.contains("protected"))
        );
        assert_eq!(spec["group"], "sparkoperator.k8s.io");
        for gone in [
            "version",
            "validation",
            "subresources",
            "additionalPrinterColumns",
            "preserveUnknownFields",
        ] {
            assert!(spec.get(gone).is_none(), "{gone}");
        }
        let versions = spec["versions"].as_array().unwrap();
        assert_eq!(versions.len(), 1);
        let v = &versions[0];
        assert_eq!(v["name"], "v1beta2");
        assert_eq!(v["served"], true);
        assert_eq!(v["storage"], true);
        assert_eq!(v["subresources"], json!({"status": {}}));
        assert_eq!(
            v["additionalPrinterColumns"][0],
            json!({"name": "Status", "type": "string", "jsonPath": ".status.applicationState.state"})
        );
        let schema = &v["schema"]["openAPIV3Schema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["x-kubernetes-preserve-unknown-fields"], true);
        let driver = &schema["properties"]["spec"]["properties"]["driver"];
        assert_eq!(
            driver["properties"]["cores"],
            json!({"type": "integer", "minimum": 1})
        );
        // Objects that list properties keep unknown fields too, as in v1beta1.
        assert_eq!(driver["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(
            schema["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"],
            true
        );
        let conf = &schema["properties"]["spec"]["properties"]["sparkConf"];
        assert!(conf.get("x-kubernetes-preserve-unknown-fields").is_none());
        assert!(
            schema["properties"]["metadata"]
                .get("x-kubernetes-preserve-unknown-fields")
                .is_none()
        );
        // Nodes with properties are objects, whatever the old schema left out.
        assert_eq!(schema["properties"]["spec"]["type"], "object");
        assert_eq!(schema["properties"]["metadata"]["type"], "object");
        // Notes: root type written, preserveUnknownFields, types implied by keywords,
        // nodes whose type nothing implies, the approval annotation.
        assert_eq!(out.notes.len(), 5, "{:#?}", out.notes);
        let inferred = &out.notes[2];
        assert!(inferred.contains("v1beta2.metadata"), "{inferred}");
        assert!(
            inferred.contains("v1beta2.spec,") || inferred.ends_with("v1beta2.spec"),
            "{inferred}"
        );
        let untyped = &out.notes[3];
        assert!(untyped.contains("v1beta2.spec.mode"), "{untyped}");
        assert!(!untyped.contains("metadata"), "{untyped}");
        assert!(!untyped.contains("driver"), "{untyped}");
    }

    // Same pages (CustomResourceDefinitionVersion v1beta1 / v1).
    #[test]
    fn per_version_settings_win_and_one_version_is_storage() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "zookeeperclusters.zookeeper.example.com"},
            "spec": {
                "group": "zookeeper.example.com",
                "names": {"kind": "ZookeeperCluster", "plural": "zookeeperclusters"},
                "preserveUnknownFields": false,
                "validation": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "JSONPath": ".spec.size"}],
                "versions": [
                    {"name": "v1alpha1", "served": true, "storage": false,
                     "additionalPrinterColumns": [{"name": "Replicas", "type": "integer", "JSONPath": ".spec.replicas", "priority": 1}]},
                    {"name": "v1beta1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}
                ]
            }
        });
        let out = convert(&crd, "apiextensions.k8s.io/v1").unwrap();
        let spec = &out.object["spec"];
        assert_eq!(spec["scope"], "Namespaced");
        let v = spec["versions"].as_array().unwrap();
        assert_eq!(
            v[0]["additionalPrinterColumns"],
            json!([{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1}])
        );
        assert_eq!(
            v[1]["additionalPrinterColumns"],
            json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}])
        );
        assert_eq!(
            v[0]["schema"]["openAPIV3Schema"],
            crd["spec"]["validation"]["openAPIV3Schema"]
        );
        assert_eq!(v[1]["schema"], crd["spec"]["versions"][1]["schema"]);
        // preserveUnknownFields false: no preserve marker, nothing but scope to note.
        assert!(
            v[1]["schema"]["openAPIV3Schema"]
                .get("x-kubernetes-preserve-unknown-fields")
                .is_none()
        );
        assert_eq!(
            (v[0]["storage"].clone(), v[1]["storage"].clone()),
            (json!(false), json!(true))
        );
        assert_eq!(out.notes.len(), 1, "{:#?}", out.notes);
    }

    // v1 CustomResourceConversion (webhook.clientConfig, conversionReviewVersions required):
    // kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#customresourceconversion-v1-apiextensions-k8s-io;
    // v1beta1 (webhookClientConfig, conversionReviewVersions default [v1beta1]):
    // kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#customresourceconversion-v1beta1-apiextensions-k8s-io
    #[test]
    fn webhook_conversion_and_missing_schema() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "instances.kudo.dev"},
            "spec": {
                "group": "kudo.dev", "scope": "Namespaced",
                "names": {"kind": "Instance", "plural": "instances"},
                "versions": [{"name": "v1beta1", "served": true, "storage": true},
                             {"name": "v1alpha1", "served": false, "storage": false}],
                "conversion": {"strategy": "Webhook",
                    "webhookClientConfig": {"service": {"namespace": "kudo-system", "name": "kudo-webhook", "path": "/convert"}, "caBundle": "Q0E="}}
            }
        });
        let out = convert(&crd, "apiextensions.k8s.io/v1").unwrap();
        let spec = &out.object["spec"];
        assert_eq!(
            spec["conversion"],
            json!({"strategy": "Webhook", "webhook": {
                "clientConfig": crd["spec"]["conversion"]["webhookClientConfig"],
                "conversionReviewVersions": ["v1beta1"]}})
        );
        for v in spec["versions"].as_array().unwrap() {
            assert_eq!(
                v["schema"]["openAPIV3Schema"],
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
            );
        }
        assert_eq!(out.notes.len(), 3, "{:#?}", out.notes);
    }

    #[test]
    fn storage_must_be_unambiguous_and_unknown_fields_are_dropped() {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Cluster",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": true, "storage": true},
                             {"name": "v2", "served": true, "storage": true}]
            }
        });
        let err = convert(&crd, "apiextensions.k8s.io/v1").unwrap_err();
        assert!(err.message.contains("more than one"), "{err}");

        crd["spec"]["versions"][1]["storage"] = json!(false);
        crd["spec"]["conversion"] =
            json!({"strategy": "None", "conversionReviewVersions": ["v1beta1"]});
        crd["spec"]["futureField"] = json!(1);
        let out = convert(&crd, "apiextensions.k8s.io/v1").unwrap();
        assert!(out.object["spec"].get("futureField").is_none());
        assert_eq!(
            out.object["spec"]["conversion"],
            json!({"strategy": "None"})
        );
        assert!(
            out.notes.iter().any(|n| n.contains("spec.futureField")),
            "{:#?}",
            out.notes
        );

        crd["spec"]["versions"] = json!("v1");
        assert!(convert(&crd, "apiextensions.k8s.io/v1").is_err());
    }
}
