//! KudoOperator tasks (KEP-29/36): which child package, instance name, parameters, and
//! whether it is enabled. The caller resolves versions and sources (repositories, URLs,
//! ranges) and hands the chosen packages over in [`DependencyPackages`]; the engine
//! never downloads. A package in a folder next to a folder-loaded parent is still read
//! directly when the caller gave nothing, so engine-only users need no resolver.

use std::borrow::Cow;
use std::collections::BTreeMap;

use kudo_package::{Origin, Package, Task, TaskSpec};
use serde_json::Value;

use super::EngineError;
use super::error::Location;
use super::render::RenderContext;
use super::run::{RunRequest, parse_bool};
use crate::cluster::ObjectRef;

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
pub(crate) struct Dependency<'a> {
    /// The task's name (the key into [`DependencyPackages`]).
    pub task: &'a str,
    pub package: &'a str,
    pub instance_name: Option<&'a str>,
    pub parameter_file: Option<&'a str>,
    pub enabling_parameter: Option<&'a str>,
}

impl<'a> Dependency<'a> {
    /// The dependency a task declares; None for any other kind of task.
    pub(crate) fn of(task: &'a Task) -> Option<Dependency<'a>> {
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

/// What an existing child Instance records about its last run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExistingChild {
    pub operator_version: String,
    pub parameters: BTreeMap<String, String>,
    /// The plan that ran last, when the Instance says.
    pub last_plan: Option<String>,
    /// That plan's status (`COMPLETE`, `ERROR`, ...), when known.
    pub last_status: Option<String>,
}

impl ExistingChild {
    /// Reads an Instance object. Missing fields stay empty so that the child counts as
    /// changed or unfinished and is run again, never silently skipped.
    pub(crate) fn from_instance(obj: &Value) -> ExistingChild {
        let text = |p: &str| {
            obj.pointer(p)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let parameters = obj
            .pointer("/spec/parameters")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let v = match v {
                            Value::String(s) => s.clone(),
                            Value::Null => String::new(),
                            other => other.to_string(),
                        };
                        (k.clone(), v)
                    })
                    .collect()
            })
            .unwrap_or_default();
        // Our runs keep spec.planExecution; KUDO clears it after a plan and keeps only
        // the aggregated status, so fall back to that for Instances KUDO ran.
        let last_plan = text("/spec/planExecution/planName")
            .or_else(|| text("/status/aggregatedStatus/activePlanName"));
        let last_status = last_plan
            .as_deref()
            .and_then(|plan| {
                obj.pointer("/status/planStatus")
                    .and_then(|s| s.get(plan))
                    .and_then(|s| s.get("status"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .or_else(|| text("/spec/planExecution/status"))
            .or_else(|| text("/status/aggregatedStatus/status"));
        ExistingChild {
            operator_version: text("/spec/operatorVersion/name").unwrap_or_default(),
            parameters,
            last_plan,
            last_status,
        }
    }

    fn completed(&self) -> bool {
        self.last_status.as_deref() == Some("COMPLETE")
    }
}

/// What a KudoOperator step does with an enabled child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChildAction {
    /// Same version, same parameters, last plan complete: the step is healthy as is.
    Leave {
        reason: String,
    },
    Run {
        plan: String,
        reason: String,
    },
}

/// Decides whether a child runs a plan, and which, the way KUDO would for a change of a
/// top-level Instance: a cascade reaches only children whose version or rendered
/// parameters changed, plus those whose last plan did not finish.
pub(crate) fn decide(
    child: &Package,
    existing: Option<&ExistingChild>,
    values: &BTreeMap<String, String>,
) -> Result<ChildAction, EngineError> {
    let Some(existing) = existing else {
        return Ok(ChildAction::Run {
            plan: "deploy".to_string(),
            reason: "new child".to_string(),
        });
    };
    let new_ov = child.operator_version_name();
    let version_changed = existing.operator_version != new_ov;
    let changed = super::changed_parameters(child, &existing.parameters, values);
    let last = existing.last_plan.as_deref().unwrap_or("deploy");
    let last_status = existing.last_status.as_deref().unwrap_or("unknown");
    if !version_changed && changed.is_empty() {
        if existing.completed() {
            return Ok(ChildAction::Leave {
                reason: format!(
                    "operator version {new_ov} and parameters unchanged, last plan {last} COMPLETE"
                ),
            });
        }
        // Finish what failed or was interrupted; a plan the package lost falls back to deploy.
        let plan = if child.operator.plans.contains_key(last) {
            last
        } else {
            "deploy"
        };
        return Ok(ChildAction::Run {
            plan: plan.to_string(),
            reason: format!("last plan {last} ended {last_status}"),
        });
    }
    super::check_immutable(child, None, &existing.parameters, values)?;
    // A child whose deploy never finished has not got everything an update assumes.
    if !existing.completed() && last == "deploy" && !version_changed {
        return Ok(ChildAction::Run {
            plan: "deploy".to_string(),
            reason: format!(
                "parameters {changed:?} changed and its deploy plan ended {last_status}"
            ),
        });
    }
    let plan = super::select_plan(
        child,
        &existing.parameters,
        values,
        &existing.operator_version,
        &new_ov,
    )?;
    let reason = if version_changed {
        format!(
            "operator version {} -> {new_ov}",
            if existing.operator_version.is_empty() {
                "unknown"
            } else {
                &existing.operator_version
            }
        )
    } else {
        format!("parameters {changed:?} changed")
    };
    Ok(ChildAction::Run { plan, reason })
}

/// The child package: the one the caller resolved for this task, else a folder
/// relative to the parent package's folder.
pub(crate) fn load<'p>(
    parent: &Package,
    dep: &Dependency<'_>,
    resolved: Option<&'p DependencyPackages>,
) -> Result<Cow<'p, Package>, EngineError> {
    let package = dep.package;
    if let Some(child) = resolved.and_then(|r| r.get(&parent.operator_version_name(), dep.task)) {
        return Ok(Cow::Borrowed(child));
    }
    let Origin::Dir(dir) = &parent.origin else {
        return Err(EngineError::fatal(format!(
            "KudoOperator task {:?} (package {package:?}) of {}: no resolved package was given for it, and it cannot be read from a folder because the parent comes from {}; resolve the dependency tree first (kudo_operator does)",
            dep.task,
            parent.operator_version_name(),
            parent.origin.label()
        )));
    };
    let path = dir.join(package);
    if !path.is_dir() {
        return Err(EngineError::fatal(format!(
            "KudoOperator task {:?} (package {package:?}): no resolved package was given for it and {} is not a package folder; resolve the dependency tree first (kudo_operator does)",
            dep.task,
            path.display()
        )));
    }
    Package::load_dir(&path).map(Cow::Owned).map_err(|e| {
        EngineError::fatal(format!(
            "KudoOperator package {package:?}: cannot load {}: {e}",
            path.display()
        ))
    })
}

