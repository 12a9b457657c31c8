//! What a plan would apply, for Terraform's plan step: the same rendering and metadata as
//! a run, checked by the API server with a server-side dry-run, nothing persisted.

use std::collections::BTreeSet;

use kudo_package::TaskSpec;
use serde_json::Value;

use super::EngineError;
use super::error::Location;
use super::metadata::{Owner, decorate};
use super::render::RenderContext;
use super::run::{RunRequest, in_inventory, parse_bool};
use crate::cluster::{Cluster, ClusterError, ObjectRef};

/// One object the plan would apply, with KUDO metadata (no owner reference: the Instance
/// may not exist yet).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedObject {
    pub object: ObjectRef,
    pub manifest: Value,
    /// False when the server could not judge it yet: its kind comes from a CRD the same
    /// plan creates, or its namespace does not exist yet.
    pub checked: bool,
    /// The template that renders it (`templates/pdb.yaml`).
    pub template: String,
    /// Set when the template writes an API version the cluster no longer serves and the
    /// object will be applied converted (see [`Cluster::served_form`]).
    pub translation: Option<kube_api_versions::Translation>,
}

/// Renders every Apply (and enabled Toggle) task of `req.plan` in plan order and
/// dry-runs each object against the server. Render errors, kinds nobody serves and
/// objects the server rejects fail like the real run would.
pub async fn preview_plan(
    cluster: &Cluster,
    req: RunRequest<'_>,
) -> Result<Vec<PlannedObject>, EngineError> {
    let pkg = req.package;
    let super::run::Prepared {
        plan,
        effective,
        template_params: params,
    } = super::run::prepare(pkg, req.plan, req.parameters)?;

    let render = RenderContext {
        package: pkg,
        instance: req.instance,
        namespace: req.namespace,
        params: &params,
        pipes: super::pipe::plan_pipes(pkg, req.instance, req.plan, plan),
        seed: req.render_seed,
    };
    let owner = Owner {
        operator: pkg.operator.name.clone(),
        instance: req.instance.to_string(),
        namespace: req.namespace.to_string(),
        uid: String::new(),
    };
    // Kinds defined by CRDs this plan creates: the server cannot know them yet.
    let mut pending_kinds: BTreeSet<(String, String)> = BTreeSet::new();
    let mut planned = Vec::new();
    for phase in &plan.phases {
        for step in &phase.steps {
            let loc = Location {
                plan: req.plan.to_string(),
                phase: phase.name.clone(),
                step: step.name.clone(),
            };
            for task_name in &step.tasks {
                let task = pkg.task(task_name).ok_or_else(|| {
                    EngineError::fatal(format!(
                        "step names task {task_name:?}, which the operator does not define"
                    ))
                    .at(&loc)
                })?;
                let objects = match &task.spec {
                    TaskSpec::Apply { resources, patches } => {
                        render.render_task_sourced(&loc, resources, patches)
                    }
                    TaskSpec::Toggle {
                        parameter,
                        resources,
                    } if effective.get(parameter).and_then(|v| parse_bool(v)) == Some(true) => {
                        render.render_task_sourced(&loc, resources, &[])
                    }
                    _ => continue,
                };
                let objects = objects.map_err(|e| e.with_task(task_name))?;
                for (template, manifest) in objects {
                    let r = ObjectRef::from_object(&manifest)
                        .map_err(|e| EngineError::from(e).at(&loc).with_task(task_name))?;
                    let fail = |e: ClusterError| {
                        EngineError::from(e)
                            .at(&loc)
                            .with_task(task_name)
                            .with_object(&r)
                            .with_template(template.clone())
                    };
                    let key = (r.api_version.clone(), r.kind.clone());
                    // The same translation rule as the run (Run::prepare).
                    let (mut manifest, translation) = match cluster.served_form(&manifest).await {
                        Ok(served) => (served.object, served.translation),
                        Err(ClusterError::UnknownKind { .. }) if pending_kinds.contains(&key) => {
                            (manifest, None)
                        }
                        Err(e) => return Err(fail(e)),
                    };
                    // Scope of the version the object is sent as (no second discovery
                    // miss for a version the cluster does not serve).
                    let api_version = manifest["apiVersion"].as_str().unwrap_or(&r.api_version);
                    let namespaced = match cluster.is_namespaced(api_version, &r.kind).await {
                        Ok(n) => Some(n),
                        Err(ClusterError::UnknownKind { .. }) if pending_kinds.contains(&key) => {
                            None
                        }
                        Err(e) => return Err(fail(e)),
                    };
                    // Unknown scope: most custom kinds are namespaced.
                    decorate(&mut manifest, &owner, &loc, namespaced.unwrap_or(true));
                    let mut checked = false;
                    if namespaced.is_some() {
                        // The same ownership rule as the run (see Run::apply_all).
                        let owned = ObjectRef::from_object(&manifest)
                            .is_ok_and(|o| in_inventory(req.previous_inventory, &o));
                        if !owned && namespaced == Some(true) {
                            let target = ObjectRef::from_object(&manifest).map_err(fail)?;
                            let live = cluster.get(&target).await.map_err(fail)?;
                            super::ownership::check_not_taken(&target, live.as_ref(), req.instance)
                                .map_err(|e| {
                                    e.at(&loc)
                                        .with_task(task_name)
                                        .with_template(template.clone())
                                })?;
                        }
                        let checked_apply = match owned {
                            true => cluster.apply_owned(&manifest, true).await,
                            false => cluster.apply(&manifest, true).await,
                        };
                        match checked_apply {
                            Ok(_) => checked = true,
                            // The namespace may be created by the same Terraform apply.
                            Err(e) if e.is_not_found() => {}
                            Err(e) => return Err(fail(e)),
                        }
                    }
                    pending_kinds.extend(defined_kinds(&manifest));
                    let object = ObjectRef::from_object(&manifest).map_err(fail)?;
                    planned.push(PlannedObject {
                        object,
                        manifest,
                        checked,
                        template,
                        translation,
                    });
                }
            }
        }
    }
    Ok(planned)
}

