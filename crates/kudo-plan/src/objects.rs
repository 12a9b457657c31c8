//! What the objects a task applies must be, knowable without a cluster: each is a
//! Kubernetes object (an `apiVersion`, a `kind` that is not a List, a `metadata.name`),
//! has a name the API server accepts for its kind, and no two of them are the same
//! object. The walk refuses a task that breaks these rules, naming the template and
//! the document, so `terraform plan` (and `package verify` and `render`, which walk the
//! plans too) fails before anything is written, rather than the API server refusing the
//! object half-way through a run, or the second copy of an object silently replacing
//! the first.
//!
//! KUDO 0.19 refused the same documents, in its own words: `renderer.YamlToObject`
//! (pkg/engine/renderer/parser.go) decodes every rendered document with the client-go
//! scheme, else as `Unstructured`, which fails on a document without `kind` ("Object
//! 'Kind' is missing"); a `kind: List` decodes as a typed `v1.List`, which
//! `DefaultEnhancer.Apply` (pkg/engine/renderer/enhancer.go) then cannot place, since
//! discovery lists no `List` resource (`resource.IsNamespacedObject`): Lists were
//! refused, never expanded. A document without `metadata.name` reached the API server,
//! which refused it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::PlanError;

/// One object of a task and where it was rendered: the template as the package names
/// it (`templates/cm.yaml`) and its document number among that file's objects.
pub(crate) struct Origin<'a> {
    pub template: &'a str,
    pub document: usize,
    pub object: &'a Value,
}

impl Origin<'_> {
    fn error(&self, message: String) -> PlanError {
        PlanError::new(format!("document {}: {message}", self.document))
            .with_template(self.template)
    }
}

/// What a task writes or removes must be a Kubernetes object with a name: an
/// `apiVersion`, a `kind` (not a List), a `metadata.name`. Returns the kind and name.
pub(crate) fn check_object<'o>(o: &Origin<'o>) -> Result<(&'o str, &'o str), PlanError> {
    const EVERY: &str = "every document of a task's resources is one Kubernetes object with `apiVersion`, `kind` and `metadata.name`";
    let text = |v: Option<&'o Value>| v.and_then(Value::as_str).filter(|s| !s.trim().is_empty());
    let Some(kind) = text(o.object.get("kind")) else {
        return Err(o.error(format!("the object has no `kind`; {EVERY}")));
    };
    if let Some(items) = list_items(o.object, kind) {
        return Err(o.error(format!(
            "a {kind} of {items} objects cannot be applied: the API server has no {kind} resource, and KUDO 0.19 refused Lists too; write each item as its own YAML document, separated by `---`"
        )));
    }
    if text(o.object.get("apiVersion")).is_none() {
        return Err(o.error(format!("{kind} has no `apiVersion`; {EVERY}")));
    }
    let metadata = o.object.get("metadata");
    let Some(name) = text(metadata.and_then(|m| m.get("name"))) else {
        let generated = metadata
            .and_then(|m| m.get("generateName"))
            .is_some_and(|g| !g.is_null());
        let hint = if generated {
            " (`generateName` is not enough: objects are applied, found and pruned by name)"
        } else {
            ""
        };
        return Err(o.error(format!("{kind} has no `metadata.name`{hint}; {EVERY}")));
    };
    Ok((kind, name))
}

/// The number of items when `object` is a list (`kind: List`, or `<Kind>List` with an
/// `items` list, as `kubectl` reads them).
fn list_items(object: &Value, kind: &str) -> Option<usize> {
    let items = object.get("items").and_then(Value::as_array);
    match kind {
        "List" => Some(items.map_or(0, Vec::len)),
        k if k.ends_with("List") => items.map(Vec::len),
        _ => None,
    }
}