/// `instanceName`, else `<parent>-<operator name>`.
pub(crate) fn instance_name(parent: &str, dep: &Dependency<'_>, child: &Package) -> String {
    match dep.instance_name {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => format!("{parent}-{}", child.operator.name),
    }
}

/// KEP-36: the enabling parameter (ParseBool) decides whether the child exists.
pub(crate) fn enabled(
    effective: &BTreeMap<String, String>,
    dep: &Dependency<'_>,
) -> Result<bool, EngineError> {
    let Some(param) = dep.enabling_parameter.filter(|p| !p.is_empty()) else {
        return Ok(true);
    };
    let raw = effective.get(param).ok_or_else(|| {
        EngineError::fatal(format!(
            "enablingParameter {param:?} of dependency {:?} has no value",
            dep.package
        ))
    })?;
    parse_bool(raw).ok_or_else(|| {
        EngineError::fatal(format!(
            "enablingParameter {param} is {raw:?}, which is not a boolean (use true or false)"
        ))
    })
}

/// The child Instance a run would create, for pruning; None when disabled.
pub(crate) fn planned_instance(
    req: RunRequest<'_>,
    effective: &BTreeMap<String, String>,
    dep: &Dependency<'_>,
) -> Result<Option<ObjectRef>, EngineError> {
    if !enabled(effective, dep)? {
        return Ok(None);
    }
    let child = load(req.package, dep, req.dependencies)?;
    let name = instance_name(req.instance, dep, &child);
    Ok(Some(super::instance_ref(req.namespace, &name)))
}

