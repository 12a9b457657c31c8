//! The operator package model (operator.yaml + params.yaml + templates).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// The only `apiVersion` KUDO packages use; it is also the default when absent.
pub const API_VERSION: &str = "kudo.dev/v1beta1";

#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    /// operator.yaml
    pub operator: OperatorFile,
    /// params.yaml (defaults applied), in file order.
    pub parameters: Vec<Parameter>,
    /// params.yaml `groups`.
    pub groups: Vec<ParamGroup>,
    /// Key: path relative to `templates/` with `/` separators.
    pub templates: BTreeMap<String, String>,
    pub origin: Origin,
}

/// Where a package was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Dir(PathBuf),
    /// A `.tgz` file; `digest` is the sha256 (hex) of its bytes.
    Tgz {
        path: PathBuf,
        digest: String,
    },
    /// Downloaded from an http(s) URL.
    Url {
        url: String,
        digest: String,
    },
    /// Found through a repository index.
    Repository {
        repository: String,
        url: String,
        digest: String,
    },
    /// Rebuilt from an OperatorVersion object in a cluster, in this namespace (empty
    /// when the object does not say): a run there finds it installed.
    Cluster {
        namespace: String,
    },
    /// Built in memory (tests, extensions).
    Memory,
}

impl Origin {
    /// Where the package came from, for messages.
    pub fn label(&self) -> String {
        match self {
            Origin::Dir(p) | Origin::Tgz { path: p, .. } => p.display().to_string(),
            Origin::Url { url, .. } => url.clone(),
            Origin::Repository {
                repository, url, ..
            } => format!("{url} (repository {repository})"),
            Origin::Cluster { .. } => "(from the cluster)".to_string(),
            Origin::Memory => "(in memory)".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct OperatorFile {
    pub api_version: String,
    pub name: String,
    pub description: String,
    pub operator_version: String,
    pub app_version: Option<String>,
    pub kudo_version: String,
    pub kubernetes_version: String,
    pub maintainers: Vec<Maintainer>,
    pub url: String,
    pub tasks: Vec<Task>,
    pub plans: BTreeMap<String, Plan>,
    pub namespace_manifest: Option<String>,
    /// KEP-9/12 `extends`; `None` once resolved (see [`crate::extend`]).
    pub extends: Option<Extends>,
    /// `outputs:` (an extension of this project, not KUDO's): name -> template rendered
    /// with the instance's variables, e.g. a connection string for other instances.
    pub outputs: BTreeMap<String, String>,
    /// `dependencies:` (OLM's "required operators"): packages installed as operators
    /// with this one, without instances. Ranges are kept as written; `kudo-resolve`
    /// parses them (the range syntax lives there).
    pub dependencies: Vec<OperatorDependency>,
}

/// One entry of operator.yaml `dependencies:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorDependency {
    /// A package by name, with optional blang/semver ranges.
    Package {
        name: String,
        operator_version: Option<String>,
        app_version: Option<String>,
    },
    /// Whichever package provides this API (has a CRD template for it).
    Api(Gvk),
}

/// An API group/version/kind, written `group/version Kind` in messages.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl std::fmt::Display for Gvk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} {}", self.group, self.version, self.kind)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Maintainer {
    pub name: String,
    pub email: String,
}

/// `extends: {kudo: {operator, version}}`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extends {
    pub operator: String,
    pub version: Option<String>,
    /// Extension tasks written as `from: base/<task>`: task name -> base task name.
    pub task_from: BTreeMap<String, String>,
    /// params.yaml keys each extension parameter sets (for the field-by-field merge).
    pub param_fields: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub name: String,
    pub kind: String,
    pub spec: TaskSpec,
}

/// Task kinds KUDO knows.
/// Task kinds this provider knows: KUDO's, and `Webhook` from the operator toolkit
/// proposal (KUDO never shipped it).
pub const TASK_KINDS: &[&str] = &[
    "Apply",
    "Delete",
    "Toggle",
    "Dummy",
    "Pipe",
    "KudoOperator",
    "Webhook",
];

/// The longest a Webhook task may wait for its answer, and its default: the toolkit
/// proposal's 30 seconds. A plan step is not the place for long work behind a URL.
pub const WEBHOOK_MAX_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq)]
pub enum TaskSpec {
    Apply {
        resources: Vec<String>,
        patches: Vec<String>,
    },
    Delete {
        resources: Vec<String>,
    },
    Toggle {
        parameter: String,
        resources: Vec<String>,
    },
    Dummy {
        want_err: bool,
        fatal: bool,
        done: bool,
    },
    Pipe {
        pod: String,
        pipe: Vec<PipeSpec>,
    },
    KudoOperator {
        package: String,
        app_version: Option<String>,
        operator_version: Option<String>,
        instance_name: Option<String>,
        parameter_file: Option<String>,
        enabling_parameter: Option<String>,
    },
    /// POST the execution state to `url`, apply the object (or `List`) it answers.
    Webhook(WebhookSpec),
}

/// A Webhook task's spec. `url`, `ca_bundle` and the Secret names of `headers` are
/// templates, rendered with the instance's variables like any template.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookSpec {
    pub url: String,
    /// PEM certificates to trust for an `https://` URL instead of the public roots.
    pub ca_bundle: Option<String>,
    pub headers: Vec<WebhookHeader>,
    /// At most [`WEBHOOK_MAX_TIMEOUT`], which is also the default.
    pub timeout: std::time::Duration,
}

