//! KUDO's own CRD shapes (`kudo.dev/v1beta1` Operator and OperatorVersion specs), and
//! the way back from an OperatorVersion to a package.

use serde::{Deserialize, Serialize};
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

/// `OperatorVersion.spec` as KUDO's CRD declares it (`kudo.dev/v1beta1`), plus the two
/// fields this provider adds (`outputs`, `dependencies`), which the CRD's preserved
/// unknown fields keep. Task, parameter and plan bodies stay JSON here: the package
/// parser is the one reader of those, so an OperatorVersion read back from a cluster is
/// checked exactly as package files are (see [`package_from_operator_version`]).
///
/// Reading is lenient (every field defaults): objects written by KUDO itself or by
/// another tool may leave fields out, and what is missing is reported by name later.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OperatorVersionSpec {
    pub operator: OperatorRef,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// File name (under `templates/`) to text. Kept as JSON so that a non-string entry
    /// is reported by name instead of failing the whole object.
    pub templates: Map<String, Value>,
    pub tasks: Vec<Value>,
    /// Parameter type spelled `value-type`, as KUDO's CRD does.
    pub parameters: Vec<Value>,
    pub plans: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Value>,
}

/// `OperatorVersion.spec.operator`: the Operator this version belongs to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OperatorRef {
    pub name: String,
    pub kind: String,
}

impl OperatorVersionSpec {
    /// The spec this provider writes for `pkg`.
    pub fn of_package(pkg: &Package) -> OperatorVersionSpec {
        let op = &pkg.operator;
        OperatorVersionSpec {
            operator: OperatorRef {
                name: op.name.clone(),
                kind: "Operator".to_string(),
            },
            version: op.operator_version.clone(),
            app_version: op.app_version.clone(),
            templates: pkg
                .templates
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
            tasks: op.tasks.iter().map(task_json).collect(),
            parameters: pkg.parameters.iter().map(parameter_json).collect(),
            plans: op
                .plans
                .iter()
                .map(|(k, p)| (k.clone(), plan_json(p)))
                .collect(),
            // Neither is a KUDO field: `outputs` feed Terraform, `dependencies` let an
            // imported operator still know which operators it requires.
            outputs: (!op.outputs.is_empty()).then(|| json!(op.outputs)),
            dependencies: (!op.dependencies.is_empty())
                .then(|| Value::Array(dependencies_json(&op.dependencies))),
        }
    }

    /// The spec of an OperatorVersion object (or of a bare spec, as older states hold).
    /// `None` when it is not an object of this shape at all.
    pub fn of_object(ov: &Value) -> Option<OperatorVersionSpec> {
        serde_json::from_value(spec_of(ov).clone()).ok()
    }

