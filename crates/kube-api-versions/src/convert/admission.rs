//! `admissionregistration.k8s.io/v1beta1` Mutating/ValidatingWebhookConfiguration ->
//! `admissionregistration.k8s.io/v1`.
//!
//! The fields are the same; v1 changed defaults and made two fields required. From
//! the API reference of both versions:
//!
//! | field                     | v1beta1 default | v1                          |
//! |---------------------------|-----------------|-----------------------------|
//! | `failurePolicy`           | `Ignore`        | default `Fail`              |
//! | `matchPolicy`             | `Exact`         | default `Equivalent`        |
//! | `timeoutSeconds`          | 30              | default 10                  |
//! | `admissionReviewVersions` | `["v1beta1"]`   | required                    |
//! | `sideEffects`             | `Unknown`       | required, `None` or `NoneOnDryRun` only |
//!
//! The old defaults are written where unset, so the webhook is called as before.
//! `sideEffects` cannot keep `Unknown`/`Some`; it becomes `None`, with a note: the only
//! difference is that dry-run requests now reach the webhook instead of being rejected.

use serde_json::{Map, Value, json};

use super::{ConvertError, Cx, set_default};

pub(super) fn webhook_configuration(
    cx: &mut Cx,
    root: &mut Map<String, Value>,
) -> Result<(), ConvertError> {
    let mut notes = Vec::new();
    for (i, webhook) in cx
        .objects(root, "webhooks", "webhooks")?
        .into_iter()
        .enumerate()
    {
        let name = match webhook.get("name").and_then(Value::as_str) {
            Some(name) => format!("webhook {name:?}"),
            None => format!("webhooks[{i}]"),
        };
        let mut kept = Vec::new();
        for (key, value, shown) in [
            ("failurePolicy", json!("Ignore"), "failurePolicy: Ignore"),
            ("matchPolicy", json!("Exact"), "matchPolicy: Exact"),
            ("timeoutSeconds", json!(30), "timeoutSeconds: 30"),
            (
                "admissionReviewVersions",
                json!(["v1beta1"]),
                "admissionReviewVersions: [v1beta1]",
            ),
        ] {
            if set_default(webhook, key, value) {
                kept.push(shown);
            }
        }
        if !kept.is_empty() {
            notes.push(format!(
                "{name}: wrote the v1beta1 defaults v1 does not share: {}",
                kept.join(", ")
            ));
        }
        let side_effects = cx.string(
            webhook,
            "sideEffects",
            &format!("webhooks[{i}].sideEffects"),
        )?;
        let replaced = match side_effects {
            None => Some("unset (Unknown)".to_string()),
            Some(s @ ("Unknown" | "Some")) => Some(s.to_string()),
            Some(_) => None,
        };
        if let Some(was) = replaced {
            webhook.insert("sideEffects".to_string(), json!("None"));
            notes.push(format!(
                "{name}: sideEffects {was} is not allowed in v1; wrote None, so dry-run \
                 requests now reach this webhook instead of being rejected"
            ));
        }
    }
    for note in notes {
        cx.note(note);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::json;

    // ValidatingWebhookConfiguration admissionregistration.k8s.io/v1beta1 (defaults Ignore, Exact, 30, [v1beta1], Unknown):
    // kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#validatingwebhook-v1beta1-admissionregistration-k8s-io;
    // v1 (Fail, Equivalent, 10, admissionReviewVersions and sideEffects required):
    // kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#validatingwebhook-v1-admissionregistration-k8s-io
    #[test]
    fn old_defaults_are_written_explicitly() {
        let cfg = json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "kudo-manager-instance-admission-webhook-config"},
            "webhooks": [{
                "name": "instance-admission.kudo.dev",
                "clientConfig": {"service": {"name": "kudo-controller-manager-service", "namespace": "kudo-system", "path": "/admit-kudo-dev-v1beta1-instance"}},
                "rules": [{"apiGroups": ["kudo.dev"], "apiVersions": ["v1beta1"], "operations": ["CREATE", "UPDATE"], "resources": ["instances"]}]
            }]
        });
        let out = convert(&cfg, "admissionregistration.k8s.io/v1").unwrap();
        let hook = &out.object["webhooks"][0];
        assert_eq!(hook["failurePolicy"], "Ignore");
        assert_eq!(hook["matchPolicy"], "Exact");
        assert_eq!(hook["timeoutSeconds"], 30);
        assert_eq!(hook["admissionReviewVersions"], json!(["v1beta1"]));
        assert_eq!(hook["sideEffects"], "None");
        assert_eq!(hook["clientConfig"], cfg["webhooks"][0]["clientConfig"]);
        assert_eq!(out.notes.len(), 2, "{:?}", out.notes);
    }

    // MutatingWebhookConfiguration v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#mutatingwebhook-v1beta1-admissionregistration-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#mutatingwebhook-v1-admissionregistration-k8s-io
    #[test]
    fn explicit_settings_are_kept() {
        let cfg = json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "istio-sidecar-injector"},
            "webhooks": [{
                "name": "sidecar-injector.istio.io",
                "clientConfig": {"url": "https://injector.example.com/inject", "caBundle": "Q0E="},
                "failurePolicy": "Fail", "matchPolicy": "Equivalent", "timeoutSeconds": 5,
                "admissionReviewVersions": ["v1", "v1beta1"], "sideEffects": "NoneOnDryRun",
                "reinvocationPolicy": "IfNeeded"
            }]
        });
        let out = convert(&cfg, "admissionregistration.k8s.io/v1").unwrap();
        let mut expected = cfg.clone();
        expected["apiVersion"] = json!("admissionregistration.k8s.io/v1");
        assert_eq!(out.object, expected);
        assert!(out.notes.is_empty());
    }
}