/// A request header whose value is read from a Secret in the instance's namespace when
/// the task runs (never from the package, never stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookHeader {
    pub name: String,
    pub secret_name: String,
    pub secret_key: String,
}

impl TaskSpec {
    /// Template files this task renders (resources, patches, pod, parameter file).
    pub fn template_files(&self) -> Vec<&str> {
        match self {
            TaskSpec::Apply { resources, patches } => resources
                .iter()
                .chain(patches.iter())
                .map(String::as_str)
                .collect(),
            TaskSpec::Delete { resources } | TaskSpec::Toggle { resources, .. } => {
                resources.iter().map(String::as_str).collect()
            }
            TaskSpec::Pipe { pod, .. } => vec![pod.as_str()],
            TaskSpec::KudoOperator { parameter_file, .. } => {
                parameter_file.iter().map(String::as_str).collect()
            }
            // Its answer, not a template, makes the objects.
            TaskSpec::Dummy { .. } | TaskSpec::Webhook(_) => Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipeSpec {
    pub file: Option<String>,
    pub env_file: Option<String>,
    /// `Secret` or `ConfigMap`
    pub kind: String,
    pub key: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub strategy: Strategy,
    /// False when the file gave no strategy (KUDO then runs parallel; verify warns).
    pub strategy_explicit: bool,
    pub phases: Vec<Phase>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub name: String,
    pub strategy: Strategy,
    pub strategy_explicit: bool,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub tasks: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Serial,
    Parallel,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Serial => "serial",
            Strategy::Parallel => "parallel",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
    Array,
    Map,
}

impl ParamType {
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
            ParamType::Array => "array",
            ParamType::Map => "map",
        }
    }

    /// Empty means string, as in KUDO.
    pub fn parse(s: &str) -> Option<ParamType> {
        Some(match s {
            "" | "string" => ParamType::String,
            "integer" => ParamType::Integer,
            "number" => ParamType::Number,
            "boolean" => ParamType::Boolean,
            "array" => ParamType::Array,
            "map" => ParamType::Map,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub name: String,
    pub display_name: Option<String>,
    pub description: Option<String>,
    /// Defaults to true, as in KUDO.
    pub required: bool,
    /// Stringified as KUDO does, but keeping the literal text of scalars
    /// (`1000000` stays "1000000"); arrays/maps serialised as YAML.
    pub default: Option<String>,
    pub trigger: Option<String>,
    pub value_type: ParamType,
    /// False when params.yaml gave no `type` (it then defaults to string).
    pub type_explicit: bool,
    pub immutable: bool,
    pub enum_values: Option<Vec<String>>,
    pub group: Option<String>,
    pub advanced: bool,
    pub hint: Option<String>,
}

impl Parameter {
    pub fn new(name: &str) -> Parameter {
        Parameter {
            name: name.to_string(),
            display_name: None,
            description: None,
            required: true,
            default: None,
            trigger: None,
            value_type: ParamType::String,
            type_explicit: false,
            immutable: false,
            enum_values: None,
            group: None,
            advanced: false,
            hint: None,
        }
    }
}

/// params.yaml `groups[]`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamGroup {
    pub name: String,
    pub display_name: Option<String>,
    pub description: Option<String>,
    pub priority: Option<i64>,
}

impl Package {
    /// `<name>-<appVersion>-<operatorVersion>`, or `<name>-<operatorVersion>` without
    /// appVersion.
    pub fn operator_version_name(&self) -> String {
        let op = &self.operator;
        match op.app_version.as_deref() {
            Some(app) if !app.is_empty() => {
                format!("{}-{}-{}", op.name, app, op.operator_version)
            }
            _ => format!("{}-{}", op.name, op.operator_version),
        }
    }

    pub fn task(&self, name: &str) -> Option<&Task> {
        self.operator.tasks.iter().find(|t| t.name == name)
    }

    pub fn parameter(&self, name: &str) -> Option<&Parameter> {
        self.parameters.iter().find(|p| p.name == name)
    }

    /// The APIs this package provides: every group/version/kind of its
    /// CustomResourceDefinition templates (`spec.versions[].name`, or the legacy
    /// `spec.version`), sorted, each once.
    ///
    /// Only templates that are plain YAML count: a CRD is cluster-wide and almost never
    /// depends on parameters, and rendering every template of every candidate package
    /// with defaults would make a lookup across a repository slow and could fail on
    /// templates unrelated to CRDs. Templates that do not parse as YAML are skipped.
    pub fn provided_apis(&self) -> Vec<Gvk> {
        let mut out = Vec::new();
        for text in self.templates.values() {
            let Ok(docs) = kudo_yaml::to_json_documents(text) else {
                continue;
            };
            for doc in docs {
                if doc.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
                    continue;
                }
                let str_at = |ptr: &str| doc.pointer(ptr).and_then(|v| v.as_str());
                let (Some(group), Some(kind)) = (str_at("/spec/group"), str_at("/spec/names/kind"))
                else {
                    continue;
                };
                let mut versions: Vec<&str> = doc
                    .pointer("/spec/versions")
                    .and_then(|v| v.as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.get("name").and_then(|n| n.as_str()))
                    .collect();
                versions.extend(str_at("/spec/version"));
                for version in versions {
                    out.push(Gvk {
                        group: group.to_string(),
                        version: version.to_string(),
                        kind: kind.to_string(),
                    });
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Does this package provide `gvk` (see [`Package::provided_apis`])?
    pub fn provides(&self, gvk: &Gvk) -> bool {
        self.provided_apis().contains(gvk)
    }
}
