//! `extensions/v1beta1` and `networking.k8s.io/v1beta1` Ingress -> `networking.k8s.io/v1`.
//!
//! (IngressClass and NetworkPolicy have the same fields in both versions and need no
//! rule; `extensions/v1beta1` Ingress -> `networking.k8s.io/v1beta1` is a plain
//! apiVersion swap too.)

use serde_json::{Map, Value, json};

use super::{ConvertError, Cx};

const V1: &str = "networking.k8s.io/v1";

/// v1 renames `backend` to `defaultBackend`, nests the service reference as
/// `service.{name, port.{number|name}}` and requires `pathType`, which v1beta1
/// defaulted to `ImplementationSpecific`.
pub(super) fn ingress(cx: &mut Cx, root: &mut Map<String, Value>) -> Result<(), ConvertError> {
    if cx.to != V1 {
        return Ok(());
    }
    let Some(spec) = cx.object(root, "spec", "spec")? else {
        return Ok(());
    };
    if let Some(backend) = spec.remove("backend") {
        if spec.contains_key("defaultBackend") {
            return Err(cx.err("spec has both backend and defaultBackend"));
        }
        if !backend.is_null() {
            spec.insert("defaultBackend".to_string(), backend);
        }
    }
    if let Some(backend) = cx.object(spec, "defaultBackend", "spec.backend")? {
        convert_backend(cx, backend, "spec.backend")?;
    }
    let mut defaulted = 0;
    for (r, rule) in cx
        .objects(spec, "rules", "spec.rules")?
        .into_iter()
        .enumerate()
    {
        let Some(http) = cx.object(rule, "http", &format!("spec.rules[{r}].http"))? else {
            continue;
        };
        let paths_path = format!("spec.rules[{r}].http.paths");
        for (p, path) in cx
            .objects(http, "paths", &paths_path)?
            .into_iter()
            .enumerate()
        {
            if super::set_default(path, "pathType", json!("ImplementationSpecific")) {
                defaulted += 1;
            }
            let at = format!("{paths_path}[{p}].backend");
            if let Some(backend) = cx.object(path, "backend", &at)? {
                convert_backend(cx, backend, &at)?;
            }
        }
    }
    if defaulted > 0 {
        cx.note(format!(
            "{defaulted} path(s) had no pathType; wrote ImplementationSpecific, the v1beta1 \
             default, which {V1} requires explicitly"
        ));
    }
    Ok(())
}

