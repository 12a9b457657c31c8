//! KudoOperator tasks (KEP-29/36): which child package, instance name, parameters, and
//! whether it is enabled. Only packages in a folder next to the parent package are
//! resolved here; repository/URL dependencies need the provider's resolver.

use std::collections::BTreeMap;

use kudo_package::{Origin, Package};
use serde_json::Value;

use super::EngineError;
use super::run::{RunRequest, parse_bool};
use crate::cluster::ObjectRef;

/// The fields of a KudoOperator task the engine uses.
pub(crate) struct Dependency<'a> {
    pub package: &'a str,
    pub instance_name: Option<&'a str>,
    pub parameter_file: Option<&'a str>,
    pub enabling_parameter: Option<&'a str>,
}

/// Loads the child package from a folder relative to the parent package's folder.
pub(crate) fn load(parent: &Package, package: &str) -> Result<Package, EngineError> {
    let Origin::Dir(dir) = &parent.origin else {
        return Err(EngineError::fatal(format!(
            "KudoOperator package {package:?}: only dependencies in a folder next to a parent package loaded from a folder are supported yet (the parent comes from {})",
            parent.origin.label()
        )));
    };
    let path = dir.join(package);
    if !path.is_dir() {
        return Err(EngineError::fatal(format!(
            "KudoOperator package {package:?}: {} is not a package folder (repository and URL dependencies are not supported yet)",
            path.display()
        )));
    }
    Package::load_dir(&path).map_err(|e| {
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
    let child = load(req.package, dep.package)?;
    let name = instance_name(req.instance, dep, &child);
    Ok(Some(super::instance_ref(req.namespace, &name)))
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

    #[test]
    fn enabling_parameter() {
        let dep = |p: Option<&'static str>| Dependency {
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
