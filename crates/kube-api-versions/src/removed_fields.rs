//! Fields Kubernetes removed from every object without a new API version. KUDO wrote
//! objects with JSON create/update, where the API server drops fields it does not know
//! (silently before 1.25, with a warning since); server-side apply types the whole patch
//! against the schema and refuses them instead. A package that worked under KUDO keeps
//! working when these fields are left out, with a plan warning naming each.

use serde_json::Value;

/// Where an `ObjectMeta` sits in an object: its own, and the templates of pods, jobs
/// and volume claims that workloads embed.
const META_PATHS: &[&str] = &[
    "/metadata",
    "/spec/template/metadata",
    "/spec/jobTemplate/metadata",
    "/spec/jobTemplate/spec/template/metadata",
];

/// `ObjectMeta.initializers`: alpha since 1.7, removed from the API in 1.14
/// (kubernetes/kubernetes#72972); no server since then knows the field.
const INITIALIZERS: &str = "initializers";
const INITIALIZERS_REMOVED_IN: u32 = 14;

/// Removes fields no served Kubernetes release knows any more; returns one note per
/// field removed, naming its path and the release that removed it.
pub fn strip_removed_fields(obj: &mut Value) -> Vec<String> {
    let mut notes = Vec::new();
    let mut paths: Vec<String> = META_PATHS.iter().map(|p| p.to_string()).collect();
    let claims = obj
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    paths.extend((0..claims).map(|i| format!("/spec/volumeClaimTemplates/{i}/metadata")));
    for path in paths {
        let Some(meta) = obj.pointer_mut(&path).and_then(Value::as_object_mut) else {
            continue;
        };
        if meta.remove(INITIALIZERS).is_some() {
            let dotted = path.trim_start_matches('/').replace('/', ".");
            notes.push(format!(
                "{dotted}.{INITIALIZERS}: Kubernetes removed this field in 1.{INITIALIZERS_REMOVED_IN}; \
                 left out, as the API servers of KUDO's time dropped it"
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn initializers_are_removed_wherever_object_meta_is() {
        let mut deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "spark", "initializers": {"pending": []}},
            "spec": {"template": {"metadata": {"labels": {"a": "b"}, "initializers": {"pending": []}},
                                  "spec": {"containers": []}}}
        });
        let notes = strip_removed_fields(&mut deployment);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[1].starts_with("spec.template.metadata.initializers"));
        assert_eq!(deployment["metadata"], json!({"name": "spark"}));
        assert_eq!(
            deployment["spec"]["template"]["metadata"],
            json!({"labels": {"a": "b"}})
        );
        let mut plain = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert!(strip_removed_fields(&mut plain).is_empty());
    }
}