/// The rules over the objects of one task. `namespace` is the instance's, where an
/// object that names none is applied.
pub(crate) fn check_task(objects: &[Origin<'_>], namespace: &str) -> Result<(), PlanError> {
    let mut seen: BTreeMap<(String, &str, &str, &str), &Origin<'_>> = BTreeMap::new();
    for o in objects {
        let (kind, name) = check_object(o)?;
        let api_version = o
            .object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let metadata = o.object.get("metadata");
        if let Some(rule) = name_problem(group(api_version), kind, name) {
            return Err(PlanError::new(format!(
                "{kind} {name:?} (document {}): metadata.name is not a valid name: {rule}; the API server would refuse it",
                o.document
            ))
            .with_template(o.template));
        }
        let object_namespace = metadata
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(namespace);
        let key = (group(api_version).to_string(), kind, object_namespace, name);
        if let Some(first) = seen.insert(key, o) {
            let what = format!("{kind} {name:?} in namespace {object_namespace:?}");
            let both = if first.template == o.template {
                format!(
                    "{} renders {what} twice (documents {} and {})",
                    o.template, first.document, o.document
                )
            } else {
                format!(
                    "{} (document {}) and {} (document {}) both render {what}",
                    first.template, first.document, o.template, o.document
                )
            };
            return Err(PlanError::new(format!(
                "{both}; a task applies each object once, so the second would silently replace the first: remove one, or give them different names"
            )));
        }
    }
    Ok(())
}

/// The API group of an `apiVersion` (`apps/v1` -> `apps`, `v1` -> the core group ``).
fn group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// Why `name` is not a valid name for a `kind` of `group`, in the API server's words;
/// `None` when it is. Most kinds take an RFC 1123 subdomain; Namespaces an RFC 1123
/// label and Services an RFC 1035 label (their names become DNS labels). Kinds the
/// server lets use any path segment (RBAC, volumes and claims, certificate requests,
/// events, API services, flow control) are held only to that, so that nothing it
/// accepts is refused here.
pub(crate) fn name_problem(group: &str, kind: &str, name: &str) -> Option<String> {
    let path_segment_kinds = matches!(
        (group, kind),
        ("rbac.authorization.k8s.io", _)
            | ("flowcontrol.apiserver.k8s.io", _)
            | ("", "PersistentVolume" | "PersistentVolumeClaim" | "Event")
            | ("events.k8s.io", "Event")
            | ("certificates.k8s.io", "CertificateSigningRequest")
            | ("apiregistration.k8s.io", "APIService")
    );
    if path_segment_kinds {
        return if name.is_empty() || name == "." || name == ".." {
            Some(format!("{name:?} may not be used as a name"))
        } else if name.contains(['/', '%']) {
            Some("a name may not contain '/' or '%'".to_string())
        } else {
            None
        };
    }
    match (group, kind) {
        ("", "Namespace") if !is_label(name, false) => Some(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (at most 63 characters)".to_string(),
        ),
        ("", "Service") if !is_label(name, true) => Some(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (at most 63 characters)".to_string(),
        ),
        ("", "Namespace" | "Service") => None,
        _ if name.len() > 253 || !name.split('.').all(|part| is_label_text(part, false)) => Some(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (at most 253 characters)".to_string(),
        ),
        _ => None,
    }
}

/// An RFC 1123 label, or with `letter_first` an RFC 1035 one.
fn is_label(name: &str, letter_first: bool) -> bool {
    name.len() <= 63 && is_label_text(name, letter_first)
}

fn is_label_text(text: &str, letter_first: bool) -> bool {
    let first_ok = |c: char| c.is_ascii_lowercase() || (!letter_first && c.is_ascii_digit());
    text.starts_with(first_ok)
        && text.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_follow_the_api_servers_rules() {
        for ok in ["a", "a-b.c", "0zk", "x.y.z", &"a".repeat(253)] {
            assert_eq!(name_problem("apps", "Deployment", ok), None, "{ok}");
        }
        for bad in [
            "",
            "A",
            "a_b",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a.",
            &"a".repeat(254),
        ] {
            assert!(name_problem("", "ConfigMap", bad).is_some(), "{bad:?}");
        }
        assert!(name_problem("", "Service", "1svc").is_some());
        assert!(name_problem("", "Service", "a.b").is_some());
        assert_eq!(name_problem("", "Service", "svc-1"), None);
        assert!(name_problem("", "Namespace", &"a".repeat(64)).is_some());
        assert_eq!(name_problem("", "Namespace", "0ns"), None);
        // RBAC names are path segments: `system:controller:x` is fine.
        assert_eq!(
            name_problem(
                "rbac.authorization.k8s.io",
                "ClusterRole",
                "system:Reader_1"
            ),
            None
        );
        assert!(name_problem("rbac.authorization.k8s.io", "Role", "a/b").is_some());
        assert!(name_problem("rbac.authorization.k8s.io", "Role", "..").is_some());
        // Custom resources take subdomains.
        assert!(name_problem("kudo.dev", "Instance", "My_Instance").is_some());
    }

    fn at<'a>(template: &'a str, document: usize, object: &'a Value) -> Origin<'a> {
        Origin {
            template,
            document,
            object,
        }
    }

    #[test]
    fn one_object_per_identity() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        let in_ns = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}});
        let elsewhere = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}});
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}});
        let fine = [
            at("templates/a.yaml", 1, &cm),
            at("templates/b.yaml", 1, &secret),
        ];
        assert!(check_task(&fine, "ns").is_ok());
        let fine = [
            at("templates/a.yaml", 1, &cm),
            at("templates/b.yaml", 1, &elsewhere),
        ];
        assert!(check_task(&fine, "ns").is_ok());
        // Written in the instance's namespace or left to it: the same object.
        let twice = [
            at("templates/a.yaml", 1, &cm),
            at("templates/b.yaml", 2, &in_ns),
        ];
        let e = check_task(&twice, "ns").unwrap_err().to_string();
        assert!(
            e.starts_with("templates/a.yaml (document 1) and templates/b.yaml (document 2) both render ConfigMap \"x\" in namespace \"ns\""),
            "{e}"
        );
        let same_file = [
            at("templates/a.yaml", 1, &cm),
            at("templates/a.yaml", 3, &cm),
        ];
        let e = check_task(&same_file, "ns").unwrap_err().to_string();
        assert!(e.contains("templates/a.yaml renders ConfigMap \"x\" in namespace \"ns\" twice (documents 1 and 3)"), "{e}");
        // apps/v1 and apps/v1beta2 are one group: the same Deployment.
        let d1 = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
        let d2 =
            json!({"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "d"}});
        assert!(
            check_task(
                &[
                    at("templates/a.yaml", 1, &d1),
                    at("templates/b.yaml", 1, &d2)
                ],
                "ns"
            )
            .is_err()
        );
    }

    #[test]
    fn an_invalid_name_names_the_template() {
        let bad =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}});
        let e = check_task(&[at("templates/cm.yaml", 2, &bad)], "ns").unwrap_err();
        assert_eq!(e.template.as_deref(), Some("templates/cm.yaml"));
        assert!(e.message.starts_with("ConfigMap \"Bad_Name\" (document 2): metadata.name is not a valid name: a lowercase RFC 1123 subdomain"), "{e}");
    }

    #[test]
    fn every_document_is_one_named_object() {
        let fails = |object: Value| {
            let e = check_task(&[at("templates/x.yaml", 3, &object)], "ns").unwrap_err();
            assert_eq!(e.template.as_deref(), Some("templates/x.yaml"), "{e}");
            assert!(e.message.starts_with("document 3: "), "{e}");
            e.message
        };
        let m = fails(json!({"apiVersion": "v1", "metadata": {"name": "x"}, "data": {}}));
        assert!(m.contains("has no `kind`"), "{m}");
        let m = fails(json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}));
        assert!(m.contains("ConfigMap has no `metadata.name`;"), "{m}");
        // generateName objects cannot be applied by name.
        let m = fails(
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "run-"}}),
        );
        assert!(m.contains("`generateName` is not enough"), "{m}");
        let m = fails(json!({"kind": "ConfigMap", "metadata": {"name": "x"}}));
        assert!(m.contains("ConfigMap has no `apiVersion`"), "{m}");
        let m = fails(json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}}]}));
        assert!(m.contains("a List of 2 objects cannot be applied"), "{m}");
        assert!(m.contains("separated by `---`"), "{m}");
        let m = fails(json!({"apiVersion": "v1", "kind": "ConfigMapList", "items": []}));
        assert!(m.contains("a ConfigMapList of 0 objects"), "{m}");
        // A kind that only ends in "List" without items is a kind like any other.
        let watch =
            json!({"apiVersion": "x.io/v1", "kind": "WatchList", "metadata": {"name": "w"}});
        assert!(check_task(&[at("templates/x.yaml", 1, &watch)], "ns").is_ok());
    }
}
