//! Every built-in conversion of `kube-api-versions` yields an object the stand-in's
//! validation for the target version accepts, on the current release and on 1.24: the
//! same checks a real API server makes on create (required fields, selector agreement,
//! structural CRD schemas, Ingress backends, ...).

use kube_api_versions::{CURRENT, Release, Translator};
use kube_sim::check_object;
use serde_json::{Value, json};

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": "ns"})
}

/// Objects as 2016-2021 packages wrote them, one per removed group/version/kind family.
fn legacy_objects() -> Vec<Value> {
    let pod = json!({"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
    let mut out = vec![
        json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": meta("pdb"),
               "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "Role", "metadata": meta("r"),
               "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "crb"},
               "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "ns"}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}}),
        json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "gadgets.legacy.kudo.dev"},
               "spec": {"group": "legacy.kudo.dev", "version": "v1beta1",
                        "names": {"kind": "Gadget", "plural": "gadgets"},
                        "subresources": {"status": {}},
                        "additionalPrinterColumns": [{"name": "Size", "type": "integer", "JSONPath": ".spec.size"}],
                        "validation": {"openAPIV3Schema": {"properties": {"spec": {"properties": {
                            "size": {"type": "integer"}, "tags": {"items": {"type": "string"}}}}}}}}}),
        json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "things.legacy.kudo.dev"},
               "spec": {"group": "legacy.kudo.dev", "scope": "Cluster",
                        "names": {"kind": "Thing", "plural": "things"},
                        "versions": [{"name": "v1alpha1", "served": true, "storage": false},
                                     {"name": "v1beta1", "served": true, "storage": true}]}}),
        json!({"apiVersion": "batch/v1beta1", "kind": "CronJob", "metadata": meta("cj"),
               "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
                   "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        json!({"apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": meta("ing"),
               "spec": {"backend": {"serviceName": "web", "servicePort": "http"},
                        "rules": [{"host": "a.example", "http": {"paths": [
                            {"path": "/", "backend": {"serviceName": "web", "servicePort": 80}}]}}]}}),
        json!({"apiVersion": "networking.k8s.io/v1beta1", "kind": "Ingress", "metadata": meta("ing2"),
               "spec": {"rules": [{"http": {"paths": [
                   {"path": "/x", "pathType": "Prefix", "backend": {"serviceName": "web", "servicePort": "8080"}}]}}]}}),
        json!({"apiVersion": "extensions/v1beta1", "kind": "NetworkPolicy", "metadata": meta("np"),
               "spec": {"podSelector": {"matchLabels": {"app": "web"}}, "ingress": [{}]}}),
        json!({"apiVersion": "autoscaling/v2beta1", "kind": "HorizontalPodAutoscaler", "metadata": meta("hpa"),
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                        "maxReplicas": 3, "metrics": [
                            {"type": "Resource", "resource": {"name": "cpu", "targetAverageUtilization": 80}},
                            {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}]}}),
        json!({"apiVersion": "autoscaling/v2beta2", "kind": "HorizontalPodAutoscaler", "metadata": meta("hpa2"),
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                        "maxReplicas": 3, "metrics": [{"type": "Resource", "resource": {"name": "memory",
                            "target": {"type": "AverageValue", "averageValue": "100Mi"}}}]}}),
        json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PriorityClass", "metadata": {"name": "high"},
               "value": 1000}),
        json!({"apiVersion": "storage.k8s.io/v1beta1", "kind": "StorageClass", "metadata": {"name": "fast"},
               "provisioner": "example.com/fast"}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "ValidatingWebhookConfiguration",
               "metadata": {"name": "vwc"},
               "webhooks": [{"name": "check.example.com",
                             "clientConfig": {"service": {"name": "hook", "namespace": "ns"}},
                             "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingWebhookConfiguration",
               "metadata": {"name": "mwc"},
               "webhooks": [{"name": "mutate.example.com", "sideEffects": "Unknown",
                             "clientConfig": {"url": "https://hook.example.com/mutate"}}]}),
        json!({"apiVersion": "coordination.k8s.io/v1beta1", "kind": "Lease", "metadata": meta("lease"),
               "spec": {"holderIdentity": "a"}}),
    ];
    for (api_version, kind) in [
        ("apps/v1beta1", "Deployment"),
        ("apps/v1beta2", "Deployment"),
        ("extensions/v1beta1", "Deployment"),
        ("apps/v1beta1", "StatefulSet"),
        ("apps/v1beta2", "StatefulSet"),
        ("extensions/v1beta1", "DaemonSet"),
        ("apps/v1beta2", "DaemonSet"),
        ("extensions/v1beta1", "ReplicaSet"),
    ] {
        let mut spec = json!({"template": pod.clone()});
        if kind == "StatefulSet" {
            spec["serviceName"] = json!("web");
        }
        out.push(json!({"apiVersion": api_version, "kind": kind,
                        "metadata": meta(&format!("{}-{}", kind.to_lowercase(), api_version.replace('/', "-"))),
                        "spec": spec}));
    }
    out
}

/// Converts what `release` does not serve and checks the result as that release would.
fn check_release(release: Release) {
    let translator = Translator::default();
    let mut converted = 0;
    for obj in legacy_objects() {
        let what = format!("{} {}", obj["apiVersion"], obj["kind"]);
        let served = |v: &str, k: &str| release.serves(v, k).unwrap_or(true);
        let result = match translator.translate(&obj, served) {
            Ok(Some(t)) => {
                converted += 1;
                // As written, the release refuses it: the conversion is what makes it pass.
                assert!(
                    check_object(release, &obj).is_err(),
                    "{what} is served by {release} as written"
                );
                t.object
            }
            Ok(None) => obj.clone(),
            Err(e) => panic!("{what} on {release}: {e}"),
        };
        if let Err(e) = check_object(release, &result) {
            panic!("{what} converted for {release} is rejected: {e}\n{result:#}");
        }
    }
    assert!(converted > 0, "nothing needed converting for {release}");
}

#[test]
fn every_conversion_is_accepted_by_the_current_release() {
    check_release(CURRENT);
}

#[test]
fn every_conversion_is_accepted_by_1_24() {
    check_release(Release { minor: 24 });
}