/// The child's instance parameters from the task's `parameterFile`, rendered with the
/// parent's variables (KEP-29: the parameter file sees no plan, phase or step).
pub(crate) fn render_parameters(
    render: &RenderContext<'_>,
    file: &str,
) -> Result<BTreeMap<String, String>, EngineError> {
    let quiet = Location {
        plan: String::new(),
        phase: String::new(),
        step: String::new(),
    };
    let docs = render.render_task(&quiet, &[file.to_string()], &[])?;
    parameters_from(file, docs)
}

/// Plan-time view of [`render_parameters`]: the parameters a KudoOperator task of
/// `parent` gives its child, for the parent's user-set `parameters` (defaults applied
/// here). Pipe values are not known before a run, so a parameter file that reads
/// `.Pipes` sees them empty. `seed` is the parent's render seed, as its run has it
/// (`RunRequest::render_seed`; a child's is `"<parent seed>/<child instance>"`), so
/// random values drawn by the file come out as the run draws them.
pub fn dependency_parameters(
    parent: &Package,
    instance: &str,
    namespace: &str,
    parameters: &BTreeMap<String, String>,
    parameter_file: &str,
    seed: Option<&str>,
) -> Result<BTreeMap<String, String>, EngineError> {
    let effective = parent.effective_params(parameters).map_err(|errs| {
        let list: Vec<String> = errs.iter().map(ToString::to_string).collect();
        EngineError::fatal(format!(
            "invalid parameters of {}: {}",
            parent.operator_version_name(),
            list.join("; ")
        ))
    })?;
    let params = parent
        .template_params(&effective)
        .map_err(|e| EngineError::fatal(format!("{}: {e}", parent.operator_version_name())))?;
    let render = RenderContext {
        package: parent,
        instance,
        namespace,
        params: &params,
        pipes: BTreeMap::new(),
        seed,
    };
    render_parameters(&render, parameter_file)
}

