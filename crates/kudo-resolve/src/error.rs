//! Errors of dependency resolution. Every message names the packages, versions and
//! KudoOperator tasks involved, and says what to change.

use crate::range::RangeError;

/// A KudoOperator task asked for a version no catalog entry has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingVersion {
    /// The package asked for.
    pub package: String,
    /// What was asked, e.g. `operatorVersion 1.3.1, appVersion 2.5.0`.
    pub asked: String,
    /// Who asked, e.g. `flink-demo 0.1.6 (task "kafka")`.
    pub asked_by: String,
    /// Versions the catalog has for the package, newest first (empty: unknown package).
    pub available: Vec<String>,
}

impl std::fmt::Display for MissingVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} asks for {}, which no repository or folder provides; ",
            self.asked_by,
            crate::solve::phrase(&self.package, &self.asked)
        )?;
        if self.available.is_empty() {
            write!(
                f,
                "no version of {} is known at all (check the package name and the repository list)",
                self.package
            )
        } else {
            write!(
                f,
                "available versions of {}: {} (use a range, or override the version)",
                self.package,
                self.available.join(", ")
            )
        }
    }
}

/// The versions of one package the resolver skipped because the cluster is older than
/// what they declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooNew {
    pub package: String,
    /// (version, its `kubernetesVersion`), in preference order.
    pub versions: Vec<(String, String)>,
}

impl std::fmt::Display for TooNew {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let each: Vec<String> = self
            .versions
            .iter()
            .map(|(v, k)| format!("{v} needs kubernetesVersion {k}"))
            .collect();
        write!(f, "{}: {}", self.package, each.join(", "))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// A version field of a KudoOperator task does not parse.
    #[error("{package} (task {task:?}): {field}: {source}")]
    Range {
        package: String,
        task: String,
        field: &'static str,
        #[source]
        source: RangeError,
    },
    /// A range of an operator.yaml `dependencies:` entry does not parse.
    #[error("{package}: operator.yaml dependencies[{index}].{field}: {source}")]
    ListRange {
        package: String,
        index: usize,
        field: &'static str,
        #[source]
        source: RangeError,
    },
    /// No package of the catalog provides an API a `dependencies:` entry names.
    #[error(
        "{asked_by} requires the API {api} (operator.yaml dependencies[{index}]), but no package in the repositories provides it (no CustomResourceDefinition template with that group, version and kind); add a repository that has one, or name the package with `name:`"
    )]
    NoProvider {
        api: String,
        asked_by: String,
        index: usize,
    },
    /// A user override does not parse.
    #[error("version override for {package}: {source}")]
    Override {
        package: String,
        #[source]
        source: RangeError,
    },
    /// A package could not be listed or loaded.
    #[error("{what}: {source}")]
    Package {
        what: String,
        #[source]
        source: Box<kudo_package::PackageError>,
    },
    /// A catalog failed for another reason.
    #[error("{0}")]
    Catalog(String),
    /// One or more asks match no known version.
    #[error("dependency versions not found:\n{}", list(.0))]
    MissingVersions(Vec<MissingVersion>),
    /// The asks cannot all hold at once; `explanation` says why, in words.
    #[error("the dependency versions cannot be satisfied together:\n{explanation}")]
    Unsatisfiable {
        explanation: String,
        missing: Vec<MissingVersion>,
    },
    /// A folder, archive or URL dependency does not have the version the task asks for.
    #[error(
        "{asked_by} asks for {package} {asked}, but {source_label} holds {found}; fix the task or the package"
    )]
    SourceMismatch {
        asked_by: String,
        package: String,
        asked: String,
        source_label: String,
        found: String,
    },
    /// Packages install each other in a loop.
    #[error("dependency cycle: {}; a package cannot (indirectly) install itself", .path.join(" -> "))]
    Cycle { path: Vec<String> },
    /// Two instances of one resolution would get the same name.
    #[error(
        "instance name {name:?} is used twice: by {first} and by {second}; set a distinct `instanceName` on one of the KudoOperator tasks"
    )]
    NameCollision {
        name: String,
        first: String,
        second: String,
    },
    /// A child instance name is not a valid Kubernetes name / label value.
    #[error(
        "instance name {name:?} (for {path}) is not usable: {reason}; set `instanceName` on the task"
    )]
    InvalidInstanceName {
        name: String,
        path: String,
        reason: String,
    },
    /// `enablingParameter` names a parameter the parent does not declare.
    #[error(
        "{package} (task {task:?}): enablingParameter {parameter:?} is not a parameter of {package}; declare it in params.yaml (type boolean) or fix the name"
    )]
    UnknownEnablingParameter {
        package: String,
        task: String,
        parameter: String,
    },
    /// An enabling parameter's value is not a boolean.
    #[error(
        "instance {instance}: parameter {parameter} = {value:?} enables or disables a dependency and must be a boolean (true/false, 1/0, t/f)"
    )]
    EnablingValue {
        instance: String,
        parameter: String,
        value: String,
    },
    /// Versions that fit the asks exist, but none of those that could be chosen runs on
    /// the cluster's Kubernetes version (their operator.yaml `kubernetesVersion` is newer).
    #[error(
        "no version of {} fits the ranges and runs on this cluster (Kubernetes {cluster}):\n{}\nPin a version the cluster runs with `dependency_overrides`, or upgrade the cluster.\nHow the ranges combine:\n{explanation}",
        .too_new.iter().map(|t| t.package.as_str()).collect::<Vec<_>>().join(", "),
        .too_new.iter().map(|t| format!("  - {t}")).collect::<Vec<_>>().join("\n")
    )]
    ClusterTooOld {
        /// The cluster's version as the API server reports it.
        cluster: String,
        too_new: Vec<TooNew>,
        explanation: String,
    },
    /// A candidate's operator.yaml `kubernetesVersion` is not a Kubernetes version.
    #[error(
        "{package} {version}: operator.yaml kubernetesVersion {value:?} is not a Kubernetes version (1.MINOR or 1.MINOR.PATCH): {source}"
    )]
    KubernetesVersion {
        package: String,
        version: String,
        value: String,
        #[source]
        source: kube_api_versions::ParseReleaseError,
    },
    /// The instance tree grew past [`crate::MAX_INSTANCES`].
    #[error(
        "the dependency tree has more than {limit} instances; shared dependencies are installed once per parent, so a deep diamond grows exponentially"
    )]
    TooManyInstances { limit: usize },
}

