//! Data source `kudo_package`: reads an operator package (folder, `.tgz`, URL or a
//! repository reference) and exposes what it declares, without touching the cluster.
//! Useful to look up parameter defaults or the OperatorVersion name before installing.

use async_trait::async_trait;
use tfplugin::{
    Attr, Attribute, AttributePath, Block, DataSource, Diagnostic, IntoValue, ObjectNesting,
    Schema, Type, Value,
};

use kudo_package::{LoadContext, Package, Parameter, Phase, Plan, Repository};

use super::Call;

pub const NAME: &str = "kudo_package";

tfplugin::model! {
    /// A `kudo_package` value. The nested lists are built for output only and stay
    /// values.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct PackageModel {
        pub source: Attr<String>,
        pub name: Attr<String>,
        pub operator_version: Attr<String>,
        pub app_version: Attr<String>,
        pub description: Attr<String>,
        pub kubernetes_version: Attr<String>,
        pub kudo_version: Attr<String>,
        pub operator_version_name: Attr<String>,
        pub parameters: Value,
        pub plans: Value,
        pub tasks: Value,
        pub warnings: Attr<Vec<String>>,
    }
}

/// The `kudo_package` data source.
pub struct PackageData;

#[async_trait]
impl DataSource<Call> for PackageData {
    fn name(&self) -> &'static str {
        NAME
    }

    fn schema(&self) -> Schema {
        schema()
    }

    async fn read(&self, call: &Call, config: Value) -> (Value, Vec<Diagnostic>) {
        let repositories = call.session.config.repositories.clone();
        // Loading may download; keep it off the async workers.
        let fallback = config.clone();
        tokio::task::spawn_blocking(move || read(&config, &repositories))
            .await
            .unwrap_or_else(|e| {
                (
                    fallback,
                    vec![Diagnostic::error(
                        "Reading the package failed",
                        super::diag::with_advice(
                            e,
                            &format!(
                                "This is a bug in the provider; please report it, {}",
                                super::diag::AGAIN
                            ),
                        ),
                    )],
                )
            })
    }
}

fn string(name: &str) -> Attribute {
    Attribute::new(name, Type::String)
}

fn computed(attribute: Attribute, description: &str) -> Attribute {
    attribute.computed().description(description)
}

fn list_of(name: &str, attributes: Vec<Attribute>) -> Attribute {
    Attribute::nested(name, ObjectNesting::List, attributes)
}

fn parameter_attributes() -> Vec<Attribute> {
    vec![
        computed(
            string("name"),
            "Parameter name, as used in `kudo_instance.parameters` and in templates as `.Params.<name>`.",
        ),
        computed(
            string("type"),
            "Value type: `string`, `integer`, `number`, `boolean`, `array` or `map`.",
        ),
        computed(
            string("default"),
            "Default value as text (arrays and maps as YAML), or null when the parameter has none.",
        ),
        computed(
            Attribute::new("required", Type::Bool),
            "Whether an instance must have a value; KUDO's default is `true`. A required parameter with a default is always satisfied.",
        ),
        computed(
            string("description"),
            "The parameter's description from `params.yaml`, or null.",
        ),
        computed(
            string("trigger"),
            "Plan that runs when this parameter changes, or null (then `update`, else `deploy`).",
        ),
        computed(
            Attribute::new("immutable", Type::Bool),
            "Whether the value can only be set when the instance is created.",
        ),
    ]
}

fn plan_attributes() -> Vec<Attribute> {
    let steps = vec![
        computed(string("name"), "Step name."),
        computed(
            Attribute::new("tasks", Type::list(Type::String)),
            "Names of the tasks the step runs together.",
        ),
    ];
    let phases = vec![
        computed(string("name"), "Phase name."),
        computed(
            string("strategy"),
            "How the phase orders its steps: `serial` or `parallel`.",
        ),
        computed(list_of("steps", steps), "Steps of the phase, in order."),
    ];
    vec![
        computed(
            string("name"),
            "Plan name, such as `deploy`, `update` or `cleanup`.",
        ),
        computed(
            string("strategy"),
            "How the plan orders its phases: `serial` or `parallel`.",
        ),
        computed(list_of("phases", phases), "Phases of the plan, in order."),
    ]
}