/// The rendered parameter file (one YAML mapping) as instance parameters: strings as
/// they are, other values as JSON text (numbers and booleans read the same).
pub(crate) fn parameters_from(
    file: &str,
    docs: Vec<Value>,
) -> Result<BTreeMap<String, String>, EngineError> {
    let mut out = BTreeMap::new();
    for doc in docs {
        let Value::Object(map) = doc else {
            return Err(EngineError::fatal(format!(
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

    fn child_pkg(plans: &[&str]) -> Package {
        use kudo_package::{OperatorFile, Parameter, Plan, Strategy};
        let mut value = Parameter::new("VALUE");
        value.default = Some("none".into());
        let mut size = Parameter::new("SIZE");
        size.trigger = Some("resize".into());
        Package {
            operator: OperatorFile {
                name: "child".into(),
                operator_version: "1.0.0".into(),
                plans: plans
                    .iter()
                    .map(|p| {
                        let plan = Plan {
                            strategy: Strategy::Serial,
                            strategy_explicit: true,
                            phases: vec![],
                        };
                        (p.to_string(), plan)
                    })
                    .collect(),
                ..Default::default()
            },
            parameters: vec![value, size],
            groups: vec![],
            templates: BTreeMap::new(),
            origin: Origin::Memory,
        }
    }

    fn instance(ov: &str, params: Value, plan: &str, status: &str) -> ExistingChild {
        ExistingChild::from_instance(&json!({
            "spec": {
                "operatorVersion": {"name": ov},
                "parameters": params,
                "planExecution": {"planName": plan, "uid": "u", "status": status},
            },
            "status": {"planStatus": {plan: {"status": status}}},
        }))
    }

    fn vals(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn run(plan: &str, action: ChildAction) {
        match action {
            ChildAction::Run { plan: p, .. } => assert_eq!(p, plan),
            other => panic!("expected a run of {plan}, got {other:?}"),
        }
    }

    #[test]
    fn settled_child_is_left_alone() {
        let pkg = child_pkg(&["deploy", "update"]);
        let done = instance("child-1.0.0", json!({"VALUE": "a"}), "deploy", "COMPLETE");
        let action = decide(&pkg, Some(&done), &vals(&[("VALUE", "a")])).unwrap();
        assert!(matches!(action, ChildAction::Leave { .. }), "{action:?}");
        // A value equal to the default is no change either.
        let done = instance("child-1.0.0", json!({}), "update", "COMPLETE");
        let action = decide(&pkg, Some(&done), &vals(&[("VALUE", "none")])).unwrap();
        assert!(matches!(action, ChildAction::Leave { .. }), "{action:?}");
    }

    #[test]
    fn changed_child_runs_what_kudo_would_pick() {
        let pkg = child_pkg(&["deploy", "update", "upgrade", "resize"]);
        let done = instance("child-1.0.0", json!({"VALUE": "a"}), "deploy", "COMPLETE");
        run("deploy", decide(&pkg, None, &vals(&[])).unwrap());
        run(
            "update",
            decide(&pkg, Some(&done), &vals(&[("VALUE", "b")])).unwrap(),
        );
        run(
            "resize",
            decide(&pkg, Some(&done), &vals(&[("VALUE", "a"), ("SIZE", "3")])).unwrap(),
        );
        let old = instance("child-0.9.0", json!({"VALUE": "a"}), "deploy", "COMPLETE");
        run(
            "upgrade",
            decide(&pkg, Some(&old), &vals(&[("VALUE", "a")])).unwrap(),
        );
        let deploy_only = child_pkg(&["deploy"]);
        run(
            "deploy",
            decide(&deploy_only, Some(&done), &vals(&[("VALUE", "b")])).unwrap(),
        );
    }

    #[test]
    fn unfinished_child_runs_again() {
        let pkg = child_pkg(&["deploy", "update"]);
        for status in ["ERROR", "IN_PROGRESS", "FATAL_ERROR"] {
            let failed = instance("child-1.0.0", json!({"VALUE": "a"}), "update", status);
            run(
                "update",
                decide(&pkg, Some(&failed), &vals(&[("VALUE", "a")])).unwrap(),
            );
            let failed = instance("child-1.0.0", json!({"VALUE": "a"}), "deploy", status);
            run(
                "deploy",
                decide(&pkg, Some(&failed), &vals(&[("VALUE", "b")])).unwrap(),
            );
        }
        // An Instance that says nothing about its last plan is not trusted as settled.
        let bare = ExistingChild::from_instance(&json!({
            "spec": {"operatorVersion": {"name": "child-1.0.0"}, "parameters": {"VALUE": "a"}},
        }));
        run(
            "deploy",
            decide(&pkg, Some(&bare), &vals(&[("VALUE", "a")])).unwrap(),
        );
    }

    #[test]
    fn enabling_parameter() {
        let dep = |p: Option<&'static str>| Dependency {
            task: "zk",
            package: "zk",
            instance_name: None,
            parameter_file: None,
            enabling_parameter: p,
        };
        let eff: BTreeMap<String, String> = [
            ("ON".to_string(), "false".to_string()),
            ("BAD".to_string(), "maybe".to_string()),
        ]
        .into();
        assert!(enabled(&eff, &dep(None)).unwrap());
        assert!(!enabled(&eff, &dep(Some("ON"))).unwrap());
        assert!(enabled(&eff, &dep(Some("BAD"))).is_err());
        assert!(enabled(&eff, &dep(Some("MISSING"))).is_err());
    }
}
