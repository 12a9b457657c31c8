//! Operator extensions (KEP-9 / KEP-12): an operator that `extends` a base inherits its
//! parameters, tasks, plans and templates, and may add or replace them.
//!
//! Rules implemented here:
//! * templates: base templates are inherited; the extension's files of the same name win.
//!   `base/<file>` in a task's resources or patches always means the base's file (kept
//!   under the key `base/<file>`).
//! * tasks: inherited; an extension task of the same name replaces the base one.
//!   `from: base/<task>` starts from the base task (kind, resources, patches) and appends
//!   the extension's own `resources` and `patches`.
//! * plans: inherited; an extension plan of the same name replaces the base one.
//!   `base/<task>` in a step means the base's task: it is renamed to `<task>` when the
//!   extension did not replace it, otherwise the base task is kept as `base-<task>`.
//! * parameters: inherited; same-name parameters merge field by field, the extension's
//!   fields winning; new ones are added after the base's.
//! * operator fields: the extension's, falling back to the base's when unset.

use std::cell::Cell;

use crate::error::PackageError;
use crate::model::{Package, Parameter, Task, TaskSpec};

const MAX_DEPTH: usize = 8;

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Loads a base operator by name and optional version.
pub type BaseLoader<'a> = dyn Fn(&str, Option<&str>) -> Result<Package, PackageError> + 'a;

/// Resolve `pkg.operator.extends` with `load_base`; packages without `extends` are
/// returned unchanged.
pub fn resolve(pkg: Package, load_base: &BaseLoader<'_>) -> Result<Package, PackageError> {
    let Some(ext) = pkg.operator.extends.clone() else {
        return Ok(pkg);
    };
    let file = "operator.yaml";
    let fail = |m: String| PackageError::invalid(file, None, "extends.kudo", m);
    if ext.operator == pkg.operator.name {
        return Err(fail(format!(
            "operator {:?} extends itself; name a different base operator",
            ext.operator
        )));
    }
    let depth = DEPTH.with(Cell::get);
    if depth >= MAX_DEPTH {
        return Err(fail(format!(
            "extension chain deeper than {MAX_DEPTH} (a cycle?) while loading base {:?}",
            ext.operator
        )));
    }
    DEPTH.with(|d| d.set(depth + 1));
    let base = load_base(&ext.operator, ext.version.as_deref());
    DEPTH.with(|d| d.set(depth));
    let base = base.map_err(|e| {
        fail(format!(
            "cannot load base operator {:?}{}: {e}",
            ext.operator,
            ext.version
                .as_deref()
                .map(|v| format!(" version {v}"))
                .unwrap_or_default()
        ))
    })?;
    if let Some(v) = &ext.version
        && base.operator.operator_version != *v
        && base.operator.app_version.as_deref() != Some(v.as_str())
    {
        return Err(fail(format!(
            "base {:?} was loaded at version {}, but extends asks for {v}",
            ext.operator, base.operator.operator_version
        )));
    }
    merge(pkg, base, &ext)
}

fn merge(
    ext_pkg: Package,
    base: Package,
    ext: &crate::model::Extends,
) -> Result<Package, PackageError> {
    let mut out = ext_pkg.clone();
    out.operator.extends = None;
    let op = &mut out.operator;
    let b = &base.operator;
    if op.description.is_empty() {
        op.description.clone_from(&b.description);
    }
    if op.app_version.is_none() {
        op.app_version.clone_from(&b.app_version);
    }
    for (mine, theirs) in [
        (&mut op.kudo_version, &b.kudo_version),
        (&mut op.kubernetes_version, &b.kubernetes_version),
        (&mut op.url, &b.url),
    ] {
        if mine.is_empty() {
            mine.clone_from(theirs);
        }
    }
    if op.maintainers.is_empty() {
        op.maintainers.clone_from(&b.maintainers);
    }
    if op.namespace_manifest.is_none() {
        op.namespace_manifest.clone_from(&b.namespace_manifest);
    }
    for (k, v) in &b.outputs {
        op.outputs.entry(k.clone()).or_insert_with(|| v.clone());
    }
    // The base's required operators are still required; the extension adds its own.
    for d in &b.dependencies {
        if !op.dependencies.contains(d) {
            op.dependencies.push(d.clone());
        }
    }

    // Templates: base first, extension overrides; base files referenced as base/<file>.
    let mut templates = base.templates.clone();
    templates.extend(ext_pkg.templates.clone());

    // Tasks.
    let mut tasks: Vec<Task> = b.tasks.clone();
    for t in &ext_pkg.operator.tasks {
        let task = match ext.task_from.get(&t.name) {
            Some(from) => from_base(t, from, &base)?,
            None => t.clone(),
        };
        match tasks.iter_mut().find(|x| x.name == task.name) {
            Some(slot) => *slot = task,
            None => tasks.push(task),
        }
    }
    for t in &mut tasks {
        rewrite_base_files(t, &base, &mut templates)?;
    }

    // Plans.
    let mut plans = b.plans.clone();
    plans.extend(ext_pkg.operator.plans.clone());
    let replaced: Vec<String> = ext_pkg
        .operator
        .tasks
        .iter()
        .map(|t| t.name.clone())
        .collect();
    for (plan_name, plan) in &mut plans {
        for phase in &mut plan.phases {
            for step in &mut phase.steps {
                for task_ref in &mut step.tasks {
                    let Some(base_task) = task_ref.strip_prefix("base/").map(str::to_string) else {
                        continue;
                    };
                    let Some(original) = base.task(&base_task) else {
                        return Err(PackageError::invalid(
                            "operator.yaml",
                            None,
                            &format!("plans.{plan_name}"),
                            format!(
                                "step {:?} names base/{base_task}, but the base operator has no task {base_task:?}",
                                step.name
                            ),
                        ));
                    };
                    if replaced.contains(&base_task) {
                        let alias = format!("base-{base_task}");
                        if !tasks.iter().any(|t| t.name == alias) {
                            let mut copy = original.clone();
                            copy.name.clone_from(&alias);
                            tasks.push(copy);
                        }
                        *task_ref = alias;
                    } else {
                        *task_ref = base_task;
                    }
                }
            }
        }
    }
    op.tasks = tasks;
    op.plans = plans;
    out.templates = templates;

    // Parameters, field by field.
    let mut params: Vec<Parameter> = base.parameters.clone();
    for p in &ext_pkg.parameters {
        let fields = ext.param_fields.get(&p.name).cloned().unwrap_or_default();
        match params.iter_mut().find(|x| x.name == p.name) {
            Some(slot) => merge_param(slot, p, &fields),
            None => params.push(p.clone()),
        }
    }
    out.parameters = params;
    let mut groups = base.groups.clone();
    for g in &ext_pkg.groups {
        match groups.iter_mut().find(|x| x.name == g.name) {
            Some(slot) => *slot = g.clone(),
            None => groups.push(g.clone()),
        }
    }
    out.groups = groups;
    tracing::debug!(operator = %out.operator.name, base = %base.operator.name, "resolved extension");
    Ok(out)
}

