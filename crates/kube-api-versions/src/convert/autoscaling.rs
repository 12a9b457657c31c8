//! `autoscaling/v2beta1` and `autoscaling/v2beta2` HorizontalPodAutoscaler ->
//! `autoscaling/v2` (v2beta1 also -> `v2beta2`, for clusters before 1.23).
//!
//! v2beta2 has the same shape as v2. v2beta1 spelled each metric's target as flat
//! fields (`targetAverageUtilization`, `targetAverageValue`, `targetValue`) next to
//! `metricName`/`selector`; v2beta2 and v2 group them as `metric: {name, selector}` and
//! `target: {type, averageUtilization | averageValue | value}`.

use serde_json::{Map, Value, json};

use super::{ConvertError, Cx};

pub(super) fn horizontal_pod_autoscaler(
    cx: &mut Cx,
    root: &mut Map<String, Value>,
) -> Result<(), ConvertError> {
    if cx.from != "autoscaling/v2beta1" {
        return Ok(());
    }
    // Status is written by the controller in the new shape; a template's copy of it
    // would not convert meaningfully.
    if root.remove("status").is_some_and(|v| !v.is_null()) {
        cx.note("status is written by the controller; dropped");
    }
    let Some(spec) = cx.object(root, "spec", "spec")? else {
        return Ok(());
    };
    for (i, metric) in cx
        .objects(spec, "metrics", "spec.metrics")?
        .into_iter()
        .enumerate()
    {
        convert_metric(cx, metric, &format!("spec.metrics[{i}]"))?;
    }
    Ok(())
}

fn convert_metric(
    cx: &Cx,
    metric: &mut Map<String, Value>,
    path: &str,
) -> Result<(), ConvertError> {
    let kind = cx
        .string(metric, "type", &format!("{path}.type"))?
        .ok_or_else(|| cx.err(format!("{path}.type is missing")))?
        .to_string();
    // The source sits under the lower-camel-case form of its type.
    let key = match kind.as_str() {
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        other => {
            return Err(cx.err(format!("{path}.type {other:?} is not a metric type")));
        }
    };
    let at = format!("{path}.{key}");
    let Some(source) = cx.object(metric, key, &at)? else {
        return Err(cx.err(format!("{at} is missing")));
    };
    let old = std::mem::take(source);
    let mut take = |k: &str| old.get(k).filter(|v| !v.is_null()).cloned();
    let target = match kind.as_str() {
        "Resource" | "ContainerResource" => {
            for k in ["name", "container"] {
                if let Some(v) = take(k) {
                    source.insert(k.to_string(), v);
                }
            }
            match (take("targetAverageUtilization"), take("targetAverageValue")) {
                (Some(u), _) => json!({"type": "Utilization", "averageUtilization": u}),
                (None, Some(v)) => json!({"type": "AverageValue", "averageValue": v}),
                (None, None) => {
                    return Err(cx.err(format!(
                        "{at} has neither targetAverageUtilization nor targetAverageValue"
                    )));
                }
            }
        }
        "Pods" => {
            source.insert("metric".to_string(), metric_id(&mut take, "selector"));
            match take("targetAverageValue") {
                Some(v) => json!({"type": "AverageValue", "averageValue": v}),
                None => return Err(cx.err(format!("{at}.targetAverageValue is missing"))),
            }
        }
        "Object" => {
            if let Some(reference) = take("target") {
                source.insert("describedObject".to_string(), reference);
            }
            source.insert("metric".to_string(), metric_id(&mut take, "selector"));
            match (take("averageValue"), take("targetValue")) {
                (Some(v), _) => json!({"type": "AverageValue", "averageValue": v}),
                (None, Some(v)) => json!({"type": "Value", "value": v}),
                (None, None) => return Err(cx.err(format!("{at}.targetValue is missing"))),
            }
        }
        // "External": the only other key the match above lets through.
        _ => {
            source.insert("metric".to_string(), metric_id(&mut take, "metricSelector"));
            match (take("targetAverageValue"), take("targetValue")) {
                (Some(v), _) => json!({"type": "AverageValue", "averageValue": v}),
                (None, Some(v)) => json!({"type": "Value", "value": v}),
                (None, None) => {
                    return Err(cx.err(format!(
                        "{at} has neither targetValue nor targetAverageValue"
                    )));
                }
            }
        }
    };
    source.insert("target".to_string(), target);
    Ok(())
}

