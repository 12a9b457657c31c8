//! `policy/v1beta1` PodDisruptionBudget -> `policy/v1`.

use serde_json::{Map, Value};

use super::{ConvertError, Cx};

/// The fields are the same; what differs is the meaning of an empty selector, which
/// v1beta1 read as "no pods" and v1 reads as "every pod in the namespace". The written
/// selector is kept (the author asked for it), and the change is reported.
pub(super) fn pod_disruption_budget(
    cx: &mut Cx,
    root: &mut Map<String, Value>,
) -> Result<(), ConvertError> {
    let Some(spec) = cx.object(root, "spec", "spec")? else {
        return Ok(());
    };
    let Some(selector) = cx.object(spec, "selector", "spec.selector")? else {
        return Ok(());
    };
    let empty = |key: &str| match selector.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if empty("matchLabels") && empty("matchExpressions") {
        cx.note(
            "spec.selector is empty: policy/v1beta1 read that as selecting no pods, policy/v1 \
             reads it as selecting every pod in the namespace; kept as written",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::json;

    // PodDisruptionBudget v1beta1 policy: kubernetes.io/docs/reference/generated/kubernetes-api/v1.24/#poddisruptionbudget-v1beta1-policy;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#poddisruptionbudget-v1-policy
    #[test]
    fn zookeeper_pdb_moves_to_v1_unchanged() {
        let pdb = json!({
            "apiVersion": "policy/v1beta1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "zk-pdb", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "zk"}}, "maxUnavailable": 1}
        });
        let out = convert(&pdb, "policy/v1").unwrap();
        let mut expected = pdb.clone();
        expected["apiVersion"] = json!("policy/v1");
        assert_eq!(out.object, expected);
        assert!(out.notes.is_empty());
    }

    // Same pages as above: the empty-selector meaning is in the v1 spec.selector description.
    #[test]
    fn empty_selector_is_kept_with_a_note() {
        let pdb = json!({
            "apiVersion": "policy/v1beta1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "all"},
            "spec": {"selector": {}, "minAvailable": "50%"}
        });
        let out = convert(&pdb, "policy/v1").unwrap();
        assert_eq!(out.object["spec"]["selector"], json!({}));
        assert_eq!(out.notes.len(), 1);
        assert!(out.notes[0].contains("every pod"), "{:?}", out.notes);
    }

    #[test]
    fn selector_of_the_wrong_type_is_an_error() {
        let pdb = json!({
            "apiVersion": "policy/v1beta1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "bad"},
            "spec": {"selector": "app=zk"}
        });
        let err = convert(&pdb, "policy/v1").unwrap_err();
        assert!(err.message.contains("spec.selector"), "{err}");
    }
}
