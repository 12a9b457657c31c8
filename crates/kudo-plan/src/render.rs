//! Task templates -> Kubernetes objects (JSON), before KUDO metadata is added.

use std::collections::BTreeMap;

use kudo_package::Package;
use kudo_template::Vars;
use serde_json::Value;

use crate::{Location, PlanError};

/// One object a template rendered, with the package path of that template
/// (`templates/pdb.yaml`) for messages about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rendered {
    pub template: String,
    pub object: Value,
}

/// Everything templates of one instance see, apart from the plan location.
#[derive(Debug, Clone)]
pub struct RenderContext<'a> {
    pub package: &'a Package,
    pub instance: &'a str,
    pub namespace: &'a str,
    pub params: &'a BTreeMap<String, Value>,
    /// `.Pipes`: pipe key -> artifact name (see [`crate::pipe_artifact_name`]).
    pub pipes: BTreeMap<String, String>,
    /// Seed of the random template functions; None falls back to the public
    /// "namespace/name".
    pub seed: Option<&'a str>,
}

impl RenderContext<'_> {
    pub(crate) fn vars(&self, loc: &Location) -> Vars {
        let op = &self.package.operator;
        Vars {
            operator_name: op.name.clone(),
            name: self.instance.to_string(),
            namespace: self.namespace.to_string(),
            operator_version: op.operator_version.clone(),
            app_version: op.app_version.clone().unwrap_or_default(),
            plan_name: loc.plan.clone(),
            phase_name: loc.phase.clone(),
            step_name: loc.step.clone(),
            params: self.params.clone(),
            pipes: self.pipes.clone(),
        }
    }

    /// Renders one template file into its objects (documents that are not mappings, or
    /// are empty, are dropped as `kubectl apply` would ignore them).
    fn render_file(
        &self,
        loc: &Location,
        file: &str,
        vars: &Vars,
    ) -> Result<Vec<Value>, PlanError> {
        let text = self.package.templates.get(file).ok_or_else(|| {
            PlanError::new(format!(
                "template {file:?} is not in the package (templates/{file}); check the task's resources list"
            ))
            .at(loc)
        })?;
        let options = kudo_template::RenderOptions {
            now: None,
            seed: self.seed.map(str::to_string),
        };
        let rendered =
            kudo_template::render_with(file, text, vars, &options).map_err(|mut e| {
                // Name the file as it sits in the package, so the user can open it.
                e.template = package_path(file);
                PlanError::new(format!("rendering template: {e}")).at(loc)
            })?;
        let mut objects = Vec::new();
        for (i, doc) in kudo_template::split_documents(&rendered).iter().enumerate() {
            let value = kudo_yaml::to_json(doc).map_err(|e| {
                PlanError::new(format!(
                    "{} renders invalid YAML in document {} (line {}, column {} of the rendered text): {}",
                    package_path(file),
                    i + 1,
                    e.line,
                    e.column,
                    e.message
                ))
                .at(loc)
            })?;
            match value {
                Value::Object(_) => objects.push(value),
                Value::Null => {}
                other => {
                    return Err(PlanError::new(format!(
                        "{} document {} is not a Kubernetes object but {}",
                        package_path(file),
                        i + 1,
                        type_name(&other)
                    ))
                    .at(loc));
                }
            }
        }
        Ok(objects)
    }

    /// All objects of `resources`, with `patches` merged over them (KEP toolkit).
    pub fn render_task(
        &self,
        loc: &Location,
        resources: &[String],
        patches: &[String],
    ) -> Result<Vec<Rendered>, PlanError> {
        let vars = self.vars(loc);
        let mut objects = Vec::new();
        for file in resources {
            let path = package_path(file);
            objects.extend(
                self.render_file(loc, file, &vars)?
                    .into_iter()
                    .map(|object| Rendered {
                        template: path.clone(),
                        object,
                    }),
            );
        }
        for file in patches {
            for patch in self.render_file(loc, file, &vars)? {
                let target = objects
                    .iter_mut()
                    .map(|r| &mut r.object)
                    .find(|o| same_object(o, &patch))
                    .ok_or_else(|| {
                        PlanError::new(format!(
                            "patch {} targets {} {:?}, which the task's resources do not render",
                            package_path(file),
                            patch.get("kind").and_then(Value::as_str).unwrap_or("?"),
                            patch
                                .pointer("/metadata/name")
                                .and_then(Value::as_str)
                                .unwrap_or("?")
                        ))
                        .at(loc)
                    })?;
                merge_patch(target, &patch);
            }
        }
        Ok(objects)
    }
}

/// Where a template file sits in the package, as the user sees it.
pub fn package_path(file: &str) -> String {
    format!("templates/{file}")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

fn same_object(a: &Value, b: &Value) -> bool {
    let kind = |v: &Value| v.get("kind").cloned();
    let name = |v: &Value| v.pointer("/metadata/name").cloned();
    kind(a) == kind(b) && name(a) == name(b)
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    if let Value::Object(t) = target {
        for (k, v) in patch_map {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_rules() {
        let mut t = json!({"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2]});
        merge_patch(&mut t, &json!({"a": null, "b": {"c": 5}, "l": [9]}));
        assert_eq!(t, json!({"b": {"c": 5, "d": 3}, "l": [9]}));
    }
}