pub fn schema() -> Schema {
    let tasks = vec![
        computed(string("name"), "Task name, as referenced from plan steps."),
        computed(
            string("kind"),
            "Task kind: `Apply`, `Delete`, `Toggle`, `Dummy`, `Pipe` or `KudoOperator`.",
        ),
    ];
    Schema::new(
        0,
        Block::new()
            .description("Reads a KUDO operator package and exposes its metadata, parameters, plans and tasks. Nothing is installed and the cluster is not contacted.")
            .attribute(string("source").required().description("The package: a local folder or `.tgz` file (relative paths are resolved from the working directory; use `${path.module}`), an `http(s)://` URL of a `.tgz` (append `#sha256=<hex>` to pin its digest), or `name`, `name@<operatorVersion>` or `name@<appVersion>_<operatorVersion>` looked up in the provider's `repository` blocks."))
            .attribute(computed(string("name"), "The operator's name from `operator.yaml`."))
            .attribute(computed(string("operator_version"), "`operatorVersion` from `operator.yaml`."))
            .attribute(computed(string("app_version"), "`appVersion` from `operator.yaml`, or null when the package has none."))
            .attribute(computed(string("description"), "`description` from `operator.yaml` (empty when absent)."))
            .attribute(computed(string("kubernetes_version"), "`kubernetesVersion` from `operator.yaml`, or null: the oldest Kubernetes the package runs on. `kudo_operator` checks it against a reachable cluster at plan time, and dependency resolution prefers versions the cluster meets."))
            .attribute(computed(string("kudo_version"), "`kudoVersion` from `operator.yaml`, or null. Shown only: there is no KUDO manager, so it is not enforced."))
            .attribute(computed(string("operator_version_name"), "Name KUDO gives the OperatorVersion object: `<name>-<appVersion>-<operatorVersion>`, or `<name>-<operatorVersion>` without appVersion."))
            .attribute(computed(list_of("parameters", parameter_attributes()), "Parameters declared in `params.yaml`, in file order."))
            .attribute(computed(list_of("plans", plan_attributes()), "Plans from `operator.yaml`, sorted by name."))
            .attribute(computed(list_of("tasks", tasks), "Tasks from `operator.yaml`, in file order."))
            .attribute(computed(Attribute::new("warnings", Type::list(Type::String)), "Warnings of KUDO's package verification, as `<file>: <message>`. Packages with verification errors are not read at all.")),
    )
}

/// The trimmed text, or null when there is none.
fn non_empty(text: &str) -> Attr<String> {
    let t = text.trim();
    (!t.is_empty()).then(|| t.to_string()).into()
}

/// Reads the data source. Unknown `source` (during plan) leaves everything computed
/// unknown; load errors are diagnostics on `source`.
pub fn read(config: &Value, repositories: &[Repository]) -> (Value, Vec<Diagnostic>) {
    let model: PackageModel = match config.decode() {
        Ok(m) => m,
        Err(d) => return (config.clone(), vec![d]),
    };
    let source = match model.source {
        Attr::Unknown => return (schema().mark_computed_unknown(config), Vec::new()),
        Attr::Known(s) if !s.trim().is_empty() => s,
        _ => {
            return (
                config.clone(),
                vec![source_error(
                    "Missing package source",
                    "`source` must name a package folder, a .tgz file or URL, or a repository reference such as `zookeeper@0.3.3`.".to_string(),
                )],
            );
        }
    };
    let ctx = LoadContext {
        repositories: repositories.to_vec(),
        ..LoadContext::default()
    };
    match kudo_package::load(&source, &ctx) {
        Ok(pkg) => (state(&source, &pkg), Vec::new()),
        Err(e) => (
            config.clone(),
            vec![source_error(
                "Cannot load the operator package",
                super::diag::with_advice(
                    format!("Package {source:?}: {e}"),
                    &super::diag::package_advice(),
                ),
            )],
        ),
    }
}

fn source_error(summary: &str, detail: String) -> Diagnostic {
    Diagnostic::error(summary, detail).with_attribute(AttributePath::attribute("source"))
}

fn state(source: &str, pkg: &Package) -> Value {
    let op = &pkg.operator;
    let warnings = kudo_package::warnings(pkg)
        .into_iter()
        .map(|f| format!("{}: {}", f.file, f.message))
        .collect();
    PackageModel {
        source: source.into(),
        name: op.name.as_str().into(),
        operator_version: op.operator_version.as_str().into(),
        app_version: op.app_version.clone().into(),
        description: op.description.as_str().into(),
        kubernetes_version: non_empty(&op.kubernetes_version),
        kudo_version: non_empty(&op.kudo_version),
        operator_version_name: pkg.operator_version_name().into(),
        parameters: Value::list(pkg.parameters.iter().map(parameter)),
        plans: Value::list(op.plans.iter().map(|(name, p)| plan(name, p))),
        tasks: Value::list(op.tasks.iter().map(|t| {
            Value::object([
                ("name", Value::string(&t.name)),
                ("kind", Value::string(&t.kind)),
            ])
        })),
        warnings: Attr::Known(warnings),
    }
    .into_value()
}

fn parameter(p: &Parameter) -> Value {
    Value::object([
        ("name", Value::string(&p.name)),
        ("type", Value::string(p.value_type.as_str())),
        (
            "default",
            Value::opt_string(p.default_value().map(str::to_string)),
        ),
        ("required", Value::bool(p.required)),
        ("description", Value::opt_string(p.description.clone())),
        ("trigger", Value::opt_string(p.trigger.clone())),
        ("immutable", Value::bool(p.immutable)),
    ])
}

fn plan(name: &str, p: &Plan) -> Value {
    Value::object([
        ("name", Value::string(name)),
        ("strategy", Value::string(p.strategy.as_str())),
        ("phases", Value::list(p.phases.iter().map(phase))),
    ])
}

fn phase(p: &Phase) -> Value {
    let steps = p.steps.iter().map(|s| {
        Value::object([
            ("name", Value::string(&s.name)),
            ("tasks", Value::list(s.tasks.iter().map(Value::string))),
        ])
    });
    Value::object([
        ("name", Value::string(&p.name)),
        ("strategy", Value::string(p.strategy.as_str())),
        ("steps", Value::list(steps)),
    ])
}
