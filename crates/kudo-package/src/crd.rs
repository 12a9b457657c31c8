//! KUDO's own CRD shapes (`kudo.dev/v1beta1` Operator and OperatorVersion specs), and
//! the way back from an OperatorVersion to a package.

use serde_json::{Map, Value, json};

use crate::error::PackageError;
use crate::load::Files;
use crate::model::*;

fn put(m: &mut Map<String, Value>, key: &str, value: impl Into<Value>) {
    m.insert(key.to_string(), value.into());
}

fn put_nonempty(m: &mut Map<String, Value>, key: &str, value: &str) {
    if !value.is_empty() {
        put(m, key, value);
    }
}

/// `Operator.spec`.
pub fn operator_spec(pkg: &Package) -> Value {
    let op = &pkg.operator;
    let mut m = Map::new();
    put_nonempty(&mut m, "description", &op.description);
    put_nonempty(&mut m, "kudoVersion", &op.kudo_version);
    put_nonempty(&mut m, "kubernetesVersion", &op.kubernetes_version);
    if !op.maintainers.is_empty() {
        let list: Vec<Value> = op
            .maintainers
            .iter()
            .map(|x| json!({"name": x.name, "email": x.email}))
            .collect();
        put(&mut m, "maintainers", list);
    }
    put_nonempty(&mut m, "url", &op.url);
    if let Some(ns) = &op.namespace_manifest {
        put_nonempty(&mut m, "namespaceManifest", ns);
    }
    Value::Object(m)
}

fn task_json(t: &Task) -> Value {
    let spec = match &t.spec {
        TaskSpec::Apply { resources, patches } => {
            let mut m = Map::new();
            put(&mut m, "resources", resources.clone());
            if !patches.is_empty() {
                put(&mut m, "patches", patches.clone());
            }
            Value::Object(m)
        }
        TaskSpec::Delete { resources } => json!({"resources": resources}),
        TaskSpec::Toggle {
            parameter,
            resources,
        } => json!({"parameter": parameter, "resources": resources}),
        TaskSpec::Dummy {
            want_err,
            fatal,
            done,
        } => json!({"wantErr": want_err, "fatal": fatal, "done": done}),
        TaskSpec::Pipe { pod, pipe } => {
            let items: Vec<Value> = pipe
                .iter()
                .map(|p| {
                    let mut m = Map::new();
                    if let Some(f) = &p.file {
                        put(&mut m, "file", f.as_str());
                    }
                    if let Some(f) = &p.env_file {
                        put(&mut m, "envFile", f.as_str());
                    }
                    put(&mut m, "kind", p.kind.as_str());
                    put(&mut m, "key", p.key.as_str());
                    Value::Object(m)
                })
                .collect();
            json!({"pod": pod, "pipe": items})
        }
        TaskSpec::KudoOperator {
            package,
            app_version,
            operator_version,
            instance_name,
            parameter_file,
            enabling_parameter,
        } => {
            let mut m = Map::new();
            put(&mut m, "package", package.as_str());
            for (k, v) in [
                ("appVersion", app_version),
                ("operatorVersion", operator_version),
                ("instanceName", instance_name),
                ("parameterFile", parameter_file),
                ("enablingParameter", enabling_parameter),
            ] {
                if let Some(v) = v {
                    put(&mut m, k, v.as_str());
                }
            }
            Value::Object(m)
        }
        // As operator.yaml writes it, so a package read back from the cluster has it.
        TaskSpec::Webhook(w) => {
            let mut m = Map::new();
            put(&mut m, "url", w.url.as_str());
            if let Some(ca) = &w.ca_bundle {
                put(&mut m, "caBundle", ca.as_str());
            }
            if !w.headers.is_empty() {
                let headers: Vec<Value> = w
                    .headers
                    .iter()
                    .map(|h| {
                        json!({"name": h.name, "secretKeyRef": {"name": h.secret_name, "key": h.secret_key}})
                    })
                    .collect();
                put(&mut m, "headers", headers);
            }
            put(
                &mut m,
                "timeout",
                crate::parse::format_webhook_timeout(w.timeout),
            );
            Value::Object(m)
        }
    };
    json!({"name": t.name, "kind": t.kind, "spec": spec})
}

fn plan_json(p: &Plan) -> Value {
    let mut m = Map::new();
    if p.strategy_explicit {
        put(&mut m, "strategy", p.strategy.as_str());
    }
    let phases: Vec<Value> = p
        .phases
        .iter()
        .map(|ph| {
            let mut pm = Map::new();
            put(&mut pm, "name", ph.name.as_str());
            if ph.strategy_explicit {
                put(&mut pm, "strategy", ph.strategy.as_str());
            }
            let steps: Vec<Value> = ph
                .steps
                .iter()
                .map(|s| json!({"name": s.name, "tasks": s.tasks}))
                .collect();
            put(&mut pm, "steps", steps);
            Value::Object(pm)
        })
        .collect();
    put(&mut m, "phases", phases);
    Value::Object(m)
}

fn parameter_json(p: &Parameter) -> Value {
    let mut m = Map::new();
    put(&mut m, "name", p.name.as_str());
    if let Some(v) = &p.display_name {
        put(&mut m, "displayName", v.as_str());
    }
    if let Some(v) = &p.description {
        put(&mut m, "description", v.as_str());
    }
    put(&mut m, "required", p.required);
    // As KUDO's `ParametersToCRDType`: an array/map without a default gets "null".
    if let Some(v) = p.default_value() {
        put(&mut m, "default", v);
    }
    if let Some(v) = &p.trigger {
        put(&mut m, "trigger", v.as_str());
    }
    put(&mut m, "value-type", p.value_type.as_str());
    if p.immutable {
        put(&mut m, "immutable", true);
    }
    if let Some(e) = &p.enum_values {
        put(&mut m, "enum", e.clone());
    }
    Value::Object(m)
}