fn merge_param(slot: &mut Parameter, p: &Parameter, fields: &[String]) {
    for f in fields {
        match f.as_str() {
            "displayName" => slot.display_name.clone_from(&p.display_name),
            "description" => slot.description.clone_from(&p.description),
            "required" => slot.required = p.required,
            "default" => slot.default.clone_from(&p.default),
            "trigger" => slot.trigger.clone_from(&p.trigger),
            "type" => {
                slot.value_type = p.value_type;
                slot.type_explicit = p.type_explicit;
            }
            "immutable" => slot.immutable = p.immutable,
            "enum" => slot.enum_values.clone_from(&p.enum_values),
            "group" => slot.group.clone_from(&p.group),
            "advanced" => slot.advanced = p.advanced,
            "hint" => slot.hint.clone_from(&p.hint),
            _ => {}
        }
    }
}

fn from_base(t: &Task, from: &str, base: &Package) -> Result<Task, PackageError> {
    let name = from.strip_prefix("base/").unwrap_or(from);
    let Some(original) = base.task(name) else {
        return Err(PackageError::invalid(
            "operator.yaml",
            None,
            &format!("tasks ({}).from", t.name),
            format!(
                "base operator {:?} has no task {name:?}; use from: base/<existing task>",
                base.operator.name
            ),
        ));
    };
    let mut task = original.clone();
    task.name.clone_from(&t.name);
    if !t.kind.is_empty() && t.kind != original.kind {
        return Err(PackageError::invalid(
            "operator.yaml",
            None,
            &format!("tasks ({}).kind", t.name),
            format!(
                "kind {} differs from base task {name:?} ({}); drop kind or make it match",
                t.kind, original.kind
            ),
        ));
    }
    let (
        TaskSpec::Apply {
            resources: add_r,
            patches: add_p,
        },
        kind,
    ) = (&t.spec, &original.kind)
    else {
        return Ok(task);
    };
    match &mut task.spec {
        TaskSpec::Apply { resources, patches } => {
            resources.extend(add_r.iter().cloned());
            patches.extend(add_p.iter().cloned());
        }
        TaskSpec::Delete { resources } | TaskSpec::Toggle { resources, .. } => {
            if !add_p.is_empty() {
                return Err(PackageError::invalid(
                    "operator.yaml",
                    None,
                    &format!("tasks ({}).spec.patches", t.name),
                    format!(
                        "patches are only supported on Apply tasks; base task {name:?} is {kind}"
                    ),
                ));
            }
            resources.extend(add_r.iter().cloned());
        }
        _ => {}
    }
    Ok(task)
}

/// `base/<file>` entries: keep the base's content under that key.
fn rewrite_base_files(
    t: &mut Task,
    base: &Package,
    templates: &mut std::collections::BTreeMap<String, String>,
) -> Result<(), PackageError> {
    let lists: Vec<&mut Vec<String>> = match &mut t.spec {
        TaskSpec::Apply { resources, patches } => vec![resources, patches],
        TaskSpec::Delete { resources } | TaskSpec::Toggle { resources, .. } => vec![resources],
        _ => vec![],
    };
    for list in lists {
        for f in list.iter() {
            if let Some(base_file) = f.strip_prefix("base/") {
                let Some(content) = base.templates.get(base_file) else {
                    return Err(PackageError::invalid(
                        "operator.yaml",
                        None,
                        &format!("tasks ({}).spec", t.name),
                        format!("{f:?}: the base operator has no template {base_file:?}"),
                    ));
                };
                templates.insert(f.clone(), content.clone());
            }
        }
    }
    Ok(())
}