/// `{serviceName, servicePort}` -> `{service: {name, port: {number|name}}}`; a
/// `resource` backend is the same in both versions.
fn convert_backend(
    cx: &Cx,
    backend: &mut Map<String, Value>,
    path: &str,
) -> Result<(), ConvertError> {
    let name = backend.remove("serviceName");
    let port = backend.remove("servicePort");
    if name.is_none() && port.is_none() {
        return Ok(());
    }
    let name = match name {
        Some(Value::String(s)) if !s.is_empty() => s,
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err(cx.err(format!("{path}.servicePort is set without serviceName")));
        }
        Some(other) => {
            return Err(cx.err(format!(
                "{path}.serviceName must be a string, not {}",
                super::type_name(&other)
            )));
        }
    };
    let port = match port {
        None | Some(Value::Null) => {
            return Err(cx.err(format!(
                "{path}.servicePort is missing; {V1} requires a service port"
            )));
        }
        Some(Value::Number(n)) => match n.as_u64().filter(|n| (1..=65535).contains(n)) {
            Some(n) => json!({"number": n}),
            None => {
                return Err(cx.err(format!(
                    "{path}.servicePort {n} is not a port number (1-65535)"
                )));
            }
        },
        // IntOrString: a numeric string is the number, anything else a port name.
        Some(Value::String(s)) => match s.parse::<u64>() {
            Ok(n) if (1..=65535).contains(&n) => json!({"number": n}),
            Ok(_) => {
                return Err(cx.err(format!(
                    "{path}.servicePort {s:?} is not a port number (1-65535)"
                )));
            }
            Err(_) if !s.is_empty() => json!({"name": s}),
            Err(_) => return Err(cx.err(format!("{path}.servicePort is empty"))),
        },
        Some(other) => {
            return Err(cx.err(format!(
                "{path}.servicePort must be a number or a port name, not {}",
                super::type_name(&other)
            )));
        }
    };
    backend.insert("service".to_string(), json!({"name": name, "port": port}));
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::convert;
    use serde_json::json;

    // Ingress extensions/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#ingress-v1beta1-extensions
    // (IngressBackend serviceName/servicePort IntOrString, HTTPIngressPath pathType default ImplementationSpecific);
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#ingress-v1-networking-k8s-io
    // (defaultBackend, IngressServiceBackend, ServiceBackendPort name|number, pathType required)
    #[test]
    fn extensions_ingress_becomes_v1() {
        let ing = json!({
            "apiVersion": "extensions/v1beta1",
            "kind": "Ingress",
            "metadata": {"name": "kafka-ui", "annotations": {"kubernetes.io/ingress.class": "nginx"}},
            "spec": {
                "backend": {"serviceName": "default-http", "servicePort": 80},
                "tls": [{"hosts": ["ui.example.com"], "secretName": "ui-tls"}],
                "rules": [{
                    "host": "ui.example.com",
                    "http": {"paths": [
                        {"path": "/", "backend": {"serviceName": "kafka-ui", "servicePort": "http"}},
                        {"path": "/api", "pathType": "Prefix", "backend": {"serviceName": "kafka-api", "servicePort": "8080"}}
                    ]}
                }]
            }
        });
        let out = convert(&ing, "networking.k8s.io/v1").unwrap();
        assert_eq!(
            out.object,
            json!({
                "apiVersion": "networking.k8s.io/v1",
                "kind": "Ingress",
                "metadata": {"name": "kafka-ui", "annotations": {"kubernetes.io/ingress.class": "nginx"}},
                "spec": {
                    "defaultBackend": {"service": {"name": "default-http", "port": {"number": 80}}},
                    "tls": [{"hosts": ["ui.example.com"], "secretName": "ui-tls"}],
                    "rules": [{
                        "host": "ui.example.com",
                        "http": {"paths": [
                            {"path": "/", "pathType": "ImplementationSpecific",
                             "backend": {"service": {"name": "kafka-ui", "port": {"name": "http"}}}},
                            {"path": "/api", "pathType": "Prefix",
                             "backend": {"service": {"name": "kafka-api", "port": {"number": 8080}}}}
                        ]}
                    }]
                }
            })
        );
        assert_eq!(out.notes.len(), 1, "{:?}", out.notes);
    }

    // Ingress networking.k8s.io/v1beta1 (resource backend): kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#ingressbackend-v1beta1-networking-k8s-io;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#ingressbackend-v1-networking-k8s-io
    #[test]
    fn resource_backend_and_ingress_class_name_are_kept() {
        let ing = json!({
            "apiVersion": "networking.k8s.io/v1beta1",
            "kind": "Ingress",
            "metadata": {"name": "static"},
            "spec": {
                "ingressClassName": "nginx",
                "backend": {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static-assets"}},
                "rules": [{"http": {"paths": [{"path": "/", "pathType": "Exact",
                    "backend": {"serviceName": "web", "servicePort": 443}}]}}]
            }
        });
        let out = convert(&ing, "networking.k8s.io/v1").unwrap();
        assert_eq!(out.object["spec"]["defaultBackend"], ing["spec"]["backend"]);
        assert_eq!(out.object["spec"]["ingressClassName"], "nginx");
        assert_eq!(
            out.object["spec"]["rules"][0]["http"]["paths"][0]["backend"],
            json!({"service": {"name": "web", "port": {"number": 443}}})
        );
        assert!(out.notes.is_empty());
    }

    #[test]
    fn extensions_ingress_to_networking_v1beta1_only_swaps_the_version() {
        let ing = json!({
            "apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "a"},
            "spec": {"backend": {"serviceName": "web", "servicePort": 80}}
        });
        let out = convert(&ing, "networking.k8s.io/v1beta1").unwrap();
        let mut expected = ing.clone();
        expected["apiVersion"] = json!("networking.k8s.io/v1beta1");
        assert_eq!(out.object, expected);
    }

    #[test]
    fn bad_service_ports_are_errors() {
        for port in [
            json!({"number": 80}),
            json!(0),
            json!("70000"),
            json!(8.5),
            json!(""),
        ] {
            let ing = json!({
                "apiVersion": "extensions/v1beta1", "kind": "Ingress", "metadata": {"name": "bad"},
                "spec": {"backend": {"serviceName": "web", "servicePort": port}}
            });
            let err = convert(&ing, "networking.k8s.io/v1").unwrap_err();
            assert!(err.message.contains("servicePort"), "{port}: {err}");
        }
    }

    // IngressClass networking.k8s.io/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.21/#ingressclass-v1beta1-networking-k8s-io;
    // NetworkPolicy extensions/v1beta1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.15/#networkpolicy-v1beta1-extensions;
    // v1: kubernetes.io/docs/reference/generated/kubernetes-api/v1.36/#ingressclass-v1-networking-k8s-io, #networkpolicy-v1-networking-k8s-io
    #[test]
    fn ingress_class_and_network_policy_only_swap_the_version() {
        for obj in [
            json!({"apiVersion": "networking.k8s.io/v1beta1", "kind": "IngressClass",
                   "metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}}),
            json!({"apiVersion": "extensions/v1beta1", "kind": "NetworkPolicy",
                   "metadata": {"name": "zk-allow"},
                   "spec": {"podSelector": {"matchLabels": {"app": "zk"}},
                            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "kafka"}}}],
                                         "ports": [{"protocol": "TCP", "port": 2181}]}]}}),
        ] {
            let out = convert(&obj, "networking.k8s.io/v1").unwrap();
            let mut expected = obj.clone();
            expected["apiVersion"] = json!("networking.k8s.io/v1");
            assert_eq!(out.object, expected);
            assert!(out.notes.is_empty());
        }
    }
}
