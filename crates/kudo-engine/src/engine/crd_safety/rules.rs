//! The CRD upgrade-safety rules: pure comparisons of a CustomResourceDefinition as the
//! cluster holds it with the one a plan would apply (both `apiextensions.k8s.io/v1`).
//!
//! The rules follow what refuses to lose data elsewhere: the API server's own check
//! that every `status.storedVersions` entry stays in `spec.versions`
//! (`ValidateCustomResourceDefinitionStoredVersions` in apiextensions-apiserver), and
//! OLM v1's CRD upgrade-safety preflight (a served version removed, a field's type
//! changed, a field newly required, an enum or bound narrowed, the scope changed).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

/// One rule of the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// A version in `status.storedVersions` is no longer in `spec.versions`.
    StoredVersionRemoved,
    /// A served version is no longer served while objects of the kind exist.
    ServedVersionRemoved,
    /// A field's `type` changed.
    TypeChanged,
    /// A field is newly listed in its parent's `required`.
    NewlyRequired,
    /// `enum` added or a value dropped from it.
    EnumNarrowed,
    /// `maximum` added or lowered, or made exclusive.
    MaximumNarrowed,
    /// `minimum` added or raised, or made exclusive.
    MinimumNarrowed,
    /// `maxLength` added or lowered.
    MaxLengthNarrowed,
    /// `minLength` added or raised.
    MinLengthNarrowed,
    /// `pattern` added or changed (two patterns cannot be compared, so any change is).
    PatternChanged,
    /// `maxItems` added or lowered.
    MaxItemsNarrowed,
    /// `minItems` added or raised.
    MinItemsNarrowed,
    /// `maxProperties` added or lowered.
    MaxPropertiesNarrowed,
    /// `spec.scope` changed.
    ScopeChanged,
    /// `spec.conversion` no longer calls a webhook.
    ConversionRemoved,
}

impl Rule {
    /// The rule's name, as the docs table and messages write it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::StoredVersionRemoved => "stored-version-removed",
            Rule::ServedVersionRemoved => "served-version-removed",
            Rule::TypeChanged => "type-changed",
            Rule::NewlyRequired => "newly-required",
            Rule::EnumNarrowed => "enum-narrowed",
            Rule::MaximumNarrowed => "maximum-narrowed",
            Rule::MinimumNarrowed => "minimum-narrowed",
            Rule::MaxLengthNarrowed => "maxLength-narrowed",
            Rule::MinLengthNarrowed => "minLength-narrowed",
            Rule::PatternChanged => "pattern-changed",
            Rule::MaxItemsNarrowed => "maxItems-narrowed",
            Rule::MinItemsNarrowed => "minItems-narrowed",
            Rule::MaxPropertiesNarrowed => "maxProperties-narrowed",
            Rule::ScopeChanged => "scope-changed",
            Rule::ConversionRemoved => "conversion-removed",
        }
    }

    /// Whether the change harms only objects that exist: every rule but the stored
    /// version's, which the API server refuses even when no object is left (the
    /// version has to be migrated away from and trimmed from `storedVersions` first).
    pub fn needs_objects(self) -> bool {
        self != Rule::StoredVersionRemoved
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One unsafe change found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    /// The CRD version the change is in (none for `scope` and `conversion`).
    pub version: Option<String>,
    /// The field, dotted from the schema's root (`spec.size`, `spec.ports[*].name`).
    pub path: Option<String>,
    /// What changed, old and new.
    pub detail: String,
}

fn versions(crd: &Value) -> Vec<&Map<String, Value>> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .collect()
}

fn version_name(v: &Map<String, Value>) -> Option<&str> {
    v.get("name").and_then(Value::as_str)
}

