//! Task templates -> Kubernetes objects (JSON), before KUDO metadata is added.

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

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
    /// Shared by the walks of every plan of one instance (see [`RenderCache`]).
    pub(crate) cache: Option<&'a RenderCache>,
}

/// The YAML documents each template file rendered to, for one instance's values.
///
/// Plans share tasks (kafka's `configuration` and `sts` run in three plans), so a walk
/// of every plan would render and parse the same file several times over. A template
/// sees the same variables wherever it runs except the plan location and `.Pipes`
/// (whose artifact names contain the plan location); those are part of the key only
/// for a template whose text names them. Random functions are seeded per file, so a
/// cached result is exactly what rendering again would give. Failures are not kept:
/// they name the location they happened at.
///
/// Holds the rendered text, not the parsed documents: a hit parses the text again, which
/// costs far less than rendering, and the text is a fifth of the documents' memory (a
/// package rendering 10,000 objects would otherwise keep every object twice per walk).
#[derive(Debug, Default)]
pub(crate) struct RenderCache(Mutex<HashMap<CacheKey, Arc<str>>>);

impl RenderCache {
    fn get(&self, key: &CacheKey) -> Option<Arc<str>> {
        // A panic elsewhere cannot leave a half-written entry: inserts are single calls.
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(key).cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    fn put(&self, key: CacheKey, rendered: Arc<str>) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.insert(key, rendered);
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    file: String,
    /// (plan, phase, step) when the template reads `.PlanName`, `.PhaseName` or `.StepName`.
    location: Option<(String, String, String)>,
    /// `.Pipes` when the template reads it.
    pipes: Option<Vec<(String, String)>>,
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

    /// The YAML documents of one template file at `loc` (empty ones dropped): from the
    /// cache when this walk rendered it with the same variables already, else rendered
    /// (`vars` is built on a task's first miss and reused for its other files).
    fn render_documents(
        &self,
        loc: &Location,
        file: &str,
        vars: &OnceCell<Vars>,
    ) -> Result<Vec<Value>, PlanError> {
        let text = self.package.templates.get(file).ok_or_else(|| {
            PlanError::new(format!(
                "template {file:?} is not in the package (templates/{file}); check the task's resources list"
            ))
            .at(loc)
        })?;
        let key = self.cache.map(|_| CacheKey {
            file: file.to_string(),
            location: ["PlanName", "PhaseName", "StepName"]
                .iter()
                .any(|v| text.contains(v))
                .then(|| (loc.plan.clone(), loc.phase.clone(), loc.step.clone())),
            pipes: text.contains("Pipes").then(|| {
                self.pipes
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            }),
        });
        if let (Some(cache), Some(key)) = (self.cache, &key)
            && let Some(rendered) = cache.get(key)
        {
            return Self::parse_documents(loc, file, &rendered);
        }
        let options = kudo_template::RenderOptions {
            now: None,
            seed: self.seed.map(str::to_string),
        };
        let vars = vars.get_or_init(|| self.vars(loc));
        let rendered: Arc<str> = kudo_template::render_with(file, text, vars, &options)
            .map_err(|mut e| {
                // Name the file as it sits in the package, so the user can open it.
                e.template = package_path(file);
                PlanError::new(format!("rendering template: {e}")).at(loc)
            })?
            .into();
        if let (Some(cache), Some(key)) = (self.cache, key) {
            cache.put(key, Arc::clone(&rendered));
        }
        Self::parse_documents(loc, file, &rendered)
    }

    /// Parses what template `file` rendered at `loc` into its documents (empty ones
    /// dropped).
    fn parse_documents(
        loc: &Location,
        file: &str,
        rendered: &str,
    ) -> Result<Vec<Value>, PlanError> {
        let mut documents = Vec::new();
        for (i, doc) in kudo_template::split_documents(rendered).iter().enumerate() {
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
            if !value.is_null() {
                documents.push(value);
            }
        }
        Ok(documents)
    }

    /// Renders one template file into its objects (documents that are empty are
    /// dropped as `kubectl apply` would ignore them).
    fn render_file(
        &self,
        loc: &Location,
        file: &str,
        vars: &OnceCell<Vars>,
    ) -> Result<Vec<Value>, PlanError> {
        let mut objects = Vec::new();
        for (i, value) in self
            .render_documents(loc, file, vars)?
            .into_iter()
            .enumerate()
        {
            match value {
                Value::Object(_) => objects.push(value),
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
        self.render_objects(loc, resources, patches)
            .map(|(objects, _)| objects)
    }

    /// [`Self::render_task`] for a task that applies its objects (Apply, Toggle): every
    /// object must have a valid name and be rendered once (see [`crate::objects`]).
    pub(crate) fn render_applied(
        &self,
        loc: &Location,
        resources: &[String],
        patches: &[String],
    ) -> Result<Vec<Rendered>, PlanError> {
        let (objects, documents) = self.render_objects(loc, resources, patches)?;
        let origins: Vec<crate::objects::Origin<'_>> = objects
            .iter()
            .zip(documents)
            .map(|(r, document)| crate::objects::Origin {
                template: &r.template,
                document,
                object: &r.object,
            })
            .collect();
        crate::objects::check_task(&origins, self.namespace).map_err(|e| e.at(loc))?;
        Ok(objects)
    }

    /// [`Self::render_task`] for a Delete task: every object must be one named object
    /// (see [`crate::objects::check_object`]), or there is nothing to find and remove.
    pub(crate) fn render_deleted(
        &self,
        loc: &Location,
        resources: &[String],
    ) -> Result<Vec<Rendered>, PlanError> {
        let (objects, documents) = self.render_objects(loc, resources, &[])?;
        for (r, document) in objects.iter().zip(documents) {
            crate::objects::check_object(&crate::objects::Origin {
                template: &r.template,
                document,
                object: &r.object,
            })
            .map_err(|e| e.at(loc))?;
        }
        Ok(objects)
    }

    /// The objects, and the document number of each in its template file.
    fn render_objects(
        &self,
        loc: &Location,
        resources: &[String],
        patches: &[String],
    ) -> Result<(Vec<Rendered>, Vec<usize>), PlanError> {
        let vars = OnceCell::new();
        let mut objects = Vec::new();
        let mut documents = Vec::new();
        for file in resources {
            let path = package_path(file);
            let rendered = self.render_file(loc, file, &vars)?;
            documents.extend(1..=rendered.len());
            objects.extend(rendered.into_iter().map(|object| Rendered {
                template: path.clone(),
                object,
            }));
        }
        for file in patches {
            let documents = self.render_documents(loc, file, &vars)?;
            for (i, document) in documents.iter().enumerate() {
                let at = PatchAt {
                    file: package_path(file),
                    document: i + 1,
                    documents: documents.len(),
                };
                apply_patch(&mut objects, document, &at).map_err(|e| e.at(loc))?;
            }
        }
        Ok((objects, documents))
    }
}

/// Where a template file sits in the package, as the user sees it.
pub fn package_path(file: &str) -> String {
    format!("templates/{file}")
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Which patch document is being applied, for messages.
struct PatchAt {
    file: String,
    document: usize,
    documents: usize,
}

impl PatchAt {
    fn error(&self, message: impl std::fmt::Display) -> PlanError {
        let doc = if self.documents > 1 {
            format!(" (document {})", self.document)
        } else {
            String::new()
        };
        PlanError::new(format!("patch {}{doc}: {message}", self.file))
    }
}

/// Applies one rendered patch document to the task's objects. Three forms (docs/patches.md):
/// * a Kubernetes object (`kind` and `metadata.name`, optional `apiVersion`): a strategic
///   merge patch of the object with that kind and name, as Kustomize's
///   `patchesStrategicMerge`; custom resources merge as JSON merge patches;
/// * `{target: {kind, name, apiVersion?}, patch: [ops]}`: JSON patch (RFC 6902) operations
///   on the named object, as Kustomize's `patches` with a target;
/// * a bare list of operations: JSON patch on the task's only object.
fn apply_patch(objects: &mut [Rendered], document: &Value, at: &PatchAt) -> Result<(), PlanError> {
    match document {
        Value::Array(_) => {
            let [only] = objects else {
                return Err(at.error(format!(
                    "a list of JSON patch operations applies to the task's only object, but the task renders {} objects; write `target: {{kind: ..., name: ...}}` and `patch: [...]` to name one",
                    objects.len()
                )));
            };
            kube_merge::json_patch(&mut only.object, document).map_err(|e| at.error(e))
        }
        Value::Object(m) if !m.contains_key("kind") && m.contains_key("target") => {
            let target = m.get("target").unwrap_or(&Value::Null);
            let kind = target.get("kind").and_then(Value::as_str);
            let name = target.get("name").and_then(Value::as_str);
            let (Some(kind), Some(name)) = (kind, name) else {
                return Err(at.error(
                    "`target` needs `kind` and `name` (and may give `apiVersion`) of the object the operations change",
                ));
            };
            let api_version = target.get("apiVersion").and_then(Value::as_str);
            let ops = m.get("patch").ok_or_else(|| {
                at.error("`patch` is missing: give the JSON patch operations as a list of {op, path, value}")
            })?;
            let object = find_target(objects, api_version, kind, name, at)?;
            kube_merge::json_patch(object, ops).map_err(|e| at.error(e))
        }
        Value::Object(m) => {
            let kind = m.get("kind").and_then(Value::as_str);
            let name = document.pointer("/metadata/name").and_then(Value::as_str);
            let (Some(kind), Some(name)) = (kind, name) else {
                return Err(at.error(
                    "a strategic merge patch names the object it changes with `kind` and `metadata.name` (and may give `apiVersion`), as Kustomize does; for JSON patch operations write `target:` and `patch:`",
                ));
            };
            let api_version = m.get("apiVersion").and_then(Value::as_str);
            let object = find_target(objects, api_version, kind, name, at)?;
            kube_merge::patch_object(object, document).map_err(|e| at.error(e))
        }
        other => Err(at.error(format!(
            "is {}, not a patch (a mapping for a strategic merge patch, a list for JSON patch operations)",
            type_name(other)
        ))),
    }
}

fn find_target<'o>(
    objects: &'o mut [Rendered],
    api_version: Option<&str>,
    kind: &str,
    name: &str,
    at: &PatchAt,
) -> Result<&'o mut Value, PlanError> {
    let matches = |o: &Value| {
        o.get("kind").and_then(Value::as_str) == Some(kind)
            && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            && api_version.is_none_or(|a| o.get("apiVersion").and_then(Value::as_str) == Some(a))
    };
    let rendered: Vec<String> = objects
        .iter()
        .map(|r| {
            format!(
                "{} {} {:?}",
                r.object
                    .get("apiVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("?"),
                r.object.get("kind").and_then(Value::as_str).unwrap_or("?"),
                r.object
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            )
        })
        .collect();
    objects
        .iter_mut()
        .map(|r| &mut r.object)
        .find(|o| matches(o))
        .ok_or_else(|| {
            at.error(format!(
                "targets {}{kind} {name:?}, which the task's resources do not render (they render: {})",
                api_version.map(|a| format!("{a} ")).unwrap_or_default(),
                if rendered.is_empty() { "nothing".to_string() } else { rendered.join(", ") }
            ))
        })
}

/// RFC 7386 JSON merge patch (kept for callers that merge plain values).
pub fn merge_patch(target: &mut Value, patch: &Value) {
    kube_merge::json_merge_patch(target, patch)
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
