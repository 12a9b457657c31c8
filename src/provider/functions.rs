//! Provider-defined functions: `provider::kudo::render(package, parameters)` and
//! `provider::kudo::validate_parameters(package, parameters)`.
//!
//! A thin adapter over what the resource and the `render` CLI already do: the package
//! is loaded like `render` loads it (`kudo_package::load`, no repositories), parameters
//! are checked by `kudo_instance`'s own check (so the text is the same), and manifests
//! are rendered by the offline renderer `kudo_instance` runs at plan time. Functions are
//! pure and offline: Terraform may call them before configuring the provider, so they
//! read no provider settings, and neither the network nor a cluster is used.

use std::collections::BTreeMap;
use std::path::Path;

use tfplugin::{Diagnostic, Function, FunctionError, FunctionParameter, Type, Value};

use kudo_engine::engine;
use kudo_package::{LoadContext, Package};

pub const RENDER: &str = "render";
pub const VALIDATE_PARAMETERS: &str = "validate_parameters";

/// What the offline render uses for `.Name` and `.Namespace`, as the `render` CLI does.
const NAMESPACE: &str = "default";
const PLAN: &str = "deploy";

fn package_parameter() -> FunctionParameter {
    FunctionParameter::new("package", Type::String).description(
        "A KUDO package folder or `.tgz` file on this machine; relative paths are resolved from the working directory, so write `\"${path.module}/operator\"`. URLs and repository names are not accepted: functions run offline.",
    )
}

fn parameters_parameter() -> FunctionParameter {
    FunctionParameter::new("parameters", Type::map(Type::String))
        .allow_null()
        .description("Parameter values over the package's defaults, as in `kudo_instance.parameters` (null = none).")
}

fn diagnostic_type() -> Type {
    Type::object([
        ("severity", Type::String),
        ("summary", Type::String),
        ("detail", Type::String),
        ("attribute", Type::String),
    ])
}

pub fn all() -> BTreeMap<String, Function> {
    BTreeMap::from([
        (
            RENDER.to_string(),
            Function {
                parameters: vec![package_parameter(), parameters_parameter()],
                return_type: Type::Dynamic,
                summary: "The Kubernetes objects a KUDO package's deploy plan renders".to_string(),
                description: "Renders the templates of the package's `deploy` plan with the given parameters, offline, and returns the manifests as a list of objects in plan order (objects of Delete tasks are left out). The instance is named `<operator>-instance` in namespace `default`, as in the `render` CLI; KUDO's labels and owner references are not added. A parameter `kudo_instance` would reject fails the call with the same text.".to_string(),
            },
        ),
        (
            VALIDATE_PARAMETERS.to_string(),
            Function {
                parameters: vec![package_parameter(), parameters_parameter()],
                return_type: Type::list(diagnostic_type()),
                summary: "The parameter diagnostics kudo_instance would give".to_string(),
                description: "Checks the parameters as `kudo_instance` checks them at plan time (unknown names, missing required values, KUDO 0.19 type and enum rules) and returns its diagnostics as a list of objects with `severity`, `summary`, `detail` and `attribute` (for example `parameters[\"REPLICAS\"]`); an empty list means the parameters are valid. For `precondition` and `check` blocks.".to_string(),
            },
        ),
    ])
}

/// Runs function `name`. Loading and rendering read files, so they run off the
/// async runtime's threads.
pub async fn call(name: &str, arguments: Vec<Value>) -> Result<Value, FunctionError> {
    let name = name.to_string();
    tokio::task::spawn_blocking(move || call_blocking(&name, &arguments))
        .await
        .map_err(|e| {
            FunctionError::new(format!(
                "The function failed unexpectedly: {e}. This is a bug in the provider."
            ))
        })?
}

fn call_blocking(name: &str, arguments: &[Value]) -> Result<Value, FunctionError> {
    let (Some(package), Some(parameters)) = (arguments.first(), arguments.get(1)) else {
        return Err(FunctionError::new(format!(
            "{name} takes two arguments: package and parameters."
        )));
    };
    let parameters = parameters
        .to_string_map()
        .map_err(|e| FunctionError::new(format!("parameters: {e}")).at_argument(1))?
        .unwrap_or_default();
    let pkg = load(package.as_str().unwrap_or_default())?;
    match name {
        RENDER => render(&pkg, &parameters),
        VALIDATE_PARAMETERS => Ok(Value::list(
            super::instance::parameter_diagnostics(&pkg, &parameters, &BTreeMap::new())
                .err()
                .unwrap_or_default()
                .iter()
                .map(diagnostic_value),
        )),
        other => Err(FunctionError::new(format!(
            "This provider has no function {other:?}."
        ))),
    }
}

/// The package at a local path, verified as `render` and `kudo_operator` load it.
fn load(source: &str) -> Result<Package, FunctionError> {
    let at_package = |text: String| FunctionError::new(text).at_argument(0);
    if source.is_empty() {
        return Err(at_package(
            "package must be a package folder or .tgz file".to_string(),
        ));
    }
    let path = source.strip_prefix("file://").unwrap_or(source);
    if source.contains("://") && !source.starts_with("file://") {
        return Err(at_package(format!(
            "{source:?} is a URL; provider functions run offline, so pass a package folder or .tgz file (download it first, or use a kudo_operator resource)"
        )));
    }
    if !Path::new(path).exists() {
        return Err(at_package(format!(
            "{source:?} does not exist; pass a package folder or .tgz file (relative paths start at the working directory: write \"${{path.module}}/...\"). Repository names are not looked up: provider functions run offline"
        )));
    }
    kudo_package::load(path, &LoadContext::default())
        .map_err(|e| at_package(format!("cannot load the package: {e}")))
}

fn render(pkg: &Package, parameters: &BTreeMap<String, String>) -> Result<Value, FunctionError> {
    if let Err(diagnostics) =
        super::instance::parameter_diagnostics(pkg, parameters, &BTreeMap::new())
    {
        return Err(FunctionError::new(
            diagnostics
                .iter()
                .map(|d| format!("{}: {}", d.summary, d.detail))
                .collect::<Vec<_>>()
                .join("\n\n")
                // Terraform ends the message with its own full stop.
                .trim_end_matches('.')
                .to_string(),
        )
        .at_argument(1));
    }
    let instance = format!("{}-instance", pkg.operator.name);
    let objects =
        engine::rendered_objects(pkg, &instance, NAMESPACE, parameters, PLAN).map_err(|e| {
            FunctionError::new(format!(
                "Operator {} does not render: {e}",
                pkg.operator.name
            ))
        })?;
    Ok(Value::Tuple(
        objects.iter().map(Value::from_untyped_json).collect(),
    ))
}

fn diagnostic_value(d: &Diagnostic) -> Value {
    Value::object([
        (
            "severity",
            Value::string(match d.severity {
                tfplugin::Severity::Warning => "warning",
                _ => "error",
            }),
        ),
        ("summary", Value::string(&d.summary)),
        ("detail", Value::string(&d.detail)),
        (
            "attribute",
            // `parameters["NAME"]`, as Terraform writes the attribute.
            Value::string(
                d.attribute
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
            ),
        ),
    ])
}
