//! `kudo_instance.preview`: what the pending apply will do to the cluster's objects,
//! computed at plan time from a server-side dry-run of the plan the apply will run.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;
use tfplugin::{Diagnostic, Type, Value};

use kudo_engine::cluster::{Cluster, ObjectRef};
use kudo_engine::engine::{self, PreviewAction, RunRequest};
use kudo_plan::{Desired, Inputs};

use super::manifests::Source;

pub fn preview_type() -> Type {
    Type::object([
        ("create", Type::list(Type::String)),
        ("update", Type::list(Type::String)),
        ("delete", Type::list(Type::String)),
    ])
}

/// How objects are named in the preview, like `kubectl` prints them.
pub(super) fn label(r: &ObjectRef) -> String {
    match &r.namespace {
        Some(ns) => format!("{} {ns}/{}", r.kind, r.name),
        None => format!("{} {}", r.kind, r.name),
    }
}

/// The attribute's value; also what an apply records when the plan had none to show.
pub fn value(create: &[String], update: &[String], delete: &[String]) -> Value {
    let list = |items: &[String]| Value::list(items.iter().map(Value::string));
    Value::object([
        ("create", list(create)),
        ("update", list(update)),
        ("delete", list(delete)),
    ])
}

/// What the instance's last run worked from, as the Terraform state records it.
pub struct Prior<'a> {
    /// The `objects` inventory.
    pub objects: &'a [ObjectRef],
    /// The parameters of the last run (sensitive ones included), when it ran this same
    /// package; `None` on create, upgrade or a changed package, where every object
    /// already managed counts as updated.
    pub parameters: Option<&'a BTreeMap<String, String>>,
}

/// A preview and what the plan knows of the objects managed after the apply.
pub struct Computed {
    /// The `preview` attribute's value (unknown when webhooks decide).
    pub value: Value,
    /// Plan-time warnings: translated API versions, why the preview is unknown.
    pub warnings: Vec<Diagnostic>,
    /// Every object the instance manages after the apply with where its content comes
    /// from (see `manifests`); `None` when the preview is unknown.
    pub managed: Option<Vec<(ObjectRef, Source)>>,
}

/// Why there is no preview.
pub enum PreviewError {
    /// The dry-run failed; the warning says why. The preview is unknown and the apply
    /// reports real problems itself.
    Unknown(Diagnostic),
    /// The apply would certainly fail, so the plan must: an object whose API version is
    /// not served (translation off or unable to convert it), or one that belongs to
    /// another instance. `summary` heads the diagnostic.
    Refused {
        summary: &'static str,
        error: Box<engine::EngineError>,
    },
}

/// One plan-time warning per object a template writes for an API version the cluster
/// no longer serves, naming the template, the object and both versions.
pub fn translation_warnings(planned: &[engine::PlannedObject]) -> Vec<Diagnostic> {
    planned
        .iter()
        .filter_map(|p| {
            let t = p.translation.as_ref()?;
            let mut detail = format!(
                "{} renders {} with apiVersion {}, which this cluster no longer serves. It will be applied as {}, converted field by field.",
                p.template,
                label(&p.object),
                t.from_api_version,
                t.to_api_version
            );
            for note in &t.notes {
                detail.push_str("\n- ");
                detail.push_str(note);
            }
            detail.push_str("\nTo stop this warning, write the new apiVersion in the template; to fail instead, set `translate_api_versions = false` in the provider block.");
            // The object in the summary too: Terraform folds warnings with one summary
            // into "and N more similar warnings", and each object deserves its line.
            Some(Diagnostic::warning(
                format!(
                    "{}: {} converted to {}",
                    label(&p.object),
                    t.from_api_version,
                    t.to_api_version
                ),
                detail,
            ))
        })
        .collect()
}