/// `OperatorVersion.spec` (parameter type spelled `value-type`, as KUDO's CRD does).
pub fn operator_version_spec(pkg: &Package) -> Value {
    let op = &pkg.operator;
    let mut m = Map::new();
    put(
        &mut m,
        "operator",
        json!({"name": op.name, "kind": "Operator"}),
    );
    put(&mut m, "version", op.operator_version.as_str());
    if let Some(app) = &op.app_version {
        put(&mut m, "appVersion", app.as_str());
    }
    let templates: Map<String, Value> = pkg
        .templates
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    put(&mut m, "templates", templates);
    put(
        &mut m,
        "tasks",
        op.tasks.iter().map(task_json).collect::<Vec<_>>(),
    );
    put(
        &mut m,
        "parameters",
        pkg.parameters
            .iter()
            .map(parameter_json)
            .collect::<Vec<_>>(),
    );
    let plans: Map<String, Value> = op
        .plans
        .iter()
        .map(|(k, p)| (k.clone(), plan_json(p)))
        .collect();
    put(&mut m, "plans", plans);
    if !op.outputs.is_empty() {
        // Not a KUDO field; the CRDs preserve unknown fields, so it round-trips.
        put(&mut m, "outputs", json!(op.outputs));
    }
    if !op.dependencies.is_empty() {
        // Not a KUDO field either; kept so that an imported operator still knows
        // which operators it requires.
        put(&mut m, "dependencies", dependencies_json(&op.dependencies));
    }
    Value::Object(m)
}

fn dependencies_json(deps: &[OperatorDependency]) -> Vec<Value> {
    deps.iter()
        .map(|d| match d {
            OperatorDependency::Package {
                name,
                operator_version,
                app_version,
            } => {
                let mut m = Map::new();
                put(&mut m, "name", name.as_str());
                if let Some(v) = operator_version {
                    put(&mut m, "operatorVersion", v.as_str());
                }
                if let Some(v) = app_version {
                    put(&mut m, "appVersion", v.as_str());
                }
                Value::Object(m)
            }
            OperatorDependency::Api(g) => {
                json!({"group": g.group, "version": g.version, "kind": g.kind})
            }
        })
        .collect()
}

fn spec_of(v: &Value) -> &Value {
    v.get("spec").unwrap_or(v)
}

/// Rebuild a package from an OperatorVersion (object or its spec) and, optionally, its
/// Operator (object or spec). Goes through the same parser as files so that the result
/// is checked the same way.
pub fn package_from_operator_version(
    operator: Option<&Value>,
    ov: &Value,
) -> Result<Package, PackageError> {
    let label = ov
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map_or_else(
            || "OperatorVersion/".to_string(),
            |n| format!("OperatorVersion/{n}:"),
        );
    let spec = spec_of(ov);
    let bad = |field: &str, msg: &str| PackageError::invalid(&label, None, field, msg.to_string());
    let name = spec
        .pointer("/operator/name")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("spec.operator.name", "missing operator name"))?;
    let mut opfile = Map::new();
    put(&mut opfile, "apiVersion", API_VERSION);
    put(&mut opfile, "name", name);
    let version = spec
        .get("version")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("spec.version", "missing operator version"))?;
    put(&mut opfile, "operatorVersion", version);
    if let Some(app) = spec.get("appVersion").and_then(Value::as_str) {
        put(&mut opfile, "appVersion", app);
    }
    if let Some(op) = operator.map(spec_of) {
        for key in [
            "description",
            "kudoVersion",
            "kubernetesVersion",
            "maintainers",
            "url",
            "namespaceManifest",
        ] {
            if let Some(v) = op.get(key) {
                put(&mut opfile, key, v.clone());
            }
        }
    }
    for key in ["tasks", "plans", "outputs", "dependencies"] {
        if let Some(v) = spec.get(key) {
            put(&mut opfile, key, v.clone());
        }
    }
    let params: Vec<Value> = spec
        .get("parameters")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|p| {
                    let mut p = p.clone();
                    if let Some(obj) = p.as_object_mut()
                        && let Some(t) = obj.remove("value-type")
                    {
                        obj.insert("type".to_string(), t);
                    }
                    p
                })
                .collect()
        })
        .unwrap_or_default();
    let mut files = Files::new();
    files.insert(
        "operator.yaml".to_string(),
        kudo_yaml::to_yaml(&Value::Object(opfile)).into_bytes(),
    );
    files.insert(
        "params.yaml".to_string(),
        kudo_yaml::to_yaml(&json!({"apiVersion": API_VERSION, "parameters": params})).into_bytes(),
    );
    if let Some(t) = spec.get("templates").and_then(Value::as_object) {
        for (k, v) in t {
            let text = v
                .as_str()
                .ok_or_else(|| bad(&format!("spec.templates.{k}"), "template is not a string"))?;
            files.insert(format!("templates/{k}"), text.as_bytes().to_vec());
        }
    }
    let mut pkg = Package::from_files(&files, &label, Origin::Cluster)?;
    // from_files only keeps `*.yaml` templates; a cluster object may hold any name.
    if let Some(t) = spec.get("templates").and_then(Value::as_object) {
        for (k, v) in t {
            if let Some(s) = v.as_str() {
                pkg.templates.insert(k.clone(), s.to_string());
            }
        }
    }
    Ok(pkg)
}
