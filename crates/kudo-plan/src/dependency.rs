//! KudoOperator tasks (KEP-29/36): which child package, and the parameters its
//! `parameterFile` gives it. The caller resolves versions and sources (repositories,
//! URLs, ranges) and hands the chosen packages over in [`DependencyPackages`]; nothing
//! here downloads. A package in a folder next to a folder-loaded parent is still read
//! directly when the caller gave nothing, so engine-only users need no resolver.

use std::borrow::Cow;
use std::collections::BTreeMap;

use kudo_package::{Origin, Package, Task, TaskSpec};
use serde_json::Value;

use crate::PlanError;

/// The child package of every KudoOperator task of a dependency tree, keyed by the
/// parent's OperatorVersion name and the task name. One map serves the whole tree:
/// a resolution picks one version per package, so a parent and its task identify the
/// child wherever that parent sits in the tree.
#[derive(Debug, Clone, Default)]
pub struct DependencyPackages {
    packages: BTreeMap<(String, String), Package>,
}

impl DependencyPackages {
    pub fn new() -> DependencyPackages {
        DependencyPackages::default()
    }

    /// `parent_ov_name` is [`Package::operator_version_name`] of the parent package.
    pub fn insert(&mut self, parent_ov_name: &str, task: &str, child: Package) {
        self.packages
            .insert((parent_ov_name.to_string(), task.to_string()), child);
    }

    pub fn get(&self, parent_ov_name: &str, task: &str) -> Option<&Package> {
        self.packages
            .get(&(parent_ov_name.to_string(), task.to_string()))
    }

    pub fn is_empty(&self) -> bool {
        self.packages.is_empty()
    }
}

/// The fields of a KudoOperator task the engine uses.
pub struct Dependency<'a> {
    /// The task's name (the key into [`DependencyPackages`]).
    pub task: &'a str,
    pub package: &'a str,
    pub instance_name: Option<&'a str>,
    pub parameter_file: Option<&'a str>,
    pub enabling_parameter: Option<&'a str>,
}

impl<'a> Dependency<'a> {
    /// The dependency a task declares; None for any other kind of task.
    pub fn of(task: &'a Task) -> Option<Dependency<'a>> {
        match &task.spec {
            TaskSpec::KudoOperator {
                package,
                instance_name,
                parameter_file,
                enabling_parameter,
                ..
            } => Some(Dependency {
                task: &task.name,
                package,
                instance_name: instance_name.as_deref(),
                parameter_file: parameter_file.as_deref(),
                enabling_parameter: enabling_parameter.as_deref(),
            }),
            _ => None,
        }
    }
}

/// The child package: the one the caller resolved for this task, else a folder
/// relative to the parent package's folder.
pub fn load<'p>(
    parent: &Package,
    dep: &Dependency<'_>,
    resolved: Option<&'p DependencyPackages>,
) -> Result<Cow<'p, Package>, PlanError> {
    let package = dep.package;
    if let Some(child) = resolved.and_then(|r| r.get(&parent.operator_version_name(), dep.task)) {
        return Ok(Cow::Borrowed(child));
    }
    let Origin::Dir(dir) = &parent.origin else {
        return Err(PlanError::new(format!(
            "KudoOperator task {:?} (package {package:?}) of {}: no resolved package was given for it, and it cannot be read from a folder because the parent comes from {}; resolve the dependency tree first (kudo_operator does)",
            dep.task,
            parent.operator_version_name(),
            parent.origin.label()
        )));
    };
    let path = dir.join(package);
    if !path.is_dir() {
        return Err(PlanError::new(format!(
            "KudoOperator task {:?} (package {package:?}): no resolved package was given for it and {} is not a package folder; resolve the dependency tree first (kudo_operator does)",
            dep.task,
            path.display()
        )));
    }
    Package::load_dir(&path).map(Cow::Owned).map_err(|e| {
        PlanError::new(format!(
            "KudoOperator package {package:?}: cannot load {}: {e}",
            path.display()
        ))
    })
}

/// The rendered parameter file (one YAML mapping) as instance parameters: strings as
/// they are, other values as JSON text (numbers and booleans read the same).
pub fn parameters_from(
    file: &str,
    docs: Vec<Value>,
) -> Result<BTreeMap<String, String>, PlanError> {
    let mut out = BTreeMap::new();
    for doc in docs {
        let Value::Object(map) = doc else {
            return Err(PlanError::new(format!(
                "parameter file {file} must be a YAML mapping"
            )));
        };
        for (k, v) in map {
            let text = match v {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => other.to_string(),
            };
            out.insert(k, text);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameter_file_values_become_strings() {
        let p = parameters_from(
            "p.yaml",
            vec![json!({"N": 3, "TLS": true, "NAME": "x", "L": [1, 2]})],
        )
        .unwrap();
        assert_eq!(p["N"], "3");
        assert_eq!(p["TLS"], "true");
        assert_eq!(p["NAME"], "x");
        assert_eq!(p["L"], "[1,2]");
    }
}