/// What running `plan` of the desired state (sensitive parameters included; only object
/// names come out) would create, update and delete. The server-side dry-run checks the
/// objects and names them; which of them change is decided from the Terraform state
/// and the walks alone, never from what the cluster holds: Terraform plans again
/// during the apply (after the destroy half of a replacement, after other resources
/// changed the cluster) and the two plans must agree. See [`PreviewError`] for the
/// failures.
pub async fn compute(
    cluster: &Cluster,
    desired: &Desired<'_>,
    plan: &str,
    prior: &Prior<'_>,
) -> Result<Computed, PreviewError> {
    let warn = |e: &dyn std::fmt::Display| {
        Diagnostic::warning(
            "No preview",
            format!(
                "The dry-run of plan {plan:?} failed, so `preview` is unknown until the apply: {e}"
            ),
        )
    };
    let inputs = desired.inputs;
    let request = RunRequest {
        package: inputs.package,
        instance: inputs.instance,
        namespace: inputs.namespace,
        parameters: inputs.parameters,
        plan,
        previous_inventory: prior.objects,
        // A dry-run shows this instance's own objects; children are listed in `children`.
        dependencies: None,
        render_seed: inputs.seed,
        // A preview deletes nothing.
        crd_deletion: engine::CrdDeletion::default(),
    };
    let walk = desired
        .plan(plan)
        .map_err(|e| PreviewError::Unknown(warn(&e)))?;
    let planned = engine::preview_walk(cluster, &request, walk)
        .await
        .map_err(|e| match e.trouble {
            kudo_engine::cluster::Trouble::ApiVersion => PreviewError::Refused {
                summary: "API version not served",
                error: Box::new(e),
            },
            kudo_engine::cluster::Trouble::Taken => PreviewError::Refused {
                summary: "Object belongs to another instance",
                error: Box::new(e),
            },
            kudo_engine::cluster::Trouble::Webhook => PreviewError::Refused {
                summary: "Webhook URL not allowed",
                error: Box::new(e),
            },
            _ => PreviewError::Unknown(warn(&e)),
        })?;
    let mut warnings = translation_warnings(&planned);
    // A webhook is called by the apply only: what it answers cannot be shown.
    let calls: Vec<String> = walk
        .webhooks()
        .map(|(step, task, call)| {
            format!(
                "task {task:?} (phase {:?}, step {:?}) calls {}",
                step.location.phase,
                step.location.step,
                call.shown_url()
            )
        })
        .collect();
    if !calls.is_empty() {
        let from_templates: Vec<String> = planned.iter().map(|p| label(&p.object)).collect();
        warnings.push(Diagnostic::warning(
            "Preview unknown: webhook tasks run at apply time",
            format!(
                "Plan {plan:?} runs Webhook tasks: {}. A webhook is never called while planning, because the call may have side effects, so the objects it answers, and with them what the apply creates, updates and deletes, are known only after the apply; `preview` is unknown. Objects from templates the plan applies: {}.",
                calls.join("; "),
                if from_templates.is_empty() {
                    "none".to_string()
                } else {
                    from_templates.join(", ")
                }
            ),
        ));
        return Ok(Computed {
            value: Value::Unknown,
            warnings,
            managed: None,
        });
    }
    let namespace = inputs.namespace;
    let mut new_render: BTreeMap<ObjectRef, Json> = BTreeMap::new();
    let mut gone: BTreeSet<ObjectRef> = BTreeSet::new();
    for o in engine::preview_objects(walk) {
        let Ok(r) = ObjectRef::from_object(&o.object) else {
            continue;
        };
        let r = with_namespace(cluster, r, namespace).await;
        match o.action {
            PreviewAction::Apply => {
                new_render.insert(r, o.object);
            }
            PreviewAction::Delete => {
                gone.insert(r);
            }
        }
    }
    // The last run's render of the same package: the same walk with the old values.
    let old_desired = prior.parameters.and_then(|old| {
        Desired::new(Inputs {
            parameters: old,
            ..inputs
        })
        .ok()
    });
    let old_render = match &old_desired {
        Some(old) => renders(cluster, old, plan).await,
        None => None,
    };

    // Compared by stored object: after a cluster upgrade the state may name an object
    // under the version it was applied as, the plan under the version served now.
    let known = |r: &ObjectRef| prior.objects.iter().any(|k| k.same_object(r));
    let (mut create, mut update, mut delete) = (Vec::new(), Vec::new(), Vec::new());
    let mut applied = BTreeSet::new();
    for p in &planned {
        if !applied.insert(p.object.clone()) {
            continue;
        }
        if !known(&p.object) {
            create.push(label(&p.object));
            continue;
        }
        let same = match (&old_render, new_render.get(&p.object)) {
            (Some(old), Some(new)) => old.get(&p.object) == Some(new),
            _ => false,
        };
        if !same {
            update.push(label(&p.object));
        }
    }
    // What the run prunes: earlier objects no plan renders any more (nothing when some
    // plan does not render, like the run).
    if let Some(rendered) = renders(cluster, desired, plan).await {
        // Dependency Instances are not rendered from templates; their own runs decide.
        let unrendered: Vec<ObjectRef> = prior
            .objects
            .iter()
            .filter(|r| r.kind != "Instance" && !rendered.keys().any(|k| k.same_object(r)))
            .cloned()
            .collect();
        // A webhook's earlier answer may hold them (the run then keeps them), which
        // only the objects in the cluster can tell: the plan does not guess.
        let webhook_tasks = desired.webhook_tasks();
        if !webhook_tasks.is_empty() && !unrendered.is_empty() {
            let tasks: Vec<String> = webhook_tasks.iter().map(|t| format!("{t:?}")).collect();
            let objects: Vec<String> = unrendered.iter().map(label).collect();
            warnings.push(Diagnostic::warning(
                "Preview unknown: objects a webhook may hold",
                format!(
                    "No template renders {} any more, but Webhook task {} of this package may have answered them; the apply keeps what a webhook's latest answer holds and prunes the rest, which only the objects in the cluster tell. `preview` is unknown.",
                    objects.join(", "),
                    tasks.join(", ")
                ),
            ));
            return Ok(Computed {
                value: Value::Unknown,
                warnings,
                managed: None,
            });
        }
        gone.extend(unrendered);
    }
    let mut deleted = Vec::new();
    for r in gone {
        if known(&r) && !applied.iter().any(|a| a.same_object(&r)) {
            delete.push(label(&r));
            deleted.push(r);
        }
    }
    // After the apply: what the run applies, as rendered now, and the earlier objects
    // it neither applies nor removes, as the last run's values render them.
    let mut managed: Vec<(ObjectRef, Source)> = applied
        .iter()
        .filter_map(|r| Some((r.clone(), Source::Applied(new_render.get(r)?.clone()))))
        .collect();
    for r in prior.objects {
        if applied.iter().any(|a| a.same_object(r)) || deleted.iter().any(|d| d.same_object(r)) {
            continue;
        }
        let render = old_render
            .as_ref()
            .and_then(|old| old.iter().find(|(k, _)| k.same_object(r)))
            .map(|(_, o)| o.clone());
        managed.push((r.clone(), Source::Kept(render)));
    }
    Ok(Computed {
        value: value(&create, &update, &delete),
        warnings,
        managed: Some(managed),
    })
}

