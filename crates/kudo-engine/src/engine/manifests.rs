//! What `kudo_instance.manifests` shows of each object the instance manages after the
//! apply: the template's output (patches applied), before KUDO's labels and
//! annotations and before the API server defaults anything, so that an entry changes
//! only when the render does and a plan's line diff shows exactly the objects that
//! change. The YAML is yaml.v2's (sorted keys, block style), so the text is stable. A
//! Secret, or an object whose YAML carries a sensitive value, is the whole entry
//! [`REDACTED`]: the state never holds it and the diff never shows it.

use std::collections::BTreeMap;

use kudo_plan::change::{REDACTED, object_reveals};
use serde_json::Value;

use crate::cluster::ObjectRef;

/// Every object an instance manages after an apply, with where its content comes from:
/// what `kudo_instance.manifests` is made of ([`Manifests::entries`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifests(pub(crate) Vec<(ObjectRef, Source)>);

/// Where the content of an object managed after the apply comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Source {
    /// The pending run applies it: this render.
    Applied(Value),
    /// The run leaves it as it is: the prior state's entry when there is one, else this
    /// render of the last run's values (none when it cannot be known).
    Kept(Option<Value>),
}

/// One object's entry: its YAML, or [`REDACTED`].
pub fn manifest_entry(object: &Value, sensitive: &BTreeMap<String, String>) -> String {
    let yaml = kudo_yaml::to_yaml(object);
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match object_reveals(kind, &yaml, sensitive) {
        true => REDACTED.to_string(),
        false => yaml,
    }
}

impl Manifests {
    /// The entries of the objects managed after the apply, keyed as `objects` is
    /// ([`ObjectRef::qualified_label`]). An object the run leaves as it is keeps its `prior`
    /// entry (a render of other values would show a change that does not happen); one
    /// whose content cannot be known is left out rather than guessed.
    pub fn entries(
        &self,
        prior: &BTreeMap<String, String>,
        sensitive: &BTreeMap<String, String>,
    ) -> BTreeMap<String, String> {
        self.0
            .iter()
            .filter_map(|(r, source)| {
                let key = r.qualified_label();
                let text = match source {
                    Source::Applied(object) => Some(manifest_entry(object, sensitive)),
                    Source::Kept(render) => prior
                        .get(&key)
                        .cloned()
                        .or_else(|| render.as_ref().map(|o| manifest_entry(o, sensitive))),
                }?;
                Some((key, text))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::string_map as map;
    use serde_json::json;

    #[test]
    fn kept_objects_keep_their_prior_entry_and_unknown_ones_are_left_out() {
        let a = ObjectRef::new("v1", "ConfigMap", Some("ns"), "a");
        let b = ObjectRef::new("v1", "ConfigMap", Some("ns"), "b");
        let c = ObjectRef::new("rbac.authorization.k8s.io/v1", "ClusterRole", None, "c");
        let managed = Manifests(vec![
            (a, Source::Applied(json!({"kind": "ConfigMap", "x": 1}))),
            (b, Source::Kept(Some(json!({"kind": "ConfigMap", "x": 2})))),
            (c, Source::Kept(None)),
        ]);
        let prior = map(&[("ConfigMap ns/b", "old b\n")]);
        assert_eq!(
            managed.entries(&prior, &BTreeMap::new()),
            map(&[
                ("ConfigMap ns/a", "kind: ConfigMap\nx: 1\n"),
                ("ConfigMap ns/b", "old b\n"),
            ])
        );
    }

    #[test]
    fn secrets_and_objects_carrying_a_sensitive_value_are_redacted_whole() {
        let secret = map(&[("PASSWORD", "hunter2")]);
        let s = json!({"kind": "Secret", "data": {"a": "eA=="}});
        assert_eq!(manifest_entry(&s, &BTreeMap::new()), REDACTED);
        let cm = json!({"kind": "ConfigMap", "data": {"url": "x:hunter2@h"}});
        assert_eq!(manifest_entry(&cm, &secret), REDACTED);
        let plain = json!({"kind": "ConfigMap", "data": {"url": "h:80"}});
        assert_eq!(
            manifest_entry(&plain, &secret),
            "data:\n  url: h:80\nkind: ConfigMap\n"
        );
    }
}