    pub fn to_json(&self) -> Value {
        // A struct of strings, maps and JSON values always serialises.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// `OperatorVersion.spec` of `pkg` as JSON.
pub fn operator_version_spec(pkg: &Package) -> Value {
    OperatorVersionSpec::of_package(pkg).to_json()
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

/// Packages rebuilt from cluster objects in this process, by the exact text of what
/// they were built from. A provider process reads the same OperatorVersion for every
/// instance and RPC (50 instances of one operator: a hundred reads per apply), and
/// rebuilding means emitting and parsing all of its YAML again; an unchanged object
/// gives the same package, so the parse is done once. A changed object (another spec)
/// is another key. Bounded: a process rarely sees more than a few operators.
static REBUILT: std::sync::Mutex<Option<std::collections::HashMap<Vec<u8>, Package>>> =
    std::sync::Mutex::new(None);
const REBUILT_LIMIT: usize = 64;

/// `pkg` as one JSON document: its Operator spec and its OperatorVersion (name and
/// spec), the objects the cluster would hold. Read back with [`package_from_document`];
/// used for copies kept outside the cluster (plan-time copies, a rollback's target).
pub fn package_document(pkg: &Package) -> Value {
    serde_json::json!({
        "operator": {"spec": operator_spec(pkg)},
        "operatorVersion": {
            "metadata": {"name": pkg.operator_version_name()},
            "spec": operator_version_spec(pkg),
        },
    })
}

/// The package a [`package_document`] holds.
pub fn package_from_document(doc: &Value) -> Result<Package, PackageError> {
    let ov = doc
        .get("operatorVersion")
        .ok_or_else(|| PackageError::Invalid {
            file: "package document".into(),
            line: 0,
            column: 0,
            field: "operatorVersion".into(),
            message: "missing".into(),
        })?;
    package_from_operator_version(doc.get("operator"), ov)
}

/// Rebuild a package from an OperatorVersion (object or its spec) and, optionally, its
/// Operator (object or spec). Goes through the same parser as files so that the result
/// is checked the same way (once per distinct object per process, see `REBUILT`).
pub fn package_from_operator_version(
    operator: Option<&Value>,
    ov: &Value,
) -> Result<Package, PackageError> {
    // Everything the package is built from: the name (error labels), both specs.
    let key = serde_json::to_vec(&(
        ov.pointer("/metadata/name"),
        operator.map(spec_of),
        spec_of(ov),
    ))
    .unwrap_or_default();
    let lock = || {
        REBUILT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some(pkg) = lock().as_ref().and_then(|m| m.get(&key)) {
        return Ok(pkg.clone());
    }
    let pkg = rebuild(operator, ov)?;
    let mut cache = lock();
    let map = cache.get_or_insert_with(Default::default);
    if map.len() >= REBUILT_LIMIT {
        map.clear();
    }
    map.insert(key, pkg.clone());
    Ok(pkg)
}

fn rebuild(operator: Option<&Value>, ov: &Value) -> Result<Package, PackageError> {
    let label = ov
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .map_or_else(
            || "OperatorVersion/".to_string(),
            |n| format!("OperatorVersion/{n}:"),
        );
    let bad = |field: &str, msg: &str| PackageError::invalid(&label, None, field, msg.to_string());
    let spec = OperatorVersionSpec::of_object(ov).ok_or_else(|| {
        bad(
            "spec",
            "not an OperatorVersion spec (a field has the wrong type)",
        )
    })?;
    if spec.operator.name.is_empty() {
        return Err(bad("spec.operator.name", "missing operator name"));
    }
    if spec.version.is_empty() {
        return Err(bad("spec.version", "missing operator version"));
    }
    let mut opfile = Map::new();
    put(&mut opfile, "apiVersion", API_VERSION);
    put(&mut opfile, "name", spec.operator.name.as_str());
    put(&mut opfile, "operatorVersion", spec.version.as_str());
    if let Some(app) = &spec.app_version {
        put(&mut opfile, "appVersion", app.as_str());
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
    put(&mut opfile, "tasks", spec.tasks.clone());
    put(&mut opfile, "plans", Value::Object(spec.plans.clone()));
    if let Some(v) = &spec.outputs {
        put(&mut opfile, "outputs", v.clone());
    }
    if let Some(v) = &spec.dependencies {
        put(&mut opfile, "dependencies", v.clone());
    }
    let params: Vec<Value> = spec
        .parameters
        .iter()
        .map(|p| {
            let mut p = p.clone();
            if let Some(obj) = p.as_object_mut()
                && let Some(t) = obj.remove("value-type")
            {
                obj.insert("type".to_string(), t);
            }
            p
        })
        .collect();
    let mut files = Files::new();
    files.insert(
        "operator.yaml".to_string(),
        kudo_yaml::to_yaml(&Value::Object(opfile)).into_bytes(),
    );
    files.insert(
        "params.yaml".to_string(),
        kudo_yaml::to_yaml(&json!({"apiVersion": API_VERSION, "parameters": params})).into_bytes(),
    );
    for (k, v) in &spec.templates {
        let text = v
            .as_str()
            .ok_or_else(|| bad(&format!("spec.templates.{k}"), "template is not a string"))?;
        files.insert(format!("templates/{k}"), text.as_bytes().to_vec());
    }
    let namespace = ov
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut pkg = Package::from_files(&files, &label, Origin::Cluster { namespace })?;
    // from_files only keeps `*.yaml` templates; a cluster object may hold any name.
    for (k, v) in &spec.templates {
        if let Some(s) = v.as_str() {
            pkg.templates.insert(k.clone(), s.to_string());
        }
    }
    Ok(pkg)
}

/// Content digest of what gets installed (the Operator and OperatorVersion specs):
/// a template, task, plan or parameter change changes it. Terraform state records it
/// (`operator_digest`, `kudo_operator.digest`), so that an edited package under an
/// unchanged version still runs `deploy` again.
pub fn content_digest(pkg: &Package) -> String {
    let doc = serde_json::json!({
        "operator": operator_spec(pkg),
        "operatorVersion": operator_version_spec(pkg),
    });
    // serde_json maps are ordered, so the bytes are stable for the same package.
    let bytes = serde_json::to_vec(&doc).unwrap_or_default();
    crate::sha256_hex(&bytes)
}
