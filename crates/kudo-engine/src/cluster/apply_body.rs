//! The body of a server-side apply. kube-rs sends it as JSON, which the API server reads
//! with its YAML parser (an apply patch is `application/apply-patch+yaml`). YAML ends an
//! implicit key at 1024 characters, and every JSON key is implicit, so an object with a
//! longer key (an OperatorVersion's `templates` entry for a deep template path) fails
//! with "did not find expected ',' or '}'". Such a body is sent as YAML instead, where
//! the emitter writes long keys as explicit `? ` keys, which the parser reads whole.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::Value;

/// The longest implicit key a YAML 1.1 parser accepts (libyaml, go-yaml).
const YAML_IMPLICIT_KEY_LIMIT: usize = 1024;

/// Whether any key of `v`, at any depth, is longer than YAML's implicit key limit.
fn has_long_key(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| k.len() > YAML_IMPLICIT_KEY_LIMIT || has_long_key(v)),
        Value::Array(items) => items.iter().any(has_long_key),
        _ => false,
    }
}

/// `api.patch(name, pp, &Patch::Apply(body))`, with a YAML body when JSON would not
/// be read back.
pub(super) async fn apply(
    api: &Api<DynamicObject>,
    name: &str,
    pp: &PatchParams,
    body: &Value,
) -> kube::Result<DynamicObject> {
    if !has_long_key(body) {
        return api.patch(name, pp, &Patch::Apply(body)).await;
    }
    let mut request = kube::core::Request::new(api.resource_url())
        .patch(name, pp, &Patch::Apply(body))
        .map_err(kube::Error::BuildRequest)?;
    *request.body_mut() = kudo_yaml::to_yaml(body).into_bytes();
    api.clone().into_client().request(request).await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_keys_over_yamls_limit_count_at_any_depth() {
        let long = "t".repeat(YAML_IMPLICIT_KEY_LIMIT + 1);
        let limit = "t".repeat(YAML_IMPLICIT_KEY_LIMIT);
        assert!(has_long_key(
            &json!({"spec": {"templates": {long.clone(): "x"}}})
        ));
        assert!(has_long_key(&json!({"items": [{long.clone(): 1}]})));
        assert!(!has_long_key(&json!({"spec": {"templates": {limit: "x"}}})));
        // A long value is not a key.
        assert!(!has_long_key(&json!({"data": long})));
    }

    #[test]
    fn the_yaml_body_reads_back_as_the_object() {
        let long = format!("{}/cm.yaml", "d".repeat(1500));
        let body =
            json!({"apiVersion": "v1", "kind": "X", "spec": {"templates": {long: "a: 1\n"}}});
        let text = kudo_yaml::to_yaml(&body);
        assert_eq!(kudo_yaml::to_json(&text).expect("YAML"), body);
    }
}