/// (apiVersion, kind) of every version a CRD manifest defines.
fn defined_kinds(manifest: &Value) -> Vec<(String, String)> {
    if manifest.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
        return Vec::new();
    }
    let group = manifest.pointer("/spec/group").and_then(Value::as_str);
    let kind = manifest.pointer("/spec/names/kind").and_then(Value::as_str);
    let (Some(group), Some(kind)) = (group, kind) else {
        return Vec::new();
    };
    manifest
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(|version| (format!("{group}/{version}"), kind.to_string()))
        .collect()
}

/// What a task would do with one rendered object (offline preview).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewAction {
    Apply,
    Delete,
}

/// One object of an offline preview, before KUDO metadata is added.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewObject {
    pub location: Location,
    pub task: String,
    pub action: PreviewAction,
    pub object: Value,
}

/// Renders every template the tasks of `plan_name` use, in plan order, without a
/// cluster (template errors and invalid YAML surface at `terraform plan`). `.Pipes` holds
/// the artifact names the plan's Pipe tasks will create; the pipe pods are not shown.
pub fn render_plan(
    pkg: &kudo_package::Package,
    instance: &str,
    namespace: &str,
    parameters: &std::collections::BTreeMap<String, String>,
    plan_name: &str,
) -> Result<Vec<PreviewObject>, EngineError> {
    let super::run::Prepared {
        plan,
        effective,
        template_params: params,
    } = super::run::prepare(pkg, plan_name, parameters)?;

    let ctx = RenderContext {
        package: pkg,
        instance,
        namespace,
        params: &params,
        pipes: super::pipe::plan_pipes(pkg, instance, plan_name, plan),
        // Only errors matter offline, and they do not depend on the seed.
        seed: None,
    };
    let mut out = Vec::new();
    for phase in &plan.phases {
        for step in &phase.steps {
            let loc = Location {
                plan: plan_name.to_string(),
                phase: phase.name.clone(),
                step: step.name.clone(),
            };
            for task_name in &step.tasks {
                let task = pkg.task(task_name).ok_or_else(|| {
                    EngineError::fatal(format!(
                        "step names task {task_name:?}, which the operator does not define"
                    ))
                    .at(&loc)
                })?;
                let (resources, patches, action): (&[String], &[String], PreviewAction) =
                    match &task.spec {
                        TaskSpec::Apply { resources, patches } => {
                            (resources, patches, PreviewAction::Apply)
                        }
                        TaskSpec::Delete { resources } => (resources, &[], PreviewAction::Delete),
                        TaskSpec::Toggle {
                            parameter,
                            resources,
                        } => {
                            let on =
                                effective.get(parameter).and_then(|v| parse_bool(v)) == Some(true);
                            let action = if on {
                                PreviewAction::Apply
                            } else {
                                PreviewAction::Delete
                            };
                            (resources, &[], action)
                        }
                        _ => continue,
                    };
                let objects = ctx
                    .render_task(&loc, resources, patches)
                    .map_err(|e| e.with_task(task_name))?;
                out.extend(objects.into_iter().map(|object| PreviewObject {
                    location: loc.clone(),
                    task: task_name.clone(),
                    action,
                    object,
                }));
            }
        }
    }
    Ok(out)
}