fn served(v: &Map<String, Value>) -> bool {
    v.get("served").and_then(Value::as_bool).unwrap_or(false)
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// Every unsafe change from `old` (as the cluster holds it, with its status) to `new`.
pub fn compare(old: &Value, new: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    let old_versions = versions(old);
    let new_versions = versions(new);
    let find = |name: &str| {
        new_versions
            .iter()
            .find(|v| version_name(v) == Some(name))
            .copied()
    };
    let stored: Vec<&str> = old
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for s in &stored {
        if find(s).is_none() {
            out.push(Finding {
                rule: Rule::StoredVersionRemoved,
                version: Some(s.to_string()),
                path: None,
                detail: format!(
                    "version {s} is in status.storedVersions (objects may still be stored in it) and the new CRD drops it"
                ),
            });
        }
    }
    for v in &old_versions {
        let Some(name) = version_name(v) else {
            continue;
        };
        if !served(v) || stored.contains(&name) && find(name).is_none() {
            continue;
        }
        match find(name) {
            None => out.push(Finding {
                rule: Rule::ServedVersionRemoved,
                version: Some(name.to_string()),
                path: None,
                detail: format!("served version {name} is dropped from spec.versions"),
            }),
            Some(n) if !served(n) => out.push(Finding {
                rule: Rule::ServedVersionRemoved,
                version: Some(name.to_string()),
                path: None,
                detail: format!("version {name} is no longer served (served: false)"),
            }),
            Some(_) => {}
        }
    }
    for v in &old_versions {
        let Some(name) = version_name(v) else {
            continue;
        };
        let (Some(new_v), Some(old_schema)) = (find(name), v.get("schema")) else {
            continue;
        };
        let (Some(old_s), Some(new_s)) = (
            old_schema.get("openAPIV3Schema"),
            new_v.get("schema").and_then(|s| s.get("openAPIV3Schema")),
        ) else {
            continue;
        };
        let mut found = Vec::new();
        compare_schema(old_s, new_s, "", &mut found);
        out.extend(found.into_iter().map(|(rule, path, detail)| Finding {
            rule,
            version: Some(name.to_string()),
            path: Some(path),
            detail,
        }));
    }
    let old_scope = text(old, "/spec/scope").unwrap_or("Namespaced");
    let new_scope = text(new, "/spec/scope").unwrap_or("Namespaced");
    if old_scope != new_scope {
        out.push(Finding {
            rule: Rule::ScopeChanged,
            version: None,
            path: None,
            detail: format!("spec.scope changes from {old_scope} to {new_scope}"),
        });
    }
    let old_strategy = text(old, "/spec/conversion/strategy").unwrap_or("None");
    let new_strategy = text(new, "/spec/conversion/strategy").unwrap_or("None");
    if old_strategy == "Webhook" && new_strategy != "Webhook" {
        out.push(Finding {
            rule: Rule::ConversionRemoved,
            version: None,
            path: None,
            detail: format!(
                "spec.conversion.strategy changes from Webhook to {new_strategy}: objects stored in one version can no longer be read in another"
            ),
        });
    }
    out
}

fn child(path: &str, name: &str) -> String {
    match path.is_empty() {
        true => name.to_string(),
        false => format!("{path}.{name}"),
    }
}

fn shown(path: &str) -> String {
    match path.is_empty() {
        true => "(root)".to_string(),
        false => path.to_string(),
    }
}

fn number(s: &Value, key: &str) -> Option<f64> {
    s.get(key).and_then(Value::as_f64)
}

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// A bound that may only grow (`max*`) or only shrink (`min*`) without narrowing;
/// `maximum` and `minimum` also narrow when made exclusive (`exclusiveMaximum`).
fn bound(
    old: &Value,
    new: &Value,
    key: &str,
    upper: bool,
    rule: Rule,
    path: &str,
    out: &mut Vec<(Rule, String, String)>,
) {
    let Some(n) = number(new, key) else {
        return;
    };
    let narrowed = match number(old, key) {
        None => true,
        Some(o) if upper => n < o,
        Some(o) => n > o,
    };
    let exclusive = format!("exclusive{}{}", &key[..1].to_uppercase(), &key[1..]);
    let made_exclusive = !flag(old, &exclusive) && flag(new, &exclusive);
    if narrowed || made_exclusive && number(old, key) == Some(n) {
        let was = number(old, key).map_or("unset".to_string(), |o| o.to_string());
        let why = if narrowed {
            format!("{key} {was} -> {n}")
        } else {
            format!("{key} {n} becomes exclusive")
        };
        out.push((rule, shown(path), why));
    }
}

fn compare_schema(old: &Value, new: &Value, path: &str, out: &mut Vec<(Rule, String, String)>) {
    let ty = |s: &Value| s.get("type").and_then(Value::as_str).map(str::to_string);
    if let (Some(o), Some(n)) = (ty(old), ty(new))
        && o != n
    {
        out.push((Rule::TypeChanged, shown(path), format!("type {o} -> {n}")));
        // Below a changed type nothing compares meaningfully.
        return;
    }
    let names = |s: &Value, key: &str| -> BTreeSet<String> {
        s.get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    for r in names(new, "required").difference(&names(old, "required")) {
        out.push((
            Rule::NewlyRequired,
            child(path, r),
            format!("{r} is newly required"),
        ));
    }
    if let Some(new_enum) = new.get("enum").and_then(Value::as_array) {
        match old.get("enum").and_then(Value::as_array) {
            None => out.push((
                Rule::EnumNarrowed,
                shown(path),
                format!(
                    "enum added: only {} allowed",
                    Value::Array(new_enum.clone())
                ),
            )),
            Some(old_enum) => {
                let dropped: Vec<&Value> =
                    old_enum.iter().filter(|v| !new_enum.contains(v)).collect();
                if !dropped.is_empty() {
                    let list: Vec<String> = dropped.iter().map(|v| v.to_string()).collect();
                    out.push((
                        Rule::EnumNarrowed,
                        shown(path),
                        format!("enum drops {}", list.join(", ")),
                    ));
                }
            }
        }
    }
    for (key, upper, rule) in [
        ("maximum", true, Rule::MaximumNarrowed),
        ("minimum", false, Rule::MinimumNarrowed),
        ("maxLength", true, Rule::MaxLengthNarrowed),
        ("minLength", false, Rule::MinLengthNarrowed),
        ("maxItems", true, Rule::MaxItemsNarrowed),
        ("minItems", false, Rule::MinItemsNarrowed),
        ("maxProperties", true, Rule::MaxPropertiesNarrowed),
    ] {
        bound(old, new, key, upper, rule, path, out);
    }
    if let Some(p) = new.get("pattern").and_then(Value::as_str) {
        let was = old.get("pattern").and_then(Value::as_str);
        if was != Some(p) {
            out.push((
                Rule::PatternChanged,
                shown(path),
                match was {
                    Some(w) => format!("pattern {w:?} -> {p:?}"),
                    None => format!("pattern {p:?} added"),
                },
            ));
        }
    }
    if let (Some(op), Some(np)) = (
        old.get("properties").and_then(Value::as_object),
        new.get("properties").and_then(Value::as_object),
    ) {
        for (name, o) in op {
            if let Some(n) = np.get(name) {
                compare_schema(o, n, &child(path, name), out);
            }
        }
    }
    if let (Some(o), Some(n)) = (old.get("items"), new.get("items")) {
        compare_schema(o, n, &format!("{path}[*]"), out);
    }
    if let (Some(o), Some(n)) = (
        old.get("additionalProperties").filter(|v| v.is_object()),
        new.get("additionalProperties").filter(|v| v.is_object()),
    ) {
        compare_schema(o, n, &child(path, "*"), out);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn crd(versions: Value, stored: &[&str]) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": versions},
            "status": {"storedVersions": stored},
        })
    }

    fn version(name: &str, served: bool, spec: Value) -> Value {
        json!({"name": name, "served": served, "storage": true,
               "schema": {"openAPIV3Schema": {"type": "object",
                   "properties": {"spec": spec}}}})
    }

    fn rules(old: &Value, new: &Value) -> Vec<(Rule, Option<String>)> {
        compare(old, new)
            .into_iter()
            .map(|f| (f.rule, f.path))
            .collect()
    }

    fn spec(properties: Value) -> Value {
        json!({"type": "object", "properties": properties})
    }

    #[test]
    fn the_same_crd_is_safe_and_widening_is_safe() {
        let old = crd(
            json!([version(
                "v1",
                true,
                spec(
                    json!({"size": {"type": "integer", "maximum": 5, "minimum": 1},
                            "mode": {"type": "string", "enum": ["a", "b"], "maxLength": 3}})
                )
            )]),
            &["v1"],
        );
        assert!(compare(&old, &old).is_empty());
        let wider = crd(
            json!([version(
                "v1",
                true,
                spec(json!({"size": {"type": "integer", "maximum": 9},
                            "mode": {"type": "string", "enum": ["a", "b", "c"]},
                            "new": {"type": "string"}}))
            )]),
            &[],
        );
        assert!(
            compare(&old, &wider).is_empty(),
            "{:?}",
            compare(&old, &wider)
        );
    }

    #[test]
    fn a_stored_version_dropped_is_found_without_objects() {
        let old = crd(
            json!([
                version("v1alpha1", true, spec(json!({}))),
                version("v1", true, spec(json!({})))
            ]),
            &["v1alpha1", "v1"],
        );
        let new = crd(json!([version("v1", true, spec(json!({})))]), &[]);
        let found = compare(&old, &new);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].rule, Rule::StoredVersionRemoved);
        assert_eq!(found[0].version.as_deref(), Some("v1alpha1"));
        assert!(!found[0].rule.needs_objects());
    }

    #[test]
    fn a_served_version_dropped_or_unserved_is_found() {
        let old = crd(
            json!([
                version("v1beta1", true, spec(json!({}))),
                version("v1", true, spec(json!({})))
            ]),
            &["v1"],
        );
        let dropped = crd(json!([version("v1", true, spec(json!({})))]), &[]);
        assert_eq!(rules(&old, &dropped), [(Rule::ServedVersionRemoved, None)]);
        let unserved = crd(
            json!([
                version("v1beta1", false, spec(json!({}))),
                version("v1", true, spec(json!({})))
            ]),
            &[],
        );
        assert_eq!(rules(&old, &unserved), [(Rule::ServedVersionRemoved, None)]);
    }

    #[test]
    fn field_rules_name_the_path() {
        let old = crd(
            json!([version(
                "v1",
                true,
                spec(json!({
                    "size": {"type": "integer", "maximum": 10, "minimum": 0},
                    "name": {"type": "string", "maxLength": 20, "pattern": "^[a-z]+$"},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "ports": {"type": "array", "maxItems": 5,
                              "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
                }))
            )]),
            &["v1"],
        );
        let new = crd(
            json!([version(
                "v1",
                true,
                json!({"type": "object", "required": ["mode"], "properties": {
                    "size": {"type": "integer", "maximum": 8, "minimum": 1},
                    "name": {"type": "string", "maxLength": 10, "pattern": "^[a-z0-9]+$"},
                    "mode": {"type": "string", "enum": ["a"]},
                    "ports": {"type": "array", "maxItems": 3,
                              "items": {"type": "object", "properties": {"port": {"type": "string"}}}},
                }})
            )]),
            &["v1"],
        );
        let mut got = rules(&old, &new);
        got.sort();
        let p = |s: &str| Some(s.to_string());
        assert_eq!(
            got,
            [
                (Rule::TypeChanged, p("spec.ports[*].port")),
                (Rule::NewlyRequired, p("spec.mode")),
                (Rule::EnumNarrowed, p("spec.mode")),
                (Rule::MaximumNarrowed, p("spec.size")),
                (Rule::MinimumNarrowed, p("spec.size")),
                (Rule::MaxLengthNarrowed, p("spec.name")),
                (Rule::PatternChanged, p("spec.name")),
                (Rule::MaxItemsNarrowed, p("spec.ports")),
            ]
        );
    }

    #[test]
    fn a_bound_made_exclusive_narrows_it() {
        let old = crd(
            json!([version(
                "v1",
                true,
                spec(json!({"n": {"type": "integer", "maximum": 3}}))
            )]),
            &["v1"],
        );
        let new = crd(
            json!([version(
                "v1",
                true,
                spec(json!({"n": {"type": "integer", "maximum": 3, "exclusiveMaximum": true}}))
            )]),
            &["v1"],
        );
        assert_eq!(
            rules(&old, &new),
            [(Rule::MaximumNarrowed, Some("spec.n".into()))]
        );
    }

    #[test]
    fn scope_and_conversion() {
        let mut old = crd(json!([version("v1", true, spec(json!({})))]), &["v1"]);
        old["spec"]["conversion"] = json!({"strategy": "Webhook"});
        let mut new = old.clone();
        new["spec"]["scope"] = json!("Cluster");
        new["spec"]["conversion"] = json!({"strategy": "None"});
        let got = rules(&old, &new);
        assert_eq!(
            got,
            [(Rule::ScopeChanged, None), (Rule::ConversionRemoved, None)]
        );
    }
}