/// The content of each of `objects` as `desired` renders it, `plan`'s render winning
/// (see [`renders`]); objects no plan renders get `Kept(None)`. What `manifests` holds
/// when no plan runs, or after an apply that was planned without the cluster.
pub async fn current(
    cluster: &Cluster,
    desired: &Desired<'_>,
    plan: &str,
    objects: &[ObjectRef],
) -> Option<Vec<(ObjectRef, Source)>> {
    let rendered = renders(cluster, desired, plan).await?;
    Some(
        objects
            .iter()
            .map(|r| {
                let render = rendered
                    .iter()
                    .find(|(k, _)| k.same_object(r))
                    .map(|(_, o)| o.clone());
                (r.clone(), Source::Kept(render))
            })
            .collect(),
    )
}

/// Every object any plan of `desired` applies, as rendered; `plan`'s version wins
/// when plans render one object differently. None when some plan cannot be walked.
async fn renders(
    cluster: &Cluster,
    desired: &Desired<'_>,
    plan: &str,
) -> Option<BTreeMap<ObjectRef, Json>> {
    let pkg = desired.inputs.package;
    let mut out = BTreeMap::new();
    let order = std::iter::once(plan).chain(
        pkg.operator
            .plans
            .keys()
            .map(String::as_str)
            .filter(|p| *p != plan),
    );
    for plan_name in order {
        let walk = desired.plan(plan_name).ok()?;
        for o in engine::preview_objects(walk) {
            if o.action == PreviewAction::Apply
                && let Ok(r) = ObjectRef::from_object(&o.object)
            {
                let r = with_namespace(cluster, r, desired.inputs.namespace).await;
                out.entry(r).or_insert(o.object);
            }
        }
    }
    Some(out)
}

/// Rendered objects without a namespace land in the instance's, unless their kind is
/// cluster-scoped (the inventory records those without one).
async fn with_namespace(cluster: &Cluster, r: ObjectRef, namespace: &str) -> ObjectRef {
    // Under the version the run applies it as (see Cluster::served_form).
    let mut r = cluster.served_ref(&r).await.unwrap_or(r);
    if r.namespace.is_none()
        && cluster
            .is_namespaced(&r.api_version, &r.kind)
            .await
            .unwrap_or(true)
    {
        r.namespace = Some(namespace.to_string());
    }
    r
}
