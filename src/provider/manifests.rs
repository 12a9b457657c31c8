//! `kudo_instance.show_manifests` and `manifests`: the objects the instance manages, as
//! the package renders them, so that Terraform's own plan shows a line diff of exactly
//! the objects that change.
//!
//! An entry is the template's output (patches applied), before KUDO's labels and
//! annotations and before the API server defaults or normalises anything: only what
//! the package says, so an entry changes only when the render does. Keys are those of
//! `objects` and `preview` (`Kind.group namespace/name`, `Kind name` when cluster-scoped
//! and in the core group);
//! the YAML is yaml.v2's (sorted keys, block style), so the text is stable. A Secret, or
//! an object whose YAML contains a sensitive value, is the whole entry
//! `(sensitive value)`: the state never holds it and the diff never shows it.

use std::collections::BTreeMap;

use serde_json::Value as Json;
use tfplugin::Value;

use kudo_engine::cluster::ObjectRef;

pub use kudo_engine::engine::Source;

use super::preview::qualified_label;
use super::sensitive::{REDACTED, reveals};

/// One object's entry: its YAML, or `(sensitive value)`.
pub fn entry(object: &Json, sensitive: &BTreeMap<String, String>) -> String {
    let yaml = kudo_yaml::to_yaml(object);
    let kind = object
        .get("kind")
        .and_then(Json::as_str)
        .unwrap_or_default();
    match reveals(kind, &yaml, sensitive) {
        true => REDACTED.to_string(),
        false => yaml,
    }
}

/// The `manifests` map of the objects managed after the apply. `prior` is the prior
/// state's map (null when it had none). An object whose content cannot be known is
/// left out rather than guessed.
pub fn value(
    managed: &[(ObjectRef, Source)],
    prior: &Value,
    sensitive: &BTreeMap<String, String>,
) -> Value {
    let prior = prior.to_string_map().ok().flatten().unwrap_or_default();
    let mut out = BTreeMap::new();
    for (r, source) in managed {
        let key = qualified_label(r);
        let text = match source {
            Source::Applied(object) => Some(entry(object, sensitive)),
            Source::Kept(render) => prior
                .get(&key)
                .cloned()
                .or_else(|| render.as_ref().map(|o| entry(o, sensitive))),
        };
        if let Some(text) = text {
            out.insert(key, Value::string(text));
        }
    }
    Value::map(out)
}

/// Whether manifests are wanted: the resource's `show_manifests`, else the provider's
/// default. `None` while the resource's setting is unknown.
pub fn wanted(show: &tfplugin::Attr<bool>, provider_default: bool) -> Option<bool> {
    match show {
        tfplugin::Attr::Unknown => None,
        other => Some(other.known().copied().unwrap_or(provider_default)),
    }
}

// Entries (sorted YAML, redaction) are checked through Terraform by
// `manifests::a_parameter_change_shows_exactly_its_lines_and_no_secret`; which text an
// object that was not applied gets is not visible in a plan, so it is checked here.
// Entries (sorted YAML, redaction) are checked through Terraform by
// `manifests::a_parameter_change_shows_exactly_its_lines_and_no_secret`; which text an
// object that was not applied gets is not visible in a plan, so it is checked here.
#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kept_objects_keep_their_prior_entry_and_unknown_ones_are_left_out() {
        let a = ObjectRef::new("v1", "ConfigMap", Some("ns"), "a");
        let b = ObjectRef::new("v1", "ConfigMap", Some("ns"), "b");
        let c = ObjectRef::new("rbac.authorization.k8s.io/v1", "ClusterRole", None, "c");
        let prior = Value::map([("ConfigMap ns/b".to_string(), Value::string("old b\n"))]);
        let managed = [
            (a, Source::Applied(json!({"kind": "ConfigMap", "x": 1}))),
            (b, Source::Kept(Some(json!({"kind": "ConfigMap", "x": 2})))),
            (c, Source::Kept(None)),
        ];
        let v = value(&managed, &prior, &BTreeMap::new());
        let map = v.to_string_map().ok().flatten().unwrap_or_default();
        assert_eq!(
            map,
            BTreeMap::from([
                (
                    "ConfigMap ns/a".to_string(),
                    "kind: ConfigMap\nx: 1\n".to_string()
                ),
                ("ConfigMap ns/b".to_string(), "old b\n".to_string()),
            ])
        );
    }
}