impl ResolveError {
    /// What to do about this failure, chosen from what it is: the one place that
    /// words the advice, so a cycle never gets the advice of a missing version.
    pub fn advice(&self) -> &'static str {
        match self {
            ResolveError::Range { .. }
            | ResolveError::ListRange { .. }
            | ResolveError::Override { .. } => {
                "Fix the version range named above: comparisons joined by spaces mean AND and `||` means OR (`>=1.2.0 <2.0.0`, `1.2.x`, `>=1.2 || >=3.0`)"
            }
            ResolveError::MissingVersions(_) | ResolveError::Unsatisfiable { .. } => {
                "Add a repository that has the missing versions, or pin a version with `dependency_overrides`"
            }
            ResolveError::Cycle { .. } => {
                "Remove the KudoOperator task that closes the loop (or point it at another package): a package cannot install itself, directly or through its dependencies"
            }
            ResolveError::ClusterTooOld { .. } => {
                "Pin a version the cluster runs with `dependency_overrides`, or upgrade the cluster"
            }
            ResolveError::Package { .. } | ResolveError::Catalog(_) => {
                "Check the `repository` blocks and that the package named above can be read"
            }
            ResolveError::TooManyInstances { .. } => {
                "Reduce the dependency tree: let fewer packages depend on the same shared packages, or disable optional dependencies with their enabling parameters"
            }
            ResolveError::NoProvider { .. }
            | ResolveError::SourceMismatch { .. }
            | ResolveError::NameCollision { .. }
            | ResolveError::InvalidInstanceName { .. }
            | ResolveError::UnknownEnablingParameter { .. }
            | ResolveError::EnablingValue { .. }
            | ResolveError::KubernetesVersion { .. } => "Fix the package as the message above says",
        }
    }
}

fn list(items: &[MissingVersion]) -> String {
    items
        .iter()
        .map(|m| format!("  - {m}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_follows_what_the_failure_is() {
        let cycle = ResolveError::Cycle {
            path: vec!["a".into(), "a".into()],
        };
        assert!(cycle.advice().contains("cannot install itself"));
        let range = ResolveError::Override {
            package: "zookeeper".into(),
            source: crate::range::parse_range(">>1").unwrap_err(),
        };
        assert!(range.advice().starts_with("Fix the version range"));
        assert!(
            ResolveError::MissingVersions(Vec::new())
                .advice()
                .contains("Add a repository")
        );
    }
}