/// `{name: metricName, selector}` from a v2beta1 source.
fn metric_id(take: &mut impl FnMut(&str) -> Option<Value>, selector_key: &str) -> Value {
    let mut id = Map::new();
    if let Some(name) = take("metricName") {
        id.insert("name".to_string(), name);
    }
    if let Some(selector) = take(selector_key) {
        id.insert("selector".to_string(), selector);
    }
    Value::Object(id)
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::json;

    // HorizontalPodAutoscaler autoscaling/v2beta1 (MetricSpec with targetAverageUtilization, targetAverageValue,
    // targetValue, metricName, metricSelector): kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#metricspec-v2beta1-autoscaling;
    // v2 (MetricIdentifier, MetricTarget): kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#metricspec-v2-autoscaling
    #[test]
    fn v2beta1_metrics_become_metric_and_target() {
        let hpa = json!({
            "apiVersion": "autoscaling/v2beta1",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "flink-tm"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "flink-tm"},
                "minReplicas": 2,
                "maxReplicas": 10,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "cpu", "targetAverageUtilization": 70}},
                    {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "1Gi"}},
                    {"type": "Pods", "pods": {"metricName": "records_in", "targetAverageValue": "1k"}},
                    {"type": "Object", "object": {
                        "target": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                        "metricName": "requests-per-second", "targetValue": "2k"}},
                    {"type": "External", "external": {
                        "metricName": "queue_messages_ready",
                        "metricSelector": {"matchLabels": {"queue": "worker_tasks"}},
                        "targetAverageValue": 30}}
                ]
            }
        });
        let out = convert(&hpa, "autoscaling/v2").unwrap();
        assert_eq!(out.object["apiVersion"], "autoscaling/v2");
        assert_eq!(
            out.object["spec"]["scaleTargetRef"],
            hpa["spec"]["scaleTargetRef"]
        );
        assert_eq!(
            out.object["spec"]["metrics"],
            json!([
                {"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 70}}},
                {"type": "Resource", "resource": {"name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "records_in"},
                    "target": {"type": "AverageValue", "averageValue": "1k"}}},
                {"type": "Object", "object": {
                    "describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"},
                    "metric": {"name": "requests-per-second"},
                    "target": {"type": "Value", "value": "2k"}}},
                {"type": "External", "external": {
                    "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": "worker_tasks"}}},
                    "target": {"type": "AverageValue", "averageValue": 30}}}
            ])
        );
        assert!(out.notes.is_empty());
        // The same rule serves v2beta2 on clusters before 1.23.
        let beta2 = convert(&hpa, "autoscaling/v2beta2").unwrap();
        assert_eq!(
            beta2.object["spec"]["metrics"],
            out.object["spec"]["metrics"]
        );
    }

    // HorizontalPodAutoscaler autoscaling/v2beta2: kubernetes.io/docs/reference/generated/kubernetes-api/v1.25/#horizontalpodautoscaler-v2beta2-autoscaling;
    // v2: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#horizontalpodautoscaler-v2-autoscaling
    #[test]
    fn v2beta2_only_swaps_the_version() {
        let hpa = json!({
            "apiVersion": "autoscaling/v2beta2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "maxReplicas": 5,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}
            }
        });
        let out = convert(&hpa, "autoscaling/v2").unwrap();
        let mut expected = hpa.clone();
        expected["apiVersion"] = json!("autoscaling/v2");
        assert_eq!(out.object, expected);
    }

    #[test]
    fn a_metric_without_a_target_is_an_error() {
        let hpa = json!({
            "apiVersion": "autoscaling/v2beta1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "x"},
            "spec": {"maxReplicas": 2, "metrics": [{"type": "Resource", "resource": {"name": "cpu"}}]}
        });
        let err = convert(&hpa, "autoscaling/v2").unwrap_err();
        assert!(err.message.contains("spec.metrics[0].resource"), "{err}");
    }

    // ContainerResourceMetricSource autoscaling/v2beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#containerresourcemetricsource-v2beta1-autoscaling;
    // v2: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#containerresourcemetricsource-v2-autoscaling
    #[test]
    fn container_resource_metric_keeps_the_container() {
        let hpa = json!({
            "apiVersion": "autoscaling/v2beta1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"maxReplicas": 4, "metrics": [{"type": "ContainerResource", "containerResource":
                {"name": "cpu", "container": "app", "targetAverageUtilization": 60}}]}
        });
        let out = convert(&hpa, "autoscaling/v2").unwrap();
        assert_eq!(
            out.object["spec"]["metrics"][0]["containerResource"],
            json!({"name": "cpu", "container": "app",
                   "target": {"type": "Utilization", "averageUtilization": 60}})
        );
    }
}
